"""Preregistered predictions: what a config says its comparisons will show, locked before the runs.

A config's ``predictions:`` list names comparisons (family, arm, summary) and what each difference from the
reference will be (``direction``: better, worse, equivalent within ±margin, not better or not worse by more than
margin), with the claim's ``source``. The workflow writes them to ``results/<experiment>/predictions/lock.json``,
with their hash, the commit and the time, before the first training job starts
(:func:`armlab.experiment.locks.write_predictions_lock`); the lock is never rewritten. The analysis then marks each
comparison **confirmatory** (a locked prediction names it) or **exploratory** (not predicted, or predicted only after
the runs began), and :func:`replication_table` gives each prediction's verdict from the comparisons table:

==============  ===================================================  ============================================
direction       replicated                                           contradicted
==============  ===================================================  ============================================
better / worse  significant in that direction (the family's Holm)    significant the other way, or equivalent
                                                                     within ±margin (an effect too small to count)
equivalent      the (1 − 2α) interval inside (−margin, margin)       the (1 − 2α) interval outside it
                (the TOST at α)
not_better      the (1 − 2α) interval's upper end below +margin      its lower end above +margin
                (one-sided test at α)
not_worse       the lower end above −margin                          the upper end below −margin
==============  ===================================================  ============================================

Anything else is inconclusive. "Better" is in the measure's own sense (lower is better for the optimality gap).
Locked predictions stay in the table even when the config drops them, so a failed prediction cannot be withdrawn
silently; a prediction added or changed after the lock is exploratory.

The lock also pins what each prediction means (:func:`meaning`): its family's reference and arms (the primary Holm
family), the measures the family tests (the secondary, gatekept Holm family), the predicted measure's definition
(its benchmarks and weights; a statistic's parameters; k of pass@k and maj@k), alpha and the settings of the test
that decides and of its interval (:data:`VERDICT_SETTINGS`). A locked prediction whose meaning differs when the
analysis runs is exploratory, with a note naming what changed (:func:`check_meaning`); one whose comparison is gone
is refused when the workflow starts (:func:`armlab.experiment.locks.check_withdrawn`). A lock without meanings
(written by an armlab before them) pins nothing of that, so its predictions are exploratory. The analysis reads
the lock (:func:`read_lock`) and writes none.
"""

from __future__ import annotations

import hashlib
import json
import typing
from dataclasses import asdict
from pathlib import Path
from typing import Protocol, TypeGuard

import pandas as pd

from armlab import files, layout
from armlab.analysis.comparisons.summaries import PRIMARY
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.settings import Settings
from armlab.contract import KEY, SAMPLE_COUNTS
from armlab.registration import against_locks
from armlab.spec import Prediction, settings_of

LOCK = layout.PREDICTIONS_LOCK
DIRECTIONS = typing.get_args(next(s.type for s in settings_of(Prediction) if s.name == "direction"))
# the analysis settings a verdict depends on: the level, the test that decides and its interval, the runs that count
VERDICT_SETTINGS = (
    "alpha",
    "pairing",
    "equivalence_test",
    "equivalence_margin",
    "exact_max_seeds",
    "sign_flip_resamples",
    "bootstrap_seed",
    "common_seeds_only",
    "drop_incomplete",
)
# a margin is in score units, on a [0, 1] scale: at half of it or more, an interval of any difference passes
MAX_MARGIN = 0.5
KEYS = tuple(s.name for s in settings_of(Prediction))
# replications.csv: its text columns, then its numbers and the in_config flag
TEXT_COLUMNS = ("registration", "claim", "source", "family", "arm", "reference", "measure", "prediction", "verdict")
REPLICATION_COLUMNS = [
    *TEXT_COLUMNS,
    *("margin", "n_seeds", "mean_diff", "ci_low", "ci_high", "ci_level", "eq_low", "eq_high", "p_holm", "in_config"),
]
CLAIMS = {
    "better": "{arm} is better than {reference}",
    "worse": "{arm} is worse than {reference}",
    "equivalent": "{arm} is within ±{points:g} point(s) of {reference}",
    "not_better": "{arm} is not better than {reference} by more than {points:g} point(s)",
    "not_worse": "{arm} is not worse than {reference} by more than {points:g} point(s)",
}


class Analysis(Protocol):
    """What the lock reads of an experiment's :class:`armlab.analysis.config.Config` (which imports this module)."""

    @property
    def comparisons(self) -> tuple: ...

    @property
    def benchmarks(self) -> dict | None: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def predictions(self) -> tuple: ...

    @property
    def measures(self) -> list[str] | None: ...


