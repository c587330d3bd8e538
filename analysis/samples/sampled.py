"""Sampled evaluation in the analysis: pass@k per run, the base policy's pass@k curve, and where noise comes from.

Every function here starts from the validated tidy table (one row per run, benchmark and item, with
``n_samples`` answers of which ``n_correct`` were right) and calls the estimators of
:mod:`armlab.analysis.stats.sampling`:

- :func:`pass_at_k_per_run`: each run's pass@k for every k of ``analysis.pass_k``, weighted over benchmarks
  like the primary summary, so that each pass@k is a measure compared seed by seed like accuracy;
- :func:`versus_base`: each compared arm's pass@k curve against the base policy's (is RL narrowing what the
  base model can solve at large k?), with an interval that holds the arm's seeds and the base's own sampling noise;
- :func:`components_table`: the variance of each comparison's primary difference split into training
  seeds, the finite item set and evaluation sampling;
- :func:`allocation_table`: what one more seed and what doubling k would do to its standard error per
  job-minute, from the job times of the run and evaluation manifests (:func:`job_minutes`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from armlab import layout
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import resampling, sampling
from armlab.contract import BASE_ARM, PER_BENCHMARK_ITEM, RUN
from armlab.files import BadFile, read_json, verify_file

if TYPE_CHECKING:
    from armlab.analysis.settings import Settings


COMPONENTS = ("training", "items", "sampling")
COMPONENT_COLUMNS = [
    "family", "arm", "reference", "measure", "n_seeds", "n_items", "samples", "mean_diff",
    *(f"var_{name}" for name in COMPONENTS), "var_total", *(f"share_{name}" for name in COMPONENTS),
    "se", "training_negative", "items_negative", "sampling_method", "sampling_streams",
]  # fmt: skip
ALLOCATION_COLUMNS = [
    "family", "arm", "reference", "measure", "option", "minutes", "se", "se_after", "reduction",
    "reduction_per_minute", "recommended", "advice",
]  # fmt: skip


def measure_name(k: int) -> str:
    """The measure of pass@k in summaries.csv and comparisons.csv."""
    return f"pass@{k}"


BENCHMARK_SEPARATOR = ":"  # between benchmark and measure; a configured benchmark's name cannot hold it (NAME_PATTERN)


def benchmark_measure_name(benchmark: str, measure: str) -> str:
    """The comparisons table's name of one benchmark's pass@k or maj@k: ``<benchmark>:<measure>``."""
    return f"{benchmark}{BENCHMARK_SEPARATOR}{measure}"


def per_benchmark_measures(benchmarks: Sequence[str], settings: Settings) -> list[str]:
    """The per-benchmark pass@k (k > 1: pass@1 is the benchmark's accuracy) and maj@k the analysis compares
    (:mod:`armlab.analysis.samples.per_benchmark`). None without ``per_benchmark`` or with one benchmark, whose pass@k
    and maj@k are the summaries' own."""
    if not settings.per_benchmark or len(benchmarks) < 2:
        return []
    kinds = [measure_name(k) for k in settings.pass_k if k > 1] + [majority_name(k) for k in settings.maj_k]
    return [benchmark_measure_name(b, kind) for b in benchmarks for kind in kinds]


def check_counts(scores: pd.DataFrame, ks: Sequence[int], source: str = "scores") -> None:
    """pass@k needs per-item rows, whole counts and at least k answers per item; errors name the runs that lack them."""
    if not ks:
        return
    if (scores["item"] == PER_BENCHMARK_ITEM).any():
        raise AnalysisInputError(
            f"{source}: analysis.pass_k {list(ks)}: pass@k needs per-item sample counts; the input has "
            f"per-benchmark rows (item {PER_BENCHMARK_ITEM!r})"
        )
    fewest = scores.groupby([*RUN, "benchmark"], observed=True)["n_samples"].min()
    short = fewest[fewest < max(ks)]
    if len(short):
        shown = ", ".join(f"arm={a} seed={s} {b}: {n}" for (a, s, b), n in short.head(5).items())
        raise AnalysisInputError(
            f"{source}: analysis.pass_k: pass@{max(ks)} needs at least {max(ks)} answers per item; fewest answers "
            f"per item in {shown}{' ...' if len(short) > 5 else ''} (evaluate with eval.samples >= {max(ks)})"
        )
    fractional = scores["n_correct"] != np.round(scores["n_correct"])
    if fractional.any():
        row = scores[fractional].iloc[0]
        raise AnalysisInputError(
            f"{source}: analysis.pass_k: pass@k counts correct answers, but n_correct is {row.n_correct} for "
            f"arm={row.arm} seed={row.seed} {row.benchmark} item {row['item']} (a score that is not 0 or 1)"
        )


def pass_at_k_per_benchmark(scores: pd.DataFrame, k: int) -> pd.DataFrame:
    """pass@k of every run on every benchmark: the mean over its items of the unbiased item estimate (Chen et al.
    2021); index (arm, seed), one column per benchmark."""
    item = sampling.pass_at_k(scores["n_samples"].to_numpy(), scores["n_correct"].to_numpy(), k)
    return (
        scores[[*RUN, "benchmark"]]
        .assign(value=item)
        .groupby([*RUN, "benchmark"], observed=True)["value"]
        .mean()
        .unstack("benchmark")
    )


def pass_at_k_per_run(scores: pd.DataFrame, ks: Sequence[int], weights: pd.Series) -> pd.DataFrame:
    """pass@k of every run: :func:`pass_at_k_per_benchmark` weighted over benchmarks.

    ``weights`` maps benchmark -> weight (the primary summary's row of the weight matrix); index (arm, seed),
    one column :func:`measure_name` per k.
    """
    columns = {measure_name(k): pass_at_k_per_benchmark(scores, k)[weights.index] @ weights for k in ks}
    return pd.DataFrame(columns).sort_index()


def majority_name(k: int) -> str:
    """The measure of maj@k in summaries.csv and comparisons.csv."""
    return f"maj@{k}"


def majority_at_k(answers: pd.DataFrame, k: int) -> pd.Series:
    """maj@k of every item (self-consistency, Wang et al. 2023): among its first k answers (``sample < k``), the
    correctness of the most frequent vote; answers that do not vote (``vote`` -1: nothing extracted) are left out,
    an item without a vote scores 0, and a tie is broken uniformly at random in expectation (the mean correctness
    of the tied votes). Indexed by arm, seed, benchmark, item."""
    item = [*RUN, "benchmark", "item"]
    first = answers[answers["sample"] < k]
    votes = first[first["vote"] >= 0].groupby([*item, "vote"], observed=True)["correct"].agg(["size", "mean"])
    most = votes["size"].groupby(level=item, observed=True).transform("max")
    tied = votes.loc[votes["size"] == most, "mean"].groupby(level=item, observed=True).mean()
    every = first.groupby(item, observed=True).size().index
    return tied.reindex(every, fill_value=0.0)


def majority_at_k_per_benchmark(
    scores: pd.DataFrame, answers: pd.DataFrame | None, ks: Sequence[int], source: str = "scores"
) -> dict[int, pd.DataFrame]:
    """maj@k of every run on every benchmark: the mean over its items of :func:`majority_at_k`; per k, index (arm,
    seed) and one column per benchmark. Every item of ``scores`` needs k answers with votes in ``answers`` (the
    evaluations' answers.parquet)."""
    if not ks:
        return {}
    need = f"{source}: analysis.maj_k {list(ks)}: maj@k needs each answer's vote"
    if answers is None or "vote" not in answers.columns:
        raise AnalysisInputError(
            f"{need} (the evaluations' answers.parquet with a 'vote' column: `armlab analyze --jobs "
            f"results/<experiment>` of evaluations by this armlab)"
        )
    item = [*RUN, "benchmark", "item"]
    counts = answers[answers["sample"] < max(ks)].groupby(item, observed=True).size()
    have = counts.reindex(pd.MultiIndex.from_frame(scores[item].astype({"seed": "int64"})), fill_value=0)
    short = have[have < max(ks)]
    if len(short):
        (arm, seed, benchmark, name), n = next(iter(short.items()))
        raise AnalysisInputError(
            f"{need} among {max(ks)} answers per item; arm={arm} seed={seed} {benchmark} item {name} has {n} "
            f"(evaluate with eval.samples >= {max(ks)}; tasks of eval.lm_eval_tasks have no votes)"
        )
    per_benchmark = {}
    for k in ks:
        per_item = majority_at_k(answers, k).reindex(have.index)
        per_benchmark[k] = per_item.groupby(level=[*RUN, "benchmark"], observed=True).mean().unstack("benchmark")
    return per_benchmark


def majority_at_k_per_run(
    scores: pd.DataFrame, answers: pd.DataFrame | None, ks: Sequence[int], weights: pd.Series, source: str = "scores"
) -> pd.DataFrame:
    """maj@k of every run: :func:`majority_at_k_per_benchmark` weighted over benchmarks like the primary summary
    (``weights``: benchmark -> weight); index (arm, seed), one column :func:`majority_name` per k."""
    if not ks:
        return pd.DataFrame(index=pd.MultiIndex.from_tuples([], names=RUN))
    found = majority_at_k_per_benchmark(scores, answers, ks, source)
    return pd.DataFrame({majority_name(k): frame[weights.index] @ weights for k, frame in found.items()}).sort_index()


VERSUS_BASE_COLUMNS = [
    "arm", "k", "measure", "n_seeds", "base", "base_evaluations", "method", "base_se", "base_variance_method",
    "mean_diff", "se", "df", "p_value", "ci_low", "ci_high",
]  # fmt: skip
PAIRED_BY_SEED = "paired by seed (exact sign-flip)"
FROM_COUNTS = "base's sampling variance from its counts"
MIN_EFFECTIVE_ITEMS = 100  # below, one evaluation's counts do not tell its sampling noise (benchmarks/...validity.py)


def base_sampling_variance(scores: pd.DataFrame, ks: Sequence[int], weights: pd.Series) -> pd.DataFrame:
    """The sampling variance of the base policy's pass@k (weighted over benchmarks like the primary summary) per k:
    index k, columns ``variance``, ``df`` (its degrees of freedom) and ``items`` (the effective number of items).

    Each item's :func:`armlab.analysis.stats.sampling.pass_at_k_variance` v_i, summed over a benchmark's items
    over their number squared, weighted by the squared weights; over several evaluations of the base (seeds),
    the variance of their mean. Satterthwaite's degrees of freedom 2 V^2 / Var(V), with Var(V) bounded by the
    same sum of v_i^2 (weights and item counts to the fourth power): few items leave V itself noisy. The
    effective number of items, 1 / sum(w_b^2 / m_b), is the count of equally noisy items with the same variance.
    """
    base = scores[scores["arm"] == BASE_ARM]
    evaluations = base["seed"].nunique()
    sizes = base.groupby("benchmark", observed=True).size() / evaluations
    effective = 1.0 / float((weights**2 / sizes.reindex(weights.index)).sum())
    rows = {}
    for k in ks:
        item = sampling.pass_at_k_variance(base["n_samples"].to_numpy(), base["n_correct"].to_numpy(), k)
        grouped = (
            base[["seed", "benchmark"]].assign(value=item, square=item**2).groupby(["seed", "benchmark"], observed=True)
        )
        size = grouped.size()
        per_benchmark = (grouped["value"].sum() / size**2).unstack("benchmark")[weights.index]
        spread = (grouped["square"].sum() / size**4).unstack("benchmark")[weights.index]
        variance = float((per_benchmark @ weights**2).sum()) / evaluations**2
        noise = float((spread @ weights**4).sum()) / evaluations**4
        rows[k] = {"variance": variance, "df": 2 * variance**2 / noise if noise > 0 else np.inf, "items": effective}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["variance", "df", "items"])


