"""The whole analysis: load and validate, summarize, compare, rank, write.

``analyze(config)`` is what ``armlab analyze`` runs; ``run_analysis`` starts
from a tidy frame already in memory (notebooks, benchmarks);
``write_outputs`` writes every file of an output directory at once.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from armlab import files, layout
from armlab.analysis import inputs, outputs, predictions, tables, waves
from armlab.analysis.comparisons import improvement, paired, profiles, summaries
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs import records, validation
from armlab.analysis.outputs import AnalysisResult
from armlab.analysis.samples import per_benchmark, sampled, unparsed
from armlab.analysis.screens import contamination, numerics_noise, report_card, sensitivity
from armlab.analysis.stats import statistics
from armlab.contract import PER_BENCHMARK_ITEM, is_twin, split_twins

if TYPE_CHECKING:
    from armlab.analysis.config import Config


def analyze(
    config: Config, scores_path: Path | str | None = None, jobs_dir: Path | str | None = None
) -> AnalysisResult:
    """Load the scores a config points at (or ``scores_path``), validate and analyze them.

    ``jobs_dir`` is the experiment's results folder: its run and evaluation manifests give the job times
    of the allocation advice (:func:`armlab.analysis.samples.sampled.job_minutes`), its evaluations' ``answers.parquet``
    the per-sample verdicts that pair the arms' sampling noise (:func:`armlab.analysis.samples.sampled.read_answers`),
    its ``predictions/lock.json`` the preregistered predictions (:mod:`armlab.analysis.predictions`).
    """
    if jobs_dir is not None and not Path(jobs_dir).is_dir():  # given, not found: a typo, not "no jobs"
        raise AnalysisInputError(f"--jobs {jobs_dir}: not a folder; expected an experiment's results/<experiment>")
    scores, source = inputs.load_scores(config, scores_path)
    if jobs_dir is None and scores_path is None and config.input is None:
        jobs_dir = Path("results") / config.experiment  # the workflow's own results, beside its scores.parquet
    if jobs_dir is None or not Path(jobs_dir).is_dir():
        return run_analysis(config, scores, source)
    jobs = Path(jobs_dir)
    return run_analysis(
        config,
        scores,
        source,
        sampled.job_minutes(jobs),
        sampled.read_answers(jobs),
        records.recorded_looks(jobs / layout.LOOKS_LEDGER),
        predictions.check_scores(predictions.read_lock(jobs / predictions.LOCK), scores, jobs),
        report_card.read_jobs(jobs, config.settings.curve_compute),
    )


def run_analysis(
    config: Config,
    scores: pd.DataFrame,
    source: str = "scores",
    job_minutes: pd.DataFrame | None = None,
    answers: pd.DataFrame | None = None,
    recorded: records.RecordedLooks | None = None,
    lock: dict | None = None,
    jobs: report_card.Jobs | None = None,
) -> AnalysisResult:
    """Validate a tidy frame; run summaries, paired comparisons, probability of improvement, profiles, rankings,
    pass@k and the variance components of sampled evaluation (``answers``: the per-sample verdicts of
    :func:`armlab.analysis.samples.sampled.read_answers`, which pair the arms' sampling noise) and, under a sequential
    design, its decisions (``recorded``: the record of looks, which the replayed looks must agree with), and the
    verdicts of the preregistered predictions (``lock``: :func:`armlab.analysis.predictions.read_lock`; without one,
    every prediction is exploratory); the unparsed answers' comparison (:mod:`armlab.analysis.samples.unparsed`) and the
    report card (:mod:`armlab.analysis.screens.report_card`; ``jobs``: what the experiment's folder holds, None for
    results from elsewhere)."""
    settings = config.settings
    unpaired = settings.pairing == "unpaired"
    # the procedural twins' items feed the contamination screen only, never a summary or comparison
    scores, twin_scores = split_twins(scores)
    if answers is not None:
        answers = answers[~answers["benchmark"].astype(str).map(is_twin)]
    scores, dropped = validation.validate_scores(
        scores,
        experiment=config.experiment,
        comparisons=config.comparisons,
        benchmarks=config.benchmarks,
        drop_incomplete=settings.drop_incomplete,
        nested_seeds=config.design is not None,
        source=source,
        unpaired=unpaired,
        common_seeds_only=settings.common_seeds_only,
    )
    compared = config.compared_arms
    others = [a for a in pd.unique(scores["arm"]) if a not in compared]
    matched = "were not matched (analysis.pairing: unpaired)" if unpaired else "were matched"
    notes = [
        f"Seeds {matched} for the compared arms ({', '.join(compared)})"
        + (f"; arm(s) {', '.join(others)} are in no comparison and only summarized." if others else ".")
    ]
    for row in dropped.itertuples():
        why = "" if "common_seeds_only" in row.reason else " (analysis.drop_incomplete)"
        notes.append(f"Dropped run arm={row.arm} seed={row.seed}{why}: {row.reason}.")

    accuracy = summaries.benchmark_accuracy(scores)
    weights = summaries.summary_weights(summaries.benchmark_domains(scores), settings.subsets)
    clash = sorted(set(weights.index) & set(accuracy.columns))
    if clash:
        raise AnalysisInputError(f"{config.source}: analysis.subsets: name(s) {clash} are also benchmark names")
    clash = sorted(set(settings.statistics) & (set(weights.index) | set(accuracy.columns)))
    if clash:
        raise AnalysisInputError(
            f"{config.source}: analysis.statistics: name(s) {clash} are also summary or benchmark names"
        )
    sampled.check_counts(scores, settings.pass_k, source)
    primary = weights.index[0]
    per_statistic = pd.concat(
        [
            statistics.per_run(accuracy, settings.statistics),
            sampled.pass_at_k_per_run(scores, settings.pass_k, weights.loc[primary]).reindex(accuracy.index),
            sampled.majority_at_k_per_run(scores, answers, settings.maj_k, weights.loc[primary], source).reindex(
                accuracy.index
            ),
        ],
        axis=1,
    )
    per_run = pd.concat([summaries.summarize(accuracy, weights), per_statistic], axis=1)
    higher_is_better = statistics.higher_is_better(settings.statistics)
    benchmark_sampled = per_benchmark.sampled_per_run(scores, answers, list(weights.columns), settings, source)
    per_benchmark.check_names(list(benchmark_sampled.columns), [*weights.index, *accuracy.columns], config.source)

    measure_weights, levels = weights, dict.fromkeys([*weights.index, *per_statistic.columns], "summary")
    if settings.per_benchmark:
        identity = pd.DataFrame(np.eye(len(weights.columns)), index=weights.columns, columns=weights.columns)
        measure_weights = pd.concat([weights, identity])
        levels |= dict.fromkeys([*weights.columns, *benchmark_sampled.columns], "benchmark")
    items = None
    if settings.item_bootstrap:
        if (scores["item"] == PER_BENCHMARK_ITEM).all():
            notes.append(
                "analysis.item_bootstrap is on but the input has per-benchmark rows only; "
                "the crossed seeds x items interval was skipped."
            )
        else:
            items = summaries.item_scores(scores)
    # a measure that weighs the benchmarks exactly as an earlier one does (one benchmark: every summary is that
    # benchmark; domains of equal size: flat is domain_balanced) is the same measure: tested and shown once
    twins = summaries.twin_measures(measure_weights)
    if twins:
        notes.append(
            "Same measure under another name, tested and shown once: "
            + "; ".join(f"{name} = {twin}" for name, twin in twins.items())
            + " (they weigh the benchmarks identically)."
        )
        measure_weights = measure_weights.drop(index=list(twins))
    weighted = summaries.summarize(accuracy, measure_weights)
    # pass@1 is avg@k weighted like the primary summary, i.e. the primary summary itself: in summaries.csv for the
    # pass@k curve, but not tested a second time (it would only enlarge the secondary Holm family)
    tested = per_statistic.drop(columns=[sampled.measure_name(1)], errors="ignore")
    kept = [name for name in weights.index if name in weighted.columns]
    values = pd.concat(
        [weighted[kept], tested, weighted.drop(columns=kept), benchmark_sampled.reindex(accuracy.index)], axis=1
    )
    comparisons, comparison_notes = paired.compare(
        values,
        config.comparisons,
        settings,
        levels=levels,
        higher_is_better=higher_is_better,
        items=items,
        measure_weights=measure_weights,
    )

    sets = settings.rankings or {c.family: (c.reference, *c.arms) for c in config.comparisons}
    unknown = sorted({a for arms in sets.values() for a in arms} - set(per_run.index.unique("arm")))
    if unknown:
        raise AnalysisInputError(f"{config.source}: analysis.rankings: arm(s) {unknown} have no scores")
    ranked_runs = per_run
    if config.design is not None:  # arms stopped at different looks: rank on the seeds every compared arm ran
        seeds = per_run.index.to_frame(index=False)
        shared = seeds[seeds["arm"].isin(compared)].groupby("arm")["seed"].apply(set)
        shared = sorted(set.intersection(*shared))
        in_shared = per_run.index.get_level_values("seed").isin(shared)
        ranked_runs = per_run[in_shared | ~per_run.index.get_level_values("arm").isin(compared)]
        notes.append(
            f"Sequential design: the rankings use the {len(shared)} seeds every compared arm ran; the summaries "
            f"per arm, the probability of improvement and the performance profiles use each arm's own seeds, "
            f"so they are descriptive."
        )
    ranked = sensitivity.rankings(
        ranked_runs,
        sets,
        higher_is_better,
        confidence=settings.confidence,
        max_exact=settings.exact_max_seeds,
        resamples=settings.sign_flip_resamples,
        seed=settings.bootstrap_seed,
        unpaired=unpaired,
    )
    pairs = [] if unpaired else paired.paired_differences(per_run[[primary]], config.comparisons)
    components, _ = sampled.components_table(
        scores, pairs, weights.loc[primary], primary, int(scores["n_samples"].max()), answers
    )
    components = sampled.with_sampling_streams(components, job_minutes)
    if unpaired:
        notes.append(
            "Unpaired runs: the variance components and the allocation advice split paired differences by seed, "
            "so they are not computed; the probability of improvement is rliable's unpaired share, without an "
            "interval."
        )
    if (components["samples"] > 1).any() and (components["sampling_method"] == "independent arms").any():
        notes.append(
            "Variance components: without per-sample verdicts the arms' sampling errors were taken as independent. "
            "armlab's evaluations of the builtin policy and with eval.engine: vllm give every arm of a seed the same "
            "random draw for each answer, which makes them correlated, so for them this overstates the sampling "
            "part (eval.engine: hf shares no draws between arms); `armlab analyze --jobs results/<experiment>` "
            "pairs their verdicts instead."
        )
    decisions, looks = pd.DataFrame(columns=waves.FINAL_COLUMNS), pd.DataFrame(columns=waves.LOOK_COLUMNS)
    if config.design is not None:
        decisions, looks = waves.final_tables(per_run[primary], config, recorded)
        notes.append(
            "Sequential design: the arms stopped at different looks, so the p-values and intervals of the comparisons "
            "table (fixed-n, over each pair's seeds) ignore the optional stopping and are descriptive; the sequential "
            "table's decisions and repeated confidence intervals are the design's."
        )
    comparisons = numerics_noise.flag_verdicts(comparisons, config.controls)
    components = numerics_noise.with_numerics(components, pairs, config.controls)
    notes += numerics_noise.notes(comparisons, components, config.controls)
    lock = predictions.check_meaning(lock, config)  # a locked prediction whose meaning changed is exploratory
    comparisons = comparisons.assign(registration=predictions.registration(comparisons, lock))
    replications = predictions.replication_table(comparisons, config.predictions, lock, config.source)
    if config.predictions and lock is None:
        notes.append(
            "Predictions: the config's predictions were not locked before the runs began (no predictions/lock.json), "
            "so they are exploratory."
        )
    elif lock is not None and not predictions.confirms(lock):
        notes.append(f"Predictions: predictions/lock.json {lock['exploratory']}, so every prediction is exploratory.")
    notes += predictions.changed_notes(lock)
    unparsed_answers = (
        None if answers is None else unparsed.compare(answers, config.comparisons, settings, weights.loc[primary])
    )
    screened = None
    if len(twin_scores) and not unpaired:
        runs = pd.MultiIndex.from_frame(twin_scores[["arm", "seed"]])
        screened = contamination.screen(
            accuracy,
            twin_scores[runs.isin(accuracy.index)],
            pd.concat([scores, twin_scores]).groupby("benchmark", observed=True)["item"].nunique(),
            weights.loc[primary],
            primary,
            config.comparisons,
            settings,
            contamination.planted_leaks(jobs.runs if jobs else {}),
        )
    card = report_card.grade(report_card.Inputs(config, scores, comparisons, unparsed_answers, dropped, jobs, screened))
    return AnalysisResult(
        config=config,
        source=source,
        accuracy=accuracy,
        weights=weights,
        summaries=per_run,
        comparisons=comparisons,
        rankings=ranked,
        correlations=sensitivity.rank_correlations(ranked, higher_is_better),
        dropped=dropped,
        notes=notes + comparison_notes,
        improvement=improvement.probability_of_improvement(accuracy, config.comparisons, settings),
        profiles=profiles.performance_profiles(accuracy, compared, settings),
        pass_at_k_vs_base=sampled.versus_base(
            scores, per_run, compared, settings.pass_k, weights.loc[primary], settings
        ),
        per_benchmark=per_benchmark.per_benchmark_table(
            comparisons, values, list(accuracy.columns), per_benchmark.accuracy_name(scores), settings.confidence
        ),
        variance_components=components,
        allocation=sampled.allocation_table(components, pairs, job_minutes),
        sequential=decisions,
        sequential_looks=looks,
        replications=replications,
        unparsed=pd.DataFrame(columns=unparsed.COLUMNS) if unparsed_answers is None else unparsed_answers,
        contamination=pd.DataFrame(columns=contamination.COLUMNS) if screened is None else screened,
        report_card=card,
    )


def write_outputs(result: AnalysisResult, out_dir: Path | str) -> None:
    """Write the result to ``out_dir`` all at once (:func:`armlab.files.output_directory`).

    ``out_dir`` must be new, empty or an earlier output of ``armlab analyze``; it is replaced
    as a whole. Files: ``summaries.csv`` (arm, seed, summary, value), ``accuracy.csv``
    (arm, seed, benchmark, value), ``weights.csv`` (summary, benchmark,
    weight), ``comparisons.csv`` / ``.md`` / ``.tex``, ``rankings.csv``,
    ``sensitivity.csv`` (rank correlations between summaries),
    ``probability_of_improvement.csv``, ``performance_profiles.csv``,
    ``dropped.csv``, ``pass_at_k_vs_base.csv``, ``per_benchmark.csv`` and ``.tex``
    (:func:`armlab.analysis.samples.per_benchmark.per_benchmark_table`; a header only without per-benchmark
    comparisons), ``variance_components.csv`` and
    ``allocation.csv`` (:mod:`armlab.analysis.samples.sampled`; only a header where not computed),
    ``sequential.csv`` and ``sequential_looks.csv`` (:func:`armlab.analysis.waves.final_tables`; a header only
    without a sequential design),
    ``replications.csv`` (:func:`armlab.analysis.predictions.replication_table`; a header only without predictions),
    ``unparsed.csv`` (:func:`armlab.analysis.samples.unparsed.compare`; a header only without the answers' statuses),
    ``contamination.csv`` (:func:`armlab.analysis.screens.contamination.screen`; a header only without procedural
    twins), ``report_card.csv`` (:func:`armlab.analysis.screens.report_card.grade`),
    ``report.md`` and ``manifest.json`` (settings, input, and the
    sha256 of every other file).
    """
    with files.output_directory(out_dir, "analyze") as tmp:
        frames = {
            "summaries": summaries.to_long(result.summaries, "summary"),
            "accuracy": summaries.to_long(result.accuracy, "benchmark"),
            "weights": result.weights.stack().rename("weight").reset_index(),
            "comparisons": result.comparisons,
            "rankings": result.rankings,
            "sensitivity": result.correlations,
            "probability_of_improvement": result.improvement,
            "performance_profiles": result.profiles,
            "dropped": result.dropped,
            "pass_at_k_vs_base": result.pass_at_k_vs_base,
            "per_benchmark": result.per_benchmark,
            "variance_components": result.variance_components,
            "allocation": result.allocation,
            "sequential": result.sequential,
            "sequential_looks": result.sequential_looks,
            "replications": result.replications,
            "unparsed": result.unparsed,
            "contamination": result.contamination,
            "report_card": result.report_card,
        }
        for name in outputs.TABLES:  # the catalogue the report reads: a table missing here fails right away
            files.write_csv(frames[name], tmp / f"{name}.csv")
        (tmp / "comparisons.md").write_text(tables.comparisons_markdown(result.comparisons))
        (tmp / "comparisons.tex").write_text(tables.comparisons_latex(result.comparisons))
        (tmp / "per_benchmark.tex").write_text(
            tables.per_benchmark_latex(result.per_benchmark, result.config.settings.alpha)
        )
        (tmp / "report.md").write_text(tables.report_markdown(result))
        record = {
            outputs.FORMAT_KEY: outputs.FORMAT,
            "experiment": result.config.experiment,
            "config": result.config.source,
            "input": result.source,
            "settings": asdict(result.config.settings),
            "notes": result.notes,
        }
        files.write_manifest(tmp, record, *sorted(p.name for p in tmp.iterdir()))