def parse_predictions(value: object, comparisons, default_margin: float, source: str) -> tuple[Prediction, ...]:
    """Validate a config's ``predictions:`` list against its comparisons; one line naming the entry on error."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise AnalysisInputError(f"{source}: predictions: expected a list of {{family, arm, direction, source}}")
    references = {c.family: (c.reference, c.arms) for c in comparisons}
    out, seen = [], set()
    for i, entry in enumerate(value):
        where = f"{source}: predictions[{i}]"
        if not isinstance(entry, dict):
            raise AnalysisInputError(f"{where}: expected a mapping with family, arm, direction and source")
        unknown = sorted(set(entry) - set(KEYS))
        if unknown:
            raise AnalysisInputError(f"{where}: unknown key(s) {unknown}; known: {list(KEYS)}")
        for key in ("family", "arm", "direction", "source"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise AnalysisInputError(f"{where}.{key}: expected a non-empty string, got {entry.get(key)!r}")
        family, arm, direction = entry["family"], entry["arm"], entry["direction"]
        if family not in references:
            raise AnalysisInputError(
                f"{where}.family: {family!r} is not a comparison family; known: {list(references)}"
            )
        reference, arms = references[family]
        if arm not in arms:
            raise AnalysisInputError(
                f"{where}.arm: {arm!r} is not compared in family {family!r}; its arms: {list(arms)}"
            )
        if direction not in DIRECTIONS:
            raise AnalysisInputError(f"{where}.direction: expected one of {list(DIRECTIONS)}, got {direction!r}")
        summary = entry.get("summary", PRIMARY)
        if not isinstance(summary, str) or not summary:
            raise AnalysisInputError(f"{where}.summary: expected a measure name, got {summary!r}")
        margin = entry.get("margin", default_margin)
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 < margin < MAX_MARGIN:
            key = f"{where}.margin" if "margin" in entry else f"{where}.margin (analysis.equivalence_margin)"
            raise AnalysisInputError(
                f"{key}: expected a positive number below {MAX_MARGIN} (score units, a scale of 0 to 1, where a "
                f"margin of {MAX_MARGIN} or more lets an interval of almost any difference pass), got {margin!r}"
            )
        claim = entry.get("claim") or CLAIMS[direction].format(arm=arm, reference=reference, points=100 * margin)
        if not isinstance(claim, str):
            raise AnalysisInputError(f"{where}.claim: expected a string, got {claim!r}")
        if (family, arm, summary) in seen:
            raise AnalysisInputError(f"{where}: a second prediction for ({family}, {arm}, {summary})")
        seen.add((family, arm, summary))
        out.append(
            Prediction(
                family=family,
                arm=arm,
                summary=summary,
                direction=direction,
                margin=float(margin),
                source=entry["source"],
                claim=claim,
            )
        )
    return tuple(out)


def predictions_hash(predictions, meanings: list | None = None) -> str:
    """The sha256 a lock records: of its predictions, and of their meanings where it pins them."""
    records = [asdict(p) for p in predictions]
    payload = records if meanings is None else {"predictions": records, "meanings": meanings}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _plain(value):
    """``value`` as JSON reads it back (tuples as lists), so that a meaning read from a lock equals one computed."""
    return json.loads(json.dumps(value, sort_keys=True))


def meaning(prediction: Prediction, config: Analysis) -> dict:
    """What decides the verdict of ``prediction`` under ``config``, beyond the prediction itself (see the module
    docstring): plain data, compared key by key with the meaning locked. A family, arm or measure the config does
    not have is None."""
    family = next((c for c in config.comparisons if c.family == prediction.family), None)
    benchmarks = config.benchmarks
    settings = asdict(config.settings)
    return _plain(
        {
            "reference": family.reference if family else None,
            "family arms": list(family.arms) if family else None,
            "family measures": config.measures,
            "measure": _definition(prediction.summary, config) if benchmarks is not None else None,
            **{f"analysis.{key}": settings[key] for key in VERDICT_SETTINGS},
        }
    )


def _definition(measure: str, config: Analysis) -> dict | None:
    """What measure ``measure`` is under ``config`` (whose benchmarks are known): a weighted mean of benchmarks (a
    summary, a subset, one benchmark), a statistic over every benchmark, or pass@k / maj@k of the primary summary."""
    import pandas as pd

    from armlab.analysis.comparisons.summaries import summary_weights
    from armlab.analysis.samples.sampled import majority_name, measure_name
    from armlab.analysis.stats.statistics import higher_is_better

    settings, benchmarks = config.settings, dict(config.benchmarks or {})
    weights = summary_weights(pd.Series(benchmarks, dtype=object), settings.subsets)

    def weighted(name: str) -> dict:
        return {b: round(float(w), 12) for b, w in weights.loc[name].items() if w}

    if measure in weights.index:
        return {"weights": weighted(measure)}
    if measure in settings.statistics:
        return {
            "statistic": measure,
            "parameters": settings.statistics[measure],
            "higher_is_better": higher_is_better([measure])[measure],
            "benchmarks": sorted(benchmarks),
        }
    for k in (*settings.pass_k, *settings.maj_k):
        if measure in (measure_name(k), majority_name(k)):
            return {"answers": k, "of": measure.split("@")[0], "weights": weighted(weights.index[0])}
    return {"benchmark": measure} if measure in benchmarks and settings.per_benchmark else None


def _changes(old, new, key: str = "") -> list[str]:
    """The dotted keys where two plain-data values differ, each with both values (long ones shortened)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            c for k in sorted(set(old) | set(new)) for c in _changes(old.get(k), new.get(k), f"{key}.{k}".strip("."))
        ]

    def shown(value) -> str:
        text = json.dumps(value)
        return text if len(text) <= 60 else text[:57] + "..."

    return [] if old == new else [f"{key} {shown(old)} -> {shown(new)}"]


