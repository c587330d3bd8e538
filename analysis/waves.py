"""The statistics of a sequential seed design's looks: each run's primary summary, the paired differences in the
design's seed order, every look replayed from the scores (boundaries, levels, decisions: :mod:`armlab.analysis.stats.
sequential`), what each look decided and the runs its next wave needs (:func:`look_record`, :func:`chain`), and the
final tables (each arm's last look with its repeated confidence interval, every look's rows).

The looks are decided and recorded by the workflow (:mod:`armlab.experiment.sequential`: the locked design, the
append-only ``sequential/looks.jsonl``, each ``look-<k>.json``); here the recorded looks come in as an argument
(:class:`armlab.analysis.inputs.records.RecordedLooks`) and are checked against their replay, so a changed run is
found instead of silently revising a decision. The analysis writes no lock and no look.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

import numpy as np
import pandas as pd

from armlab.analysis.comparisons import summaries
from armlab.analysis.config import Config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs.records import RecordedLooks
from armlab.analysis.stats import sequential
from armlab.configfile import seed_list
from armlab.spec import LOOK_STAMPS, ArmLook, Look


def design_of(config: Config) -> sequential.Design:
    """The config's sequential design, which everything here needs."""
    if config.design is None:
        raise AnalysisInputError(f"{config.source}: seeds: not a sequential design")
    return config.design


def initial_runs(config: Config) -> list[tuple[str, int]]:
    """The first wave: every compared arm at the design's first ``initial`` seeds."""
    seeds = _seeds(config)[: design_of(config).initial]
    return [(arm, seed) for arm in config.compared_arms for seed in seeds]


def _seeds(config: Config) -> list[int]:
    design = design_of(config)
    return seed_list({"max": design.max, "start": design.start})


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
        records += sequential.run_family(diffs, design_of(config), comparison.family, comparison.reference, upto)
    return records


def look_record(records: list[ArmLook], config: Config, look: int, evaluated: list) -> dict:
    """What look ``look`` decided, and the runs the next wave needs (cumulative; empty when every arm stopped)."""
    design = design_of(config)
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


def comparable(record: dict) -> dict:
    """A look record without what may differ between two identical looks (never any decision or number)."""
    return {k: v for k, v in record.items() if k not in LOOK_STAMPS}


def chain(values: pd.Series, config: Config, upto: int | None = None) -> list[dict]:
    """The look records from the first look, each with the runs it used and the runs its next wave needs.

    The first look uses :func:`initial_runs`; each later one the runs its predecessor asked for. Stops at the
    look where every arm has stopped, or at ``upto``; a look whose open arms lack seeds is an error.
    """
    last = upto or len(design_of(config).looks)
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
        if earlier["look"] <= len(looks) and comparable(earlier) != comparable(looks[earlier["look"] - 1]):
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


def final_tables(
    values: pd.Series, config: Config, recorded: RecordedLooks | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(decisions, looks)``: each arm's last look with its repeated confidence interval, and every look's rows.

    ``values``: each run's primary summary. With ``recorded`` (the experiment's record of looks, read by
    :func:`armlab.analysis.inputs.records.recorded_looks`) the replayed looks must agree with it. The interval is
    valid after the design's optional stopping; the mean difference at the stop is the plain mean of its seeds
    (biased away from zero for arms stopped early for a difference).
    """
    design = design_of(config)
    if recorded is not None:  # the workflow's own results: the record must be complete
        looks, ledger = chain(values, config), recorded.path
        if [r["look"] for r in recorded.looks] != list(range(1, len(looks) + 1)):
            raise AnalysisInputError(
                f"{ledger}: records looks {[r['look'] for r in recorded.looks]}, but the runs give looks "
                f"1..{len(looks)}; the record of looks is append-only and complete: restore it or start a new "
                f"experiment"
            )
        check_recorded(looks, recorded.looks, ledger)
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
