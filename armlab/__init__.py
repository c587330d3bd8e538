"""Neutral foundations shared by training, evals and analysis; imports none of them.

The stages are this package's subpackages ``armlab.training``, ``armlab.evals`` and ``armlab.analysis``. An
installed armlab holds them inside this folder; a checkout keeps them in top-level folders beside it, which
pyproject.toml maps into the package. So that a checkout imports them however armlab was installed (editable, or
a plain `pip install .` whose copy the checkout's own ``armlab/`` then shadows, as when Snakemake or a job runs
from the checkout), the checkout's root joins the package's path when this file is the checkout's.
"""

from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_STAGES = ("training", "evals", "analysis")
if (_ROOT / "pyproject.toml").is_file() and all((_ROOT / stage / "__init__.py").is_file() for stage in _STAGES):
    __path__.append(str(_ROOT))  # noqa: F821 (a package's own __path__)
