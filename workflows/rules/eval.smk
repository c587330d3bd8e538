rule evaluate:
    input:
        config=f"{OUT}/config/eval.json",
        tasks=f"{OUT}/lm_eval_tasks",
        checkpoint=checkpoint_of,
    output:
        scores=f"{OUT}/evals/{{arm}}/seed-{{seed}}/scores.parquet",
        results=f"{OUT}/evals/{{arm}}/seed-{{seed}}/results.json",
    log:
        f"{OUT}/logs/eval/{{arm}}/seed-{{seed}}.log",
    params:
        python=PYTHON,
        out=lambda wildcards, output: os.path.dirname(output.scores),
        checkpoint=checkpoint_args,
    conda:
        "../../environment.yml"
    threads: JOB_THREADS
    resources:
        mem_mb=2000 if BACKEND == "builtin" else 16000,
        runtime=30 if BACKEND == "builtin" else 240,
        gpu=EVAL_GPUS,
    shell:
        "{params.python} -m evals.run --config {input.config} --tasks {input.tasks} {params.checkpoint}"
        " --arm {wildcards.arm} --seed {wildcards.seed} --out {params.out}"
        " > {log} 2>&1"


rule merge_scores:
    input:
        [f"{OUT}/evals/{arm}/seed-{seed}/scores.parquet" for arm, seed in EVALUATED],
    output:
        f"{OUT}/scores.parquet",
    log:
        f"{OUT}/logs/merge_scores.log",
    params:
        python=PYTHON,
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    shell:
        "{params.python} -m evals.merge --out {output} {input} > {log} 2>&1"
