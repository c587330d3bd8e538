"""The tidy scores contract: one long table, one row per scored item, that every stage after evaluation reads.

    experiment, arm, seed (int64), benchmark, domain, item (str), score (float in [0, 1])

Evaluation writes it per run (evals/run.py), the merge concatenates the runs (evals/merge.py), and the
analysis reads it or converts other results into it (analysis/io.py). See docs/contracts.md.
"""

from __future__ import annotations

COLUMNS = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score"]
KEY = ["experiment", "arm", "seed", "benchmark", "item"]  # unique: one score per item of a run
RUN = ["arm", "seed"]  # one training run (within an experiment)
PER_BENCHMARK_ITEM = "*"  # the item of a row that holds a whole benchmark's accuracy (results from elsewhere)


def duplicated_keys(frame):
    """Boolean mask of the rows whose :data:`KEY` appears more than once."""
    return frame.duplicated(KEY, keep=False)