def read_lock(path: str | Path) -> dict | None:
    """The lock at ``path`` (``<experiment>/predictions/lock.json``; None if absent), checked: its predictions must
    hash to its recorded hash, and the experiment's jobs must not have run under another lock or a deleted one
    (:func:`armlab.registration.against_locks`). A lock that does not predate every output (some job manifest does
    not record running under it) makes every prediction exploratory: ``exploratory`` then says why."""
    path = Path(path)
    try:
        unregistered = against_locks(path.parents[1])
    except files.BadFile as exc:
        raise AnalysisInputError(str(exc)) from None
    if not path.exists():
        return None
    lock = files.read_json(path, "predictions lock")
    try:
        locked = tuple(Prediction(**p) for p in lock["predictions"])
    except (KeyError, TypeError) as exc:
        raise AnalysisInputError(f"{path}: not a predictions lock written by the workflow ({exc})") from None
    meanings = lock.get("meanings")
    if not (meanings is None or (isinstance(meanings, list) and len(meanings) == len(locked))):
        raise AnalysisInputError(f"{path}: not a predictions lock written by the workflow (its meanings)")
    if predictions_hash(locked, meanings) != lock.get("hash"):
        raise AnalysisInputError(
            f"{path}: its predictions do not match its hash: the lock was edited after it was written"
        )
    why = (
        f"does not predate {len(unregistered)} of the experiment's outputs (e.g. {unregistered[0]}, whose manifest "
        f"does not record running under it)"
        if unregistered
        else None
    )
    return {**lock, "predictions": locked, "exploratory": why}


def check_scores(lock: dict | None, scores: pd.DataFrame, jobs: Path) -> dict | None:
    """``lock``, exploratory unless ``scores`` are exactly the rows of the experiment's evaluations in ``jobs``, each
    checked against its manifest: the lock covers the jobs, not a scores file edited or made elsewhere."""
    if not confirms(lock):
        return lock
    evaluated = []
    for path in layout.job_files(jobs, "evals", "scores.parquet"):
        try:
            evaluated.append(pd.read_parquet(files.verify_file(path)))
        except files.BadFile as exc:
            return {**lock, "exploratory": f"covers evaluations that fail their manifests ({exc})"}
    columns = [*KEY, "score", *SAMPLE_COUNTS]
    mine = scores.reindex(columns=columns).astype({"seed": "int64"})
    theirs = pd.concat(evaluated, ignore_index=True).reindex(columns=columns) if evaluated else mine.iloc[:0]
    theirs = theirs.astype(mine.dtypes.to_dict())
    same = len(mine) == len(theirs) and mine.sort_values(KEY, ignore_index=True).equals(
        theirs.sort_values(KEY, ignore_index=True)
    )
    if same:
        return lock
    return {
        **lock,
        "exploratory": f"covers the evaluations in {jobs}/evals, and the scores analysed differ from theirs "
        f"({len(mine)} rows against {len(theirs)}: edited, or made elsewhere)",
    }


