"""Seed-matched comparisons of each arm with its reference, family by family.

For every family, arm and measure (each summary, each statistic of
:mod:`armlab.analysis.stats.statistics` and, optionally, each benchmark), the paired
differences d_s = value(arm, s) - value(reference, s) over the matched seeds
give: the mean difference; the exact sign-flip p and the interval that
inverts the same test (the paired t interval where no data could make it
reject), then the other intervals the config names (:mod:`armlab.analysis.stats.intervals`:
paired t, percentile and BCa bootstrap, crossed seeds x items); the
family-wise adjusted p (Holm across
arms on the primary summary, the other cells gatekept behind it, see
:mod:`armlab.analysis.stats.multiplicity`) and the smallest one the design can reach;
equivalence within +-delta by an exact sign-flip TOST (or a paired t-TOST), its p-values under the same
gatekept Holm (the secondary cells tested once every arm is equivalent on the primary summary);
the minimum detectable effect and the seeds needed for a given effect, from
the sign-flip test's own power, with a range for the uncertainty of the
spread.

Comparisons with the same number of seeds share one set of resamples
(:mod:`armlab.analysis.stats.intervals`), so the results do not depend on which other
comparisons are in the config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from armlab.analysis.design import validity
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import intervals, multiplicity, normal_theory, power, resampling

if TYPE_CHECKING:
    from armlab.analysis.config import Comparison
    from armlab.analysis.settings import Settings

COLUMNS = [
    "family",
    "measure",
    "arm",
    "reference",
    "n_seeds",
    "mean_diff",
    "ci_low",
    "ci_high",
    "ci_method",
    "p_value",
    "p_holm",
    "reject",
    "min_attainable_p",
    "equivalent",
    "mde",
    "level",
    "sd_diff",
    "ci_level",
    "eq_low",
    "eq_high",
    "equivalence_margin",
    "seeds_needed",
    "note",
    "stage",
    "equivalence_method",
    "p_equivalence",
    "equivalence_attainable",
    "mde_low",
    "mde_high",
    "seeds_needed_low",
    "seeds_needed_high",
    "higher_is_better",
    "decision_level",
    "decision_low",
    "decision_high",
    "pairing",
    "n_reference_seeds",
    "p_equivalence_holm",
    "eq_decision_level",
    "eq_decision_low",
    "eq_decision_high",
]
NOT_WEIGHTED = "no crossed interval: not a weighted mean of benchmarks"


@dataclass(frozen=True)
class Pair:
    """One arm against its reference: the matched seeds and the differences (seeds x measures)."""

    family: str
    reference: str
    arm: str
    diffs: pd.DataFrame


@dataclass(frozen=True)
class Independent:
    """One arm against its reference with runs not matched by seed (``analysis.pairing: unpaired``)."""

    family: str
    reference: str
    arm: str
    runs: pd.DataFrame  # the arm's runs x measures
    reference_runs: pd.DataFrame


def independent_samples(values: pd.DataFrame, comparisons: Sequence[Comparison]) -> list[Independent]:
    """Every (family, arm) as two independent samples of runs; ``values`` has index (arm, seed)."""
    samples = []
    for comp in comparisons:
        ref = values.loc[comp.reference]
        for arm in comp.arms:
            mine = values.loc[arm]
            if min(len(mine), len(ref)) < 2:
                raise AnalysisInputError(
                    f"family {comp.family}: {arm} has {len(mine)} run(s) and {comp.reference} {len(ref)}; "
                    f"an unpaired comparison needs at least 2 of each"
                )
            samples.append(Independent(comp.family, comp.reference, arm, mine, ref))
    return samples


def _sizes(sample: Pair | Independent) -> tuple[int, int]:
    """(runs of the arm, runs of the reference): the matched seeds twice when paired."""
    if isinstance(sample, Independent):
        return len(sample.runs), len(sample.reference_runs)
    return len(sample.diffs), len(sample.diffs)


def _block(samples: Sequence[Pair | Independent], settings: Settings) -> intervals.Block | intervals.UnpairedBlock:
    """One interval block of samples of equal sizes, rows sample-major and measure-minor."""

    def stacked(frames: Sequence[pd.DataFrame]) -> np.ndarray:
        # numpy's row sums depend on the memory layout, so one fixed layout (column-major, as a matrix product's
        # frame gives) keeps results independent of how values was built
        return np.asfortranarray(np.concatenate([f.to_numpy().T for f in frames]))

    # one pairing per analysis: every sample is of the first one's kind
    if isinstance(samples[0], Independent):
        independent = cast(Sequence[Independent], samples)
        x, y = stacked([s.runs for s in independent]), stacked([s.reference_runs for s in independent])
        return intervals.UnpairedBlock(x, y, exact=settings.exact_test(), seed=settings.bootstrap_seed)
    return intervals.Block(stacked([s.diffs for s in cast(Sequence[Pair], samples)]), **settings.interval_options())


def paired_differences(values: pd.DataFrame, comparisons: Sequence[Comparison]) -> list[Pair]:
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


def compare(
    values: pd.DataFrame,
    comparisons: Sequence[Comparison],
    settings: Settings,
    *,
    levels: Mapping[str, str],
    higher_is_better: Mapping[str, bool] | None = None,
    items: Mapping[str, pd.DataFrame] | None = None,
    measure_weights: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Run every paired comparison; return ``(table, notes)``.

    ``values``: runs (index arm, seed) x measures, the primary summary first.
    ``levels``: measure -> ``"summary"`` or ``"benchmark"``;
    ``higher_is_better``: measure -> bool (default True), which sign of the
    difference is "better". For the crossed seeds x items intervals pass
    ``items`` (benchmark -> runs x items frame, see
    :func:`armlab.analysis.comparisons.summaries.item_scores`) and ``measure_weights`` (weighted
    measure x benchmark; other measures get no crossed interval).
    ``table`` has :data:`COLUMNS`, one row per comparison, measure and
    interval method; ``notes`` are plain sentences for the report.
    """
    unpaired = settings.pairing == "unpaired"
    pairs: Sequence[Pair | Independent] = (
        independent_samples(values, comparisons) if unpaired else paired_differences(values, comparisons)
    )
    measures = list(values.columns)
    by_n: dict[tuple[int, int], list[int]] = {}
    for i, pair in enumerate(pairs):
        by_n.setdefault(_sizes(pair), []).append(i)

    blocks = []
    for (n, n_reference), members in sorted(by_n.items()):
        stats = block_statistics(_block([pairs[i] for i in members], settings), settings)
        if settings.item_bootstrap and items is not None:
            stats["intervals"] |= _crossed_intervals(  # paired only (config): the samples are Pairs
                cast(list[Pair], [pairs[i] for i in members]), items, measure_weights, measures, settings
            )
        for j, i in enumerate(members):
            rows = slice(j * len(measures), (j + 1) * len(measures))
            pair = pairs[i]
            base = pd.DataFrame(
                {
                    "family": pair.family,
                    "measure": measures,
                    "arm": pair.arm,
                    "reference": pair.reference,
                    "n_seeds": n,
                    "mean_diff": stats["mean"][rows],
                    "p_value": stats["p"][rows],
                    "level": [levels[m] for m in measures],
                    "sd_diff": stats["sd"][rows],
                    "ci_level": settings.confidence,
                    "equivalence_margin": settings.equivalence_margin,
                    "equivalence_method": settings.equivalence_test,
                    "p_equivalence": stats["p_eq"][rows],
                    "eq_low": stats["eq"][rows, 0],
                    "eq_high": stats["eq"][rows, 1],
                    "higher_is_better": [(higher_is_better or {}).get(m, True) for m in measures],
                    "pairing": settings.pairing,
                    "n_reference_seeds": n_reference,
                }
            )
            for method, (ci, note) in stats["intervals"].items():
                blocks.append(base.assign(ci_method=method, ci_low=ci[rows, 0], ci_high=ci[rows, 1], note=note[rows]))
    table = _with_family_procedure(pd.concat(blocks, ignore_index=True), measures[0], settings)
    table = _with_decision_intervals(table, pairs, settings)
    table = _with_power(table, settings)
    rank = {
        "family": [c.family for c in comparisons],
        "level": ["summary", "benchmark"],
        "measure": measures,
        "arm": list(dict.fromkeys(a for c in comparisons for a in c.arms)),
        "ci_method": list(dict.fromkeys(table["ci_method"])),
    }
    table = table.sort_values(
        list(rank), key=lambda col: col.map({v: i for i, v in enumerate(rank[col.name])}), kind="stable"
    )[COLUMNS].reset_index(drop=True)
    return table, _design_notes(table, settings)


