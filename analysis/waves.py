"""A sequential seed design in the workflow: the locked design, the append-only record of looks, each wave's runs.

In ``results/<experiment>/sequential/``:

``design.json``
    the lock, written when the first wave starts: the hash of every config key that decides what runs or how
    it is judged (all but ``limits`` and the analysis keys the decisions do not read), the config itself, the
    time and the commit (:class:`armlab.spec.DesignLock`). A workflow whose config hashes differently is refused
    before any job runs.
``looks.jsonl``
    one JSON line per look, appended and never rewritten: the look, its seed count, every open arm's statistic,
    boundary, level and decision (:class:`armlab.spec.ArmLook`), the arms open, the runs spent
    (:class:`armlab.spec.Look`).
``look-<k>.json``
    the checkpoint output of look k (workflows/rules/sequential.smk): the same record plus the runs the next
    wave needs; Snakemake reads it to grow the DAG.

A look replays every earlier look from the runs' scores (the decisions at a look use only that look's seeds)
and checks the replay against the record, so a changed run is found instead of silently revising a decision.

    python -m armlab.analysis.waves look CONFIG_JSON --look K --ledger LEDGER --out LOOK_JSON SCORES.parquet ...
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np
import pandas as pd

from armlab import files, layout
from armlab.analysis.comparisons import summaries
from armlab.analysis.config import Config, parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import sequential
from armlab.configfile import ConfigError, seed_list
from armlab.spec import LOOK_STAMPS, ArmLook, DesignLock, Look

LOCK, LEDGER = layout.DESIGN_LOCK, layout.LOOKS_LEDGER
# analysis keys the looks read (alpha, margin, confidence, the primary summary, the sign-flip enumeration)
DECISION_KEYS = (
    "alpha",
    "confidence",
    "equivalence_margin",
    "exact_max_seeds",
    "sign_flip_resamples",
    "bootstrap_seed",
    "subsets",
)


# what a job may be given more of without changing its results: the scheduler's resources of the backends
RESOURCE_KEYS = ("gpus", "eval_gpus", "mem_mb", "runtime")


def locked_part(config: dict) -> dict:
    """The part of a validated workflow config that a sequential design locks: everything but ``limits``, the
    backends' job resources, the predictions (locked on their own, analysis/predictions.py) and the analysis keys
    the looks do not read; those it reads with their defaults filled in, so that writing a default out is no
    change."""
    part = {key: value for key, value in config.items() if key not in ("limits", "analysis", "predictions")}
    for section in ("trl", "command"):
        if isinstance(part.get(section), dict):
            part[section] = {k: v for k, v in part[section].items() if k not in RESOURCE_KEYS}
    settings = asdict(parse_config(config).settings)
    part["analysis"] = {key: settings[key] for key in DECISION_KEYS}
    return json.loads(json.dumps(part, sort_keys=True))


def design_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(locked_part(config), sort_keys=True).encode()).hexdigest()


def _differences(old, new, key: str = "") -> list[str]:
    """Dotted keys where two plain-data values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            out += _differences(old.get(k), new.get(k), f"{key}.{k}" if key else str(k))
        return out
    return [] if old == new else [f"{key}: {json.dumps(old)} -> {json.dumps(new)}"]