def _sign_flip(d: np.ndarray, settings: Settings) -> dict[str, Any]:
    """Mean, standard error, p and interval of the exact sign-flip test of per-seed differences ``d``."""
    exact = resampling.sign_flip(
        d[None, :],
        confidence=settings.confidence,
        max_exact=settings.exact_max_seeds,
        resamples=settings.sign_flip_resamples,
        rng=np.random.default_rng([settings.bootstrap_seed, len(d)]),
    )
    return {
        "mean": d.mean(),
        "se": d.std(ddof=1) / np.sqrt(len(d)),
        "df": len(d) - 1,
        "p_value": exact["p_value"][0],
        "low": exact["ci"][0, 0],
        "high": exact["ci"][0, 1],
    }


def versus_base(
    scores: pd.DataFrame,
    per_run: pd.DataFrame,
    arms: Sequence[str],
    ks: Sequence[int],
    weights: pd.Series,
    settings: Settings,
) -> pd.DataFrame:
    """Each arm's pass@k minus the base policy's, per k, with an interval that holds the base's own sampling noise.

    The base policy is one checkpoint, but a sampled evaluation of it is one draw of its answers. Where it was
    evaluated at every seed of the arm (the workflow does so under sampling, on the arms' streams), each seed's
    difference arm - base holds both sides' noise, and the p-value and interval are the exact sign-flip test's over
    seeds, as for every comparison (``method`` :data:`PAIRED_BY_SEED`; unbounded where the seeds cannot reject).
    Evaluated once (results from elsewhere), its sampling variance is estimated from its per-item counts
    (:func:`base_sampling_variance`, never below the truth in expectation) and added to the seeds'
    (:func:`armlab.analysis.stats.sampling.difference_from_estimate`, Welch-Satterthwaite; :data:`FROM_COUNTS`),
    unless fewer than :data:`MIN_EFFECTIVE_ITEMS` effective items leave that estimate unreliable (no interval;
    ``method`` says so). Empty when the scores have no base arm.
    """
    arms_present = per_run.index.get_level_values("arm")
    if BASE_ARM not in arms_present or not ks:
        return pd.DataFrame(columns=VERSUS_BASE_COLUMNS)
    base_runs = per_run.loc[BASE_ARM]
    base_variance = base_sampling_variance(scores, ks, weights)
    base_samples = sorted(set(scores.loc[scores["arm"] == BASE_ARM, "n_samples"].astype(int)))
    rows = []
    for arm in arms:
        values = per_run.loc[arm]
        paired = len(values) >= 2 and set(values.index) <= set(base_runs.index)
        for k in ks:
            name, counts = measure_name(k), base_variance.loc[k]
            if paired:
                base = base_runs.loc[values.index, name]
                found = _sign_flip(values[name].to_numpy() - base.to_numpy(), settings)
                method, base_se = PAIRED_BY_SEED, base.std(ddof=1) / np.sqrt(len(base))
            else:
                base = base_runs[name]
                found = sampling.difference_from_estimate(
                    values[name].to_numpy(), base.mean(), counts["variance"], settings.confidence, counts["df"]
                )
                method, base_se = FROM_COUNTS, np.sqrt(counts["variance"])
                if counts["items"] < MIN_EFFECTIVE_ITEMS:
                    found |= {name: np.array(np.nan) for name in ("se", "df", "p_value", "low", "high")}
                    method = (
                        f"not estimated: the base evaluated once on {counts['items']:.0f} effective items "
                        f"(fewer than {MIN_EFFECTIVE_ITEMS}); evaluate it at the arm's seeds"
                    )
            rows.append(
                {
                    "arm": arm,
                    "k": k,
                    "measure": name,
                    "n_seeds": len(values),
                    "base": float(base.mean()),
                    "base_evaluations": len(base),
                    "method": method,
                    "base_se": float(base_se),
                    "base_variance_method": ""
                    if paired
                    else "; ".join(dict.fromkeys(sampling.pass_at_k_variance_method(n, k) for n in base_samples)),
                    "mean_diff": float(found["mean"]),
                    "se": float(found["se"]),
                    "df": float(found["df"]),
                    "p_value": float(found["p_value"]),
                    "ci_low": float(found["low"]),
                    "ci_high": float(found["high"]),
                }
            )
    return pd.DataFrame(rows, columns=VERSUS_BASE_COLUMNS)


