rule analyze:
    input:
        config=f"{OUT}/config/analysis.json",
        scores=f"{OUT}/scores.parquet",
        # their job times: the advice on buying one more seed or more samples per item
        eval_manifests=per_run("evals", "manifest.json"),
        run_manifests=per_run("runs", "manifest.json"),
    output:
        comparisons=report(
            f"{OUT}/analysis/comparisons.csv",
            caption="../report/comparisons.rst",
            category="Tables",
        ),
        summaries=f"{OUT}/analysis/summaries.csv",
        sensitivity=f"{OUT}/analysis/sensitivity.csv",
        markdown=f"{OUT}/analysis/comparisons.md",
        latex=f"{OUT}/analysis/comparisons.tex",
        manifest=f"{OUT}/analysis/manifest.json",
    log:
        f"{OUT}/logs/analyze.log",
    params:
        out=lambda wildcards, output: os.path.dirname(output.comparisons),
        jobs=lambda wildcards, input: os.path.dirname(input.scores),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab analyze {input.config} --scores {input.scores} --jobs {params.jobs} --out {params.out}"
        " > {log} 2>&1"


# analysis.verifiers: every stored answer re-graded under each verifier and the analysis rerun per verifier
# (armlab rescore); the report's "Robust to the grader?" section reads its table
rule rescore:
    input:
        config=f"{OUT}/config/analysis.json",
        scores=f"{OUT}/scores.parquet",
        comparisons=f"{OUT}/analysis/comparisons.csv",
        eval_manifests=per_run("evals", "manifest.json"),
    output:
        **PLAN.rescore_outputs,
    log:
        f"{OUT}/logs/rescore.log",
    params:
        results=lambda wildcards, input: os.path.dirname(input.scores),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../../environment.yml"
    shell:
        "python -m armlab rescore {params.results} > {log} 2>&1"
