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
    threads: JOB_THREADS
    resources:
        mem_mb=2000,
        runtime=60,
        gpu=0,
    shell:
        "{params.python} -m training.base --config {input.config} --data {input.data} --out {params.out} > {log} 2>&1"


# one `train` rule per backend: the profiles' set-resources address it by that name
if BACKEND == "builtin":

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
        threads: JOB_THREADS
        resources:
            mem_mb=2000,
            runtime=120,
            gpu=TRAIN_GPUS,
        shell:
            "{params.python} -m training.train --config {input.config} --arm {wildcards.arm} --seed {wildcards.seed}"
            " --data {input.data} --base {input.base} --out {params.out}"
            " > {log} 2>&1"

elif BACKEND == "command":

    rule train:
        input:
            config=f"{OUT}/config/train/{{arm}}.json",
        output:
            manifest=f"{OUT}/runs/{{arm}}/seed-{{seed}}/manifest.json",
        log:
            f"{OUT}/logs/train/{{arm}}/seed-{{seed}}.log",
        params:
            python=PYTHON,
            out=lambda wildcards, output: os.path.dirname(output.manifest),
        threads: JOB_THREADS
        resources:
            mem_mb=config["command"]["mem_mb"],
            runtime=config["command"]["runtime"],
            gpu=TRAIN_GPUS,
        shell:
            "{params.python} -m training.backends.command --config {input.config} --arm {wildcards.arm}"
            " --seed {wildcards.seed} --out {params.out} > {log} 2>&1"

elif BACKEND == "trl":

    rule train:
        input:
            config=f"{OUT}/config/train/{{arm}}.json",
            data=f"{OUT}/data",
        output:
            model=directory(f"{OUT}/runs/{{arm}}/seed-{{seed}}/model"),
            steps=f"{OUT}/runs/{{arm}}/seed-{{seed}}/steps.parquet",
            manifest=f"{OUT}/runs/{{arm}}/seed-{{seed}}/manifest.json",
        log:
            f"{OUT}/logs/train/{{arm}}/seed-{{seed}}.log",
        params:
            python=PYTHON,
            out=lambda wildcards, output: os.path.dirname(output.manifest),
        threads: JOB_THREADS
        resources:
            mem_mb=config["trl"]["mem_mb"],
            runtime=config["trl"]["runtime"],
            gpu=TRAIN_GPUS,
        shell:
            "{params.python} -m training.backends.trl_backend --config {input.config} --arm {wildcards.arm}"
            " --seed {wildcards.seed} --data {input.data} --out {params.out} > {log} 2>&1"
