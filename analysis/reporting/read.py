"""What the report reads: the folder ``armlab analyze`` wrote (:class:`Analysis`, of this armlab's format only) and
the run folders of our own experiments (:class:`Runs`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from armlab import files, layout
from armlab.analysis import outputs, predictions, tables
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs import reading, tidy
from armlab.analysis.screens import report_card, verifier_sensitivity
from armlab.analysis.settings import Settings

if TYPE_CHECKING:
    pass


TEXT_COLUMNS = (
    "family",
    "measure",
    "summary",
    "arm",
    "reference",
    "ci_method",
    "level",
    "note",
    "ranking",
    "summary_a",
    "summary_b",
    "benchmark",
    "reason",
    "verdict",
    "stage",
    "sampling_streams",
)
# in the sequential tables ``level`` is the Holm level, a number
SEQUENTIAL_TEXT_COLUMNS = ("family", "arm", "reference", "decision", "direction")


# ----------------------------------------------------------------------------- reading


def read_csv(path: Path | str, text_columns: tuple[str, ...] = TEXT_COLUMNS) -> pd.DataFrame:
    """A table written by the analysis; text stays text (an arm named ``NA`` is not a missing value)."""
    frame = reading.read_csv(
        path,
        "table of `armlab analyze` (the report reads its output directory)",
        na_values=[""],
        dtype=dict.fromkeys(text_columns, str),
    )
    text = [c for c in text_columns if c in frame.columns]
    frame[text] = frame[text].fillna("")
    return frame


def _text_columns(table: str) -> tuple[str, ...]:
    if table == "report_card":
        return tuple(report_card.COLUMNS)
    if table.startswith("sequential"):
        return SEQUENTIAL_TEXT_COLUMNS
    return predictions.TEXT_COLUMNS if table == "replications" else TEXT_COLUMNS


def verdict_lines(directory: Path | str) -> tuple[Path, list[str]]:
    """``(comparisons.csv's path, one verdict line per compared arm)`` of an analysis output folder, or of an
    experiment's results folder (its ``analysis/``); its format checked first."""
    directory = Path(directory)
    if not (directory / "comparisons.csv").is_file() and (directory / "analysis" / "comparisons.csv").is_file():
        directory = directory / "analysis"  # an experiment's results folder
    path = directory / "comparisons.csv"
    if not path.is_file():
        raise AnalysisInputError(
            f"{path}: not found; expected the output folder of `armlab analyze` or an experiment's results folder"
        )
    outputs.check_format(files.read_json(directory / "manifest.json", "manifest"), directory / "manifest.json")
    sequential_path = directory / "sequential.csv"
    sequential = read_csv(sequential_path, SEQUENTIAL_TEXT_COLUMNS) if sequential_path.is_file() else None
    return path, tables.verdict_lines(read_csv(path), sequential)


@dataclass(frozen=True)
class Analysis:
    """What ``armlab analyze`` wrote (see :func:`armlab.analysis.pipeline.write_outputs`)."""

    manifest: dict
    settings: Settings
    comparisons: pd.DataFrame
    summaries: pd.DataFrame  # long: arm, seed, summary, value
    weights: pd.DataFrame  # long: summary, benchmark, weight
    rankings: pd.DataFrame
    sensitivity: pd.DataFrame
    dropped: pd.DataFrame
    probability_of_improvement: pd.DataFrame
    performance_profiles: pd.DataFrame
    pass_at_k_vs_base: pd.DataFrame  # a header only where not computed
    per_benchmark: pd.DataFrame  # a header only without per-benchmark comparisons
    variance_components: pd.DataFrame
    allocation: pd.DataFrame
    sequential: pd.DataFrame  # a header only without a sequential design
    sequential_looks: pd.DataFrame
    replications: pd.DataFrame  # a header only without predictions
    unparsed: pd.DataFrame  # a header only without the answers' statuses
    contamination: pd.DataFrame  # a header only without procedural twins
    report_card: pd.DataFrame
    # the verdicts under other verifiers (armlab rescore writes it beside the tables); None where it has not run
    verifier_sensitivity: pd.DataFrame | None = None


def read_analysis(directory: Path | str, experiment: str) -> Analysis:
    """Read the output directory of `armlab analyze` for ``experiment``, of this armlab's format."""
    directory = Path(directory)
    path = directory / "manifest.json"
    if not path.exists():
        raise AnalysisInputError(f"{path}: not found; the report reads the output directory of `armlab analyze`")
    manifest = files.read_json(path, "manifest")
    if not isinstance(manifest, dict) or manifest.get("experiment") != experiment or "settings" not in manifest:
        found = manifest.get("experiment") if isinstance(manifest, dict) else None
        raise AnalysisInputError(
            f"{path}: experiment {found!r} is not the config's "
            f"{experiment!r}, or the file was not written by `armlab analyze`"
        )
    outputs.check_format(manifest, path)
    names = [name for name in outputs.TABLES if name != "accuracy"]  # the report reads accuracy from summaries
    files.verify_manifest(path, [f"{name}.csv" for name in names])
    try:
        settings = Settings(**manifest["settings"])
    except TypeError as exc:
        raise AnalysisInputError(f"{path}: settings: {exc}; expected the settings `armlab analyze` writes") from None
    tables_read = {name: read_csv(directory / f"{name}.csv", _text_columns(name)) for name in names}
    rescored = directory / verifier_sensitivity.TABLE
    if rescored.is_file():
        table = verifier_sensitivity.read_table(rescored, "table of `armlab rescore`")
        tables_read["verifier_sensitivity"] = table
        # the card was graded when the analysis ran, before the rescore: its grader item is graded from the table
        tables_read["report_card"] = report_card.with_screens(tables_read["report_card"], grader=table)
    return Analysis(manifest=manifest, settings=settings, **tables_read)


@dataclass(frozen=True)
class Runs:
    """The training runs of an experiment: all step logs, and one manifest per run."""

    steps: pd.DataFrame  # step logs with arm and seed
    manifests: list  # dicts, each with arm and seed


def read_runs(directory: Path | str) -> Runs | None:
    """Step logs and manifests under ``directory/<arm>/seed-<seed>/``; ``None`` when there are no step logs."""
    directory = Path(directory)
    if not directory.is_dir():
        raise AnalysisInputError(f"{directory}: runs directory not found (omit --runs for converted results)")
    logs, manifests = [], []
    for path in layout.files_of_runs(directory, "steps.parquet"):
        arm, written = layout.run_of(path.parent)
        seed = tidy.as_seed(written)
        if seed is None:
            raise AnalysisInputError(f"{path.parent}: expected a directory seed-<integer> (runs/<arm>/seed-<seed>)")
        manifest = files.verify_manifest(path.with_name("manifest.json"), [path.name])
        try:
            log = pd.read_parquet(path).assign(arm=arm, seed=seed)
        except (OSError, ValueError) as exc:  # pyarrow's errors for a file that is not parquet
            raise AnalysisInputError(f"{path}: not a parquet step log ({str(exc).splitlines()[0]})") from None
        logs.append(log)
        manifests.append({**manifest, "arm": arm, "seed": seed})
    if not logs:
        return None
    return Runs(steps=pd.concat(logs, ignore_index=True), manifests=manifests)


CHECKPOINT_COLUMNS = ["arm", "seed", "step", "path", "sha256", "bytes", "description", "claims"]


def read_checkpoints(directory: Path | str) -> pd.DataFrame | None:
    """Every checkpoint that the run folders under ``directory`` record as made elsewhere (backend checkpoints; the
    base checkpoint as arm base): :data:`CHECKPOINT_COLUMNS`, one row per checkpoint in run and step order, each
    manifest checked against its files first; None where no run is such a record."""
    rows = []
    for path in layout.files_of_runs(directory, "manifest.json"):
        manifest = files.verify_manifest(path)
        if layout.CHECKPOINT_RECORD not in manifest["files"]:
            continue
        arm, seed = layout.run_of(path.parent)
        checkpoints = manifest.get("checkpoints")
        if not isinstance(checkpoints, list) or not all(isinstance(c, dict) for c in checkpoints):
            raise AnalysisInputError(f"{path}: checkpoints: expected the list of the checkpoints it records")
        claims = manifest.get("recipe") or {}  # what the run claims it was trained with, as its arm says
        run = {"arm": arm, "seed": tidy.as_seed(seed), "description": manifest.get("description"), "claims": claims}
        rows += [
            run | {key: checkpoint.get(key) for key in ("step", "path", "sha256", "bytes")}
            for checkpoint in checkpoints
        ]
    return pd.DataFrame(rows, columns=CHECKPOINT_COLUMNS) if rows else None


@dataclass(frozen=True)
class Curves:
    """The paired inference over learning curves that ``armlab curves --config`` wrote (docs/statistics.md §14)."""

    band: pd.DataFrame
    compute_band: pd.DataFrame | None
    verdicts: pd.DataFrame
    forecasts: pd.DataFrame
    backtest: pd.DataFrame


CURVE_TEXT_COLUMNS = ("family", "arm", "reference", "summary", "ahead", "compute", "verdict", "final_verdict")


def read_curves(directory: Path | str) -> Curves:
    """The tables of an ``armlab curves --config`` output directory; a one-line error naming a missing one."""
    directory = Path(directory)
    needed = ["curve_band.csv", "curve_verdicts.csv", "curve_forecasts.csv", "curve_backtest.csv"]
    missing = [name for name in needed if not (directory / name).is_file()]
    if missing:
        raise AnalysisInputError(
            f"--curves {directory}: no {', '.join(missing)}; expected the output of `armlab curves --config` "
            f"(the workflow's curves_summary/)"
        )
    tables = {name: read_csv(directory / name, CURVE_TEXT_COLUMNS) for name in needed}
    compute = directory / "curve_compute_band.csv"
    return Curves(
        tables["curve_band.csv"],
        read_csv(compute, CURVE_TEXT_COLUMNS) if compute.is_file() else None,
        tables["curve_verdicts.csv"],
        tables["curve_forecasts.csv"],
        tables["curve_backtest.csv"],
    )
