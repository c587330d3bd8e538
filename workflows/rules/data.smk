rule resolved_config:
    output:
        f"{OUT}/config.json",
    params:
        resolved=config,
    log:
        f"{OUT}/logs/resolved_config.log",
    run:
        from training.utils import write_json

        write_json(output[0], params.resolved)


rule data:
    input:
        config=f"{OUT}/config.json",
    output:
        directory(f"{OUT}/data"),
    log:
        f"{OUT}/logs/data.log",
    params:
        python=PYTHON,
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "{params.python} -m training.data --config {input.config} --out {output} > {log} 2>&1"


rule lm_eval_tasks:
    input:
        config=f"{OUT}/config.json",
        data=f"{OUT}/data",
    output:
        directory(f"{OUT}/lm_eval_tasks"),
    log:
        f"{OUT}/logs/lm_eval_tasks.log",
    params:
        python=PYTHON,
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "{params.python} -m evals.tasks --config {input.config} --data {input.data} --out {output} > {log} 2>&1"
