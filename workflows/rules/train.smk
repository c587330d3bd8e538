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
        out=lambda wildcards, output: os.path.dirname(output.policy),
    threads: JOB_THREADS
    resources:
        mem_mb=2000,
        runtime=60,
        gpu=0,
    conda:
        "../../environment.yml"
    shell:
        "python -m training.base --config {input.config} --data {input.data} --out {params.out} > {log} 2>&1"


# trl.model: builtin_base: the base policy as a Hugging Face checkpoint (training/backends/hf_export.py)
rule export_base:
    input:
        policy=f"{OUT}/base/policy.pt",
    output:
        model=directory(f"{OUT}/base_hf/model"),
        manifest=f"{OUT}/base_hf/manifest.json",
    log:
        f"{OUT}/logs/base_hf.log",
    params:
        out=lambda wildcards, output: os.path.dirname(output.manifest),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
        gpu=0,
    conda:
        "../../environment.yml"
    shell:
        "python -m training.backends.hf_export --policy {input.policy} --out {params.out} > {log} 2>&1"


# one `train` rule for every backend: its trainer, inputs and outputs come from the backend registry
rule train:
    input:
        config=f"{OUT}/config/train/{{arm}}.json",
        **{name: READ_PATHS[name] for name in READS},
    output:
        **run_outputs(f"{OUT}/runs/{{arm}}/seed-{{seed}}"),
    log:
        f"{OUT}/logs/train/{{arm}}/seed-{{seed}}.log",
    params:
        module=BACKEND.train_module,
        reads=lambda wildcards, input: " ".join(f"--{name} {input[name]}" for name in READS),
        out=lambda wildcards, output: os.path.dirname(output.manifest),
    threads: JOB_THREADS
    resources:
        mem_mb=TRAIN_RESOURCES["mem_mb"],
        runtime=TRAIN_RESOURCES["runtime"],
        gpu=TRAIN_RESOURCES["gpu"],
    conda:
        "../../environment.yml"
    shell:
        "python -m {params.module} --config {input.config} --arm {wildcards.arm} --seed {wildcards.seed}"
        " {params.reads} --out {params.out} > {log} 2>&1"
