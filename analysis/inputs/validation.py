"""Validation of a tidy scores table against the config: one line naming the rows of each problem."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import pandas as pd

from armlab.analysis.errors import AnalysisInputError, describe_rows
from armlab.analysis.inputs.tidy import COUNT_TOLERANCE, coerce_tidy
from armlab.contract import COLUMNS, RUN, duplicated_keys

if TYPE_CHECKING:
    from armlab.analysis.config import Comparison


def validate_scores(
    frame: pd.DataFrame,
    *,
    experiment: str,
    comparisons: Iterable[Comparison],
    benchmarks: dict[str, str] | None = None,
    drop_incomplete: bool = False,
    nested_seeds: bool = False,
    source: str = "scores",
    unpaired: bool = False,
    common_seeds_only: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check a tidy table before any computation; return ``(frame, dropped)``.

    Errors (each naming the rows): missing columns, one sample count without
    the other, non-numeric scores, seeds or counts, or an ``n_samples`` that
    is not a whole number (:func:`coerce_tidy`); missing values; scores
    outside [0, 1]; ``n_samples`` below 1; ``n_correct`` outside
    [0, n_samples]; ``score`` differing from ``n_correct / n_samples`` by more
    than 1e-9;
    duplicate (experiment, arm, seed, benchmark, item); another experiment's
    rows; a benchmark with two domains, or benchmarks/domains that disagree
    with the config; compared arms without rows; an arm whose seeds differ
    from its reference's; runs (arm, seed) lacking benchmarks or items.

    Seed matching is checked only for arms in ``comparisons`` (references
    included); other arms, such as the untrained ``base``, are summarized but
    never paired. With ``drop_incomplete`` incomplete runs are removed instead
    of failing and listed in ``dropped`` (arm, seed, reason); each comparison
    then uses the seeds complete in both of its arms. The returned frame has
    exactly :data:`COLUMNS`, with ``seed`` and ``n_samples`` int64. With
    ``nested_seeds`` (a sequential design, which stops an arm before its
    reference, or after it when the arm is still open in another family) one
    of the two seed sets may hold the other. With ``unpaired`` (independent
    runs, ``analysis.pairing: unpaired``) seeds are not matched at all. With
    ``common_seeds_only`` the runs of compared arms whose seed some compared
    arm lacks are removed and listed in ``dropped``.
    """

    def fail(problem: str, bad: pd.Series) -> NoReturn:
        raise AnalysisInputError(f"{source}: {problem} in\n{describe_rows(frame[bad], COLUMNS)}")

    frame = coerce_tidy(frame, source)
    if frame.empty:
        raise AnalysisInputError(f"{source}: no score rows")
    missing = frame.isna().any(axis=1)
    if missing.any():
        fail("missing values (NaN or empty cells)", missing)
    out_of_range = ~frame["score"].between(0.0, 1.0)
    if out_of_range.any():
        fail(
            "scores outside [0, 1] (a score is a fraction of 1: a converter reading percentages divides them by 100)",
            out_of_range,
        )
    frame = frame.astype({"n_samples": "int64"})
    no_samples = frame["n_samples"] < 1
    if no_samples.any():
        fail("n_samples below 1 (expected a whole number >= 1: the answers sampled per item)", no_samples)
    correct_out_of_range = ~frame["n_correct"].between(0.0, frame["n_samples"])
    if correct_out_of_range.any():
        fail("n_correct outside [0, n_samples] (the number of correct answers)", correct_out_of_range)
    inconsistent = (frame["score"] - frame["n_correct"] / frame["n_samples"]).abs() > COUNT_TOLERANCE
    if inconsistent.any():
        fail(
            f"score differs from n_correct / n_samples by more than {COUNT_TOLERANCE} (score is the mean "
            "correctness over the item's answers)",
            inconsistent,
        )
    # every later check groups by these columns: factorize each once (grouping by strings was most of the time)
    factorized = {column: pd.factorize(frame[column], sort=True) for column in ("arm", "seed", "benchmark", "item")}
    duplicated = duplicated_keys(frame, {column: codes for column, (codes, _) in factorized.items()})
    if duplicated.any():
        fail("duplicate rows for the same (experiment, arm, seed, benchmark, item)", duplicated)
    foreign = frame["experiment"] != experiment
    if foreign.any():
        fail(f"rows of another experiment than {experiment!r}", foreign)
    frame = frame.astype({"seed": "int64"})

    domains = dict(sorted(_values_by_key(factorized["benchmark"], pd.factorize(frame["domain"])).items()))
    mixed = {benchmark: names for benchmark, names in domains.items() if len(names) > 1}
    if mixed:
        raise AnalysisInputError(f"{source}: benchmark(s) with more than one domain: {mixed}")
    if benchmarks is not None:
        found = {benchmark: names[0] for benchmark, names in domains.items()}
        absent, extra = sorted(set(benchmarks) - set(found)), sorted(set(found) - set(benchmarks))
        wrong = {b: (found[b], d) for b, d in benchmarks.items() if b in found and found[b] != d}
        if absent or extra or wrong:
            raise AnalysisInputError(
                f"{source}: benchmarks disagree with the config: missing {absent}, not in config {extra}, "
                f"domain (scores, config) {wrong}"
            )

    seeds = {
        arm: {int(s) for s in found} for arm, found in _values_by_key(factorized["arm"], factorized["seed"]).items()
    }
    unmatched = pd.DataFrame(columns=[*RUN, "reason"])
    if common_seeds_only:
        compared = [a for comp in comparisons for a in (comp.reference, *comp.arms) if a in seeds]
        common = set.intersection(*(seeds[a] for a in compared)) if compared else set()
        if compared and not common:
            ran = "; ".join(f"{arm!r} {sorted(seeds[arm])[:8]}" for arm in dict.fromkeys(compared))
            raise AnalysisInputError(
                f"{source}: analysis.common_seeds_only: no seed was run by every compared arm ({ran}), so no run is "
                f"left to pair; run the missing seeds, or compare the arms unpaired (analysis.pairing: unpaired)"
            )
        unmatched = pd.DataFrame(
            [
                (arm, seed, f"seed {seed} was not run by every compared arm (analysis.common_seeds_only)")
                for arm in dict.fromkeys(compared)
                for seed in sorted(seeds[arm] - common)
            ],
            columns=[*RUN, "reason"],
        ).astype({"seed": "int64"})
        seeds |= {arm: seeds[arm] & common for arm in compared}
        kept = ~(frame["arm"].isin(compared) & ~frame["seed"].isin(common)).to_numpy()
        frame, factorized = (
            frame[kept],
            {column: (codes[kept], labels) for column, (codes, labels) in factorized.items()},
        )
    for comp in comparisons:
        absent = [a for a in (comp.reference, *comp.arms) if a not in seeds]
        if absent:
            raise AnalysisInputError(
                f"{source}: family {comp.family}: arm(s) {absent} have no scores; arms present: {sorted(seeds)}"
            )
        for arm in () if unpaired else comp.arms:
            if nested_seeds and (seeds[arm] <= seeds[comp.reference] or seeds[comp.reference] <= seeds[arm]):
                continue  # a sequential design stops an arm before its reference, or (open elsewhere) after it
            if seeds[arm] != seeds[comp.reference]:
                raise AnalysisInputError(
                    f"{source}: family {comp.family}: seeds of arm {arm!r} {sorted(seeds[arm])} do not match "
                    f"those of its reference {comp.reference!r} {sorted(seeds[comp.reference])}: "
                    f"only in {arm}: {sorted(seeds[arm] - seeds[comp.reference])}, "
                    f"only in {comp.reference}: {sorted(seeds[comp.reference] - seeds[arm])}"
                )

    incomplete = incomplete_runs(frame, factorized)
    if len(incomplete) and not drop_incomplete:
        lines = "\n".join(f"  arm={r.arm!r} seed={r.seed}: {r.reason}" for r in incomplete.head(10).itertuples())
        more = f"\n  ... and {len(incomplete) - 10} more" if len(incomplete) > 10 else ""
        raise AnalysisInputError(
            f"{source}: {len(incomplete)} run(s) lack benchmarks or items (analysis.drop_incomplete: true "
            f"drops them and lists them):\n{lines}{more}"
        )
    if len(incomplete):
        bad = pd.MultiIndex.from_frame(frame[RUN]).isin(pd.MultiIndex.from_frame(incomplete[RUN]))
        frame = frame[~bad]
    return frame, pd.concat([unmatched, incomplete], ignore_index=True) if len(unmatched) else incomplete


