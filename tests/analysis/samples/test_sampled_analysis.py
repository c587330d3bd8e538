"""Sampled evaluation in the analysis: pass@k measures, the curve against the base policy, variance components
and the allocation advice, from tidy tables with sample counts (analysis/samples/sampled.py)."""

import json
import re
import runpy

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from armlab.analysis.config import parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.pipeline import run_analysis, write_outputs
from armlab.analysis.samples import sampled
from armlab.analysis.samples.sampled import job_minutes
from armlab.analysis.stats import resampling, sampling

BENCHMARKS = {"add": "math", "mod": "math", "sort": "logic"}


def sampled_table(k: int = 8, seeds=(1, 2, 3, 4), items: int = 40, rng_seed: int = 0) -> pd.DataFrame:
    """Tidy rows with k Bernoulli answers per item: a base policy, a reference that sharpens it, and an arm
    that sharpens it further — better at pass@1, but it gives up the items the base solves only rarely."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    base_p = {b: rng.uniform(0.0, 0.6, items) for b in BENCHMARKS}
    arms = {"base": [0], "grpo": list(seeds), "sharp": list(seeds)}
    for arm, arm_seeds in arms.items():
        for seed in arm_seeds:
            for benchmark, domain in BENCHMARKS.items():
                p = base_p[benchmark]
                if arm == "grpo":
                    p = np.where(p > 0.1, np.minimum(p + 0.1, 1), p)
                if arm == "sharp":
                    p = np.where(p > 0.25, np.minimum(p + 0.25, 1), 0.0)
                correct = rng.binomial(k, np.clip(p + rng.normal(0, 0.02, items), 0, 1))
                for i in range(items):
                    rows.append(
                        ("exp", arm, seed, benchmark, domain, f"{benchmark}-{i}", correct[i] / k, k, correct[i])
                    )
    columns = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score", "n_samples", "n_correct"]
    return pd.DataFrame(rows, columns=columns).astype({"n_correct": float})


def config(pass_k=(1, 2, 8), **analysis):
    return parse_config(
        {
            "experiment": "exp",
            "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
            "comparisons": [{"family": "f", "reference": "grpo", "arms": ["sharp"]}],
            "eval": {"samples": 8, "pass_k": list(pass_k)},
            "analysis": {"resamples": 500, "power_replicates": 200, "per_benchmark": False, **analysis},
        }
    )


def test_pass_at_k_is_a_measure_of_every_run_compared_like_accuracy():
    scores = sampled_table()
    result = run_analysis(config(), scores)
    per_run = result.summaries
    # pass@1 is avg@k: the mean of the item scores, weighted like the primary summary
    np.testing.assert_allclose(per_run["pass@1"], per_run["domain_balanced"], atol=1e-12)
    # pass@8 of one run by hand: per item 1 - C(n-c, 8)/C(n, 8) is 1 exactly when some answer was right
    run = scores[(scores.arm == "grpo") & (scores.seed == 2)]
    by_benchmark = run.assign(solved=run.n_correct > 0).groupby("benchmark").solved.mean()
    expected = (by_benchmark["add"] + by_benchmark["mod"]) / 4 + by_benchmark["sort"] / 2
    assert per_run.loc[("grpo", 2), "pass@8"] == pytest.approx(expected, abs=1e-12)
    # pass@2 by brute force over the pairs of answers of each item
    n, c = run.n_samples.to_numpy(), run.n_correct.to_numpy().astype(int)
    pairs = np.array([1 - (n_i - c_i) * (n_i - c_i - 1) / (n_i * (n_i - 1)) for n_i, c_i in zip(n, c)])
    np.testing.assert_allclose(sampling.pass_at_k(n, c, 2), pairs)
    # every pass@k is a secondary cell of the family, with the paired machinery's columns
    rows = result.comparisons[result.comparisons.measure.str.startswith("pass@")]
    assert set(rows.measure) == {"pass@2", "pass@8"} and set(rows.stage) == {"secondary"}
    # pass@1 is the primary summary itself: on the curve, not tested twice
    assert "pass@1" in per_run and (result.comparisons.measure == "pass@1").sum() == 0
    assert rows[["p_value", "p_holm", "ci_low", "ci_high"]].notna().all().all()


def test_a_narrowing_arm_is_shown_below_the_base_at_large_k_and_above_it_at_k_1():
    result = run_analysis(config(), sampled_table())
    curve = result.pass_at_k_vs_base.set_index(["arm", "k"])
    assert curve.loc[("sharp", 1), "ci_low"] > 0  # planted: better than the base with one answer
    assert curve.loc[("sharp", 8), "ci_high"] < 0  # planted: below the base with eight
    assert curve.loc[("grpo", 8), "ci_high"] > 0  # the milder reference keeps every item the base can solve
    # the paired comparison with the reference sees the same crossing
    pass8 = result.comparisons[(result.comparisons.measure == "pass@8")].iloc[0]
    assert pass8.mean_diff < 0


def test_variance_components_and_allocation_are_written(tmp_path):
    scores = sampled_table()
    minutes = pd.DataFrame(
        [(arm, s, 10.0, 0.5) for arm in ("grpo", "sharp") for s in (1, 2, 3, 4)],
        columns=["arm", "seed", "train_minutes", "eval_minutes"],
    )
    result = run_analysis(config(), scores, job_minutes=minutes)
    components = result.variance_components.iloc[0]
    assert components.samples == 8 and components.n_seeds == 4 and components.n_items == 120
    shares = components[["share_training", "share_items", "share_sampling"]]
    assert shares.sum() == pytest.approx(1) and (shares >= 0).all() and components.share_sampling > 0
    assert components.se == pytest.approx(np.sqrt(components.var_total))
    advice = result.allocation
    assert list(advice.option) == ["seed", "samples"] and advice.recommended.sum() == 1
    # one more seed of both arms: 2 x (10 + 0.5) minutes; doubling k: both arms evaluated again at 4 seeds
    assert list(advice.minutes) == [21.0, 4.0]
    write_outputs(result, tmp_path / "out")
    for name in ("variance_components", "allocation", "pass_at_k_vs_base"):
        assert len(pd.read_csv(tmp_path / "out" / f"{name}.csv")) == len(getattr(result, name))


def test_old_tables_without_counts_read_as_one_sample_and_refuse_pass_at_k():
    scores = sampled_table(k=1).drop(columns=["n_samples", "n_correct"])
    result = run_analysis(config(pass_k=()), scores)
    assert result.variance_components.iloc[0].samples == 1
    assert np.isnan(result.variance_components.iloc[0].var_sampling)  # not separable from training at k = 1
    with pytest.raises(AnalysisInputError, match=r"pass@2 needs at least 2 answers per item.*eval\.samples >= 2"):
        run_analysis(config(pass_k=(1, 2)), scores)


def test_job_minutes_come_from_the_manifests(tmp_path):
    for stage, seconds in (("runs", 600), ("evals", 30)):
        for arm in ("grpo", "sharp"):
            folder = tmp_path / stage / arm / "seed-1"
            folder.mkdir(parents=True)
            (folder / "manifest.json").write_text(json.dumps({"seconds": seconds}))
    table = job_minutes(tmp_path)
    assert table.drop(columns=["train_steps", "sampling_streams"]).to_dict("records") == [
        {"arm": "grpo", "seed": 1, "train_minutes": 10.0, "eval_minutes": 0.5},
        {"arm": "sharp", "seed": 1, "train_minutes": 10.0, "eval_minutes": 0.5},
    ]
    assert table["sampling_streams"].isna().all()  # nor how they sampled
    assert table["train_steps"].isna().all()  # these manifests do not say their recipe
    (tmp_path / "runs" / "grpo" / "seed-1" / "manifest.json").write_text(
        json.dumps({"seconds": 600, "recipe": {"steps": 40}})
    )
    assert job_minutes(tmp_path).set_index("arm")["train_steps"].fillna(0).to_dict() == {"grpo": 40, "sharp": 0}
    (tmp_path / "evals" / "grpo" / "seed-1" / "manifest.json").write_text(json.dumps({"seconds": "soon"}))
    with pytest.raises(AnalysisInputError, match=r"evals/grpo/seed-1/manifest.json: seconds: expected"):
        job_minutes(tmp_path)


def test_the_components_caption_says_how_the_engine_drew_the_answers_not_that_arms_share_them(tmp_path):
    # issue 54: the caption said "arms of a seed share their sampling stream" under eval.engine: hf, which seeds
    # torch once per seed and shares no draw between arms; it now quotes what each evaluation's manifest records
    from armlab.analysis.reporting import read, sections
    from armlab.evals.run import MODELS

    for stage, arm in (("runs", "grpo"), ("runs", "sharp"), ("evals", "grpo"), ("evals", "sharp")):
        folder = tmp_path / stage / arm / "seed-1"
        folder.mkdir(parents=True)
        record = {"seconds": 30} | ({"sampling": {"how": MODELS["hf"].sampling}} if stage == "evals" else {})
        (folder / "manifest.json").write_text(json.dumps(record))
    result = run_analysis(config(), sampled_table(), job_minutes=job_minutes(tmp_path))
    assert set(result.variance_components["sampling_streams"]) == {MODELS["hf"].sampling}
    write_outputs(result, tmp_path / "analysis")
    analysis = read.read_analysis(tmp_path / "analysis", result.config.experiment)
    html = sections.sampling_section(sections.Page(result.config, analysis))
    assert "share their sampling stream" not in html and "arms do not share per-answer draws" in html
    # without the manifests (results from elsewhere) the caption says it does not know
    html = sections.sampling_section(sections.Page(result.config, read.read_analysis(_written(tmp_path), "exp")))
    assert "do not say how they drew their answers" in html


def _written(tmp_path):
    write_outputs(run_analysis(config(), sampled_table()), tmp_path / "bare")
    return tmp_path / "bare"


def _analysis_and_config(tmp_path, table, **raw_extra):
    """Analyse ``table`` (arms grpo and sharp, seeds 1-4, with job times) into tmp_path/analysis; return the config
    file the report reads."""
    import yaml

    raw = {
        "experiment": "exp",
        "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
        "comparisons": [{"family": "f", "reference": "grpo", "arms": ["sharp"]}],
        **raw_extra,
        "analysis": {"resamples": 500, "power_replicates": 200, "per_benchmark": False},
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(raw))
    minutes = pd.DataFrame(
        [(arm, s, 10.0, 0.5) for arm in ("grpo", "sharp") for s in (1, 2, 3, 4)],
        columns=["arm", "seed", "train_minutes", "eval_minutes"],
    )
    write_outputs(run_analysis(parse_config(raw), table, job_minutes=minutes), tmp_path / "analysis")
    return path


def test_the_report_shows_pass_at_k_components_and_what_to_buy(tmp_path):
    from armlab.analysis.reporting.report import write_report

    path = _analysis_and_config(tmp_path, sampled_table(), eval={"samples": 8, "pass_k": [1, 2, 8]})
    page = write_report(path, tmp_path / "analysis", tmp_path / "report", figures_dir=tmp_path / "figures").read_text()
    # planted: sharp gives up the rarely solved items, so it is below the base at k = 8 beyond its interval;
    # the milder grpo is within noise of the base there
    assert "sharp falls below the base policy from k = 8" in page and "lies below 0 at k = 8" in page
    assert "grpo falls below the base policy from k = 8" in page and "no interval lies wholly below 0" in page
    assert "Where the uncertainty comes from" in page and "Per job-minute, buy" in page
    assert (tmp_path / "figures" / "pass-at-k-1.svg").exists()


def test_common_random_numbers_are_paired_out_of_the_sampling_component():
    """Arms that draw sample j of an item from one stream make correlated errors; pairing their verdicts by j
    recovers the true sampling variance of the difference, while the counts alone (as if independent) overstate it."""
    from armlab.analysis.comparisons.paired import Pair
    from armlab.analysis.samples.sampled import components_table

    rng = np.random.default_rng(1)
    seeds, items, k, replicates = [1, 2, 3, 4], 60, 8, 40
    p_ref = rng.uniform(0.2, 0.8, items)
    p_arm = np.clip(p_ref + rng.uniform(-0.1, 0.1, items), 0, 1)
    # the variance of one shared-uniform difference 1[u < p_arm] - 1[u < p_ref] is |dp| - dp^2
    true_sampling = (np.abs(p_arm - p_ref) - (p_arm - p_ref) ** 2).mean() / k / items / len(seeds)
    paired, independent = [], []
    for _ in range(replicates):
        rows, verdicts = [], []
        for seed in seeds:
            u = rng.random((items, k))  # the stream of (seed, item, sample), shared by the two arms
            for arm, p in (("ref", p_ref), ("arm", p_arm)):
                correct = (u < p[:, None]).astype(float)
                for i in range(items):
                    c = correct[i].sum()
                    rows.append(("exp", arm, seed, "add", "math", f"i{i:02d}", c / k, k, c))
                    verdicts += [(arm, seed, "add", f"i{i:02d}", j, correct[i, j]) for j in range(k)]
        scores = pd.DataFrame(rows, columns=["experiment", "arm", "seed", "benchmark", "domain", "item", "score",
                                             "n_samples", "n_correct"])  # fmt: skip
        answers = pd.DataFrame(verdicts, columns=["arm", "seed", "benchmark", "item", "sample", "correct"])
        pair = [Pair("f", "ref", "arm", pd.DataFrame(index=pd.Index(seeds, name="seed")))]
        weights = pd.Series({"add": 1.0})
        with_answers, _ = components_table(scores, pair, weights, "flat", k, answers)
        counts_only, _ = components_table(scores, pair, weights, "flat", k)
        assert with_answers.sampling_method.iloc[0] == "paired by sample"
        assert counts_only.sampling_method.iloc[0] == "independent arms"
        paired.append(with_answers.var_sampling.iloc[0])
        independent.append(counts_only.var_sampling.iloc[0])
    error = np.std(paired) / np.sqrt(replicates)
    assert abs(np.mean(paired) - true_sampling) < 4 * error
    assert np.mean(independent) > 3 * true_sampling  # the positive correlation the counts cannot see


def test_a_verdict_given_twice_is_an_error_naming_the_file(tmp_path):
    from armlab.analysis.samples.sampled import read_answers
    from armlab.files import write_manifest

    out = tmp_path / "evals" / "grpo" / "seed-1"
    out.mkdir(parents=True)
    rows = [("add", "add-1", 0, 1.0), ("add", "add-1", 0, 0.0)]
    pd.DataFrame(rows, columns=["benchmark", "item", "sample", "correct"]).to_parquet(out / "answers.parquet")
    write_manifest(out, {}, "answers.parquet")
    with pytest.raises(AnalysisInputError, match=r"evals/grpo/seed-1/answers.parquet: sample 0 of add item add-1"):
        read_answers(tmp_path)


def test_verdicts_for_some_seeds_only_fill_the_rest_from_the_counts():
    """Evaluations from before answers.parquet leave cells without verdicts; those keep the counts' estimate."""
    from armlab.analysis.comparisons.paired import Pair
    from armlab.analysis.samples.sampled import components_table

    scores = sampled_table(k=4, seeds=(1, 2, 3, 4), items=10)
    answers = [
        (row.arm, row.seed, row.benchmark, row.item, j, float(j < row.n_correct))
        for row in scores[scores.seed <= 2].itertuples()
        for j in range(row.n_samples)
    ]
    answers = pd.DataFrame(answers, columns=["arm", "seed", "benchmark", "item", "sample", "correct"])
    pair = [Pair("f", "grpo", "sharp", pd.DataFrame(index=pd.Index([1, 2, 3, 4], name="seed")))]
    weights = pd.Series({"add": 0.25, "mod": 0.25, "sort": 0.5})
    table, _ = components_table(scores, pair, weights, "domain_balanced", 4, answers)
    assert np.isfinite(table.var_sampling.iloc[0]) and table.var_sampling.iloc[0] > 0


