"""Does an experiment's result depend on the CPU's kernels? The whole workflow run under several numerics.

Each variant runs the experiment (default: the demo, config/config.yaml) from scratch in a scratch folder of its own,
with ``numerics:`` set and the environment a CPU generation would give torch and MKL forced by variables
(``ATEN_CPU_CAPABILITY``, ``MKL_ENABLE_INSTRUCTIONS``: a lower capability stands in for an older CPU), and prints per
variant the wall time, the sha256 of the scores table (the bits of every answer's grade) and the verdict lines. Under
``portable`` every variant should give the same hash; under ``native`` each capability its own, and the spread of a
verdict's difference across them is what the machine alone moves it.

    .venv/bin/python benchmarks/numerics_portability.py --out results/numerics_portability
    .venv/bin/python benchmarks/numerics_portability.py --variants native-avx512 portable-avx512   # just these

Writes ``OUT/variants.csv`` (variant, numerics, environment, seconds, scores_sha256, family, arm, verdict, delta)
and keeps each variant's analysis folder under ``OUT/<variant>/``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
# the capability a CPU generation would make torch and MKL choose, forced: AVX-512 (this project's machines), AVX2
# (e.g. AMD Zen 3, Intel before Skylake-SP), no vector extension torch dispatches on
CPU_STAND_INS = {
    "avx512": {"ATEN_CPU_CAPABILITY": "avx512", "MKL_ENABLE_INSTRUCTIONS": "AVX512"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "default": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
}
VARIANTS = {f"{mode}-{cpu}": (mode, env) for mode in ("portable", "native") for cpu, env in CPU_STAND_INS.items()}


def run_variant(config: Path, mode: str, env: dict, work: Path, cores: int) -> float:
    """Run the whole workflow of ``config`` under ``mode`` in ``work``; its wall time in seconds."""
    environment = {**os.environ, **env, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work)]
    command += ["--configfile", str(config), "--config", f"numerics={mode}", "--cores", str(cores), "--quiet"]
    start = time.perf_counter()
    with open(work / "snakemake.log", "w") as log:
        done = subprocess.run(command, env=environment, check=False, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode:
        tail = (work / "snakemake.log").read_text().splitlines()[-40:]
        raise SystemExit(f"the run under numerics {mode} {env} failed:\n" + "\n".join(tail))
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml")
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from armlab.analysis.reporting.read import read_csv
    from armlab.analysis.tables import verdicts
    from armlab.configfile import load_configs
    from armlab.files import atomic_path, write_csv

    experiment = load_configs([args.config])["experiment"]
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True, text=True)
    args.out.mkdir(parents=True, exist_ok=True)
    table_path = args.out / "variants.csv"
    # the variants not run this time keep their rows: a long series can be run a few variants at a time
    kept = read_csv(table_path) if table_path.is_file() else pd.DataFrame()
    for name in args.variants:
        rows = []
        mode, env = VARIANTS[name]
        with tempfile.TemporaryDirectory(prefix=f"numerics-{name}-") as scratch:
            work = Path(scratch)
            seconds = run_variant(args.config.resolve(), mode, env, work, args.cores)
            results = work / "results" / experiment
            digest = hashlib.sha256((results / "scores.parquet").read_bytes()).hexdigest()
            shutil.copytree(results / "analysis", args.out / name / "analysis", dirs_exist_ok=True)
            comparisons = read_csv(results / "analysis" / "comparisons.csv")
        primary = comparisons[
            (comparisons.stage == "primary") & (comparisons.ci_method == comparisons.ci_method.iloc[0])
        ]
        for row, verdict in zip(primary.itertuples(), verdicts(primary)):
            rows.append(
                {
                    "variant": name,
                    "commit": commit.stdout.strip() or "unknown",
                    "numerics": mode,
                    "environment": " ".join(f"{k}={v}" for k, v in env.items()),
                    "seconds": round(seconds, 1),
                    "scores_sha256": digest[:16],
                    "family": row.family,
                    "arm": row.arm,
                    "verdict": verdict,
                    "delta_points": round(100 * row.mean_diff, 2),
                }  # fmt: skip
            )
        print(f"{name}: {seconds:.0f} s, scores {digest[:16]}", flush=True)
        kept = pd.concat([kept[kept.variant != name] if len(kept) else kept, pd.DataFrame(rows)], ignore_index=True)
        order = {variant: i for i, variant in enumerate(VARIANTS)}
        table = kept.sort_values("variant", key=lambda names: names.map(order), kind="stable", ignore_index=True)
        with atomic_path(table_path) as partial:  # after each variant: an interrupted series keeps what it ran
            write_csv(table, partial)
    print(table.to_string(index=False))
    print("\nscores identical within each mode:")
    for mode, group in table.groupby("numerics"):
        print(
            f"  {mode}: {group.scores_sha256.nunique()} distinct scores tables over {group.variant.nunique()} variants"
        )


if __name__ == "__main__":
    main()
