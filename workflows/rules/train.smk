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
        "python -m armlab.training.base --config {input.config} --data {input.data} --out {params.out} > {log} 2>&1"


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
        numerics=config["numerics"],
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
        gpu=0,
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab.training.backends.hf_export --policy {input.policy} --out {params.out} --numerics {params.numerics} > {log} 2>&1"


# runs made elsewhere (backend checkpoints): the base checkpoint recorded as the run of arm base
if PLAN.records_base:

    rule record_base:
        input:
            config=PLAN.base_record_config,
        output:
            **run_outputs(PLAN.base_backend, "base", 0),
        log:
            PLAN.job_log("runs", "base", 0),
        params:
            module=PLAN.base_backend.train_module,
            path=PLAN.hf_base,
            out=lambda wildcards, output: os.path.dirname(output.manifest),
        threads: 1
        resources:
            mem_mb=PLAN.train_resources[PLAN.base_backend_name]["mem_mb"],
            runtime=PLAN.train_resources[PLAN.base_backend_name]["runtime"],
            gpu=0,
        conda:
            "../../environment.yml"
        shell:
            "python -m {params.module} --config {input.config} --arm base --seed 0 --path {params.path:q}"
            " --out {params.out} > {log} 2>&1"


# one train rule per backend that trains some arm: its trainer, inputs and outputs come from the backend registry.
# With one backend (the experiment's) it is `train`, for every arm; an experiment whose arms name their own backends
# (arms.<arm>.backend) has `train` for the experiment's backend and `train_<backend>` for the others, each
# constrained to the arms of its backend
for _name in USED_BACKENDS:
    _backend = BACKENDS[_name]

    rule:
        name:
            "train" if _name == config["backend"] or len(USED_BACKENDS) == 1 else f"train_{_name}"
        input:
            config=f"{OUT}/config/train/{{arm}}.json",
            **{read: PLAN.read_paths[read] for read in PLAN.reads[_name]},
        output:
            **run_outputs(_backend),
        log:
            PLAN.job_log("runs"),
        wildcard_constraints:
            **({"arm": PLAN.arms_pattern(_name)} if len(USED_BACKENDS) > 1 else {}),
        params:
            module=_backend.train_module,
            reads=lambda wildcards, input, _reads=PLAN.reads[_name]: " ".join(f"--{read} {input[read]}" for read in _reads),
            out=lambda wildcards, output: os.path.dirname(output.manifest),
        threads: arm_threads
        resources:
            mem_mb=PLAN.train_resources[_name]["mem_mb"],
            runtime=PLAN.train_resources[_name]["runtime"],
            gpu=PLAN.train_resources[_name]["gpu"],
        conda:
            "../../environment.yml"
        shell:
            "python -m {params.module} --config {input.config} --arm {wildcards.arm} --seed {wildcards.seed}"
            " {params.reads} --out {params.out} > {log} 2>&1"


if PLAN.records_base:  # runs/base/seed-0 is the base checkpoint's record, not a run the train rule makes

    ruleorder: record_base > train
