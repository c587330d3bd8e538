"""Seed-matched comparisons of each arm with its reference, family by family.

For every family, arm and measure (each summary and, optionally, each
benchmark), the paired differences d_s = value(arm, s) - value(reference, s)
over the matched seeds give: the mean difference; bootstrap intervals over
seeds (percentile, BCa) and optionally a crossed seeds x items interval; the
exact sign-flip p; Holm within (family, measure) across the family's arms;
the smallest adjusted p the design can reach; equivalence within +-delta; the
minimum detectable effect and the seeds needed for a given effect.

Comparisons with the same number of seeds share one set of resamples, drawn
from ``numpy.random.default_rng([bootstrap_seed, n_seeds, purpose])``, so the
results do not depend on which other comparisons are in the config.
"""

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import multiplicity, power, resampling
from analysis.errors import AnalysisInputError

COLUMNS = [
    "family", "summary", "arm", "reference", "n_seeds", "mean_diff", "ci_low", "ci_high", "ci_method",
    "p_value", "p_holm", "reject", "min_attainable_p", "equivalent", "mde",
    "level", "sd_diff", "ci_level", "eq_low", "eq_high", "equivalence_margin", "seeds_needed", "note",
]
_SEEDS, _SIGN_FLIP, _CROSSED = 0, 1, 2  # purposes in the generator seed


@dataclass(frozen=True)
class Pair:
    """One arm against its reference: the matched seeds and the differences (seeds x measures)."""

    family: str
    reference: str
    arm: str
    diffs: pd.DataFrame


def paired_differences(values, comparisons):
    """Seed-matched differences for every (family, arm); ``values`` has index (arm, seed).

    Uses the seeds present for both arms: validation has already made the
    seed sets equal, so fewer seeds only arise from runs dropped on request.
    """
    pairs = []
    for comp in comparisons:
        ref = values.loc[comp.reference]
        for arm in comp.arms:
            mine = values.loc[arm]
            seeds = mine.index.intersection(ref.index).sort_values()
            if len(seeds) < 2:
                raise AnalysisInputError(
                    f"family {comp.family}: {arm} vs {comp.reference} has {len(seeds)} matched seed(s); "
                    f"a paired comparison needs at least 2"
                )
            pairs.append(Pair(comp.family, comp.reference, arm, mine.loc[seeds] - ref.loc[seeds]))
    return pairs


def compare(values, comparisons, settings, *, levels, items=None, measure_weights=None):
    """Run every paired comparison; return ``(table, notes)``.

    ``values``: runs (index arm, seed) x measures. ``levels``: measure ->
    ``"summary"`` or ``"benchmark"``. For the crossed seeds x items interval
    pass ``items`` (benchmark -> runs x items frame, see
    :func:`analysis.summaries.item_scores`) and ``measure_weights`` (measure x
    benchmark). ``table`` has :data:`COLUMNS`, one row per comparison,
    measure and interval method; ``notes`` are plain sentences for the report.
    """
    pairs = paired_differences(values, comparisons)
    measures = list(values.columns)
    alpha, k_of = settings.alpha, {c.family: len(c.arms) for c in comparisons}
    by_n = {}
    for i, pair in enumerate(pairs):
        by_n.setdefault(len(pair.diffs), []).append(i)

    blocks = []
    for n, members in sorted(by_n.items()):
        # rows: pair-major, measure-minor
        d = np.concatenate([pairs[i].diffs.to_numpy().T for i in members])
        stats = _seed_statistics(d, n, settings)
        if settings.item_bootstrap and items is not None:
            stats["intervals"]["crossed_percentile"] = _crossed_intervals(
                [pairs[i] for i in members], items, measure_weights, n, settings
            )
        for j, i in enumerate(members):
            rows = slice(j * len(measures), (j + 1) * len(measures))
            pair = pairs[i]
            base = pd.DataFrame({
                "family": pair.family, "summary": measures, "arm": pair.arm, "reference": pair.reference,
                "n_seeds": n, "mean_diff": stats["mean"][rows], "p_value": stats["p"][rows],
                "min_attainable_p": multiplicity.min_attainable_p(stats["p_min"], k_of[pair.family]),
                "level": [levels[m] for m in measures], "sd_diff": stats["sd"][rows],
                "equivalence_margin": settings.equivalence_margin,
            })
            for method, (ci, eq, defined) in stats["intervals"].items():
                block = base.assign(
                    ci_method=method, ci_level=settings.confidence,
                    ci_low=ci[rows, 0], ci_high=ci[rows, 1], eq_low=eq[rows, 0], eq_high=eq[rows, 1],
                    equivalent=power.equivalent(eq[rows], settings.equivalence_margin),
                    note=np.where(defined[rows], "", "BCa undefined (no spread in the bootstrap); "
                                                     "percentile interval shown"),
                )
                blocks.append(block)
    table = pd.concat(blocks, ignore_index=True)

    # power at the family's first Holm level alpha / k, vectorized over all rows at once
    first_level = alpha / table["family"].map(k_of).to_numpy()
    sd, n_seeds = table["sd_diff"].to_numpy(), table["n_seeds"].to_numpy()
    limits = {"power": settings.power, "max_exact": settings.exact_max_seeds,
              "resamples": settings.sign_flip_resamples}
    table["mde"] = power.minimum_detectable_effect(sd, n_seeds, level=first_level, **limits)
    table["seeds_needed"] = power.seeds_needed(settings.power_effect, sd, level=first_level, **limits)

    table = _with_holm(table, alpha)
    rank = {"family": [c.family for c in comparisons], "level": ["summary", "benchmark"], "summary": measures,
            "arm": list(dict.fromkeys(a for c in comparisons for a in c.arms)),
            "ci_method": list(dict.fromkeys(table["ci_method"]))}
    table = table.sort_values(
        list(rank), key=lambda col: col.map({v: i for i, v in enumerate(rank[col.name])}), kind="stable"
    )[COLUMNS].reset_index(drop=True)
    return table, _design_notes(table, k_of, settings)


