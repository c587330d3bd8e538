"""The tidy scores contract: one long table, one row per scored item, that every stage after evaluation reads.

    experiment, arm, seed (int64), benchmark, domain, item (str), score (float in [0, 1]),
    n_samples (int64 >= 1), n_correct (float in [0, n_samples])

``score`` is the item's mean correctness over its ``n_samples`` sampled answers (avg@k; one greedy answer
is one sample) and ``n_correct`` their sum, so ``score == n_correct / n_samples``; pass@k needs the counts.
A table without the two count columns (written before sampled evaluation, or by hand) reads as one
sample per item (:data:`SAMPLE_COUNTS`).

Evaluation writes it per run (evals/run.py), the merge concatenates the runs (evals/merge.py), and the
analysis reads it or converts other results into it (analysis/inputs/). See docs/contracts.md.
"""

from __future__ import annotations

import dataclasses

from armlab.spec import LedgerRow

REQUIRED = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score"]
SAMPLE_COUNTS = ["n_samples", "n_correct"]  # optional on input: absent means one sample, n_correct = score
COLUMNS = [*REQUIRED, *SAMPLE_COUNTS]
KEY = ["experiment", "arm", "seed", "benchmark", "item"]  # unique: one score per item of a run
RUN = ["arm", "seed"]  # one training run (within an experiment)
BASE_ARM = "base"  # the untrained base policy's arm (seed 0): reserved, no config arm may take the name
BUILTIN_BASE = "builtin_base"  # trl.model: TRL arms start from the builtin base policy, exported (hf_export.py)
PER_BENCHMARK_ITEM = "*"  # the item of a row that holds a whole benchmark's accuracy (results from elsewhere)
# TRL's names of the quantities the builtin trainer's step log (steps.parquet, docs/contracts.md) also records: every
# steps.parquet, the TRL backend's and one imported from elsewhere (armlab steps), names them as the builtin does
TRL_STEP_NAMES = {
    "frac_reward_zero_std": "frac_zero_var",
    "clip_ratio/region_mean": "clip_frac",
    "completions/mean_length": "response_len",
    "step_time": "seconds",
}
# A training run's compute ledger (docs/contracts.md): ledger.parquet, one row per step with the running totals at its
# end, which the learning curves carry beside the step (evals/curves.py) so that arms can be compared at equal
# compute, not only at equal steps
LEDGER_FILE = "ledger.parquet"
LEDGER = tuple(f.name for f in dataclasses.fields(LedgerRow) if f.name != "step")  # the record armlab.spec.LedgerRow
TASK_PREFIX = "armlab_"  # an armlab benchmark's lm-eval task is armlab_<benchmark> (evals/lm_eval_tasks.py)
PROBE = "probe.json"  # armlab probe's job times in an experiment's results folder (armlab/experiment/probe.py)
# A benchmark's procedural twin (eval.twins, eval.external.<b>.twin): fresh items of the same kind, evaluated beside it
# as benchmark <b>__twin and read by the contamination screen only (analysis/screens/contamination.py), never by a
# summary
TWIN_SUFFIX = "__twin"


def twin_name(benchmark: str) -> str:
    """The benchmark that holds ``benchmark``'s procedural twin items."""
    return f"{benchmark}{TWIN_SUFFIX}"


def is_twin(benchmark: str) -> bool:
    return benchmark.endswith(TWIN_SUFFIX)


def published_name(benchmark: str) -> str:
    """The benchmark whose twin ``benchmark`` is; a published benchmark's own name."""
    return benchmark.removesuffix(TWIN_SUFFIX)


def split_twins(frame):
    """``frame``'s rows of published benchmarks and those of their twins (a ``benchmark`` column), in that order."""
    twin = frame["benchmark"].astype(str).str.endswith(TWIN_SUFFIX).to_numpy()
    return frame[~twin], frame[twin]


def duplicated_keys(frame, codes=None):
    """Boolean mask (on ``frame``'s index) of the rows whose :data:`KEY` appears more than once.

    The key columns are compared as integer codes (``codes``: column -> codes of ``pd.factorize``, computed
    here when not given), combined into one integer where they fit: hashing the string columns inside
    ``duplicated`` was most of the validation's time on large tables.
    """
    import numpy as np  # this module is imported by code that never reads a table
    import pandas as pd

    codes = {
        column: (codes or {})[column] if column in (codes or {}) else pd.factorize(frame[column])[0] for column in KEY
    }
    sizes = [int(codes[column].max(initial=-1)) + 2 for column in KEY]  # + 2: code -1 is a missing value
    if np.prod(sizes, dtype=object) >= 2**63:
        return pd.DataFrame(codes, index=frame.index).duplicated(keep=False)
    key = np.zeros(len(frame), dtype=np.int64)
    for column, size in zip(KEY, sizes):
        key = key * size + (codes[column] + 1)
    return pd.Series(pd.Series(key).duplicated(keep=False).to_numpy(), index=frame.index)


def one_sample_per_item(frame):
    """A table of the :data:`REQUIRED` columns read as the contract reads it: one sample per item (``n_samples``
    1, ``n_correct`` = ``score``), the columns :data:`COLUMNS` in order. The one place this reading is written:
    the analysis's tidy input and the evaluations' merge both call it."""
    import numpy as np  # this module is imported by code that never reads a table

    counts = {"n_samples": np.ones(len(frame), dtype=np.int64), "n_correct": frame["score"].astype(float)}
    return frame[REQUIRED].assign(**counts)[COLUMNS]
