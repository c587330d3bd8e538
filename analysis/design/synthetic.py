"""Synthetic data with known truth: tidy scores, and the simulations that measure every verdict.

Item scores are Bernoulli with logit = item difficulty + seed effect + arm
effect + run noise. The seed effect is shared by all arms of a seed (common
random numbers, as in a real seed-matched grid), which is what makes pairing
by seed pay off.

The ``*_validity`` and ``*_coverage`` functions measure, with the analysis'
own code, the coverage, size, family-wise error and power of everything the
report can show (benchmarks/coverage_sim.py prints them for
analysis/README.md and :mod:`armlab.analysis.design.validity_measured`); normal and
heavy-tailed (Student t, 3 df, scaled to unit variance) noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import optimize, stats

from armlab.analysis.comparisons import paired, summaries
from armlab.analysis.stats import intervals, multiplicity, normal_theory, power, resampling

if TYPE_CHECKING:
    from armlab.analysis.settings import Settings


def synthetic_scores(
    *,
    arms: Iterable[str],
    seeds: Iterable[int],
    benchmarks: Mapping[str, str],
    items: int | None,
    rng: np.random.Generator,
    effects: Mapping[str, float] | None = None,
    seed_sd: float = 0.3,
    run_sd: float = 0.1,
    experiment: str = "synthetic",
) -> pd.DataFrame:
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
    logit = (
        shift[:, None, None, None] + seed_effect[None, :, None, None] + run_noise[..., None] + difficulty[None, None]
    )
    prob = 1.0 / (1.0 + np.exp(-logit))
    score = prob if items is None else (rng.random(prob.shape) < prob).astype(float)
    a, s, b, i = (ix.ravel() for ix in np.indices(score.shape))
    return pd.DataFrame(
        {
            "experiment": experiment,
            "arm": np.asarray(arms, dtype=object)[a],
            "seed": np.asarray(seeds)[s],
            "benchmark": np.asarray(names, dtype=object)[b],
            "domain": np.asarray([benchmarks[n] for n in names], dtype=object)[b],
            "item": "*" if items is None else np.char.mod("i%04d", i).astype(object),
            "score": score.ravel(),
        }
    )


def grid_benchmarks(count: int = 12, domains: Sequence[str] = ("math", "logic", "science")) -> dict[str, str]:
    """``count`` benchmark names spread evenly over ``domains``: ``{"b00": "math", ...}``."""
    return {f"b{j:02d}": domains[j % len(domains)] for j in range(count)}


NOISE = {  # run-to-run noise of unit variance
    "normal": lambda rng, shape: rng.normal(size=shape),
    "t3": lambda rng, shape: rng.standard_t(3, size=shape) / np.sqrt(3),
}


def mc_error(rate: np.ndarray | float, replicates: int) -> np.ndarray | float:
    """95% Monte-Carlo half-width of a rate estimated from ``replicates`` independent draws."""
    return 1.96 * np.sqrt(rate * (1 - rate) / replicates)


def bootstrap_coverage(
    noise: str,
    n: int,
    *,
    replicates: int,
    resamples: int,
    confidence: float,
    rng: np.random.Generator,
    block: int = 4000,
) -> dict[str, float]:
    """Coverage of the true mean by the percentile and BCa intervals over n seeds (:mod:`.stats.resampling`).

    The intervals are shift-equivariant, so the true mean is 0 without loss.
    All replicates share one set of resamples, as comparisons do; they are
    processed ``block`` at a time to bound memory.
    """
    d = NOISE[noise](rng, (replicates, n))
    counts = resampling.resample_counts(rng, n, resamples)
    covered = dict.fromkeys(resampling.BOOTSTRAP, 0)
    for start in range(0, replicates, block):
        part = d[start : start + block]
        intervals, _ = resampling.bootstrap_intervals(
            resampling.bootstrap_means(part, counts), part, resampling.BOOTSTRAP, (confidence,)
        )
        for method, ci in intervals.items():
            covered[method] += int(((ci[:, 0, 0] <= 0) & (0 <= ci[:, 0, 1])).sum())
    return {method: count / replicates for method, count in covered.items()}


def first_interval_validity(
    noise: str, n: int, *, replicates: int, settings: Settings, rng: np.random.Generator
) -> dict:
    """Coverage of the first interval (sign-flip; unbounded below its reach) and the t interval; the test's size.

    Runs :func:`armlab.analysis.comparisons.paired.seed_statistics` on differences with true
    mean 0. ``incoherent`` counts replicates where the bounded sign-flip
    interval excludes 0 but p > 1 - confidence, or the reverse (always 0).
    """
    d = NOISE[noise](rng, (replicates, n))
    stats = paired.seed_statistics(d, replace(settings, ci_methods=("t",)))
    covers = {m: (ci[:, 0] <= 0) & (0 <= ci[:, 1]) for m, (ci, _) in stats["intervals"].items()}
    bounded = stats["intervals"][intervals.FIRST_METHOD][1] == ""
    rejects = stats["p"] <= 1 - settings.confidence
    return {
        "coverage": {m: float(c.mean()) for m, c in covers.items()},
        "size": float(np.mean(stats["p"] <= settings.alpha)),
        "incoherent": int((bounded & (rejects == covers[intervals.FIRST_METHOD])).sum()),
    }


def equivalence_validity(
    noise: str, n: int, *, truth: float, sd: float, replicates: int, settings: Settings, rng: np.random.Generator
) -> dict[str, float]:
    """Share of replicates declared equivalent within +-margin when the true mean difference is ``truth``.

    At ``truth`` = margin this is the size of each rule (at most alpha for a
    valid TOST): the exact sign-flip TOST and the paired t-TOST that
    :func:`armlab.analysis.comparisons.paired.seed_statistics` runs, and, for contrast, e2d0814's
    rule: a (1 - 2 alpha) percentile or BCa bootstrap interval inside the margin.
    """
    d = truth + sd * NOISE[noise](rng, (replicates, n))
    out = {}
    for test in ("sign_flip", "t"):
        stats = paired.seed_statistics(d, replace(settings, ci_methods=(), equivalence_test=test))
        out[f"{test}_tost"] = float(np.mean(stats["p_eq"] <= settings.alpha))
    boot = resampling.bootstrap_means(d, resampling.resample_counts(rng, n, settings.resamples))
    intervals, _ = resampling.bootstrap_intervals(boot, d, resampling.BOOTSTRAP, (1 - 2 * settings.alpha,))
    margin = settings.equivalence_margin
    for method, ci in intervals.items():
        out[f"{method}_inside"] = float(np.mean((ci[:, 0, 0] > -margin) & (ci[:, 0, 1] < margin)))
    return out


def family_validity(
    noise: str,
    n: int,
    *,
    replicates: int,
    settings: Settings,
    rng: np.random.Generator,
    arms: int = 4,
    benchmarks: int = 12,
    effect: float = 0.0,
) -> dict[str, float]:
    """Family-wise error of everything called better or worse, under a global or a partial null.

    Each replicate is a family of ``arms`` arms against one reference on
    ``benchmarks`` benchmarks in three domains, measured on the primary
    summary (domain-balanced), the flat mean and every benchmark; run values
    are a seed effect per (seed, benchmark) shared by all arms plus unit run
    noise. ``effect`` shifts every arm on the first benchmark only, so the
    summaries and that benchmark differ and the other benchmarks are true
    nulls. Returns the FWER over the true nulls under the family's gatekept
    Holm (:func:`armlab.analysis.stats.multiplicity.gatekept_holm`) and, for contrast,
    under e2d0814's Holm within each measure.
    """
    names = grid_benchmarks(benchmarks)
    weights = summaries.summary_weights(pd.Series(names)).to_numpy()  # (2, B)
    measure_weights = np.vstack([weights, np.eye(benchmarks)])  # (M, B)
    shift = np.zeros(benchmarks)
    shift[0] = effect
    seed_effect = rng.normal(size=(replicates, 1, n, benchmarks))
    runs = seed_effect + NOISE[noise](rng, (replicates, arms + 1, n, benchmarks))
    runs[:, 1:] += shift
    diffs = (runs[:, 1:] - runs[:, :1]) @ measure_weights.T  # (R, arms, n, M)
    true_null = np.abs(measure_weights @ shift) == 0  # (M,)
    p = resampling.sign_flip_pvalue(diffs.transpose(0, 1, 3, 2).reshape(-1, n), max_exact=settings.exact_max_seeds)
    p = p.reshape(replicates, arms, len(measure_weights))
    gatekept = np.zeros(replicates, dtype=bool)
    per_measure = np.zeros(replicates, dtype=bool)
    for r in range(replicates):
        (first, _), (rest, _) = multiplicity.gatekept_holm(p[r, :, 0], p[r, :, 1:].ravel(), settings.alpha)
        rejected = np.concatenate([first[:, None], rest.reshape(arms, -1)], axis=1)
        gatekept[r] = (rejected & true_null).any()
        per_measure[r] = any(multiplicity.holm(p[r, :, j], settings.alpha)[0].any() for j in np.flatnonzero(true_null))
    return {"gatekept_holm": float(gatekept.mean()), "holm_per_measure": float(per_measure.mean())}


EQUIVALENCE_SCENARIOS = ("at the margin", "benchmarks at the margin", "no difference")


def equivalence_family_validity(
    noise: str,
    n: int,
    *,
    replicates: int,
    settings: Settings,
    rng: np.random.Generator,
    scenario: str,
    arms: int = 4,
    benchmarks: int = 12,
) -> dict[str, float]:
    """Family-wise error of every "equivalent" in a family, and its power, by the exact sign-flip TOST.

    Each replicate is a family of ``arms`` arms against one reference on ``benchmarks`` benchmarks in three
    domains, measured on the primary summary (domain-balanced), the flat mean and every benchmark, the benchmarks'
    differences of sd ``equivalence_margin`` (a seed effect per (seed, benchmark) shared by all arms plus run noise).
    ``scenario`` (:data:`EQUIVALENCE_SCENARIOS`): ``at the margin``, every arm +margin on every benchmark, so every
    cell is a true null of the TOST (|difference| >= margin); ``benchmarks at the margin``, every benchmark
    +-margin with signs that cancel in every domain, so the summaries are truly equivalent (0) and the benchmarks
    true nulls; ``no difference``: 0 everywhere, every cell truly equivalent. Returns, for the family's gatekept Holm
    over the TOSTs (:func:`armlab.analysis.stats.multiplicity.gatekept_holm`: Holm across the arms on the primary,
    then over the secondary cells once every arm is equivalent there) and, for contrast, each cell's TOST at alpha
    unadjusted (before issue 54): ``fwer_*``, the share of replicates with an "equivalent" on a true null;
    ``power_*``, the share of truly equivalent cells declared equivalent (NaN where there is none).
    """
    names = grid_benchmarks(benchmarks)
    weights = summaries.summary_weights(pd.Series(names)).to_numpy()  # (2, B)
    measure_weights = np.vstack([weights, np.eye(benchmarks)])  # (M, B)
    margin = settings.equivalence_margin
    signs = np.where((np.arange(benchmarks) // 3) % 2 == 0, 1.0, -1.0)  # each domain: two +, two -
    truth = {
        "at the margin": np.full(benchmarks, margin),
        "benchmarks at the margin": margin * signs,
        "no difference": np.zeros(benchmarks),
    }[scenario]
    unit = margin / np.sqrt(2)  # run noise of the arm and of the reference: a benchmark difference of sd margin
    seed_effect = rng.normal(size=(replicates, 1, n, benchmarks))
    runs = seed_effect + unit * NOISE[noise](rng, (replicates, arms + 1, n, benchmarks))
    runs[:, 1:] += truth
    diffs = (runs[:, 1:] - runs[:, :1]) @ measure_weights.T  # (R, arms, n, M)
    true_null = np.abs(measure_weights @ truth) >= margin - 1e-12  # (M,)
    flip = resampling.sign_flip(
        diffs.transpose(0, 1, 3, 2).reshape(-1, n),
        alpha=settings.alpha,
        margin=margin,
        max_exact=settings.exact_max_seeds,
        resamples=settings.sign_flip_resamples,
        rng=rng,
    )
    p = flip["p_equivalence"].reshape(replicates, arms, len(measure_weights))
    gatekept = np.zeros((replicates, arms, len(measure_weights)), dtype=bool)
    for r in range(replicates):
        (first, _), (rest, _) = multiplicity.gatekept_holm(p[r, :, 0], p[r, :, 1:].ravel(), settings.alpha)
        gatekept[r] = np.concatenate([first[:, None], rest.reshape(arms, -1)], axis=1)
    out = {}
    for rule, said in (("gatekept_holm", gatekept), ("unadjusted", p <= settings.alpha)):
        out[f"fwer_{rule}"] = float((said & true_null).any(axis=(1, 2)).mean())
        out[f"power_{rule}"] = float(said[..., ~true_null].mean()) if (~true_null).any() else float("nan")
    return out


def power_validity(
    noise: str, n: int, *, replicates: int, settings: Settings, rng: np.random.Generator, arms: int = 4
) -> dict[str, float] | None:
    """Power of the sign-flip test at the MDE the analysis reports, at the first Holm level alpha / arms.

    The MDE is computed for the true sd (1); differences with that mean are
    drawn and tested by :func:`armlab.analysis.stats.resampling.sign_flip_pvalue`, which
    is not the simulation inside :mod:`armlab.analysis.stats.power`. For contrast, the
    same at e2d0814's MDE, the t-test's. ``range_covers``: the share of
    replicates whose MDE range (the MDE at both ends of the chi-square
    interval for the sd from the replicate's own spread) contains the MDE at
    the true sd. ``None`` where the test cannot reach the level.
    """
    level = settings.alpha / arms
    unit = power.detectable_effect_sd(
        n,
        level,
        settings.power,
        settings.power_replicates,
        settings.bootstrap_seed,
        settings.exact_max_seeds,
        settings.sign_flip_resamples,
    )
    if not np.isfinite(unit):
        return None
    z = NOISE[noise](rng, (replicates, n))
    low, high = power.sd_interval(normal_theory.spread(z), n, settings.confidence)
    t_mde = optimize.brentq(lambda e: power.t_power(e, n, level) - settings.power, 0, 64)
    rate = {
        name: float(np.mean(resampling.sign_flip_pvalue(z + e) <= level))
        for name, e in (("at_mde", unit), ("at_t_mde", t_mde))
    }
    return rate | {"range_covers": float(np.mean((low <= 1) & (1 <= high))), "mde_sd": unit}


def crossed_validity(
    noise: str,
    n: int,
    *,
    items: int,
    replicates: int,
    resamples: int,
    settings: Settings,
    rng: np.random.Generator,
    seed_sd: float,
    item_sd: float,
    cell_sd: float,
) -> dict[str, float]:
    """Coverage of the population mean over new seeds and new items by the crossed intervals.

    Item-level differences d[s, i] = seed effect + item effect + cell noise
    (``noise`` law for the cells), population mean 0. Compares the
    variance-components interval, the pigeonhole bootstrap and the
    seeds-only first interval; ``width_*`` are mean widths over the width
    of the interval with the true standard error.
    """
    d = (
        seed_sd * rng.normal(size=(replicates, n, 1))
        + item_sd * rng.normal(size=(replicates, 1, items))
        + cell_sd * NOISE[noise](rng, (replicates, n, items))
    )
    truth_se = np.sqrt(seed_sd**2 / n + item_sd**2 / items + cell_sd**2 / (n * items))
    oracle = 2 * stats.norm.ppf(0.5 + settings.confidence / 2) * truth_se
    components = normal_theory.crossed_interval([d], np.ones((1, 1)), settings.confidence)
    boot = resampling.crossed_bootstrap_means([d], rng, resamples)[:, :, 0]
    pigeonhole = resampling.bootstrap_intervals(boot, None, ["percentile"], (settings.confidence,))[0]["percentile"]
    seeds_only = paired.seed_statistics(d.mean(axis=2), replace(settings, ci_methods=("t",)))["intervals"]
    # the seeds-only comparison: the sign-flip interval, the paired t one where that is unbounded (5 seeds or fewer)
    flip, t = seeds_only[intervals.FIRST_METHOD][0], seeds_only["t"][0]
    out = {}
    for name, ci in (
        ("components", components),
        ("pigeonhole", pigeonhole[:, 0]),
        ("seeds_only", np.where(np.isfinite(flip).all(axis=1, keepdims=True), flip, t)),
    ):
        out[name] = float(np.mean((ci[:, 0] <= 0) & (0 <= ci[:, 1])))
        out[f"width_{name}"] = float(np.mean(ci[:, 1] - ci[:, 0]) / oracle)
    return out
