# Accuracy over training, not part of `all`: `snakemake --configfile <exp>.yaml --cores 2 learning_curves`
# evaluates every model each run kept (recipe.checkpoint_every, and the final one) as the run's evaluation scores
# its final model (evals/curves.py), then tabulates and plots each domain and the primary summary per step
# (analysis/learning_curves/curves.py), the base policy at step 0, and compares the curves of each family seed by seed: the paired
# difference per step with a band and a p simultaneous over the steps, and the curve measures under gatekept Holm,
# and writes the report again with a learning-curves section (curves_report/).


rule evaluate_checkpoints:
    input:
        config=eval_config,
        tasks=f"{OUT}/lm_eval_tasks",
        manifest=run_manifest,
    output:
        scores=f"{PLAN.job_dir('curves')}/scores.parquet",
        manifest=f"{PLAN.job_dir('curves')}/manifest.json",
    log:
        PLAN.job_log("curves"),
    params:
        out=lambda wildcards, output: os.path.dirname(output.scores),
        model=lambda wildcards: PLAN.backend_of(wildcards.arm).lm_eval_model,
    threads: arm_threads
    resources:
        mem_mb=lambda wildcards: PLAN.eval_resources[ARM_BACKENDS[wildcards.arm]]["mem_mb"],
        runtime=lambda wildcards: PLAN.eval_resources[ARM_BACKENDS[wildcards.arm]]["runtime"]
        * PLAN.kept_models(wildcards.arm),
        gpu=lambda wildcards: PLAN.eval_resources[ARM_BACKENDS[wildcards.arm]]["gpu"],
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab.evals.curves --config {input.config} --tasks {input.tasks} --model {params.model}"
        " --run-manifest {input.manifest} --arm {wildcards.arm} --seed {wildcards.seed} --out {params.out}"
        " > {log} 2>&1"


rule learning_curves:
    input:
        table=f"{OUT}/curves_summary/curves.csv",
        report=f"{OUT}/curves_report/index.html",


rule curve_analysis:
    input:
        curves=curve_inputs,
        scores=f"{OUT}/scores.parquet",
        config=f"{OUT}/config/analysis.json",
    output:
        table=f"{OUT}/curves_summary/curves.csv",
        figure=f"{OUT}/curves_summary/accuracy_curves.png",
        band=f"{OUT}/curves_summary/curve_band.csv",
        comparisons=f"{OUT}/curves_summary/curve_comparisons.csv",
        verdicts=f"{OUT}/curves_summary/curve_verdicts.csv",
    log:
        f"{OUT}/logs/learning_curves.log",
    params:
        out=lambda wildcards, output: os.path.dirname(output.table),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab curves --curves {input.curves} --scores {input.scores} --config {input.config}"
        " --out {params.out} > {log} 2>&1"


rule curves_report:
    input:
        config=f"{OUT}/config/analysis.json",
        comparisons=f"{OUT}/analysis/comparisons.csv",
        band=f"{OUT}/curves_summary/curve_band.csv",
        verdicts=f"{OUT}/curves_summary/curve_verdicts.csv",
        steps=per_run("runs", "steps.parquet", backends=[name for name in USED_BACKENDS if BACKENDS[name].step_logs]),
        manifests=per_run("runs", "manifest.json"),
    output:
        html=f"{OUT}/curves_report/index.html",
    log:
        f"{OUT}/logs/curves_report.log",
    params:
        analysis=lambda wildcards, input: os.path.dirname(input.comparisons),
        curves=lambda wildcards, input: os.path.dirname(input.band),
        runs=f"{OUT}/runs",
        out=lambda wildcards, output: os.path.dirname(output.html),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab report {input.config} --analysis {params.analysis} --runs {params.runs}"
        " --curves {params.curves} --out {params.out} > {log} 2>&1"