def check_meaning(lock: dict | None, config: Analysis) -> dict | None:
    """``lock``, with ``changed`` (locked prediction's (family, arm, measure) -> what changed) for every locked
    prediction whose meaning under ``config`` differs from the one locked; exploratory as a whole when the lock
    pins no meanings (an older armlab's)."""
    if not confirms(lock):
        return lock
    if lock.get("meanings") is None:
        return {
            **lock,
            "exploratory": "pins the predictions but not what decides their verdicts (written by an armlab before "
            "the lock pinned the reference, the measures, alpha and the test), so a change of those after it cannot "
            "be ruled out",
        }
    changed = {}
    for p, locked in zip(lock["predictions"], lock["meanings"]):
        differences = _changes(locked, meaning(p, config))
        if differences:
            changed[(p.family, p.arm, p.summary)] = "; ".join(differences[:4]) + (" ..." if differences[4:] else "")
    return {**lock, "changed": changed}


def changed_notes(lock: dict | None) -> list[str]:
    """One note per locked prediction made exploratory by a change of what decides its verdict."""
    return [
        f"Predictions: ({family}, {arm}, {measure}) is exploratory: what decides its verdict changed after "
        f"predictions/lock.json was written ({what})."
        for (family, arm, measure), what in ((lock or {}).get("changed") or {}).items()
    ]


def confirms(lock: dict | None) -> TypeGuard[dict]:
    """Whether ``lock`` exists and is confirmatory evidence: every job ran under it, the scores are the jobs'."""
    return lock is not None and not lock.get("exploratory")


def registration(comparisons: pd.DataFrame, lock: dict | None) -> pd.Series:
    """Per row of the comparisons table: confirmatory when a locked prediction names its (family, arm, measure)
    and the lock predates every output."""
    changed = (lock.get("changed") or {}) if confirms(lock) else {}
    locked = {(p.family, p.arm, p.summary) for p in lock["predictions"]} - set(changed) if confirms(lock) else set()
    keys = zip(comparisons["family"], comparisons["arm"], comparisons["measure"])
    return pd.Series(
        ["confirmatory" if key in locked else "exploratory" for key in keys], index=comparisons.index, dtype=object
    )


def verdict(direction: str, margin: float, row) -> str:
    """Replicated, contradicted or inconclusive: the rule of the module's table on one comparisons row."""
    sign = 1.0 if row.higher_is_better else -1.0
    # in the measure's own sense: positive = better; the interval flips with the sign
    low, high = sorted((sign * row.eq_low, sign * row.eq_high))
    diff = sign * row.mean_diff
    if direction in ("better", "worse"):
        wanted = 1.0 if direction == "better" else -1.0
        if row.reject and diff * wanted > 0:
            return "replicated"
        if (row.reject and diff * wanted < 0) or (-margin < low and high < margin):
            return "contradicted"
        return "inconclusive"
    if direction == "equivalent":
        if -margin < low and high < margin:
            return "replicated"
        return "contradicted" if low > margin or high < -margin else "inconclusive"
    if direction == "not_better":
        return "replicated" if high < margin else "contradicted" if low > margin else "inconclusive"
    return "replicated" if low > -margin else "contradicted" if high < -margin else "inconclusive"  # not_worse


def replication_table(comparisons: pd.DataFrame, predictions, lock: dict | None, source: str) -> pd.DataFrame:
    """One row per prediction, locked ones first (confirmatory, or exploratory when the lock does not predate every
    output: they stay listed), then the config's others (exploratory).

    The observed difference and interval are the comparison's own (its first interval method, the test's).
    A prediction naming a measure the comparisons table lacks is an error naming the prediction.
    """
    locked = list((lock or {}).get("predictions", ()))
    changed = (lock or {}).get("changed") or {}
    rows = [
        (p, "confirmatory" if confirms(lock) and (p.family, p.arm, p.summary) not in changed else "exploratory")
        for p in locked
    ]
    rows += [(p, "exploratory") for p in predictions if p not in locked]
    tested = comparisons.drop_duplicates(["family", "measure", "arm"]).set_index(["family", "arm", "measure"])
    out = []
    for p, status in rows:
        key = (p.family, p.arm, p.summary)
        if key not in tested.index:
            measures = sorted(set(comparisons.loc[comparisons["family"] == p.family, "measure"]))
            raise AnalysisInputError(
                f"{source}: predictions ({p.family}, {p.arm}): no comparison of measure {p.summary!r}; "
                f"the family's measures: {measures}"
            )
        row = tested.loc[key]
        record = {
            "registration": status,
            "claim": p.claim,
            "source": p.source,
            "family": p.family,
            "arm": p.arm,
            "reference": row.reference,
            "measure": p.summary,
            "prediction": p.direction,
            "margin": p.margin,
            "verdict": verdict(p.direction, p.margin, row),
            "in_config": p in predictions,
        }
        out.append(record | {c: row[c] for c in REPLICATION_COLUMNS if c not in record and c in row.index})
    return pd.DataFrame(out, columns=REPLICATION_COLUMNS)