def check_lock(results: str | Path, config: dict) -> None:
    """Refuse a config whose design differs from the one locked in ``results`` (no-op before the first wave), a
    record of looks that lacks its lock or a look whose checkpoint file exists, and a missing lock where training
    or evaluation outputs exist (a deleted ``sequential/``, or a design added to an experiment already run)."""
    path, ledger = Path(results) / LOCK, Path(results) / LEDGER
    records = read_ledger(ledger)
    recorded = {r["look"] for r in records}
    written = {int(p.stem[5:]) for p in ledger.parent.glob("look-*.json") if p.stem[5:].isdigit()}
    if written - recorded:
        raise ConfigError(
            f"{ledger}: look(s) {sorted(written - recorded)} have their checkpoint files but are not in the record "
            f"of looks (deleted or truncated?); the record is append-only: restore it or start a new experiment"
        )
    for look in sorted(written):
        read_look(ledger.parent / f"look-{look}.json", records)
    if not path.exists():
        if recorded:
            raise ConfigError(
                f"{path}: missing, but {ledger} records looks; restore the lock or start a new experiment"
            )
        evidence = files.experiment_outputs(results)
        if evidence:  # the lock is written when the first wave starts: a design without one never ran as one
            raise ConfigError(
                f"{path}: missing, but {len(evidence)} training or evaluation output(s) of this experiment exist "
                f"({evidence[0]} …): a sequential design is locked before its first wave, so a deleted lock or "
                f"record cannot be re-created; restore {path.parent} or run the design as a new experiment"
            )
        return
    lock = files.read_json(path, "sequential design lock")
    if not isinstance(lock, dict):
        raise ConfigError(f"{path}: expected a JSON object (the design lock the workflow writes), got {lock!r:.40}")
    locked = lock.get("hash")
    other = sorted({str(r.get("design_hash")) for r in records} - {locked})
    if other:
        raise ConfigError(
            f"{path}: locks design {str(locked)[:12]}, but {ledger} records looks decided under {other[0][:12]}: the "
            f"lock was rewritten after its looks; restore it, or run the design as a new experiment"
        )
    if locked == design_hash(config):
        return
    changed = _differences(lock.get("config"), locked_part(config))
    raise ConfigError(
        f"{path}: the sequential design was locked when its first wave started ({lock.get('locked_at')}) and the "
        f"config now differs: {'; '.join(changed[:5])}{' ...' if len(changed) > 5 else ''}. Changing a design "
        f"after its looks began would void their error rates; restore it, or run the change as a new experiment"
    )


def write_lock(results: str | Path, config: dict) -> None:
    """Lock the design when the first wave starts; an existing lock is left as it is (checked by :func:`check_lock`)."""
    path = Path(results) / LOCK
    if path.exists():
        return
    lock = DesignLock(
        hash=design_hash(config),
        config=locked_part(config),
        locked_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        git_commit=files.git_commit(),
        git_dirty=files.git_dirty(),
    )
    files.write_json(path, asdict(lock))


def _design(config: Config) -> sequential.Design:
    """The config's sequential design, which everything here needs."""
    if config.design is None:
        raise AnalysisInputError(f"{config.source}: seeds: not a sequential design")
    return config.design


def initial_runs(config: Config) -> list[tuple[str, int]]:
    """The first wave: every compared arm at the design's first ``initial`` seeds."""
    seeds = _seeds(config)[: _design(config).initial]
    return [(arm, seed) for arm in config.compared_arms for seed in seeds]


def _seeds(config: Config) -> list[int]:
    design = _design(config)
    return seed_list({"max": design.max, "start": design.start})


def read_look(path: str | Path, records: list[dict] | None = None) -> dict:
    """The checkpoint file of look k (``look-<k>.json``), checked against look k in the record of looks beside it
    (``records``, when already read): the next wave's runs are read from it, so an edited file would change what
    runs."""
    path = Path(path)
    ledger = path.parent / Path(LEDGER).name
    look = files.read_json(path, "sequential look")
    recorded = [r for r in (read_ledger(ledger) if records is None else records) if r["look"] == int(path.stem[5:])]
    if not isinstance(look, dict) or not recorded or _comparable(look) != _comparable(recorded[-1]):
        raise AnalysisInputError(
            f"{path}: differs from its look in {ledger}: a look's file is written once with its record; restore it "
            f"(or delete it, to have the look decided again from the runs)"
        )
    return look