def _values_by_key(key: tuple[np.ndarray, pd.Index], value: tuple[np.ndarray, pd.Index]) -> dict:
    """Each distinct key's distinct values, in order of first appearance (``key``, ``value``: ``pd.factorize``).

    On integer codes: grouping by the string columns was most of the validation's time on large tables.
    """
    (key_codes, keys), (value_codes, values) = key, value
    pairs = pd.unique(key_codes.astype(np.int64) * len(values) + value_codes)
    found: dict[Any, list[Any]] = {}
    for k, v in zip(pairs // len(values), pairs % len(values)):
        found.setdefault(keys[k], []).append(values[v])
    return found


def incomplete_runs(frame: pd.DataFrame, factorized: dict | None = None) -> pd.DataFrame:
    """Runs (arm, seed) that lack a benchmark, or some of a benchmark's items.

    A benchmark's item set is the union over all runs; returns a frame with
    columns arm, seed, reason (empty when every run is complete), runs in
    (arm, seed) order. Counted on integer codes, as :func:`_values_by_key` (``factorized``: column ->
    ``pd.factorize(..., sort=True)`` of arm, seed, benchmark and item, when already computed).
    """
    factorized = factorized or {c: pd.factorize(frame[c], sort=True) for c in ("arm", "seed", "benchmark", "item")}
    (arm_codes, arms), (seed_codes, seeds) = factorized["arm"], factorized["seed"]
    (bench_codes, benchmarks), (item_codes, items) = factorized["benchmark"], factorized["item"]
    n_bench = len(benchmarks)
    cells = pd.unique(bench_codes.astype(np.int64) * len(items) + item_codes)
    items_per_benchmark = np.bincount(cells // len(items), minlength=n_bench)
    run_codes = arm_codes.astype(np.int64) * len(seeds) + seed_codes
    runs = np.unique(run_codes)
    counts = np.bincount(run_codes * n_bench + bench_codes, minlength=(runs.max() + 1) * n_bench)
    counts = counts.reshape(-1, n_bench)[runs]
    short = counts < items_per_benchmark
    records = []
    for r in np.flatnonzero(short.any(axis=1)):
        arm, seed = arms[runs[r] // len(seeds)], int(seeds[runs[r] % len(seeds)])
        lacking = np.flatnonzero(short[r])
        absent = [benchmarks[b] for b in lacking if counts[r, b] == 0]
        partial = [
            f"{benchmarks[b]} ({counts[r, b]} of {items_per_benchmark[b]} items)" for b in lacking if counts[r, b] > 0
        ]
        reasons = [
            f"missing benchmark(s) {absent}" if absent else None,
            f"incomplete {', '.join(partial)}" if partial else None,
        ]
        reason = "; ".join(filter(None, reasons))
        records.append((arm, seed, reason))
    return pd.DataFrame(sorted(records, key=lambda row: row[:2]), columns=[*RUN, "reason"])
