# armlab: config → data → base policy → one training and one evaluation job per (arm, seed) → scores.parquet → paired analysis → HTML report
from snakemake.utils import min_version

from training.config import load_yaml_strict, validate_config

min_version("9.0")


configfile: "config/config.yaml"


# Duplicate YAML keys are lost by the ordinary loader: re-read each config file strictly first.
for _path in workflow.configfiles:
    load_yaml_strict(_path)
config.update(validate_config(config, source=", ".join(map(str, workflow.configfiles))))


include: "workflows/rules/common.smk"
include: "workflows/rules/data.smk"
include: "workflows/rules/train.smk"
include: "workflows/rules/eval.smk"
include: "workflows/rules/analysis.smk"
include: "workflows/rules/report.smk"


rule all:
    input:
        f"{OUT}/scores.parquet",
        f"{OUT}/analysis/comparisons.csv",
        f"{OUT}/report/index.html",
    default_target: True


onsuccess:
    from pathlib import Path

    import pandas as pd

    from evals.merge import accuracy_table

    scores_path = Path(f"{OUT}/scores.parquet")
    if scores_path.exists():
        print(f"\nAccuracy (%) per arm and domain, mean over seeds ({scores_path}):")
        print(accuracy_table(pd.read_parquet(scores_path)).to_string())
        print(f"Paired comparisons: {OUT}/analysis/comparisons.md; report: {OUT}/report/index.html")