def compare_screen(
    values: pd.DataFrame,
    comparisons: Sequence[Comparison],
    settings: Settings,
    *,
    levels: Mapping[str, str],
    higher_is_better: Mapping[str, bool],
) -> pd.DataFrame:
    """A screen's comparison of per-run ``values`` (the unparsed answers' shares, the contamination screen's
    differences): :func:`compare` with its tests and gatekept Holm, under the first interval method only and
    without the item bootstrap, in a family of tests of its own (never the accuracy's)."""
    one_method = replace(settings, ci_methods=settings.ci_methods[:1], item_bootstrap=False)
    return compare(values, comparisons, one_method, levels=levels, higher_is_better=higher_is_better)[0]


def screen_fields(table: pd.DataFrame) -> dict[str, pd.Series]:
    """The columns a screen's table (``unparsed.csv``, ``contamination.csv``) takes from :func:`compare_screen`'s:
    the cell (``measure`` as ``benchmark``), the difference, its interval and test, and the decision interval."""
    named = ["family", "arm", "reference", "level", "n_seeds", "mean_diff", "ci_low", "ci_high", "ci_method",
             "p_value", "p_holm", "decision_level", "decision_low", "decision_high"]  # fmt: skip
    return {"benchmark": table["measure"], **{name: table[name] for name in named}}


