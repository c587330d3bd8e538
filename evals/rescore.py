"""Re-grade an evaluation's stored answers under another verifier, without generating anything (``armlab rescore``).

Every armlab evaluation keeps the answers it graded: lm-eval's logged samples (``samples_armlab_<benchmark>.jsonl``:
each item's doc and its k answers) and the verdict of each answer (``answers.parquet``). :func:`regrade` grades
those answers again with a verifier of :data:`armlab.evals.verifiers.VERIFIERS` where it applies to the item (it
reads the item's reference), keeps the evaluation's verdicts elsewhere, and returns the run's tidy scores and
per-answer verdicts as the evaluation would have written them under that verifier. The tasks of
``eval.lm_eval_tasks`` keep the metric lm-eval logged: their targets are the task's own (GSM8K's is its whole
solution), read only by its own filter and metric. Nothing of the evaluation is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import util
from pathlib import Path

import numpy as np
import pandas as pd

from armlab.contract import TASK_PREFIX
from armlab.evals.merge import read_run_scores
from armlab.evals.run import ANSWER_COLUMNS, ANSWERS, sample_answers
from armlab.evals.verifiers import UNPARSED, VERIFIERS, Verifier, vote_classes
from armlab.files import MANIFEST, BadFile, verify_manifest

SAMPLES = f"samples_{TASK_PREFIX}*.jsonl"  # the logged answers of armlab's task configs
GRADING_COLUMNS = ["benchmark", "answers", "regraded", "unparsed", "changed"]


def check_verifiers(names: Iterable[object], key: str, error: type[Exception] = BadFile) -> list[Verifier]:
    """The verifiers ``names`` (a setting ``key``): each one of :data:`VERIFIERS` (an unknown name is one ``error``
    line with the near misses and every known name) whose package is installed."""
    from armlab.configfile import missing_package

    found = []
    for name in names:
        verifier = VERIFIERS.entry(name, key, error)
        if verifier.requirement and util.find_spec(verifier.requirement.replace("-", "_")) is None:
            raise error(str(missing_package(verifier.requirement, verifier.extra, key, f"verifier {name!r}")))
        found.append(verifier)
    return found


@dataclass(frozen=True)
class Item:
    """One logged item of an evaluation: its doc, its answers, and where their verdicts and its score are stored."""

    benchmark: str
    doc: dict
    responses: list[str]
    rows: np.ndarray  # its answers' rows of answers.parquet, in sample order
    score_row: int  # its row of scores.parquet


@dataclass(frozen=True)
class Evaluation:
    """One evaluation's stored answers, read once and checked against its manifest: the items of its logged samples
    of armlab's task configs, its tidy scores and its answers' verdicts."""

    folder: Path
    items: list[Item]
    scores: pd.DataFrame
    answers: pd.DataFrame

    @classmethod
    def read(cls, folder: Path) -> Evaluation:
        paths = sorted(folder.glob(SAMPLES))
        verify_manifest(folder / MANIFEST, [ANSWERS, "scores.parquet", *(path.name for path in paths)])
        scores, answers = read_run_scores(folder / "scores.parquet"), pd.read_parquet(folder / ANSWERS)
        answer_rows = {key: row for row, key in enumerate(zip(*(answers[c] for c in ANSWER_COLUMNS[:3])))}
        score_rows = {key: row for row, key in enumerate(zip(scores["benchmark"], scores["item"]))}
        items = []
        for path in paths:
            task = path.name.removeprefix("samples_").removesuffix(".jsonl")
            benchmark = task.removeprefix(TASK_PREFIX)
            with open(path, encoding="utf-8") as lines:
                for number, line in enumerate(lines):
                    sample = json.loads(line)
                    doc = sample.get("doc")
                    if not isinstance(doc, dict) or "id" not in doc or "answer" not in doc:
                        raise BadFile(f"{path}: line {number + 1}: no doc with the 'id' and 'answer' of an armlab item")
                    responses, item = sample_answers(sample, task, number), str(doc["id"])
                    keys = [(benchmark, item, j) for j in range(len(responses))]
                    counted = score_rows.get((benchmark, item))
                    if not all(key in answer_rows for key in keys) or counted is None:
                        raise BadFile(f"{path}: line {number + 1}: item {item} has no verdicts in {ANSWERS} or score")
                    if scores["n_samples"].iat[counted] != len(responses):
                        raise BadFile(f"{path}: line {number + 1}: item {item} has other answers than its score counts")
                    rows = np.array([answer_rows[key] for key in keys], dtype=np.int64)
                    items.append(Item(benchmark, doc, responses, rows, counted))
        if sum(len(item.rows) for item in items) != len(answers):
            raise BadFile(f"{folder}: {ANSWERS} holds answers its logged samples do not; expected the same answers")
        return cls(folder, items, scores, answers)


def stored_evaluations(results_dir: Path, runs: Sequence[tuple[str, int]]) -> dict[tuple[str, int], Evaluation]:
    """The evaluation ``evals/<arm>/seed-<seed>`` of each run, read (:meth:`Evaluation.read`); one line naming the
    first that holds no stored answers."""
    from armlab import layout

    folders = {}
    for arm, seed in runs:
        folder = Path(layout.job_dir(results_dir, "evals", arm, seed))
        if not (folder / ANSWERS).is_file() or not any(folder.glob(SAMPLES)):
            raise BadFile(
                f"{folder}: no stored answers to re-grade (expected its {SAMPLES} and {ANSWERS}, which armlab's "
                f"evaluations keep); evaluate run arm={arm} seed={seed} with this armlab"
            )
        folders[(arm, seed)] = folder
    return {run: Evaluation.read(folder) for run, folder in folders.items()}


@dataclass(frozen=True)
class Regraded:
    """One evaluation under another verifier: its tidy scores, its answers' verdicts (``answers.parquet``'s columns
    plus ``regraded`` and ``changed``: whether the verifier graded the answer, and whether its verdict differs from
    the evaluation's), per benchmark how many answers were re-graded, unparsed and changed, and whether every verdict
    and vote is the evaluation's (then so are its scores, votes and analysis)."""

    scores: pd.DataFrame
    answers: pd.DataFrame
    grading: pd.DataFrame
    same_as_evaluated: bool