def test_the_advice_says_no_estimate_for_samples_at_one_answer_per_item(tmp_path):
    from armlab.analysis.reporting.report import write_report

    path = _analysis_and_config(tmp_path, sampled_table(k=1))
    page = write_report(path, tmp_path / "analysis", tmp_path / "report").read_text()
    advice = page[page.index("What to buy next") :]
    assert "twice the samples: no estimate" in advice and "→ nan" not in advice


def _ragged_verdicts(rng):
    """Two arms' verdicts on 2 seeds x 6 items with 0-4 paired samples per cell (a cell of 1 has no variance)."""
    rows = []
    for seed in (1, 2):
        for i in range(6):
            for j in range(int(rng.integers(0, 5))):
                u = rng.random()
                rows += [
                    ("arm", seed, "add", f"i{i}", j, float(u < 0.6)),
                    ("ref", seed, "add", f"i{i}", j, float(u < 0.4)),
                ]
    return pd.DataFrame(rows, columns=["arm", "seed", "benchmark", "item", "sample", "correct"])


def test_paired_sampling_variances_are_pandas_per_cell_variance_of_the_differences_over_k():
    """The per-cell variance read from the verdict array (one pass over the answers) against an independent
    pandas computation: var(d, ddof 1) / k per (seed, item), NaN below 2 samples or without verdicts."""
    from armlab.analysis.samples.sampled import _benchmark_verdicts

    answers = _ragged_verdicts(np.random.default_rng(7))
    items = pd.Index([f"i{i}" for i in range(7)])  # i6 has no verdicts at all
    found = _benchmark_verdicts(answers, {"arm", "ref"})["add"].paired_variance("arm", "ref", [2, 1, 3], items)
    wide = answers.pivot_table(index=["seed", "item", "sample"], columns="arm", values="correct")
    d = (wide["arm"] - wide["ref"]).groupby(["seed", "item"])
    expected = (d.var(ddof=1) / d.count()).unstack("item").reindex(index=[2, 1, 3], columns=items)
    np.testing.assert_allclose(found, expected.to_numpy(), rtol=1e-12, equal_nan=True)
    assert np.isnan(found[2]).all() and np.isnan(found[:, 6]).all()


