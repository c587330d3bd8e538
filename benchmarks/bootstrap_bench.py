"""Time the paired bootstrap against scipy and a per-resample Python loop, and the whole grid's analysis.

Grid: 13 arms (a reference and 12 arms in two Holm families) x 12 seeds x 12
benchmarks x 500 items, synthetic; 15 measures (3 summaries + 12 benchmarks)
give 180 paired comparisons. All timings on one core (BLAS threads pinned
to 1 before numpy loads), best of ``--repeat``.

1. Intervals only, equal resamples, the same 180 x 12 paired differences:
   ours (percentile + BCa from one set of resamples), scipy.stats.bootstrap
   (paired, vectorized, batched over the 180 comparisons; one call per method),
   and a loop over comparisons and resamples in Python, percentile only
   (the way rliable / arch compute their intervals).
2. The whole analysis of the grid from the tidy table in memory: validation,
   accuracies, summaries, bootstrap, exact sign-flip, Holm, power, rankings;
   with and without the crossed seeds x items interval.
3. The same grid sampled at the answer level: 10 answers per item, the
   936,000 item rows with their counts plus 9,360,000 per-answer verdicts
   (which pair the arms' sampling noise in the variance components), in a
   fresh process: its analysis time and the process's peak memory; with ``--methods`` once per interval
   method (:data:`METHODS`: the default, each of analysis.ci_methods, each crossed method of
   analysis.item_bootstrap), each in its own process.

    python benchmarks/bootstrap_bench.py [--resamples 10000] [--repeat 3] [--loop-comparisons 180] [--parts 1,2,3]
        [--methods default|all|NAME,...]
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

from armlab.analysis import pipeline  # noqa: E402
from armlab.analysis.comparisons import summaries  # noqa: E402
from armlab.analysis.comparisons.paired import paired_differences  # noqa: E402
from armlab.analysis.config import parse_config  # noqa: E402
from armlab.analysis.design import synthetic  # noqa: E402
from armlab.analysis.stats import resampling  # noqa: E402

ARMS = ["grpo"] + [f"arm{i:02d}" for i in range(1, 13)]
# part 3's interval methods: name -> analysis settings
METHODS = {
    "default": {},
    "t": {"ci_methods": ["t"]},
    "percentile": {"ci_methods": ["percentile"]},
    "bca": {"ci_methods": ["bca"]},
    "crossed_components": {"item_bootstrap": True, "crossed_methods": ["components"]},
    "crossed_percentile": {"item_bootstrap": True, "crossed_methods": ["percentile"]},
}


def grid_config(resamples, **analysis):
    return parse_config(
        {
            "experiment": "synthetic",
            "comparisons": [
                {"family": "first", "reference": "grpo", "arms": ARMS[1:7]},
                {"family": "second", "reference": "grpo", "arms": ARMS[7:]},
            ],
            "analysis": {
                "resamples": resamples,
                "subsets": {"first_six": [f"b{j:02d}" for j in range(6)]},
                **analysis,
            },
        }
    )


def best_of(repeat, fn):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def ours(diffs, resamples):
    counts = resampling.resample_counts(np.random.default_rng(0), diffs.shape[1], resamples)
    boot = resampling.bootstrap_means(diffs, counts)
    intervals, _ = resampling.bootstrap_intervals(boot, diffs, ("percentile", "bca"), (0.95,))
    return intervals["percentile"][:, 0], intervals["bca"][:, 0]


def scipy_interval(arm, ref, resamples, method):
    ci = stats.bootstrap(
        (arm, ref),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=resamples,
        method=method,
        axis=-1,
        rng=np.random.default_rng(0),
    )
    return np.column_stack([ci.confidence_interval.low, ci.confidence_interval.high])


def python_loop(diffs, resamples):
    rng = np.random.default_rng(0)
    n = diffs.shape[1]
    out = np.empty((len(diffs), 2))
    for k, d in enumerate(diffs):
        boot = np.empty(resamples)
        for r in range(resamples):
            boot[r] = d[rng.integers(0, n, n)].mean()
        out[k] = np.percentile(boot, [2.5, 97.5])
    return out


def grid_scores():
    return synthetic.synthetic_scores(
        arms=ARMS,
        seeds=range(1, 13),
        benchmarks=synthetic.grid_benchmarks(12),
        items=500,
        rng=np.random.default_rng(0),
        effects={a: 0.02 * i for i, a in enumerate(ARMS)},
    )


def answer_level(samples: int = 10):
    """The grid sampled ``samples`` times per item: item rows with counts, and one verdict row per answer."""
    scores = grid_scores()
    correct = np.random.default_rng(1).random((len(scores), samples)) < scores["score"].to_numpy()[:, None]
    scores = scores.assign(n_samples=samples, n_correct=correct.sum(axis=1).astype(float))
    scores["score"] = scores["n_correct"] / samples
    repeat = {column: np.repeat(scores[column].to_numpy(), samples) for column in ("arm", "seed", "benchmark", "item")}
    answers = pd.DataFrame(
        {**repeat, "sample": np.tile(np.arange(samples), len(scores)), "correct": correct.ravel().astype(float)}
    )
    return scores, answers


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # ru_maxrss is in KiB on Linux


def large_child(resamples, method):
    """Part 3 with one interval method of :data:`METHODS`, run in its own process so that its peak memory is its own."""
    start = time.perf_counter()
    scores, answers = answer_level()
    built, after_build = time.perf_counter() - start, peak_gb()
    start = time.perf_counter()
    result = pipeline.run_analysis(grid_config(resamples, **METHODS[method]), scores, "answer level", answers=answers)
    elapsed = time.perf_counter() - start
    sampling = ", ".join(result.variance_components["sampling_method"].unique())
    print(
        f"   {method}: {len(scores):,} item rows + {len(answers):,} answer rows (built in {built:.1f} s, peak "
        f"{after_build:.2f} GB)\n   whole analysis {elapsed:8.3f} s; peak memory of the process {peak_gb():.2f} GB; "
        f"sampling variance {sampling}"
    )


def main():
    if "--large-child" in sys.argv:
        at = sys.argv.index("--large-child")
        return large_child(int(sys.argv[at + 1]), sys.argv[at + 2])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--loop-comparisons",
        type=int,
        default=180,
        help="comparisons timed in the Python loop (its time is scaled to all 180)",
    )
    parser.add_argument("--parts", default="1,2,3", help="which parts to run, e.g. 2,3")
    parser.add_argument(
        "--methods", default="default", help=f"part 3's interval methods: all, or some of {', '.join(METHODS)}"
    )
    args = parser.parse_args()
    methods = list(METHODS) if args.methods == "all" else args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"--methods: unknown {unknown}; known: all, {', '.join(METHODS)}")
    R = args.resamples
    parts = set(args.parts.split(","))

    scores = grid_scores()
    config = grid_config(R)
    print(
        f"grid: {scores['arm'].nunique()} arms x {scores['seed'].nunique()} seeds x "
        f"{scores['benchmark'].nunique()} benchmarks x {scores['item'].nunique()} items = {len(scores):,} rows; "
        f"{R:,} resamples; one core"
    )

    if "1" in parts:
        intervals_part(scores, config, args)
    if "2" in parts:
        print("\n2. whole analysis of the grid from the tidy table in memory (best of the repeats)")
        for crossed in (False, True):
            cfg = grid_config(R, item_bootstrap=crossed)
            t, result = best_of(args.repeat, lambda cfg=cfg: pipeline.run_analysis(cfg, scores, "synthetic grid"))
            label = "seeds + crossed seeds x items bootstrap" if crossed else "seeds bootstrap (default)"
            print(f"   {label:<62} {t:8.3f} s   ({len(result.comparisons)} comparison rows)")
    if "3" in parts:
        print("\n3. the grid at the answer level, 10 answers per item, in a fresh process")
        for method in methods:
            subprocess.run([sys.executable, __file__, "--large-child", str(R), method], check=True)


def intervals_part(scores, config, args):
    R = args.resamples
    # the 180 x 12 paired differences the analysis bootstraps
    accuracy = summaries.benchmark_accuracy(scores)
    weights = summaries.summary_weights(summaries.benchmark_domains(scores), config.settings.subsets)
    values = summaries.summarize(accuracy, weights).join(accuracy)
    pairs = paired_differences(values, config.comparisons)
    diffs = np.concatenate([p.diffs.to_numpy().T for p in pairs])
    arm_values = np.concatenate([values.loc[p.arm].to_numpy().T for p in pairs])
    ref_values = np.concatenate([values.loc[p.reference].to_numpy().T for p in pairs])
    print(f"\n1. intervals for {len(diffs)} paired comparisons x {diffs.shape[1]} seeds")

    t_ours, (pct, bca) = best_of(args.repeat, lambda: ours(diffs, R))
    t_sp_pct, sp_pct = best_of(args.repeat, lambda: scipy_interval(arm_values, ref_values, R, "percentile"))
    t_sp_bca, sp_bca = best_of(args.repeat, lambda: scipy_interval(arm_values, ref_values, R, "BCa"))
    m = args.loop_comparisons
    t_loop, loop = best_of(1, lambda: python_loop(diffs[:m], R))
    t_loop *= len(diffs) / m
    bca_ties = (np.abs(bca - sp_bca) > 1e-12).any(axis=1).sum()
    loop_gap = np.abs(loop - pct[:m]).max() / diffs.std(axis=1, ddof=1).mean() * np.sqrt(diffs.shape[1])
    rows = [
        ("ours: percentile + BCa (one resample set)", t_ours),
        ("scipy.stats.bootstrap percentile (paired, vectorized)", t_sp_pct),
        ("scipy.stats.bootstrap BCa (paired, vectorized)", t_sp_bca),
        ("scipy, both intervals", t_sp_pct + t_sp_bca),
        ("Python loop per resample, percentile" + (f" (timed on {m}, scaled)" if m < len(diffs) else ""), t_loop),
    ]
    for name, t in rows:
        print(f"   {name:<62} {t:8.3f} s   x{t / t_ours:7.1f}")
    print(
        f"   same resamples as scipy: percentile max |ours - scipy| = {np.abs(pct - sp_pct).max():.1e}; "
        f"BCa differs in {bca_ties} of {len(diffs)} comparisons, where resamples tie with the estimate "
        f"(accuracies are multiples of 1/500) and rounding decides scipy's z0 (max {np.abs(bca - sp_bca).max():.1e})"
    )
    print(f"   the loop (its own draws) vs ours: max gap {loop_gap:.3f} standard errors")
    print(
        f"   speed-up vs scipy: {t_sp_bca / t_ours:.1f}x (BCa alone), {(t_sp_pct + t_sp_bca) / t_ours:.1f}x "
        f"(both intervals); vs the Python loop: {t_loop / t_ours:.0f}x"
    )


if __name__ == "__main__":
    main()