def _with_family_procedure(table: pd.DataFrame, primary: str, settings: Settings) -> pd.DataFrame:
    """Add stage, p_holm, reject, min_attainable_p, p_equivalence_holm, equivalent and equivalence_attainable under
    the family's gatekept Holm.

    Each (family, measure, arm) has one p, shared by its interval-method
    rows. Stage ``primary``: the primary summary, Holm across the family's
    arms; ``secondary``: every other cell, Holm over all of them once every
    primary comparison rejects (:func:`armlab.analysis.stats.multiplicity.gatekept_holm`).
    The equivalence TOST's p-values go through the same procedure on their own: Holm across the arms on the
    primary summary, and over the secondary cells once every arm is equivalent on it, so that the chance of any
    false "equivalent" in a family is at most alpha too (docs/statistics.md §7). ``equivalence_attainable``: whether
    any data could pass the TOST at the cell's first Holm step (alpha / k, or alpha / max(k, m) behind the gate).
    """
    table = table.assign(stage=np.where(table["measure"] == primary, "primary", "secondary"))
    cells = table.drop_duplicates(["family", "measure", "arm"])
    adjusted = []
    for family, group in cells.groupby("family", sort=False):
        first, rest = group[group["stage"] == "primary"], group[group["stage"] == "secondary"]
        (reject_1, holm_1), (reject_2, holm_2) = multiplicity.gatekept_holm(
            first["p_value"].to_numpy(), rest["p_value"].to_numpy(), settings.alpha
        )
        (equivalent_1, eq_holm_1), (equivalent_2, eq_holm_2) = multiplicity.gatekept_holm(
            first["p_equivalence"].to_numpy(), rest["p_equivalence"].to_numpy(), settings.alpha
        )
        k, m = len(first), len(rest)
        sizes = group["n_seeds"].to_numpy(), group["n_reference_seeds"].to_numpy()
        p_min, p_min_equivalence = smallest_p(*sizes, settings), smallest_equivalence_p(*sizes, settings)
        secondary = (group["stage"] == "secondary").to_numpy()
        tests = np.where(secondary, max(k, m), k)  # the first Holm step of each stage, behind its gate
        adjusted.append(
            pd.DataFrame(
                {
                    "family": family,
                    "measure": np.concatenate([first["measure"], rest["measure"]]),
                    "arm": np.concatenate([first["arm"], rest["arm"]]),
                    "p_holm": np.concatenate([holm_1, holm_2]),
                    "reject": np.concatenate([reject_1, reject_2]),
                    "p_equivalence_holm": np.concatenate([eq_holm_1, eq_holm_2]),
                    "equivalent": np.concatenate([equivalent_1, equivalent_2]),
                }
            ).merge(
                pd.DataFrame(
                    {
                        "measure": group["measure"],
                        "arm": group["arm"],
                        "min_attainable_p": multiplicity.min_attainable_p(p_min, tests),
                        "equivalence_attainable": multiplicity.min_attainable_p(p_min_equivalence, tests)
                        <= settings.alpha,
                        "power_level": settings.alpha / np.where(secondary, max(m, 1), k),
                    }
                ),
                on=["measure", "arm"],
            )
        )
    return table.merge(pd.concat(adjusted), on=["family", "measure", "arm"], how="left")


