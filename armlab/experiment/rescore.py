"""``armlab rescore RESULTS_DIR [--verifier NAME ...]``: would the verdicts change under another grader?

Every answer the evaluations stored is graded again under each named verifier (``armlab.evals.rescore``; nothing
is generated), the paired analysis runs again on each verifier's scores (``armlab.analysis.pipeline.run_analysis``,
the configured settings; not where the verifier judged every answer and vote as the evaluation did, whose analysis
is the configured one), and every verdict is set beside the configured analysis's
(``armlab.analysis.screens.verifier_sensitivity``). Writes ``RESULTS_DIR/verifiers/`` (one folder per verifier: its
``scores.parquet``, ``answers.parquet`` and ``comparisons.csv``; ``grading.csv``; ``manifest.json``) and
``RESULTS_DIR/analysis/verifier_sensitivity.csv``, and changes nothing the evaluations or the configured analysis
wrote. The verifiers: ``--verifier`` (repeatable), else the config's ``analysis.verifiers``, else every one.
The workflow runs it after the analysis when ``analysis.verifiers`` is set (rule ``rescore``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from armlab import files, layout
from armlab.analysis import pipeline
from armlab.analysis.config import load_config
from armlab.analysis.samples import sampled
from armlab.analysis.screens import verifier_sensitivity
from armlab.contract import KEY, RUN
from armlab.evals import rescore as regrading
from armlab.evals.verifiers import VERIFIERS

COMMAND = "rescore"


@dataclass(frozen=True)
class Rescored:
    """What a rescore found: the sensitivity table, the verifiers that re-graded no answer, those that judged every
    answer as the evaluation did, its seconds and the evaluation jobs' seconds (their manifests)."""

    table: pd.DataFrame
    idle: list[str]
    unchanged: list[str]
    seconds: float
    evaluation_seconds: float


def rescore(results_dir: Path | str, names: list[str] | None = None) -> Rescored:
    """Re-grade, re-analyze and write (the module docstring); every input is checked before the work starts."""
    start = time.perf_counter()
    given = regrading.check_verifiers(names, "--verifier", files.BadFile) if names else None  # names, packages
    results = Path(results_dir)
    if not results.is_dir():
        raise files.BadFile(f"{results}: not a folder; expected an experiment's results folder results/<name>")
    analysis_dir, out = results / "analysis", results / layout.RESCORED
    config_path = _needed(results / "config" / "analysis.json", "the analysis's config (config/analysis.json)")
    config = load_config(config_path)
    if given is None:
        names = list(config.settings.verifiers or VERIFIERS)
        given = regrading.check_verifiers(names, f"{config_path}: analysis.verifiers", files.BadFile)
    verifiers = dict(zip(names or [], given))
    files.check_output_of(analysis_dir, "analyze")
    written = files.read_json(analysis_dir / files.MANIFEST, "manifest of `armlab analyze`")
    if json.loads(json.dumps(asdict(config.settings))) != written.get("settings"):
        raise files.BadFile(
            f"{analysis_dir / files.MANIFEST}: the analysis ran under other settings than {config.source}'s; "
            f"rerun `armlab analyze` with that config first, so that both analyses are the same but for the grader"
        )
    files.check_output_directory(out, COMMAND)
    scores_path = _needed(results / "scores.parquet", "the merged scores of its evaluations (scores.parquet)")
    runs = [(a, int(s)) for a, s in pd.read_parquet(scores_path, columns=RUN).drop_duplicates().itertuples(False)]
    evaluations = regrading.stored_evaluations(results, runs)
    configured = verifier_sensitivity.read_table(
        files.verify_file(analysis_dir / "comparisons.csv"), "table of `armlab analyze`"
    )

    weights = verifier_sensitivity.read_weights(files.verify_file(analysis_dir / "weights.csv"))

    tables, idle, unchanged, grading = [], [], [], []
    with files.output_directory(out, COMMAND) as tmp:
        for name, verifier in verifiers.items():
            regraded = {run: regrading.regrade(evaluation, verifier) for run, evaluation in evaluations.items()}
            counts = pd.concat([r.grading.assign(arm=a, seed=s) for (a, s), r in regraded.items()], ignore_index=True)
            grading.append(counts.assign(verifier=name))
            if not counts["regraded"].any():
                idle.append(name)  # it reads no reference here: nothing to say
                continue
            scores = pd.concat([r.scores for r in regraded.values()], ignore_index=True).sort_values(KEY)
            answers = pd.concat(
                [r.answers.assign(arm=a, seed=s) for (a, s), r in regraded.items()], ignore_index=True
            ).drop(columns=["regraded", "changed"])
            (tmp / name).mkdir()
            scores.to_parquet(tmp / name / "scores.parquet", index=False)
            answers.to_parquet(tmp / name / "answers.parquet", index=False)
            comparisons = configured  # the same scores and votes: the same analysis, which need not run again
            if all(r.same_as_evaluated for r in regraded.values()):
                unchanged.append(name)
            else:
                source = f"{scores_path} re-graded under {name}"
                comparisons = pipeline.run_analysis(
                    config, scores.reset_index(drop=True), source, answers=answers
                ).comparisons
                files.write_csv(comparisons, tmp / name / "comparisons.csv")
            tables.append(verifier_sensitivity.sensitivity_rows(name, comparisons, configured, weights, counts))
        grading_table = pd.concat(grading, ignore_index=True)
        files.write_csv(grading_table[["verifier", *RUN, *regrading.GRADING_COLUMNS]], tmp / "grading.csv")
        table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=verifier_sensitivity.COLUMNS)
        evaluation_seconds = float(sampled.job_minutes(results)["eval_minutes"].sum() * 60)
        record = {
            "verifiers": names,
            "idle": idle,
            "unchanged": unchanged,
            "seconds": time.perf_counter() - start,
            "evaluation_seconds": evaluation_seconds,
        }
        files.write_manifest(tmp, record, *sorted(p.name for p in tmp.iterdir()))
    with files.beside_output(analysis_dir, "analyze", verifier_sensitivity.TABLE) as path:
        files.write_csv(table, path)
    return Rescored(table, idle, unchanged, time.perf_counter() - start, evaluation_seconds)


def _needed(path: Path, what: str) -> Path:
    if not path.is_file():
        raise files.BadFile(f"{path}: not found; `armlab rescore` reads {what} of a finished workflow run")
    return path