@dataclass(frozen=True)
class _Cells:
    """One benchmark's item cells of some arms: score, n_samples and n_correct as (arm, seed, item) arrays."""

    arms: dict[str, int]
    seeds: dict[int, int]
    items: pd.Index  # sorted
    values: np.ndarray  # (arms, seeds, items, 3): score, n_samples, n_correct; NaN where a run lacks the item

    def of(self, arm: str, seeds: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(score, sampling variance) of one arm's items at ``seeds``, both (seeds x items) in item order."""
        table = self.values[self.arms[arm], [self.seeds[s] for s in seeds]]
        n, c = table[..., 1], table[..., 2]
        binary = np.all(c == np.round(c))
        variance = sampling.cell_sampling_variance(n, c) if binary else np.full(n.shape, np.nan)
        return table[..., 0], variance


def _cubes(
    frame: pd.DataFrame, arms: Collection[str], axes: Sequence[str], values: Sequence[str]
) -> Iterator[tuple[str, dict[str, pd.Index], np.ndarray]]:
    """Per benchmark, ``values`` of the rows of ``arms`` as an array over ``axes`` (arm, seed, item, ...) plus one
    last axis for the values, NaN where a row is absent: ``(benchmark, {axis: labels}, array)``.

    Every axis but item is shared by the benchmarks; items are the benchmark's own, sorted. One pass over the
    table: selecting each (arm, benchmark) from the whole table again was nearly all of the analysis's time on
    large grids and answer-level tables.
    """
    codes, labels = {}, {}
    for axis in (*axes, "benchmark"):
        codes[axis], labels[axis] = pd.factorize(frame[axis], sort=axis not in ("arm", "benchmark"))
    keep = np.isin(codes["arm"], [i for i, name in enumerate(labels["arm"]) if name in arms])
    data = frame[list(values)].to_numpy(dtype=float)
    if not keep.all():
        codes, data = {axis: c[keep] for axis, c in codes.items()}, data[keep]
    for b, benchmark in enumerate(labels["benchmark"]):
        where = np.flatnonzero(codes["benchmark"] == b)
        if not len(where):
            continue
        items, item_codes = np.unique(codes["item"][where], return_inverse=True)
        shape = [len(items) if axis == "item" else len(labels[axis]) for axis in axes]
        cube = np.full((*shape, len(values)), np.nan)
        cube[tuple(item_codes if axis == "item" else codes[axis][where] for axis in axes)] = data[where]
        yield (
            str(benchmark),
            {axis: pd.Index(labels[axis][items] if axis == "item" else labels[axis]) for axis in axes},
            cube,
        )


def _positions(labels: pd.Index, cast: type) -> dict:
    return {cast(label): i for i, label in enumerate(labels)}


def _benchmark_cells(scores: pd.DataFrame, arms: Collection[str]) -> dict[str, _Cells]:
    """Per benchmark, the item cells of ``arms`` (:class:`_Cells`), from one pass over the table (:func:`_cubes`)."""
    axes, values = ("arm", "seed", "item"), ("score", "n_samples", "n_correct")
    return {
        benchmark: _Cells(_positions(labels["arm"], str), _positions(labels["seed"], int), labels["item"], cube)
        for benchmark, labels, cube in _cubes(scores, arms, axes, values)
    }


@dataclass(frozen=True)
class _Verdicts:
    """One benchmark's per-sample verdicts of some arms as an (arm, seed, item, sample) array, NaN where absent."""

    benchmark: str
    arms: dict[str, int]
    seeds: dict[int, int]
    items: pd.Index  # sorted
    correct: np.ndarray

    def paired_variance(self, arm: str, reference: str, seeds: Sequence[int], items: pd.Index) -> np.ndarray | None:
        """Sampling variance of each cell's difference from the arms' verdicts paired by sample, (seeds, items).

        Sample j of an item is drawn from the same stream in every arm of a seed (common random numbers), so
        the arm's and the reference's verdicts are correlated; the differences d_j = y_arm,j - y_ref,j of one
        cell are independent across j, and var(d, ddof 1) / k is unbiased for the variance of the cell's mean
        difference whatever that correlation. None when the verdicts of either arm are absent or the arms were
        evaluated with different numbers of answers per item; NaN for a cell with fewer than 2 paired samples.
        """
        rows = np.array([self.seeds.get(int(s), -1) for s in seeds])
        mine, theirs = (self._of(name, rows) for name in (arm, reference))
        if mine is None or theirs is None:
            return None
        present = ~np.isnan(mine)
        if (present != ~np.isnan(theirs)).any():
            answered = [np.unique(k[k > 0]) for k in (present.sum(axis=-1), (~np.isnan(theirs)).sum(axis=-1))]
            if all(len(k) == 1 for k in answered) and answered[0][0] != answered[1][0]:
                return None  # evaluated with another number of answers per item: the report card's protocol item
            raise AnalysisInputError(
                f"answers.parquet of {arm} and {reference} ({self.benchmark}): the arms' sampled answers do not "
                f"pair up by (seed, item, sample); expected the same items and samples in both"
            )
        d = np.where(present, mine - theirs, 0.0)
        k = present.sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = ((d * d).sum(axis=-1) - d.sum(axis=-1) ** 2 / k) / (k - 1) / k
        variance = np.where(k >= 2, variance, np.nan)
        where = self.items.get_indexer(items)
        return np.where(where >= 0, variance[:, where], np.nan)

    def _of(self, arm: str, rows: np.ndarray) -> np.ndarray | None:
        """The arm's verdicts at the seed rows (-1: a seed without verdicts), None when it has none of them."""
        if arm not in self.arms:
            return None
        found = np.where((rows >= 0)[:, None, None], self.correct[self.arms[arm], np.maximum(rows, 0)], np.nan)
        return None if np.isnan(found).all() else found


def _benchmark_verdicts(answers: pd.DataFrame, arms: Collection[str]) -> dict[str, _Verdicts]:
    """Per benchmark, the verdicts of ``arms`` (:class:`_Verdicts`), from one pass over the answers (:func:`_cubes`)."""
    return {
        benchmark: _Verdicts(
            benchmark, _positions(labels["arm"], str), _positions(labels["seed"], int), labels["item"], cube[..., 0]
        )
        for benchmark, labels, cube in _cubes(answers, arms, ("arm", "seed", "item", "sample"), ("correct",))
    }


def components_table(
    scores: pd.DataFrame,
    pairs: Sequence,
    weights: pd.Series,
    measure: str,
    samples: int | None,
    answers: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, sampling.SamplingComponents | None]:
    """Training seeds, items and evaluation sampling in the variance of each pair's mean difference on ``measure``.

    ``pairs`` are :class:`armlab.analysis.comparisons.paired.Pair` (their matched seeds); ``weights`` the measure's
    benchmark weights. One row per pair: the variance of the mean difference from each source, their shares, the
    standard error. Per-benchmark rows (item ``"*"``) give no table. A cell's sampling variance comes from
    the two arms' verdicts paired by sample where ``answers`` (:func:`read_answers`) has them
    (:meth:`_Verdicts.paired_variance`), else from the counts as if the arms' samples were independent
    (``sampling_method`` says which).
    """
    if not len(pairs) or (scores["item"] == PER_BENCHMARK_ITEM).any():
        return pd.DataFrame(columns=COMPONENT_COLUMNS), None
    benchmarks = list(weights.index)
    compared = {name for pair in pairs for name in (pair.arm, pair.reference)}
    cells = _benchmark_cells(scores, compared)
    verdicts = {} if answers is None else _benchmark_verdicts(answers, compared)
    by_seeds: dict[tuple, list[int]] = {}
    for i, pair in enumerate(pairs):
        by_seeds.setdefault(tuple(pair.diffs.index), []).append(i)
    rows: list[dict[str, Any] | None] = [None] * len(pairs)
    found: sampling.SamplingComponents | None = None
    for seeds, members in by_seeds.items():
        item_diffs, item_variances, paired = [], [], dict.fromkeys(members, True)
        for benchmark in benchmarks:
            diffs, variances = [], []
            for i in members:
                arm_score, arm_var = cells[benchmark].of(pairs[i].arm, seeds)
                ref_score, ref_var = cells[benchmark].of(pairs[i].reference, seeds)
                diffs.append(arm_score - ref_score)
                both = None
                if benchmark in verdicts:
                    both = verdicts[benchmark].paired_variance(
                        pairs[i].arm, pairs[i].reference, seeds, cells[benchmark].items
                    )
                if both is not None:  # cells without both arms' verdicts keep the counts' estimate
                    both = np.where(np.isnan(both), arm_var + ref_var, both)
                paired[i] &= both is not None
                variances.append(both if both is not None else arm_var + ref_var)
            item_diffs.append(np.stack(diffs))
            item_variances.append(np.stack(variances))
        found = sampling.variance_components(item_diffs, item_variances, weights.to_numpy()[None, :])
        for j, i in enumerate(members):
            pair = pairs[i]
            parts = {name: float(getattr(found, name)[j, 0]) for name in COMPONENTS}
            total = float(found.total[j, 0])
            rows[i] = {
                "family": pair.family,
                "arm": pair.arm,
                "reference": pair.reference,
                "measure": measure,
                "n_seeds": found.n_seeds,
                "n_items": int(sum(found.item_counts)),
                "samples": samples,
                "mean_diff": float(found.mean[j, 0]),
                **{f"var_{name}": value for name, value in parts.items()},
                "var_total": total,
                **_shares(parts),
                "se": float(np.sqrt(total)),
                "training_negative": bool(found.training_negative[j, 0]),
                "items_negative": bool(found.items_negative[j, 0]),
                "sampling_method": "paired by sample" if paired[i] else "independent arms",
            }
    return pd.DataFrame(rows, columns=COMPONENT_COLUMNS), found


def _shares(parts: dict[str, float]) -> dict[str, float]:
    """Each component's share of the variance, a negative estimate (by chance) counted as 0; NaN without any."""
    kept = {name: max(value, 0.0) if np.isfinite(value) else 0.0 for name, value in parts.items()}
    whole = sum(kept.values())
    return {f"share_{name}": value / whole if whole > 0 else np.nan for name, value in kept.items()}


def read_answers(results_dir: Path | str) -> pd.DataFrame | None:
    """Every evaluation's per-sample verdicts (``evals/<arm>/seed-<s>/answers.parquet``), checked against its
    manifest; columns arm, seed, benchmark, item, sample, correct. None when no evaluation has them."""
    frames = []
    for path in layout.job_files(results_dir, "evals", "answers.parquet"):
        try:
            verify_file(path)
            frame = pd.read_parquet(path)
        except (BadFile, OSError, ValueError) as exc:
            raise AnalysisInputError(f"{path}: {str(exc).splitlines()[0]}") from None
        repeated = frame.duplicated(["benchmark", "item", "sample"])
        if repeated.any():
            first = frame[repeated].iloc[0]
            raise AnalysisInputError(
                f"{path}: sample {first['sample']} of {first['benchmark']} item {first['item']} appears twice; "
                f"expected one verdict per (benchmark, item, sample)"
            )
        arm, seed = layout.run_of(path.parent)
        frames.append(frame.assign(arm=arm, seed=int(seed)))
    return pd.concat(frames, ignore_index=True) if frames else None


def job_minutes(results_dir: Path | str) -> pd.DataFrame:
    """Job-minutes of every run's training and evaluation, from the ``seconds`` of their manifests.

    ``results_dir`` is an experiment's results folder (``runs/<arm>/seed-<s>/manifest.json`` and
    ``evals/<arm>/seed-<s>/manifest.json``); returns columns arm, seed, train_minutes, eval_minutes and
    train_steps (the run's ``recipe.steps``; NaN where its manifest has none, and train_minutes for runs trained
    elsewhere, whose training time is not known) and sampling_streams (how the evaluation drew its answers, its
    manifest's ``sampling.how``; NaN where it has none).
    """
    results_dir = Path(results_dir)
    found: dict[tuple[str, int], dict[str, float]] = {}
    for stage in ("runs", "evals"):
        for path in layout.job_files(results_dir, stage, "manifest.json"):
            try:
                manifest = read_json(path, "manifest")
                seconds, recipe = manifest.get("seconds"), manifest.get("recipe")
            except (BadFile, AttributeError):
                raise AnalysisInputError(f"{path}: expected a manifest object with 'seconds'") from None
            if not isinstance(seconds, (int, float)) or not seconds > 0:
                raise AnalysisInputError(f"{path}: seconds: expected the job's positive run time, got {seconds!r}")
            if stage == "runs" and manifest.get("trained_elsewhere"):
                continue  # its seconds are those of recording its checkpoints; what training took is not known
            arm, seed = layout.run_of(path.parent)
            run = found.setdefault((arm, int(seed)), {})
            run[f"{'train' if stage == 'runs' else 'eval'}_minutes"] = seconds / 60
            sampling = manifest.get("sampling") if stage == "evals" else None
            if isinstance(sampling, dict) and isinstance(sampling.get("how"), str):
                run["sampling_streams"] = sampling["how"]
            steps = recipe.get("steps") if stage == "runs" and isinstance(recipe, dict) else None
            if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
                run["train_steps"] = steps
    frame = pd.DataFrame([{"arm": a, "seed": s, **m} for (a, s), m in sorted(found.items())])
    return frame.reindex(columns=[*RUN, "train_minutes", "eval_minutes", "train_steps", "sampling_streams"])


def with_sampling_streams(components: pd.DataFrame, minutes: pd.DataFrame | None) -> pd.DataFrame:
    """``sampling_streams`` of each row of :func:`components_table`: how the evaluations of its arm and reference drew
    their answers, as their manifests record it (the engine's words; "; " between different ones), "" where no
    manifest says (results from elsewhere, or `armlab analyze` without ``--jobs``)."""
    if minutes is None or "sampling_streams" not in minutes.columns or minutes.empty or components.empty:
        return components.assign(sampling_streams="")
    said = minutes.dropna(subset=["sampling_streams"]).groupby("arm")["sampling_streams"].unique()
    return components.assign(
        sampling_streams=[
            "; ".join(dict.fromkeys(how for arm in (r.arm, r.reference) for how in said.get(arm, [])))
            for r in components.itertuples()
        ]
    )


def allocation_table(components: pd.DataFrame, pairs: Sequence, minutes: pd.DataFrame) -> pd.DataFrame:
    """One more seed or twice the samples, per comparison: the standard error after each, per job-minute.

    One more seed costs training and evaluating both arms once (their mean job times); doubling k costs
    evaluating both arms again at every seed (the time of today's evaluation jobs: an upper bound, since a
    job's start-up is paid once). Empty when job times are unknown (results from elsewhere).
    """
    if components.empty or minutes is None or minutes.empty:
        return pd.DataFrame(columns=ALLOCATION_COLUMNS)
    per_arm = minutes.groupby("arm")[["train_minutes", "eval_minutes"]].mean()
    tables = []
    for row, pair in zip(components.itertuples(), pairs):
        both = per_arm.reindex([pair.arm, pair.reference])
        if both.isna().any().any():
            return pd.DataFrame(columns=ALLOCATION_COLUMNS)  # a run without its job time: no advice, not a wrong one
        parts = {name: np.array([[getattr(row, f"var_{name}")]]) for name in COMPONENTS}
        one = sampling.SamplingComponents(
            mean=np.array([[row.mean_diff]]),
            total=np.array([[row.var_total]]),
            seed_term=parts["training"] + np.nan_to_num(parts["sampling"]),
            training_negative=np.array([[row.training_negative]]),
            items_negative=np.array([[row.items_negative]]),
            n_seeds=int(row.n_seeds),
            item_counts=(int(row.n_items),),
            **parts,
        )
        seed_cost = float(both.to_numpy().sum())
        samples_cost = float(both["eval_minutes"].sum()) * int(row.n_seeds)
        table = sampling.allocation(one, seed_cost, samples_cost).drop(columns=["comparison", "measure"])
        tables.append(table.assign(family=row.family, arm=row.arm, reference=row.reference, measure=row.measure))
    return pd.concat(tables, ignore_index=True)[ALLOCATION_COLUMNS]
