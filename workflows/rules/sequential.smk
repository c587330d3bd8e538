# A sequential seed design (config `seeds: {initial, wave, max}`): the runs grow look by look. Each look is a
# checkpoint; once it is written, Snakemake re-reads it and adds the next wave's (arm, seed) jobs to the DAG.
# The looks' controller and the append-only record of looks: armlab/experiment/sequential.py; the decisions'
# statistics: analysis/waves.py; the design's lock: armlab/experiment/locks.py.
from armlab.analysis import waves
from armlab.experiment import locks, sequential

DESIGN_HASH = locks.design_hash(config)


def look_runs(look):
    """The runs (arm, seed) look ``look`` decides on: the first wave, then whatever the previous look asked for."""
    if look == 1:
        return waves.initial_runs(ANALYSIS_CONFIG)
    previous = checkpoints.look.get(look=look - 1).output.look
    return [tuple(run) for run in sequential.read_look(previous)["next_runs"]]


def look_scores(wildcards):
    return PLAN.per_run("evals", "scores.parquet", look_runs(int(wildcards.look)))


def final_runs():
    """Every run the design spent, once its last look (every arm stopped, or the maximum reached) is written."""
    look = 1
    while True:
        record = sequential.read_look(checkpoints.look.get(look=look).output.look)
        if record["done"]:
            return [tuple(run) for run in record["runs"]]
        look += 1


checkpoint look:
    input:
        config=f"{OUT}/config/analysis.json",
        scores=look_scores,
    output:
        look=f"{OUT}/sequential/look-{{look}}.json",
    log:
        f"{OUT}/logs/look-{{look}}.log",
    params:
        ledger=f"{OUT}/{sequential.LEDGER}",
        design_hash=DESIGN_HASH,
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../environment.yml"
    # tee: each look's decisions and the seeds spent show on the console as the waves run
    shell:
        "python -m armlab.experiment.sequential look {input.config} --look {wildcards.look} --ledger {params.ledger}"
        " --design-hash {params.design_hash} --out {output.look} {input.scores} 2>&1 | tee {log}"
