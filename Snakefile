# armlab: config → data → base policy → one training and one evaluation job per (arm, seed) → scores.parquet → paired analysis → HTML report
from pathlib import Path

from snakemake.utils import min_version

from armlab import experiment
from armlab.analysis.design import planning
from armlab.experiment import locks, sequential
from armlab.configfile import ConfigError

min_version("9.0")


# jobs find `python` on it (workflows/rules/common.smk)
envvars:
    "PATH",

# The config is exactly the --configfile file(s) given (later ones update earlier ones) plus --config values,
# or the embedded default when no file is given. There is deliberately no `configfile:` directive: Snakemake
# re-reads such a file in every job process it spawns, without --replace-workflow-config, and would merge the
# demo into a user's experiment there.
DEFAULT_CONFIG = Path(workflow.basedir) / "config" / "config.yaml"
CONFIG_FILES = [str(p) for p in workflow.overwrite_configfiles] or [str(DEFAULT_CONFIG)]
try:
    # the whole config, its analysis and plan sections, a started sequential design's lock, and the locks every job
    # so far ran under, checked before any job (armlab/experiment/__init__.py)
    _validated = experiment.load(CONFIG_FILES, workflow.config_settings.config)
except (ConfigError, ValueError) as _err:
    raise WorkflowError(str(_err)) from None
config.clear()
config.update(_validated)


include: "workflows/rules/common.smk"

# a truncated or altered output of an earlier run is removed here, with the results made from it, so that the
# whole chain is built again (see remove_results_built_on); a dry run (-n) only says what a run would remove
if workflow.is_main_process:
    from armlab.files import MANIFEST, BadFile, remove_corrupt_outputs

    _dry_run = workflow.output_settings.dryrun
    try:
        _corrupt = remove_corrupt_outputs(OUT, dry_run=_dry_run)
    except BadFile as _err:
        raise WorkflowError(str(_err)) from None
    for _removed in _corrupt:
        if _removed.name == MANIFEST:
            remove_results_built_on(_removed.parent, _dry_run)
    # checkpoints made elsewhere that changed since they were recorded (or evaluations of other checkpoints than
    # their record names now) are recorded and evaluated again; a dry run only says so
    for _reason, _paths in PLAN.changed_records():
        print(f"armlab: {_reason}; {'a run records' if _dry_run else 'recording'} and evaluates it again")
        if not _dry_run:
            for _path in _paths:
                _path.unlink()
    if _corrupt and _dry_run:
        print(
            f"armlab: dry run: nothing was removed, so the jobs below leave out the {len(_corrupt)} file(s) above "
            f"that a run removes and rebuilds"
        )
    # also in a dry run, before any job: what the seeds can decide and what the runs cost (armlab plan)
    # (runs made elsewhere: what their seeds can decide, without the recipe's steps and checkpoints or the times of
    # training jobs, which are not theirs)
    _planned = config if PLAN.trains else {key: value for key, value in config.items() if key not in ("recipe", "arms")}
    print(planning.plan_text(_planned, ANALYSIS_CONFIG, jobs=OUT, cores=max(1, int(workflow.cores or 1))))
    if SEQUENTIAL:  # what the next wave will contain
        print(sequential.plan(OUT, ANALYSIS_CONFIG))


include: "workflows/rules/sequential.smk"
include: "workflows/rules/data.smk"
include: "workflows/rules/train.smk"
include: "workflows/rules/eval.smk"
include: "workflows/rules/curves.smk"
include: "workflows/rules/analysis.smk"
include: "workflows/rules/report.smk"


rule all:
    input:
        f"{OUT}/scores.parquet",
        f"{OUT}/analysis/comparisons.csv",
        f"{OUT}/report/index.html",
    default_target: True


onstart:
    if SEQUENTIAL:
        locks.write_design_lock(OUT, config)
    # preregistration: the predictions, and what decides their verdicts, are locked before the first training job
    # starts (armlab/experiment/locks.py)
    _locked = locks.write_predictions_lock(OUT, ANALYSIS_CONFIG)
    if _locked:
        print(_locked)


onsuccess:
    from pathlib import Path

    import pandas as pd

    from armlab.analysis.comparisons.summaries import accuracy_table

    scores_path = Path(f"{OUT}/scores.parquet")
    if scores_path.exists():
        print(f"\nAccuracy (%) per arm and domain, mean over seeds ({scores_path}):")
        print(accuracy_table(pd.read_parquet(scores_path)).to_string())
        print(f"Paired comparisons: {OUT}/analysis/comparisons.md; report: {OUT}/report/index.html")
    if Path(f"{OUT}/analysis/comparisons.csv").exists():  # the last lines: a verdict per compared arm
        from armlab.cli.analysis import print_verdicts

        print_verdicts(f"{OUT}/analysis")