def test_verdicts_that_do_not_pair_up_by_sample_are_an_error_naming_the_arms():
    from armlab.analysis.samples.sampled import _benchmark_verdicts

    answers = _ragged_verdicts(np.random.default_rng(8))
    answers = answers.drop(index=answers.index[(answers["arm"] == "ref")][0])
    with pytest.raises(AnalysisInputError, match=r"answers.parquet of arm and ref \(add\): .* do not pair up"):
        _benchmark_verdicts(answers, {"arm", "ref"})["add"].paired_variance("arm", "ref", [1, 2], pd.Index(["i0"]))


def _voted_answers(arms: dict[str, float], seeds=(1, 2, 3, 4, 5, 6), items: int = 30, k: int = 5, rng_seed: int = 3):
    """Per-answer verdicts with votes: each answer is the right one (vote 0) with the arm's probability, else one of
    three wrong ones (votes 1-3) or nothing readable (vote -1); the tidy scores that go with them."""
    rng = np.random.default_rng(rng_seed)
    answers, scores = [], []
    for arm, p_right in arms.items():
        for seed in seeds:
            for benchmark, domain in BENCHMARKS.items():
                for i in range(items):
                    right = rng.random(k) < p_right
                    votes = np.where(right, 0, rng.choice([-1, 1, 2, 3], k))
                    answers += [(arm, seed, benchmark, f"{benchmark}-{i}", j, float(v == 0), int(v)) for j, v in
                                enumerate(votes)]  # fmt: skip
                    scores.append(("exp", arm, seed, benchmark, domain, f"{benchmark}-{i}", right.mean(), k,
                                   float(right.sum())))  # fmt: skip
    columns = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score", "n_samples", "n_correct"]
    answer_columns = ["arm", "seed", "benchmark", "item", "sample", "correct", "vote"]
    return pd.DataFrame(scores, columns=columns), pd.DataFrame(answers, columns=answer_columns)


