"""Synthetic tidy scores with known truth, for tests, simulations and benchmarks.

Item scores are Bernoulli with logit = item difficulty + seed effect + arm
effect + run noise. The seed effect is shared by all arms of a seed (common
random numbers, as in a real seed-matched grid), which is what makes pairing
by seed pay off.
"""

import numpy as np
import pandas as pd

from analysis import multiplicity, resampling


def synthetic_scores(*, arms, seeds, benchmarks, items, rng, effects=None, seed_sd=0.3, run_sd=0.1,
                     experiment="synthetic"):
    """A tidy table for every arm x seed x benchmark x item.

    ``benchmarks`` maps benchmark -> domain; ``effects`` maps arm -> shift on
    the logit scale (default 0); ``items`` is the number of items per
    benchmark, or ``None`` for per-benchmark rows (``item == "*"``, score =
    the run's expected accuracy).
    """
    arms, seeds, names = list(arms), list(seeds), list(benchmarks)
    shift = np.array([(effects or {}).get(a, 0.0) for a in arms])
    n_items = 1 if items is None else items
    difficulty = rng.normal(0.0, 1.5, (len(names), n_items))
    seed_effect = rng.normal(0.0, seed_sd, len(seeds))
    run_noise = rng.normal(0.0, run_sd, (len(arms), len(seeds), len(names)))
    logit = (shift[:, None, None, None] + seed_effect[None, :, None, None]
             + run_noise[..., None] + difficulty[None, None])
    prob = 1.0 / (1.0 + np.exp(-logit))
    score = prob if items is None else (rng.random(prob.shape) < prob).astype(float)
    a, s, b, i = (ix.ravel() for ix in np.indices(score.shape))
    return pd.DataFrame({
        "experiment": experiment,
        "arm": np.asarray(arms, dtype=object)[a],
        "seed": np.asarray(seeds)[s],
        "benchmark": np.asarray(names, dtype=object)[b],
        "domain": np.asarray([benchmarks[n] for n in names], dtype=object)[b],
        "item": "*" if items is None else np.char.mod("i%04d", i).astype(object),
        "score": score.ravel(),
    })


def grid_benchmarks(count=12, domains=("math", "logic", "science")):
    """``count`` benchmark names spread evenly over ``domains``: ``{"b00": "math", ...}``."""
    return {f"b{j:02d}": domains[j % len(domains)] for j in range(count)}


def interval_coverage(diffs, truth, *, resamples, confidence, rng):
    """Share of rows of ``diffs`` (replicates x seeds) whose interval covers ``truth``, per method.

    All replicates share one set of resamples, as comparisons do in
    :func:`analysis.paired.compare`.
    """
    boot = resampling.bootstrap_means(diffs, resampling.resample_counts(rng, diffs.shape[1], resamples))
    intervals, _ = resampling.bootstrap_intervals(boot, diffs, ("percentile", "bca"), (confidence,))
    return {m: float(np.mean((ci[:, 0, 0] <= truth) & (truth <= ci[:, 0, 1]))) for m, ci in intervals.items()}


def null_family_rejections(draw, *, arms, seeds, replicates, alpha, rng):
    """Family-wise and per-comparison rejection rates of the sign-flip test under a global null.

    Each replicate has a reference and ``arms`` arms on ``seeds`` seeds whose
    run values are ``seed effect + draw(...)`` with the same distribution for
    every arm, so every paired difference is symmetric about 0. Returns the
    share of replicates with any Holm rejection (the FWER), the same without
    adjustment, and the per-comparison rejection rate.
    """
    runs = rng.normal(size=(replicates, 1, seeds)) + draw(rng, (replicates, arms + 1, seeds))
    diffs = (runs[:, 1:] - runs[:, :1]).reshape(-1, seeds)
    p = resampling.sign_flip_pvalue(diffs).reshape(replicates, arms)
    holm_any = np.array([multiplicity.holm(row, alpha)[0].any() for row in p])
    return {"fwer_holm": float(holm_any.mean()), "fwer_unadjusted": float((p <= alpha).any(axis=1).mean()),
            "per_comparison": float((p <= alpha).mean())}
