# The static HTML report and the figures, after the analysis: the last step of `rule all`.
# `snakemake --report report.html` shows both, with the captions of workflows/report/.


rule report:
    input:
        config=f"{OUT}/config/analysis.json",
        comparisons=f"{OUT}/analysis/comparisons.csv",
        summaries=f"{OUT}/analysis/summaries.csv",
        sensitivity=f"{OUT}/analysis/sensitivity.csv",
        # per-step logs in the builtin trainer's columns (of the arms whose backend writes them), for the report's
        # training curves
        steps=per_run("runs", "steps.parquet", backends=[name for name in USED_BACKENDS if BACKENDS[name].step_logs]),
        manifests=per_run("runs", "manifest.json"),
        # analysis.verifiers: the verdicts under other verifiers (rule rescore), for "Robust to the grader?"
        rescored=PLAN.rescored,
    output:
        html=report(
            f"{OUT}/report/index.html",
            caption="../report/index.rst",
            category="Report",
            labels={"output": "HTML report"},
        ),
        figures=report(
            directory(f"{OUT}/figures"),
            patterns=["{name}.svg"],
            caption="../report/figures.rst",
            category="Figures",
            labels={"figure": "{name}"},
        ),
    log:
        f"{OUT}/logs/report.log",
    params:
        analysis=lambda wildcards, input: os.path.dirname(input.comparisons),
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
        " --out {params.out} --figures {output.figures} > {log} 2>&1"