def _maj_by_hand(answers: pd.DataFrame, k: int) -> pd.Series:
    """maj@k per run by enumeration: per item, the most frequent vote among the first k (ties: mean of the tied)."""
    from collections import Counter

    per_item = {}
    for key, group in answers[answers["sample"] < k].groupby(["arm", "seed", "benchmark", "item"]):
        counted = Counter(v for v in group["vote"] if v >= 0)
        top = max(counted.values(), default=0)
        tied = [v for v, n in counted.items() if n == top]
        per_item[key] = sum(v == 0 for v in tied) / len(tied) if tied else 0.0
    frame = pd.Series(per_item).rename_axis(["arm", "seed", "benchmark", "item"])
    per_benchmark = frame.groupby(level=["arm", "seed", "benchmark"]).mean().unstack("benchmark")
    return per_benchmark[["add", "mod"]].mean(axis=1) / 2 + per_benchmark["sort"] / 2  # domain-balanced


def test_maj_at_k_is_counted_from_the_votes_and_finds_a_planted_effect_not_a_planted_null():
    scores, answers = _voted_answers({"grpo": 0.35, "sharp": 0.5, "twin": 0.35})
    raw = {
        "experiment": "exp",
        "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
        "comparisons": [
            {"family": "f", "reference": "grpo", "arms": ["sharp"]},
            {"family": "null", "reference": "grpo", "arms": ["twin"]},
        ],  # fmt: skip
        "eval": {"samples": 5, "pass_k": [1], "maj_k": [1, 5]},
        "analysis": {"resamples": 500, "power_replicates": 200, "per_benchmark": False},
    }
    result = run_analysis(parse_config(raw), scores, answers=answers)
    for k in (1, 5):
        expected = _maj_by_hand(answers, k)
        np.testing.assert_allclose(result.summaries[f"maj@{k}"].sort_index(), expected.sort_index(), atol=1e-12)
    rows = result.comparisons.set_index(["arm", "measure"])
    assert rows.loc[("sharp", "maj@5"), "p_value"] <= 0.05 and rows.loc[("sharp", "maj@5"), "ci_low"] > 0
    assert rows.loc[("twin", "maj@5"), "p_value"] > 0.05


