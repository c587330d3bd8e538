"""What `armlab analyze` writes, in one place for the writer (:func:`armlab.analysis.pipeline.write_outputs`) and
the report's reader (:func:`armlab.analysis.report.read_analysis`): the tables and the format they are in.

``FORMAT`` goes up whenever a table or a column is added, renamed or removed; the report refuses an analysis of
another format with one line that says to rerun `armlab analyze` (seconds), rather than guess at what an older
layout meant.
"""

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