def _with_holm(table, alpha):
    """Add p_holm and reject: Holm within (family, measure) across the family's arms.

    Each (family, measure, arm) has one p, shared by its interval-method rows.
    """
    first = table.drop_duplicates(["family", "summary", "arm"])
    adjusted = []
    for (family, measure), group in first.groupby(["family", "summary"], sort=False):
        reject, p_holm = multiplicity.holm(group["p_value"].to_numpy(), alpha)
        adjusted.append(pd.DataFrame({"family": family, "summary": measure, "arm": group["arm"],
                                      "p_holm": p_holm, "reject": reject}))
    return table.merge(pd.concat(adjusted), on=["family", "summary", "arm"], how="left")


def _design_notes(table, k_of, settings):
    """Plain sentences on what the seed counts allow, and on BCa fallbacks."""
    notes = []
    for family, group in table.groupby("family", sort=False):
        for n in sorted(group["n_seeds"].unique()):
            p_min = float(resampling.min_sign_flip_pvalue(
                n, max_exact=settings.exact_max_seeds, resamples=settings.sign_flip_resamples))
            statement = multiplicity.attainability_statement(int(n), k_of[family], p_min, settings.alpha, family)
            if statement:
                notes.append(statement)
    for n in sorted(table["n_seeds"].unique()):
        cover = float(resampling.normal_theory_coverage(n, settings.confidence))
        if cover < settings.confidence - 0.01:
            notes.append(
                f"With {n} seeds the bootstrap intervals are too narrow: a nominal {settings.confidence:.0%} "
                f"percentile interval covers about {cover:.0%} for normal differences (analysis/README.md "
                f"has measured coverage), so read intervals and equivalence verdicts as descriptive; "
                f"the sign-flip p-values are exact."
            )
    fallback = table[table["note"] != ""]
    if len(fallback):
        notes.append(f"BCa was undefined for {len(fallback)} comparison(s) (all paired differences equal); "
                     f"their 'bca' rows show the percentile interval (see the note column).")
    return notes


def _seed_statistics(d, n, settings):
    """Mean, sd, sign-flip p and interval per method for the rows of ``d`` (K x n)."""
    rng = np.random.default_rng([settings.bootstrap_seed, n, _SEEDS])
    boot = resampling.bootstrap_means(d, resampling.resample_counts(rng, n, settings.resamples))
    found, bca_defined = resampling.bootstrap_intervals(boot, d, settings.ci_methods, _levels(settings))
    always = np.ones(len(d), dtype=bool)
    intervals = {m: (ci[:, 0], ci[:, 1], bca_defined if m == "bca" else always) for m, ci in found.items()}
    p = resampling.sign_flip_pvalue(
        d, max_exact=settings.exact_max_seeds, resamples=settings.sign_flip_resamples,
        rng=np.random.default_rng([settings.bootstrap_seed, n, _SIGN_FLIP]),
    )
    p_min = resampling.min_sign_flip_pvalue(n, max_exact=settings.exact_max_seeds,
                                            resamples=settings.sign_flip_resamples)
    return {"mean": d.mean(axis=1), "sd": d.std(axis=1, ddof=1), "p": p, "p_min": p_min,
            "intervals": intervals}


def _crossed_intervals(pairs, items, measure_weights, n, settings):
    """Crossed seeds x items percentile intervals, rows pair-major and measure-minor like the seed rows."""
    benchmarks = list(measure_weights.columns)
    item_diffs = []
    for benchmark in benchmarks:
        frame = items[benchmark]
        item_diffs.append(np.stack([
            frame.loc[pair.arm].loc[pair.diffs.index].to_numpy()
            - frame.loc[pair.reference].loc[pair.diffs.index].to_numpy()
            for pair in pairs
        ]))
    rng = np.random.default_rng([settings.bootstrap_seed, n, _CROSSED])
    per_benchmark = resampling.crossed_bootstrap_means(item_diffs, rng, settings.resamples)  # (P, R, B)
    boot = per_benchmark @ measure_weights.to_numpy().T  # (P, R, M)
    boot = boot.transpose(0, 2, 1).reshape(-1, settings.resamples)
    ci = resampling.bootstrap_intervals(boot, None, ["percentile"], _levels(settings))[0]["percentile"]
    return ci[:, 0], ci[:, 1], np.ones(len(boot), dtype=bool)


def _levels(settings):
    """The reported interval's confidence, and 1 - 2 alpha for equivalence (TOST at alpha)."""
    return settings.confidence, 1 - 2 * settings.alpha
