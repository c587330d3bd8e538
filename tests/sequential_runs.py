"""A sequential design for the tests of its looks (tests/analysis/test_waves.py, tests/experiment/test_sequential.py):
its config, and each run's primary summary as a tidy table."""

import numpy as np
import pandas as pd

from armlab.analysis.config import parse_config

RAW = {
    "experiment": "seq",
    "seeds": {"initial": 6, "wave": 2, "max": 10, "start": 1, "spending": "pocock", "margin": 0.05},
    "benchmarks": {"b": {"domain": "d"}},
    "comparisons": [{"family": "f", "reference": "ref", "arms": ["big", "null"]}],
    "analysis": {"alpha": 0.05},
}
CONFIG = parse_config(RAW)


def run_scores(values: dict) -> pd.DataFrame:
    """A tidy table with one item per run whose score is the run's primary summary."""
    rows = [("seq", arm, seed, "b", "d", "0", v, 1, v) for (arm, seed), v in values.items()]
    return pd.DataFrame(
        rows, columns=["experiment", "arm", "seed", "benchmark", "domain", "item", "score", "n_samples", "n_correct"]
    )


def run_values(seeds, effect=0.3):
    """ref at 0.5 +- noise; `big` far above it on every seed; `null` noise around the reference."""
    rng = np.random.default_rng(3)
    out = {}
    for seed in seeds:
        base = 0.5 + rng.normal(0, 0.01)
        out[("ref", seed)] = base
        out[("big", seed)] = base + effect + rng.normal(0, 0.01)
        out[("null", seed)] = base + rng.normal(0, 0.15)
    return out