def smallest_p(n: np.ndarray | int, n_reference: np.ndarray | int, settings: Settings) -> np.ndarray:
    """Smallest two-sided p the deciding test can give: sign-flip on n seeds, or (unpaired) permutation of runs."""
    return resampling.min_pvalue(
        n,
        n_reference if settings.pairing == "unpaired" else 0,
        max_exact=settings.exact_max_seeds,
        resamples=settings.sign_flip_resamples,
    )


def smallest_equivalence_p(n: np.ndarray | int, n_reference: np.ndarray | int, settings: Settings) -> np.ndarray:
    """Smallest p the equivalence TOST can give: the exact test's smallest one-sided p (half the two-sided one of
    :func:`smallest_p`), or 0 for the paired t-TOST, which any data with little enough spread pass."""
    if settings.equivalence_test == "t":
        return np.zeros(np.shape(n))
    return smallest_p(n, n_reference, settings) / 2


def decision_confidence(p_values: np.ndarray, reject: np.ndarray, alpha: float) -> float:
    """The confidence at which two-sided intervals agree with Holm's decisions over one set of p-values.

    Holm (1979) rejects the r smallest of m p-values; the next one exceeds
    alpha / (m - r), and every rejected one is at most alpha / (m - r + 1) or
    below. So an interval inverting the same test at level alpha / (m - r)
    (alpha when all m reject) excludes 0 exactly for the rejected p-values.
    For the arms not rejected this is the level of Strassburger & Bretz's
    compatible bounds (2008, Stat. Med. 27); rejected arms get the same level,
    which keeps their intervals informative but promises no joint coverage.
    """
    m, r = len(p_values), int(np.sum(reject))
    return 1.0 - alpha / max(m - r, 1)


def _with_decision_intervals(
    table: pd.DataFrame, pairs: Sequence[Pair | Independent], settings: Settings
) -> pd.DataFrame:
    """Add the intervals shown beside each verdict, each at the level where it agrees with its Holm decisions.

    ``decision_*``: the test's two-sided interval at :func:`decision_confidence`, which excludes 0 exactly when
    the cell's ``reject`` is true. ``eq_decision_*``: the equivalence TOST's interval at 1 - 2 alpha / u, u the
    TOST Holm did not reject in that stage, which lies inside +-margin exactly when ``equivalent`` is true. Per
    family and stage (the primary summary; the gatekept secondary cells): a secondary cell whose gate stayed closed
    was never tested, so it has no interval (NaN). Unbounded where no data could make the test reject at that
    level (-inf, inf).
    """
    cells = table.drop_duplicates(["family", "measure", "arm"])[
        [
            "family", "measure", "arm", "stage", "p_value", "reject", "p_equivalence", "equivalent", "n_seeds",
            "n_reference_seeds",
        ]
    ]  # fmt: skip
    samples = {(p.family, p.arm): p for p in pairs}
    primaries = cells[cells["stage"] == "primary"].groupby("family")
    gates = {"decision": primaries["reject"].all(), "eq_decision": primaries["equivalent"].all()}
    decided_by = {"decision": ("p_value", "reject"), "eq_decision": ("p_equivalence", "equivalent")}
    columns = {f"{kind}_{end}": np.nan for kind in gates for end in ("level", "low", "high")}
    cells = cells.assign(**columns)
    for (family, stage), group in cells.groupby(["family", "stage"], sort=False):
        for kind, (p, decided) in decided_by.items():
            if stage == "primary" or gates[kind][family]:
                confidence = decision_confidence(group[p].to_numpy(), group[decided].to_numpy(), settings.alpha)
                # the TOST at one-sided level alpha / u is the (1 - 2 alpha / u) interval
                cells.loc[group.index, f"{kind}_level"] = confidence if kind == "decision" else 2 * confidence - 1
    for kind in gates:
        tested = cells[cells[f"{kind}_level"].notna()]
        for (_, _, level), group in tested.groupby(["n_seeds", "n_reference_seeds", f"{kind}_level"], sort=False):
            one_sided = (1 - level) / 2
            at_level = replace(settings, confidence=level, alpha=one_sided if kind == "eq_decision" else settings.alpha)
            chosen = [samples[(c.family, c.arm)] for c in group.itertuples()]
            block = _cells_block(chosen, list(group["measure"]), at_level)
            found = block.test["ci"] if kind == "decision" else equivalence(block, at_level)[1]
            cells.loc[group.index, [f"{kind}_low", f"{kind}_high"]] = found
    keep = ["family", "measure", "arm", *columns]
    return table.merge(cells[keep], on=["family", "measure", "arm"], how="left")