def read_ledger(path: str | Path) -> list[dict]:
    """The recorded looks, in order; an unreadable line is an error naming it."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return []
    records = []
    for number, line in enumerate(files.regular_file(path, "record of looks").read_bytes().splitlines(), 1):
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("look"), int):
            raise AnalysisInputError(f"{path}: line {number} is not a look record; the record of looks is damaged")
        records.append(record)
    return records


def primary_values(scores: pd.DataFrame, config: Config) -> pd.Series:
    """Each run's primary summary (the first of :func:`armlab.analysis.comparisons.summaries.summary_weights`), by (arm,
    seed)."""
    accuracy = summaries.benchmark_accuracy(scores)
    weights = summaries.summary_weights(summaries.benchmark_domains(scores), config.settings.subsets)
    return summaries.summarize(accuracy, weights)[weights.index[0]]


def family_differences(values: pd.Series, config: Config, comparison) -> dict[str, np.ndarray]:
    """arm -> paired differences from the reference over the seeds both ran, in design order (a prefix of it)."""
    order, out = _seeds(config), {}
    ref = values.loc[comparison.reference]
    for arm in comparison.arms:
        mine = values.loc[arm]
        common = [s for s in order if s in mine.index and s in ref.index]
        if common != order[: len(common)]:
            raise AnalysisInputError(
                f"family {comparison.family}: arm {arm} and {comparison.reference} share seeds {common}, not the "
                f"first {len(common)} of the design's order {order[: len(common)]}"
            )
        out[arm] = (mine.loc[common] - ref.loc[common]).to_numpy(dtype=float)
    return out


def replay(values: pd.Series, config: Config, upto: int | None = None) -> list[ArmLook]:
    """Every family's looks from the start (up to ``upto``), from the runs' primary summaries."""
    records = []
    for comparison in config.comparisons:
        diffs = family_differences(values, config, comparison)
        records += sequential.run_family(diffs, _design(config), comparison.family, comparison.reference, upto)
    return records


def look_record(records: list[ArmLook], config: Config, look: int, evaluated: list) -> dict:
    """What look ``look`` decided, and the runs the next wave needs (cumulative; empty when every arm stopped)."""
    design = _design(config)
    now = [r for r in records if r.look == look]
    open_arms = {
        c.family: [r.arm for r in now if r.family == c.family and r.decision == sequential.CONTINUE]
        for c in config.comparisons
    }
    done = not any(open_arms.values()) or look == len(design.looks)
    runs = {tuple(run) for run in evaluated}
    if not done:
        seeds = _seeds(config)[: design.looks[look]]
        for comparison in config.comparisons:
            if open_arms[comparison.family]:
                runs |= {(arm, s) for arm in (comparison.reference, *open_arms[comparison.family]) for s in seeds}
    arm_order = {arm: i for i, arm in enumerate(config.compared_arms)}
    return Look(
        look=look,
        of=len(design.looks),
        n_seeds=design.looks[look - 1],
        decisions=[asdict(r) for r in now],
        open=open_arms,
        done=done,
        runs_evaluated=len(evaluated),
        runs=[list(run) for run in evaluated],
        runs_fixed=len(config.compared_arms) * design.max,
        next_runs=[] if done else [list(r) for r in sorted(runs, key=lambda r: (arm_order[r[0]], r[1]))],
    ).record()


def _comparable(record: dict) -> dict:
    """A look record without what may differ between two identical looks (never any decision or number)."""
    return {k: v for k, v in record.items() if k not in LOOK_STAMPS}


def append_look(ledger: Path, record: dict) -> None:
    """Add a look to the ledger: earlier lines are kept byte for byte, the file replaced atomically."""
    old = ledger.read_bytes() if ledger.exists() else b""
    with files.atomic_path(ledger) as tmp:
        tmp.write_bytes(old + (json.dumps(record, sort_keys=True) + "\n").encode())


def progress(record: dict) -> str:
    """One look on the console: seeds, each arm's statistic against its boundary, what is still open."""
    lines = [f"armlab sequential: look {record['look']} of {record['of']} at {record['n_seeds']} seeds"]
    for r in record["decisions"]:
        lines.append(
            f"  {r['family']}/{r['arm']} vs {r['reference']}: mean diff {r['mean_diff']:+.4f}, z {r['z']:+.2f} "
            f"(boundary +-{r['boundary_z']:.2f} at level {r['level']:.4g}) -> {r['decision']}"
        )
    still = [f"{f}: {', '.join(a)}" for f, a in record["open"].items() if a]
    lines.append(
        f"  open: {'; '.join(still) or 'none'}; runs so far {record['runs_evaluated']} "
        f"(fixed design: {record['runs_fixed']})"
        + ("" if record["done"] else f"; next wave brings it to {len(record['next_runs'])}")
    )
    return "\n".join(lines)


