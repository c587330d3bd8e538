rule stage_config:
    output:
        f"{OUT}/config/{{stage}}.json",
    params:
        view=lambda wildcards: json.dumps(stage_config(config, wildcards.stage)),
    log:
        f"{OUT}/logs/config/{{stage}}.log",
    wildcard_constraints:
        stage="data|base|eval|analysis",
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab.views {output} {params.view:q} > {log} 2>&1"


# an arm's training view, and a numerics control's own evaluation view (its numerics applied: RunPlan.eval_config)
rule arm_config:
    output:
        f"{OUT}/config/{{stage}}/{{arm}}.json",
    params:
        view=lambda wildcards: json.dumps(stage_config(config, wildcards.stage, wildcards.arm)),
    log:
        f"{OUT}/logs/config/{{stage}}/{{arm}}.log",
    wildcard_constraints:
        stage="train|eval",
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab.views {output} {params.view:q} > {log} 2>&1"


rule data:
    input:
        config=f"{OUT}/config/data.json",
    output:
        directory(f"{OUT}/data"),
    log:
        f"{OUT}/logs/data.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab.training.data --config {input.config} --out {output} > {log} 2>&1"


rule lm_eval_tasks:
    input:
        config=f"{OUT}/config/eval.json",
        data=f"{OUT}/data",
        external=PLAN.external_files,
    output:
        directory(f"{OUT}/lm_eval_tasks"),
    log:
        f"{OUT}/logs/lm_eval_tasks.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab.evals.lm_eval_tasks --config {input.config} --data {input.data} --out {output} > {log} 2>&1"