def regrade(evaluation: Evaluation, verifier: Verifier) -> Regraded:
    """The evaluation with every answer the verifier applies to graded by it: the scores of the items it graded
    recounted, every other row and verdict as the evaluation wrote it."""
    stored = evaluation.answers
    columns = {name: stored[name].to_numpy(copy=True) for name in ANSWER_COLUMNS[3:]}  # correct ... vote
    regraded = np.zeros(len(stored), dtype=bool)
    n_correct, score = (evaluation.scores[name].to_numpy(dtype=float, copy=True) for name in ("n_correct", "score"))
    for item in evaluation.items:
        if not verifier.applies(item.doc):
            continue
        verdicts = [verifier.grade(item.doc, response) for response in item.responses]
        columns["vote"][item.rows] = vote_classes(verdicts, verifier.same_of(item.doc))
        for name in ("correct", "extracted", "status"):
            columns[name][item.rows] = [getattr(verdict, name) for verdict in verdicts]
        regraded[item.rows] = True
        n_correct[item.score_row] = sum(verdict.correct for verdict in verdicts)
        score[item.score_row] = n_correct[item.score_row] / len(verdicts)
    answers = stored.assign(**columns, regraded=regraded, changed=columns["correct"] != stored["correct"].to_numpy())
    same = not answers["changed"].any() and bool((columns["vote"] == stored["vote"].to_numpy()).all())
    scores = evaluation.scores.assign(n_correct=n_correct, score=score)
    return Regraded(scores, answers, grading_counts(answers), same)


def grading_counts(answers: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark: its answers, how many were re-graded, unparsed among those, and changed (right <-> wrong)."""
    flags = answers.assign(unparsed=answers["regraded"] & (answers["status"] == UNPARSED))
    counts = flags.groupby("benchmark", sort=True)[["regraded", "unparsed", "changed"]].sum()
    counts.insert(0, "answers", flags.groupby("benchmark", sort=True).size())
    return counts.astype("int64").reset_index()[GRADING_COLUMNS]
