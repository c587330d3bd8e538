"""The sequential looks' controller: each look decided from the runs so far and recorded, and the runs each wave
needs read back from the records.

In ``results/<experiment>/sequential/`` (beside the design's lock, :mod:`armlab.experiment.locks`):

``looks.jsonl``
    one JSON line per look, appended and never rewritten: the look, its seed count, every open arm's statistic,
    boundary, level and decision (:class:`armlab.spec.ArmLook`), the arms open, the runs spent
    (:class:`armlab.spec.Look`), and the locked design's hash and the time it was written.
``look-<k>.json``
    the checkpoint output of look k (workflows/rules/sequential.smk): the same record plus the runs the next
    wave needs; Snakemake reads it (:func:`read_look`, checked against the record) to grow the DAG.

A look replays every earlier look from the runs' scores (the decisions at a look use only that look's seeds:
:mod:`armlab.analysis.waves`) and checks the replay against the record, so a changed run is found instead of
silently revising a decision. The analysis only reads the record (:mod:`armlab.analysis.inputs.records`).

    python -m armlab.experiment.sequential look CONFIG_JSON --look K --ledger LEDGER --design-hash H --out LOOK_JSON \
        SCORES.parquet ...
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

from armlab import files, layout
from armlab.analysis import AnalysisInputError, waves
from armlab.analysis.config import Config, parse_config
from armlab.analysis.inputs.records import read_ledger
from armlab.spec import Look

LEDGER = layout.LOOKS_LEDGER


def read_look(path: str | Path, records: list[dict] | None = None) -> dict:
    """The checkpoint file of look k (``look-<k>.json``), checked against look k in the record of looks beside it
    (``records``, when already read): the next wave's runs are read from it, so an edited file would change what
    runs."""
    path = Path(path)
    ledger = path.parent / Path(LEDGER).name
    look = files.read_json(path, "sequential look")
    recorded = [r for r in (read_ledger(ledger) if records is None else records) if r["look"] == int(path.stem[5:])]
    if not isinstance(look, dict) or not recorded or waves.comparable(look) != waves.comparable(recorded[-1]):
        raise AnalysisInputError(
            f"{path}: differs from its look in {ledger}: a look's file is written once with its record; restore it "
            f"(or delete it, to have the look decided again from the runs)"
        )
    return look


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


def run_look(config: Config, look: int, scores: pd.DataFrame, ledger: Path, design_id: str) -> dict:
    """Decide look ``look`` from the scores of every run so far, check the earlier looks against the ledger,
    and append this one unless it is recorded already (then it must agree)."""
    looks = waves.chain(waves.primary_values(scores, config), config, upto=look)
    if len(looks) < look:
        raise AnalysisInputError(f"look {look}: every arm stopped at look {len(looks)}; there is no look {look}")
    recorded = read_ledger(ledger)
    latest = recorded[-1]["look"] if recorded else 0
    if latest < look - 1:
        raise AnalysisInputError(f"{ledger}: look {look} follows look {latest}; looks go in order")
    waves.check_recorded(looks, recorded, ledger)
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
    design = waves.design_of(config)
    if not recorded:
        runs = waves.initial_runs(config)
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
    parser = argparse.ArgumentParser(
        prog="python -m armlab.experiment.sequential", description=__doc__.split("\n\n")[0]
    )
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
        print(f"experiment.sequential: error: {exc}", file=sys.stderr)
        return 2
    files.write_json(args.out, record)
    print(progress(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