def test_maj_at_k_without_votes_is_refused_naming_what_it_needs():
    scores, answers = _voted_answers({"grpo": 0.4, "sharp": 0.5}, seeds=(1, 2))
    raw = {
        "experiment": "exp",
        "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
        "comparisons": [{"family": "f", "reference": "grpo", "arms": ["sharp"]}],
        "analysis": {"resamples": 200, "power_replicates": 100, "maj_k": [5]},
    }
    with pytest.raises(AnalysisInputError, match=r"analysis\.maj_k \[5\]: maj@k needs each answer's vote"):
        run_analysis(parse_config(raw), scores)
    with pytest.raises(AnalysisInputError, match=r"among 5 answers per item; arm=grpo seed=1 add item add-0 has 4"):
        run_analysis(parse_config(raw), scores, answers=answers[answers["sample"] < 4])


def test_runs_trained_elsewhere_have_no_training_minutes(tmp_path):
    """A record of checkpoints made elsewhere took seconds to hash, not to train: its run has no training time, so
    the advice on buying a seed is left out rather than priced at the recording's seconds."""
    for stage, seconds, extra in (("runs", 30.0, {"trained_elsewhere": True}), ("evals", 60.0, {})):
        folder = tmp_path / stage / "grpo" / "seed-1"
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"seconds": seconds, "recipe": {"steps": 10}, **extra}))
    minutes = job_minutes(tmp_path)
    assert minutes.eval_minutes.tolist() == [1.0] and minutes.train_minutes.isna().all()


