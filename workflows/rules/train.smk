rule base_policy:
    input:
        config=f"{OUT}/config/base.json",
        data=f"{OUT}/data",
    output:
        policy=f"{OUT}/base/policy.pt",
        manifest=f"{OUT}/base/manifest.json",
    log:
        f"{OUT}/logs/base.log",
    params:
        python=PYTHON,
        out=lambda wildcards, output: os.path.dirname(output.policy),
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    shell:
        "{params.python} -m training.base --config {input.config} --data {input.data} --out {params.out} > {log} 2>&1"


rule train:
    input:
        config=f"{OUT}/config/train/{{arm}}.json",
        data=f"{OUT}/data",
        base=f"{OUT}/base/policy.pt",
    output:
        policy=f"{OUT}/runs/{{arm}}/seed-{{seed}}/policy.pt",
        steps=f"{OUT}/runs/{{arm}}/seed-{{seed}}/steps.parquet",
        manifest=f"{OUT}/runs/{{arm}}/seed-{{seed}}/manifest.json",
    log:
        f"{OUT}/logs/train/{{arm}}/seed-{{seed}}.log",
    params:
        python=PYTHON,
        out=lambda wildcards, output: os.path.dirname(output.policy),
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=120,
    shell:
        "{params.python} -m training.train --config {input.config} --arm {wildcards.arm} --seed {wildcards.seed}"
        " --data {input.data} --base {input.base} --out {params.out}"
        " > {log} 2>&1"