def chain(values: pd.Series, config: Config, upto: int | None = None) -> list[dict]:
    """The look records from the first look, each with the runs it used and the runs its next wave needs.

    The first look uses :func:`initial_runs`; each later one the runs its predecessor asked for. Stops at the
    look where every arm has stopped, or at ``upto``; a look whose open arms lack seeds is an error.
    """
    last = upto or len(_design(config).looks)
    decisions = replay(values, config, upto=last)
    evaluated, out = initial_runs(config), []
    for look in range(1, last + 1):
        out.append(look_record(decisions, config, look, evaluated))
        if out[-1]["done"]:
            break
        evaluated = [tuple(run) for run in out[-1]["next_runs"]]
    return out


def check_recorded(looks: list[dict], recorded: list[dict], ledger: Path) -> None:
    """Every recorded look among ``looks`` must be what its runs give now."""
    for earlier in recorded:
        if earlier["look"] <= len(looks) and _comparable(earlier) != _comparable(looks[earlier["look"] - 1]):
            raise AnalysisInputError(
                f"{ledger}: look {earlier['look']} is recorded with other decisions than its runs give now: the runs "
                f"it used have changed since. Looks are never revised; restore those runs or start a new experiment"
            )


FINAL_COLUMNS = [
    "family",
    "arm",
    "reference",
    "look",
    "n_seeds",
    "decision",
    "direction",
    "mean_diff",
    "rci_low",
    "rci_high",
    "rci_level",
    "level",
    "z",
    "boundary_z",
    "equivalence_margin",
    "max_seeds",
    "seeds_saved",
]
LOOK_COLUMNS = [f.name for f in fields(ArmLook)]