def aa_table(rng_seed: int, seeds=(1, 2, 3, 4, 5, 6), base_seeds=(0,), items: int = 200, k: int = 4) -> pd.DataFrame:
    """A/A: both compared arms are the base policy itself (the same per-item success probabilities), each seed an
    independent evaluation of k answers per item; the base is evaluated at ``base_seeds``."""
    rng = np.random.default_rng(rng_seed)
    p = {b: np.where(rng.random(items) < 0.3, 0.0, rng.beta(0.6, 0.9, items)) for b in BENCHMARKS}
    rows = []
    for arm, arm_seeds in {"base": base_seeds, "grpo": seeds, "sharp": seeds}.items():
        for seed in arm_seeds:
            for benchmark, domain in BENCHMARKS.items():
                correct = rng.binomial(k, p[benchmark])
                rows += [
                    ("exp", arm, seed, benchmark, domain, f"{benchmark}-{i}", c / k, k, float(c))
                    for i, c in enumerate(correct)
                ]
    columns = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score", "n_samples", "n_correct"]
    return pd.DataFrame(rows, columns=columns)


def test_an_arm_that_is_the_base_is_not_found_below_or_above_the_base_evaluated_once():
    # issue 54: the base's pass@k was taken as fixed, so its own sampling noise was missing from the interval; on
    # this A/A table the seeds-only interval excludes 0 at every k (as the demo's no_learning did at k = 2)
    result = run_analysis(config(pass_k=(1, 2, 4), resamples=200), aa_table(4))
    curve = result.pass_at_k_vs_base.set_index(["arm", "k"])
    for k in (1, 2, 4):
        arm, base = result.summaries.loc["sharp", f"pass@{k}"], result.summaries.loc["base", f"pass@{k}"].mean()
        seeds_only = sampling.difference_from_estimate(arm.to_numpy(), base, 0.0, 0.95)
        assert seeds_only["low"] > 0 or seeds_only["high"] < 0  # what armlab printed before
        row = curve.loc[("sharp", k)]
        assert row.ci_low < 0 < row.ci_high, k
        assert row.method == sampled.FROM_COUNTS and row.base_evaluations == 1 and row.base_se > 0
    # the variance added is the base's per-item estimate, unbiased at k <= n/2, a bound above it at k = n = 4
    assert list(curve.loc["sharp", "base_variance_method"]) == [
        "unbiased",
        "unbiased",
        "one-correct bound (conservative)",
    ]