def _cells_block(
    samples: Sequence[Pair | Independent], measures: Sequence[str], settings: Settings
) -> intervals.Block | intervals.UnpairedBlock:
    """One block of the given (sample, measure) cells, one row each, with no interval method beyond the test's."""
    if settings.pairing == "unpaired":
        chosen = cast(Sequence[Independent], samples)
        x, y = (
            np.stack([getattr(s, side)[m].to_numpy() for s, m in zip(chosen, measures)])
            for side in ("runs", "reference_runs")
        )
        return intervals.UnpairedBlock(x, y, exact=settings.exact_test(), seed=settings.bootstrap_seed)
    d = np.stack([cast(Pair, s).diffs[m].to_numpy() for s, m in zip(samples, measures)])
    return intervals.Block(d, **settings.interval_options(methods=()))


def _with_power(table: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Add the deciding test's MDE and seeds needed at each cell's first Holm level, and their range.

    The range uses both ends of the ``confidence`` chi-square interval for the
    sd of the differences (unpaired: of runs within an arm, n + n_reference - 2
    degrees of freedom); all rows are computed at once.
    """
    sd, n, level = table["sd_diff"].to_numpy(), table["n_seeds"].to_numpy(), table.pop("power_level").to_numpy()
    limits: Mapping[str, Any] = settings.power_options()
    unpaired = settings.pairing == "unpaired"
    n_reference = table["n_reference_seeds"].to_numpy() if unpaired else 0
    low, high = power.sd_interval(sd, n + n_reference - 1 if unpaired else n, settings.confidence)
    columns = {}
    for suffix, spread in (("", sd), ("_low", low), ("_high", high)):
        columns[f"mde{suffix}"] = power.minimum_detectable_effect(
            spread, n, level=level, n_reference=n_reference, **limits
        )
        columns[f"seeds_needed{suffix}"] = power.seeds_needed(
            settings.power_effect, spread, level=level, unpaired=unpaired, **limits
        )
    return table.assign(**columns)


def _design_notes(table: pd.DataFrame, settings: Settings) -> list[str]:
    """Plain sentences on what the seed counts allow, which intervals to trust, and fallbacks."""
    notes = []
    unpaired = settings.pairing == "unpaired"
    cells = table.drop_duplicates(["family", "measure", "arm"])
    for family, group in cells.groupby("family", sort=False):
        k, m = int((group["stage"] == "primary").sum()), int((group["stage"] == "secondary").sum())
        for (n, n_ref), _ in group.groupby(["n_seeds", "n_reference_seeds"]):
            p_min = float(smallest_p(n, n_ref, settings))
            design, runs = None, None
            if unpaired:
                runs = f"{n} and {n_ref} unpaired runs"
                design = f"with {runs} an exact permutation test has {math.comb(int(n + n_ref), int(n))} splits"
            statement = multiplicity.attainability_statement(int(n), k, p_min, settings.alpha, family, design)
            if statement is None and m:  # the primaries can reach alpha; can the gatekept cells?
                statement = multiplicity.secondary_attainability_statement(
                    int(n), k, m, p_min, settings.alpha, family, runs
                )
            if statement:
                notes.append(statement)
            notes += _equivalence_notes(group, family, int(n), int(n_ref) if unpaired else None, k, m, settings)
    first = table[table["ci_method"] == intervals.first_method(settings.pairing)]
    for (n, n_ref), at_n in first.groupby(["n_seeds", "n_reference_seeds"]):
        if unpaired:
            notes += validity.unpaired_sentences(int(n), int(n_ref), at_n, settings)
            continue
        if (at_n["note"] != "").any():
            notes.append(validity.unbounded_sentence(int(n), settings.confidence))
        caveat = validity.bootstrap_sentence(int(n), settings.ci_methods, settings.confidence)
        if caveat:
            notes.append(caveat)
    undefined = table[table["note"] == intervals.BCA_FALLBACK]
    if len(undefined):
        notes.append(
            f"BCa was undefined for {len(undefined)} comparison(s) (all paired differences equal); "
            f"their 'bca' rows show the percentile interval (see the note column)."
        )
    unweighted = list(dict.fromkeys(table.loc[table["note"] == NOT_WEIGHTED, "measure"]))
    if unweighted:
        one = len(unweighted) == 1
        notes.append(
            f"The crossed seeds x items intervals need a weighted mean of benchmarks, which "
            f"{' and '.join(unweighted)} {'is' if one else 'are'} not: {'its' if one else 'their'} crossed "
            f"rows are empty."
        )
    flat = cells[cells["sd_diff"] == 0]
    if len(flat):
        notes.append(
            f"{len(flat)} comparison(s) have no spread (all paired differences equal): their minimum "
            f"detectable effect and seeds needed are undefined (empty)."
        )
    return notes


def _equivalence_notes(
    cells: pd.DataFrame, family: str, n: int, n_reference: int | None, k: int, m: int, settings: Settings
) -> list[str]:
    """Where no data could pass the family's gatekept equivalence TOST with n seeds (``cells``: its comparisons)."""
    at_n = cells[cells["n_seeds"] == n]
    if n_reference is not None:
        at_n = at_n[at_n["n_reference_seeds"] == n_reference]
    found = []
    for stage, tests, where in (
        ("primary", k, f" in family {family}" + (f" (Holm over its {k} arms)" if k > 1 else "")),
        ("secondary", max(k, m), f" for the {m} secondary cell(s) of family {family}, behind its gate"),
    ):
        rows = at_n[at_n["stage"] == stage]
        if len(rows) and not rows["equivalence_attainable"].all():
            found.append(
                validity.unattainable_equivalence_sentence(
                    n, settings.alpha, settings.equivalence_margin, tests, where, n_reference
                )
            )
            break  # the secondary cells cannot pass a test the primaries cannot
    return found


def seed_statistics(d: np.ndarray, settings: Settings) -> dict:
    """Mean, sd, sign-flip p, equivalence and the interval of each method for the rows of ``d`` (K x n).

    ``intervals`` maps method -> ``(ci (K, 2), note (K,))``
    (:func:`armlab.analysis.stats.intervals.seed_intervals`); a non-empty note says which
    interval was shown instead of the method's.
    """
    return block_statistics(intervals.Block(d, **settings.interval_options()), settings)


def block_statistics(block: intervals.Block | intervals.UnpairedBlock, settings: Settings) -> dict:
    """:func:`seed_statistics` of a block: paired differences, or (unpaired) two samples of runs per row."""
    p_eq, eq = equivalence(block, settings)
    return {
        "mean": block.mean,
        "sd": block.spread,
        "p": block.test["p_value"],
        "p_eq": p_eq,
        "eq": eq,
        "intervals": intervals.seed_intervals(block),
    }


def equivalence(block: intervals.Block | intervals.UnpairedBlock, settings: Settings) -> tuple[np.ndarray, np.ndarray]:
    """The configured TOST at ``settings.alpha`` of every row: ``(p, (1 - 2 alpha) interval (K, 2))``."""
    if settings.equivalence_test == "t":
        if not isinstance(block, intervals.Block):  # the config refuses t with pairing: unpaired
            raise AnalysisInputError("analysis.equivalence_test: t is a paired test; unpaired runs use sign_flip")
        return normal_theory.t_tost(block.d, settings.equivalence_margin, settings.alpha)
    return block.test["p_equivalence"], block.test["eq"]


def _crossed_intervals(
    pairs: Sequence[Pair],
    items: Mapping[str, pd.DataFrame],
    measure_weights: pd.DataFrame,
    measures: Sequence[str],
    settings: Settings,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Crossed seeds x items intervals per method, rows pair-major and measure-minor like the seed rows.

    Only measures in ``measure_weights`` (weighted means of benchmarks) have
    one; the others get an empty interval and the note :data:`NOT_WEIGHTED`.
    """
    benchmarks = list(measure_weights.columns)
    weighted = np.isin(measures, measure_weights.index)
    item_diffs = []
    for benchmark in benchmarks:
        frame = items[benchmark]
        item_diffs.append(
            np.stack(
                [
                    frame.loc[pair.arm].loc[pair.diffs.index].to_numpy()
                    - frame.loc[pair.reference].loc[pair.diffs.index].to_numpy()
                    for pair in pairs
                ]
            )
        )
    crossed = intervals.Crossed(
        item_diffs,
        measure_weights.loc[np.asarray(measures)[weighted]].to_numpy(),
        confidence=settings.confidence,
        resamples=settings.resamples,
        seed=settings.bootstrap_seed,
    )
    note = np.tile(np.where(weighted, "", NOT_WEIGHTED).astype(object), len(pairs))
    out = {}
    for method, ci in intervals.crossed_intervals(crossed, settings.crossed_methods).items():
        full = np.full((len(pairs), len(measures), 2), np.nan)
        full[:, weighted] = ci.reshape(len(pairs), int(weighted.sum()), 2)
        out[method] = (full.reshape(-1, 2), note)
    return out
