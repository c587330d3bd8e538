"""What `armlab analyze` writes: the tables that the writer (:func:`armlab.analysis.pipeline.write_outputs`) and
the readers (:func:`armlab.analysis.report.read_analysis`, ``armlab summary``) share, and their format.

``FORMAT`` goes up whenever a table or a column is added, renamed or removed; the report refuses an analysis of
another format with one line that says to rerun `armlab analyze` (seconds), rather than guess at what an older
layout meant.
"""

from armlab.analysis.errors import AnalysisInputError

FORMAT = 2  # 1: the layouts before the format was recorded (no "format" in manifest.json)
FORMAT_KEY = "format"
TABLES = (  # each is <name>.csv, listed with its sha256 in manifest.json
    "summaries",
    "accuracy",
    "weights",
    "comparisons",
    "rankings",
    "sensitivity",
    "probability_of_improvement",
    "performance_profiles",
    "dropped",
    "pass_at_k_vs_base",
    "variance_components",
    "allocation",
    "sequential",
    "sequential_looks",
    "replications",
)


def check_format(manifest: dict, path: object) -> None:
    """Refuse, in one line, the analysis whose ``manifest.json`` (at ``path``) records another format."""
    found = manifest.get(FORMAT_KEY, 1) if isinstance(manifest, dict) else None
    if found != FORMAT:
        folder = getattr(path, "parent", path)
        raise AnalysisInputError(
            f"{path}: an analysis of format {found!r}, written by another version of armlab; this one reads format "
            f"{FORMAT}: rerun `armlab analyze` into {folder}"
        )
