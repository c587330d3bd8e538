"""Sampled evaluation in the analysis: pass@k per run, the base policy's pass@k curve, and where noise comes from.

Every function here starts from the validated tidy table (one row per run, benchmark and item, with
``n_samples`` answers of which ``n_correct`` were right) and calls the estimators of
:mod:`analysis.sampling`:

- :func:`pass_at_k_per_run`: each run's pass@k for every k of ``analysis.pass_k``, weighted over benchmarks
  like the primary summary, so that each pass@k is a measure compared seed by seed like accuracy;
- :func:`versus_base`: each compared arm's pass@k curve against the base policy's (is RL narrowing what the
  base model can solve at large k?), with an interval over the arm's seeds;
- :func:`components_table`: the variance of each comparison's primary difference split into training
  seeds, the finite item set and evaluation sampling;
- :func:`allocation_table`: what one more seed and what doubling k would do to its standard error per
  job-minute, from the job times of the run and evaluation manifests (:func:`job_minutes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import sampling
from analysis.errors import AnalysisInputError
from armlab.contract import BASE_ARM, PER_BENCHMARK_ITEM, RUN
from armlab.files import BadFile, read_json, verify_file
from armlab.lazy import lazy_module

stats = lazy_module("scipy.stats")

COMPONENTS = ("training", "items", "sampling")
COMPONENT_COLUMNS = [
    "family", "arm", "reference", "measure", "n_seeds", "n_items", "samples", "mean_diff",
    *(f"var_{name}" for name in COMPONENTS), "var_total", *(f"share_{name}" for name in COMPONENTS),
    "se", "training_negative", "items_negative", "sampling_method",
]  # fmt: skip
ALLOCATION_COLUMNS = [
    "family", "arm", "reference", "measure", "option", "minutes", "se", "se_after", "reduction",
    "reduction_per_minute", "recommended", "advice",
]  # fmt: skip


def measure_name(k: int) -> str:
    """The measure of pass@k in summaries.csv and comparisons.csv."""
    return f"pass@{k}"


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


def pass_at_k_per_run(scores: pd.DataFrame, ks: Sequence[int], weights: pd.Series) -> pd.DataFrame:
    """pass@k of every run: the mean over items of the unbiased item estimate, weighted over benchmarks.

    ``weights`` maps benchmark -> weight (the primary summary's row of the weight matrix); index (arm, seed),
    one column :func:`measure_name` per k.
    """
    columns = {}
    for k in ks:
        item = sampling.pass_at_k(scores["n_samples"].to_numpy(), scores["n_correct"].to_numpy(), k)
        per_benchmark = (
            scores[[*RUN, "benchmark"]]
            .assign(value=item)
            .groupby([*RUN, "benchmark"], observed=True)["value"]
            .mean()
            .unstack("benchmark")
        )
        columns[measure_name(k)] = per_benchmark[weights.index] @ weights
    return pd.DataFrame(columns).sort_index()


def versus_base(per_run: pd.DataFrame, arms: Sequence[str], ks: Sequence[int], confidence: float) -> pd.DataFrame:
    """Each arm's pass@k minus the base policy's, per k, with a t interval over the arm's seeds.

    The base policy is one checkpoint, evaluated once (seed 0); its pass@k is taken as fixed, so the
    interval holds the arm's training and sampling noise but not the base evaluation's own sampling noise.
    Empty when the scores have no base arm.
    """
    arms_present = per_run.index.get_level_values("arm")
    if BASE_ARM not in arms_present or not ks:
        return pd.DataFrame(columns=["arm", "k", "measure", "n_seeds", "base", "mean_diff", "ci_low", "ci_high"])
    base = per_run.loc[BASE_ARM].mean()
    rows = []
    for arm in arms:
        values = per_run.loc[arm]
        for k in ks:
            d = values[measure_name(k)].to_numpy() - base[measure_name(k)]
            n = len(d)
            half = stats.t.ppf(0.5 + confidence / 2, n - 1) * d.std(ddof=1) / np.sqrt(n) if n > 1 else np.inf
            rows.append(
                {
                    "arm": arm,
                    "k": k,
                    "measure": measure_name(k),
                    "n_seeds": n,
                    "base": base[measure_name(k)],
                    "mean_diff": d.mean(),
                    "ci_low": d.mean() - half,
                    "ci_high": d.mean() + half,
                }
            )
    return pd.DataFrame(rows)


def _cells(scores: pd.DataFrame, arm: str, seeds: Sequence[int], benchmark: str) -> tuple[pd.DataFrame, np.ndarray]:
    """(score, sampling variance) of one arm's items of one benchmark: (seeds x items) frame, array in item order."""
    rows = scores[(scores["arm"] == arm) & (scores["benchmark"] == benchmark) & scores["seed"].isin(seeds)]
    table = rows.set_index(["seed", "item"]).sort_index()
    score = table["score"].unstack("item").loc[list(seeds)]
    n = table["n_samples"].unstack("item").loc[list(seeds), score.columns].to_numpy()
    c = table["n_correct"].unstack("item").loc[list(seeds), score.columns].to_numpy()
    binary = np.all(c == np.round(c))
    variance = sampling.cell_sampling_variance(n, c) if binary else np.full(n.shape, np.nan)
    return score, variance


def _paired_variance(
    answers: pd.DataFrame, arm: str, reference: str, seeds: Sequence[int], benchmark: str, items: pd.Index
) -> np.ndarray | None:
    """Sampling variance of each cell's difference from the arms' verdicts paired by sample, (seeds, items).

    Sample j of an item is drawn from the same stream in every arm of a seed (common random numbers), so
    the arm's and the reference's verdicts are correlated; the differences d_j = y_arm,j - y_ref,j of one
    cell are independent across j, and var(d, ddof 1) / k is unbiased for the variance of the cell's mean
    difference whatever that correlation. None when the verdicts of either arm are absent.
    """
    where = (answers["benchmark"] == benchmark) & answers["seed"].isin(seeds)
    mine, theirs = (answers[where & (answers["arm"] == name)] for name in (arm, reference))
    if mine.empty or theirs.empty:
        return None
    both = mine.merge(theirs, on=["seed", "item", "sample"], suffixes=("_arm", "_ref"), validate="one_to_one")
    if len(both) != len(mine) or len(both) != len(theirs):
        raise AnalysisInputError(
            f"answers.parquet of {arm} and {reference} ({benchmark}): the arms' sampled answers do not pair up "
            f"by (seed, item, sample); expected the same items and samples in both"
        )
    d = both["correct_arm"] - both["correct_ref"]
    cells = both.assign(d=d, d2=d * d).groupby(["seed", "item"])[["d", "d2"]].agg(["sum", "count"])
    k = cells[("d", "count")]
    variance = (cells[("d2", "sum")] - cells[("d", "sum")] ** 2 / k) / (k - 1) / k
    table = variance.where(k >= 2).unstack("item")
    return table.reindex(index=list(seeds), columns=items).to_numpy()


def components_table(
    scores: pd.DataFrame,
    pairs: Sequence,
    weights: pd.Series,
    measure: str,
    samples: int | None,
    answers: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, sampling.SamplingComponents | None]:
    """Training seeds, items and evaluation sampling in the variance of each pair's mean difference on ``measure``.

    ``pairs`` are :class:`analysis.paired.Pair` (their matched seeds); ``weights`` the measure's benchmark
    weights. One row per pair: the variance of the mean difference from each source, their shares, the
    standard error. Per-benchmark rows (item ``"*"``) give no table. A cell's sampling variance comes from
    the two arms' verdicts paired by sample where ``answers`` (:func:`read_answers`) has them
    (:func:`_paired_variance`), else from the counts as if the arms' samples were independent
    (``sampling_method`` says which).
    """
    if not len(pairs) or (scores["item"] == PER_BENCHMARK_ITEM).any():
        return pd.DataFrame(columns=COMPONENT_COLUMNS), None
    benchmarks = list(weights.index)
    by_seeds: dict[tuple, list[int]] = {}
    for i, pair in enumerate(pairs):
        by_seeds.setdefault(tuple(pair.diffs.index), []).append(i)
    rows, found = [None] * len(pairs), None
    for seeds, members in by_seeds.items():
        item_diffs, item_variances, paired = [], [], dict.fromkeys(members, True)
        for benchmark in benchmarks:
            diffs, variances = [], []
            for i in members:
                arm_score, arm_var = _cells(scores, pairs[i].arm, seeds, benchmark)
                ref_score, ref_var = _cells(scores, pairs[i].reference, seeds, benchmark)
                diffs.append((arm_score - ref_score[arm_score.columns]).to_numpy())
                both = None
                if answers is not None:
                    both = _paired_variance(
                        answers, pairs[i].arm, pairs[i].reference, seeds, benchmark, arm_score.columns
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
    for path in sorted(Path(results_dir).glob("evals/*/seed-*/answers.parquet")):
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
        seed = int(path.parent.name.removeprefix("seed-"))
        frames.append(frame.assign(arm=path.parent.parent.name, seed=seed))
    return pd.concat(frames, ignore_index=True) if frames else None


def job_minutes(results_dir: Path | str) -> pd.DataFrame:
    """Job-minutes of every run's training and evaluation, from the ``seconds`` of their manifests.

    ``results_dir`` is an experiment's results folder (``runs/<arm>/seed-<s>/manifest.json`` and
    ``evals/<arm>/seed-<s>/manifest.json``); returns columns arm, seed, train_minutes, eval_minutes and
    train_steps (the run's ``recipe.steps``; NaN where its manifest has none).
    """
    results_dir = Path(results_dir)
    found: dict[tuple[str, int], dict[str, float]] = {}
    for stage in ("runs", "evals"):
        for path in sorted(results_dir.glob(f"{stage}/*/seed-*/manifest.json")):
            try:
                manifest = read_json(path, "manifest")
                seconds, recipe = manifest.get("seconds"), manifest.get("recipe")
            except (BadFile, AttributeError):
                raise AnalysisInputError(f"{path}: expected a manifest object with 'seconds'") from None
            if not isinstance(seconds, (int, float)) or not seconds > 0:
                raise AnalysisInputError(f"{path}: seconds: expected the job's positive run time, got {seconds!r}")
            run = found.setdefault((path.parent.parent.name, int(path.parent.name.removeprefix("seed-"))), {})
            run[f"{'train' if stage == 'runs' else 'eval'}_minutes"] = seconds / 60
            steps = recipe.get("steps") if stage == "runs" and isinstance(recipe, dict) else None
            if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
                run["train_steps"] = steps
    frame = pd.DataFrame([{"arm": a, "seed": s, **m} for (a, s), m in sorted(found.items())])
    return frame.reindex(columns=[*RUN, "train_minutes", "eval_minutes", "train_steps"])


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