def final_tables(values: pd.Series, config: Config, ledger: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(decisions, looks)``: each arm's last look with its repeated confidence interval, and every look's rows.

    ``values``: each run's primary summary. With ``ledger`` (the experiment's record of looks) the replayed
    looks must agree with it. The interval is valid after the design's optional stopping; the mean difference
    at the stop is the plain mean of its seeds (biased away from zero for arms stopped early for a difference).
    """
    design = _design(config)
    if ledger is not None and ledger.parent.is_dir():  # the workflow's own results: the record must be complete
        looks, recorded = chain(values, config), read_ledger(ledger)
        if [r["look"] for r in recorded] != list(range(1, len(looks) + 1)):
            raise AnalysisInputError(
                f"{ledger}: records looks {[r['look'] for r in recorded]}, but the runs give looks 1..{len(looks)}; "
                f"the record of looks is append-only and complete: restore it or start a new experiment"
            )
        check_recorded(looks, recorded, ledger)
    records = replay(values, config)
    last = {}
    for r in records:
        last[(r.family, r.arm)] = r
    rows = []
    for comparison in config.comparisons:
        diffs = family_differences(values, config, comparison)
        for arm in comparison.arms:
            r = last[(comparison.family, arm)]
            low, high = sequential.repeated_interval(diffs[arm], design, r.look)
            direction = ("better" if r.mean_diff > 0 else "worse") if r.decision == sequential.DIFFERS else ""
            rows.append(
                [
                    r.family,
                    arm,
                    r.reference,
                    r.look,
                    r.n_seeds,
                    r.decision,
                    direction,
                    r.mean_diff,
                    low,
                    high,
                    design.confidence,
                    r.level,
                    r.z,
                    r.boundary_z,
                    design.margin,
                    design.max,
                    design.max - r.n_seeds,
                ]
            )
    return pd.DataFrame(rows, columns=FINAL_COLUMNS), pd.DataFrame([asdict(r) for r in records], columns=LOOK_COLUMNS)


def run_look(config: Config, look: int, scores: pd.DataFrame, ledger: Path, design_id: str) -> dict:
    """Decide look ``look`` from the scores of every run so far, check the earlier looks against the ledger,
    and append this one unless it is recorded already (then it must agree)."""
    looks = chain(primary_values(scores, config), config, upto=look)
    if len(looks) < look:
        raise AnalysisInputError(f"look {look}: every arm stopped at look {len(looks)}; there is no look {look}")
    recorded = read_ledger(ledger)
    latest = recorded[-1]["look"] if recorded else 0
    if latest < look - 1:
        raise AnalysisInputError(f"{ledger}: look {look} follows look {latest}; looks go in order")
    check_recorded(looks, recorded, ledger)
    other = sorted({r["design_hash"] for r in recorded} - {design_id})
    if other:
        raise AnalysisInputError(
            f"{ledger}: earlier looks were decided under design {other[0][:12]}, this one would be under "
            f"{design_id[:12]}; a design cannot change between looks"
        )
    record = looks[-1]
    if not any(r["look"] == look for r in recorded):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        append_look(ledger, Look(**record, design_hash=design_id, written_at=stamp).record())
    return record


def plan(results: str | Path, config: Config) -> str:
    """Where the design stands, for the console and dry runs: the last look recorded and what the next wave holds."""
    recorded = read_ledger(Path(results) / LEDGER)
    design = _design(config)
    if not recorded:
        runs = initial_runs(config)
        return (
            f"armlab sequential: {len(design.looks)} looks at {list(design.looks)} seeds ({design.spending} spending); "
            f"first wave: seeds {runs[0][1]}..{runs[-1][1]} of {', '.join(config.compared_arms)} ({len(runs)} runs)"
        )
    last = recorded[-1]
    if last["done"]:
        return (
            f"armlab sequential: done at look {last['look']} of {last['of']}; {last['runs_evaluated']} runs "
            f"(fixed design: {last['runs_fixed']})"
        )
    new = len(last["next_runs"]) - last["runs_evaluated"]
    still = "; ".join(f"{f}: {', '.join(a)}" for f, a in last["open"].items() if a)
    return (
        f"armlab sequential: look {last['look']} of {last['of']} recorded; open: {still}; next wave (look "
        f"{last['look'] + 1}, {design.looks[last['look']]} seeds): {new} new runs, {len(last['next_runs'])} in all "
        f"(fixed design: {last['runs_fixed']})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m armlab.analysis.waves", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    look = sub.add_parser("look", help="decide one look and record it")
    look.add_argument("config", help="the analysis view (config/analysis.json)")
    look.add_argument("--look", type=int, required=True)
    look.add_argument("--ledger", required=True, help="sequential/looks.jsonl of the experiment")
    look.add_argument("--design-hash", required=True, help="the locked design's hash")
    look.add_argument("--out", required=True)
    look.add_argument("scores", nargs="+", help="the evaluations' scores.parquet of every run so far")
    args = parser.parse_args(argv)
    try:
        config = parse_config(files.read_json(args.config, "config"), source=args.config)
        if config.design is None:
            raise AnalysisInputError(f"{args.config}: seeds: not a sequential design")
        scores = pd.concat([pd.read_parquet(p) for p in args.scores], ignore_index=True)
        record = run_look(config, args.look, scores, Path(args.ledger), args.design_hash)
    except (AnalysisInputError, files.BadFile) as exc:
        print(f"analysis.waves: error: {exc}", file=sys.stderr)
        return 2
    files.write_json(args.out, record)
    print(progress(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
