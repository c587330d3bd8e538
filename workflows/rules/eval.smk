rule evaluate:
    input:
        config=eval_config,
        tasks=f"{OUT}/lm_eval_tasks",
        checkpoint=checkpoint_of,
    output:
        scores=f"{PLAN.job_dir('evals')}/scores.parquet",
        results=f"{PLAN.job_dir('evals')}/results.json",
        manifest=f"{PLAN.job_dir('evals')}/manifest.json",
    log:
        PLAN.job_log("evals"),
    params:
        out=lambda wildcards, output: os.path.dirname(output.scores),
        checkpoint=checkpoint_args,
    threads: arm_threads
    resources:
        mem_mb=eval_resource("mem_mb"),
        runtime=eval_resource("runtime"),
        gpu=eval_resource("gpu"),
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab.evals.run --config {input.config} --tasks {input.tasks} {params.checkpoint}"
        " --arm {wildcards.arm} --seed {wildcards.seed} --out {params.out}"
        " > {log} 2>&1"


rule merge_scores:
    input:
        per_run("evals", "scores.parquet", evaluated=True),
    output:
        f"{OUT}/scores.parquet",
    log:
        f"{OUT}/logs/merge_scores.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab.evals.merge --out {output} {input} > {log} 2>&1"
