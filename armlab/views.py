"""Write one resolved config view (JSON text) to a file, atomically: what the stage_config rules run.

    python -m armlab.views OUT JSON_TEXT

A shell job rather than a `run:` block: Snakemake runs `run:` blocks in a fresh process that
re-parses the workflow, which costs seconds per view.
"""

import json
import sys
from pathlib import Path

from armlab.files import write_json


def write_view(path: str | Path, text: str) -> None:
    """Parse ``text`` as JSON (a view must be valid) and write it pretty-printed, never half-written."""
    write_json(path, json.loads(text))


if __name__ == "__main__":
    write_view(*sys.argv[1:3])