def test_a_base_evaluated_at_every_seed_pairs_with_each_arm_by_seed():
    table = aa_table(4, base_seeds=(1, 2, 3, 4, 5, 6))
    result = run_analysis(config(pass_k=(1, 2, 4), resamples=200), table)
    curve = result.pass_at_k_vs_base.set_index(["arm", "k"])
    per_run = result.summaries
    for k in (1, 2, 4):
        d = (per_run.loc["sharp", f"pass@{k}"] - per_run.loc["base", f"pass@{k}"]).to_numpy()
        exact = resampling.sign_flip(d, confidence=0.95)
        row = curve.loc[("sharp", k)]
        assert row.method == sampled.PAIRED_BY_SEED and row.base_evaluations == 6
        assert (row.ci_low, row.ci_high) == (pytest.approx(exact["ci"][0, 0]), pytest.approx(exact["ci"][0, 1]))
        assert row.p_value == pytest.approx(exact["p_value"][0]) and row.mean_diff == pytest.approx(d.mean())
    # an arm whose answers are the base's at every seed (the workflow's common streams, a policy that did not
    # move): every difference is 0, and so is its interval
    twin = pd.concat([table[table.arm != "sharp"], table[table.arm == "base"].assign(arm="sharp")])
    row = run_analysis(config(pass_k=(1, 2, 4), resamples=200), twin).pass_at_k_vs_base.iloc[-1]
    assert (row.mean_diff, row.ci_low, row.ci_high, row.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_a_base_evaluated_once_on_few_items_gets_no_interval():
    # 20 items a benchmark, weighted 1/4, 1/4, 1/2: 53 effective items, too few for one evaluation's counts to
    # tell its sampling noise at large k (benchmarks/base_comparison_validity.py: 30 items at pass@32)
    result = run_analysis(config(pass_k=(1, 4), resamples=200), aa_table(4, items=20))
    rows = result.pass_at_k_vs_base
    assert rows[["ci_low", "ci_high", "p_value"]].isna().all().all()
    assert rows["method"].str.startswith("not estimated: the base evaluated once on 53 effective items").all()


VALIDITY = runpy.run_path(str(REPO / "benchmarks" / "base_comparison_validity.py"))


@pytest.mark.simulation
def test_the_a_a_table_of_the_docs_is_the_benchmarks_and_holds_the_level():
    # docs/statistics.md §10 quotes benchmarks/base_comparison_validity.py; the demo's design (4 answers, 500 items)
    # is recomputed here at the docs' replicates and seed, so an edited table or a changed estimator fails
    quoted = VALIDITY["docs_table"](VALIDITY["DOCS"].read_text())
    replicates, seed = (int(x) for x in re.search(r"--replicates (\d+) --seed (\d+)", quoted).groups())
    assert VALIDITY["rows"](4, 500, replicates, seed) == [
        line for line in quoted.splitlines() if line.startswith("| 500 | 4 |")
    ]
    rates = VALIDITY["false_positives"](4, 500, replicates, seed)
    slack = 3 * np.sqrt(0.05 * 0.95 / replicates)
    for (k, seeds), (before, counts, paired) in rates.items():
        assert counts <= 0.05 + slack and paired <= 0.05 + slack, (k, seeds)
        assert before > 3 * 0.05  # the seeds-only interval: three times alpha and more at every k
