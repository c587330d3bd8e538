"""Per-arm backends (arms.<arm>.backend): the combinations validation accepts and refuses, staged views that stay
byte-identical for configs without the key, the workflow's train and evaluation commands per arm, and a real tiny
run of an experiment with a builtin and a TRL arm from the builtin base (backend parity, issue 15)."""

import hashlib
import json
import re

import pandas as pd
import pytest
import yaml
from conftest import REPO, TINY, copy_of_the_repository, job_counts, readme_run, snakemake_dry_run

from armlab.configfile import ConfigError
from armlab.contract import LEDGER
from armlab.experiment.stages import stage_config
from armlab.experiment.validate import load_config
from armlab.training.backends import arm_backend, backend_of, backends_used, job_resources
from armlab.training.recipe import resolve_arm

# sha256 of json.dumps(stage_config(...)) for tests/fixtures/tiny.yaml, computed with the code before per-arm
# backends existed (commit 69bffce): a config without the key stages, and hashes, exactly as before, so that no
# existing experiment reruns. A change that means to alter these views must update them knowing it reruns every job.
# the base, eval and train views gained `numerics` (armlab/numerics.py); without it they hash as before it
# (1581def8…, c0982ab0…, 2ea05252…, a08af4ca…)
TINY_VIEWS = {
    "data": "ec2f8ca08a2294927990805ff6c2c608a2d42e361af6723a2c22c9231f3d4cd0",
    "base": "d67eddd0d72e56f14518ff4b402d0834c8c4fd850df807b0b26aea0ae37025b3",
    "eval": "2660f0b78bfde12e926d5489b46527e975694e851eaba049654673ef29249e29",
    "analysis": "c66aaf7dae6d17183e15782c9bca4105369cd32b31c03b49ddf3b440aac411b4",
    "train:grpo": "83d72c5467befe8fd19c9a6b01b12328f9742c58fb597592867b7b45f011813a",
    "train:difffilter": "2580774cc7cfc24449144cfd09ea67062c1bfbd60b4e6b370f5f50672656ac2a",
}


def _mixed(tmp_path, arms=None, name="mixed.yaml", **top):
    """The tiny experiment with a builtin arm and a TRL arm from the builtin base (``top`` replaces top-level keys)."""
    config = yaml.safe_load(TINY.read_text())
    config.update(
        arms=arms if arms is not None else {"builtin": {}, "trl": {"backend": "trl", "log_every": 1}},
        trl={"model": "builtin_base"},
        comparisons=[{"family": "backend_parity", "reference": "builtin", "arms": ["trl"]}],
    )
    config.update(top)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return path


def _sha(view: dict) -> str:
    return hashlib.sha256(json.dumps(view).encode()).hexdigest()


def test_a_mixed_experiment_validates_and_each_arm_stages_its_backend(tmp_path):
    config = load_config([_mixed(tmp_path)])
    assert [arm_backend(config, arm) for arm in config["arms"]] == ["builtin", "trl"]
    assert backends_used(config) == ["builtin", "trl"]
    assert backend_of(config).train_module == "armlab.training.train"
    assert backend_of(config, "trl").train_module == "armlab.training.backends.trl_backend"
    # the arm's backend is not part of its recipe: what both trainers read (and record) is the recipe alone
    assert "backend" not in resolve_arm(config, "trl").as_dict() and resolve_arm(config, "trl").log_every == 1
    builtin, trl = stage_config(config, "train", "builtin"), stage_config(config, "train", "trl")
    assert "backend" not in builtin and "trl" not in builtin
    assert trl["backend"] == "trl" and trl["trl"]["model"] == "builtin_base"
    assert trl["arms"] == {"trl": {"backend": "trl", "log_every": 1}}
    assert "trl" not in stage_config(config, "eval") and "backend" not in stage_config(config, "eval")
    assert job_resources(config, "train", "trl")["mem_mb"] == config["trl"]["mem_mb"]
    assert job_resources(config, "train") == job_resources(config, "train", "builtin")


def test_a_builtin_arm_in_a_trl_experiment_from_the_builtin_base(tmp_path):
    config = load_config([_mixed(tmp_path, arms={"builtin": {"backend": "builtin"}, "trl": {}}, backend="trl")])
    assert backends_used(config) == ["builtin", "trl"]
    assert "backend" not in stage_config(config, "train", "builtin")
    assert stage_config(config, "train", "trl")["backend"] == "trl"


@pytest.mark.parametrize(
    "arms, top, message",
    [
        ({"builtin": {}, "trl": {"backend": "verl"}}, {}, r"arms\.trl\.backend: unknown backend 'verl'"),
        ({"builtin": {}, "trl": {"backend": 3}}, {}, r"arms\.trl\.backend: unknown backend 3"),
        (
            {"builtin": {}, "trl": {"backend": "command"}},
            {},
            r"arms\.trl\.backend: an arm's own backend is one of \['builtin', 'trl'\].*command backend runs whole",
        ),
        (
            {"builtin": {"backend": "builtin"}, "trl": {}},
            {"backend": "command", "command": {"template": "true {output_dir}", "checkpoint": "model"}},
            r"arms\.builtin\.backend: an arm's own backend is one of .*in a 'command' experiment",
        ),
        (
            {"builtin": {}, "trl": {"backend": "trl"}},
            {"trl": {}},
            r"arms\.trl\.backend: TRL arm 'trl' beside builtin arms must start from the builtin arms' base policy: "
            r"set trl\.model: builtin_base \(got None\)",
        ),
        (
            {"builtin": {"backend": "builtin"}, "trl": {}},
            {"backend": "trl", "trl": {}},
            r"trl\.model: TRL arm 'trl' beside builtin arms must start",
        ),
        # TRL's recipe checks run for the TRL arm, with the arm named; the builtin arm may use what TRL lacks
        (
            {"builtin": {"estimator": "rloo"}, "trl": {"backend": "trl", "estimator": "rloo"}},
            {},
            r"arms\.trl\.estimator: .*cannot be expressed by TRL's GRPOTrainer.*\(backend: trl\)",
        ),
        ({"builtin": {}, "trl": {"backend": "trl", "bogus": 1}}, {}, r"arms\.trl: .*'bogus'.*and backend, numerics\)"),
    ],
)
def test_what_a_per_arm_backend_cannot_be_is_refused_in_one_line(tmp_path, arms, top, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_config([_mixed(tmp_path, arms=arms, **top)])
    assert "\n" not in str(err.value)


def test_an_arm_builtin_beside_the_estimators_trl_lacks_validates(tmp_path):
    load_config([_mixed(tmp_path, arms={"builtin": {"estimator": "rloo"}, "trl": {"backend": "trl"}})])


def test_configs_without_per_arm_backends_stage_exactly_as_before():
    config = load_config([TINY])
    views = {stage: _sha(stage_config(config, stage)) for stage in ("data", "base", "eval", "analysis")}
    views |= {f"train:{arm}": _sha(stage_config(config, "train", arm)) for arm in config["arms"]}
    assert views == TINY_VIEWS


def _dry_run(workdir, configfile):
    dry = snakemake_dry_run(workdir, configfile)
    return dry.stdout + dry.stderr


def test_snakemake_dag_of_a_mixed_experiment(tmp_path):
    out = _dry_run(tmp_path, _mixed(tmp_path))
    counts = job_counts(out)
    assert (counts["base_policy"], counts["export_base"], counts["train"], counts["train_trl"]) == (1, 1, 2, 2)
    assert counts["evaluate"] == 6  # the sampled base at seeds 1 and 2, 2 builtin, 2 TRL runs
    for seed in (1, 2):
        assert (
            "python -m armlab.training.train --config results/tiny/config/train/builtin.json --arm builtin"
            f" --seed {seed} --data results/tiny/data --base results/tiny/base/policy.pt"
            f" --out results/tiny/runs/builtin/seed-{seed}"
        ) in out
        assert (
            "python -m armlab.training.backends.trl_backend --config results/tiny/config/train/trl.json"
            f" --arm trl --seed {seed}"
            f" --data results/tiny/data --hf_base results/tiny/base_hf/model --out results/tiny/runs/trl/seed-{seed}"
        ) in out
        assert (
            f"--model armlab-builtin --checkpoint results/tiny/runs/builtin/seed-{seed}/policy.pt --arm builtin"
            f" --seed {seed}"
        ) in out
        manifest = f"results/tiny/runs/trl/seed-{seed}/manifest.json"
        assert f"--model hf --run-manifest {manifest} --arm trl --seed {seed}" in out
    # arm base is the builtin base policy, scored by the builtin model (its export scores the same)
    for seed in (1, 2):  # the sampled base at each seed, by the builtin's model
        assert f"--model armlab-builtin --checkpoint results/tiny/base/policy.pt --arm base --seed {seed}" in out
    assert len(re.findall(r"--arm base --seed \d", out)) == 2
    assert not re.search(r"training\.train .*--arm trl|trl_backend .*--arm builtin", out)


def test_an_arm_name_that_is_a_regex_trains_with_its_own_backend_only(tmp_path):
    """The train rules' arm constraints are anchored and escaped: arm "a.b" is not arm "axb" nor a prefix of "a.bc"."""
    arms = {"a.b": {}, "axb": {"backend": "trl"}, "a.bc": {"backend": "trl"}}
    path = _mixed(tmp_path, arms=arms, comparisons=[{"family": "f", "reference": "a.b", "arms": ["axb", "a.bc"]}])
    out = _dry_run(tmp_path, path)
    assert job_counts(out)["train"] == 2 and job_counts(out)["train_trl"] == 4
    assert len(re.findall(r"training\.train .*--arm a\.b ", out)) == 2
    assert len(re.findall(r"trl_backend .*--arm (axb|a\.bc) ", out)) == 4


def test_configs_without_per_arm_backends_keep_their_dag(tmp_path):
    counts = job_counts(_dry_run(tmp_path, TINY))
    assert "train_trl" not in counts and counts["train"] == 4 and counts["evaluate"] == 6  # base at 2 seeds


def test_the_backend_parity_experiment_validates():
    config = load_config([REPO / "config" / "experiments" / "backend_parity.yaml"])
    assert backends_used(config) == ["builtin", "trl"] and len(config["seeds"]) == 8
    from armlab.training.backends.trl_backend import grpo_config_kwargs

    builtin, trl = resolve_arm(config, "builtin"), resolve_arm(config, "trl")
    kwargs = grpo_config_kwargs(trl, config["experiment"], 1, "/tmp/x", 1)
    assert kwargs["loss_type"] == "dapo" and kwargs["scale_rewards"] == "group" and kwargs["beta"] == 0.0
    assert builtin.estimator == {"name": "grpo", "eps": 1e-4}  # TRL's fixed group-std eps
    same = ("steps", "prompts_per_step", "group_size", "lr", "clip", "temperature", "max_new_tokens", "grad_clip")
    assert {k: getattr(builtin, k) for k in same} == {k: getattr(trl, k) for k in same}


@pytest.mark.workflow
def test_a_tiny_mixed_run_from_the_repository_root(tmp_path):
    """The README's command from a copy of the repository: both arms trained, evaluated and compared."""
    pytest.importorskip("trl")
    workdir = copy_of_the_repository(tmp_path / "checkout")
    config = _mixed(tmp_path)
    proc = readme_run(workdir, configfile=config)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = workdir / "results" / "tiny"
    scores = pd.read_parquet(results / "scores.parquet")
    assert set(scores.arm) == {"base", "builtin", "trl"}
    assert set(scores[scores.arm != "base"].seed) == {1, 2}
    comparisons = pd.read_csv(results / "analysis" / "comparisons.csv")
    assert set(comparisons.arm) == {"trl"} and set(comparisons.reference) == {"builtin"}
    trl_manifest = json.loads((results / "runs" / "trl" / "seed-1" / "manifest.json").read_text())
    assert trl_manifest["backend"] == "trl" and trl_manifest["start"].endswith("base_hf/model")
    assert "backend" not in trl_manifest["recipe"]
    assert (results / "runs" / "builtin" / "seed-1" / "policy.pt").is_file()
    assert (results / "report" / "index.html").is_file()

    # accuracy over training: every kept model of both backends (checkpoint_every 2 of 4 steps), base at step 0
    proc = readme_run(workdir, "learning_curves", configfile=config)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    curves = pd.read_csv(results / "curves_summary" / "curves.csv")
    assert (results / "curves_summary" / "accuracy_curves.png").stat().st_size > 10_000
    assert set(curves.summary) == {"logic", "math", "science", "domain_balanced"}
    assert curves.groupby(["arm", "seed"]).step.agg(lambda steps: sorted(set(steps))).tolist() == [[0, 2, 4]] * 4
    # the last step is the run's evaluation, step 0 the base's: each domain's mean benchmark accuracy, and their mean
    benchmark = scores.groupby(["arm", "seed", "domain", "benchmark"]).score.mean()
    domain = benchmark.groupby(["arm", "seed", "domain"]).mean().unstack("domain")
    domain["domain_balanced"] = domain.mean(axis=1)
    expected = domain.stack().rename("value").rename_axis(["arm", "seed", "summary"]).reset_index()
    final = curves[curves.step == 4].merge(expected, on=["arm", "seed", "summary"], suffixes=("", "_eval"))
    assert len(final) == 16 and (final.value - final.value_eval).abs().max() < 1e-12
    base = expected[expected.arm == "base"].groupby("summary").value.mean()  # over the base's evaluations
    start = curves[curves.step == 0]
    assert len(start) == 16 and (start.value - start.summary.map(base)).abs().max() < 1e-12
    # the compute ledger beside the step: each run's totals at its kept steps (its ledger.parquet), 0 at the base
    for arm in ("builtin", "trl"):
        ledger = pd.read_parquet(results / "runs" / arm / "seed-1" / "ledger.parquet").set_index("step")
        run = curves[(curves.arm == arm) & (curves.seed == 1) & (curves.summary == "math")].set_index("step")
        assert ledger.index.tolist() == [1, 2, 3, 4]
        assert run.loc[[2, 4], list(LEDGER)].values.tolist() == ledger.loc[[2, 4], list(LEDGER)].values.tolist()
        assert (run.loc[0, list(LEDGER)] == 0).all() and (ledger.cum_prompts == [8, 16, 24, 32]).all()
    # the paired inference over the curves: trl vs builtin at steps 2 and 4 (2 seeds: nothing can be decided), and
    # the final checkpoint's comparison is the analysis's own primary comparison
    band = pd.read_csv(results / "curves_summary" / "curve_band.csv")
    assert band[["arm", "reference"]].drop_duplicates().values.tolist() == [["trl", "builtin"]]
    assert band.step.tolist() == [2, 4] and (band.ahead == "neither").all()
    at_flops = pd.read_csv(results / "curves_summary" / "curve_compute_band.csv")  # both runs keep a ledger
    assert len(at_flops) == 10 and (at_flops.compute == "cum_flops").all() and (at_flops.ahead == "neither").all()
    verdicts = pd.read_csv(results / "curves_summary" / "curve_verdicts.csv")
    assert verdicts.verdict.tolist() == ["trl vs builtin: no decided difference at the end"]
    report = (results / "curves_report" / "index.html").read_text()  # the report again, with the curves
    assert '<section id="curves">' in report and "trl vs builtin: no decided difference at the end" in report
    curve_cells = pd.read_csv(results / "curves_summary" / "curve_comparisons.csv").drop_duplicates("measure")
    final = curve_cells.set_index("measure").loc["final"]
    primary = comparisons[comparisons.measure == "domain_balanced"].iloc[0]
    assert final.mean_diff == pytest.approx(primary.mean_diff, abs=1e-12) and final.p_value == primary.p_value


def test_the_report_reads_builtin_and_trl_step_logs_side_by_side(tmp_path):
    """A TRL log lacks some of the builtin's columns; the TRL backend writes its fraction of zero-variance groups
    as frac_zero_var (trl_backend.step_log, from TRL's log history), so the report reads both alike."""
    from armlab.analysis.reporting.read import read_runs
    from armlab.files import write_manifest
    from armlab.training.backends.trl_backend import step_log

    history = [{"step": s, "reward": r, "frac_reward_zero_std": f} for s, r, f in ((1, 0.25, 0.6), (2, 0.3, 0.5))]
    logs = {
        "builtin": pd.DataFrame({"step": [1, 2], "reward": [0.2, 0.3], "frac_zero_var": [0.5, 0.4], "kept_frac": 1.0}),
        "trl": step_log(history, "tiny", "trl", 1),
    }
    for arm, log in logs.items():
        run = tmp_path / arm / "seed-1"
        run.mkdir(parents=True)
        log.to_parquet(run / "steps.parquet", index=False)
        write_manifest(run, {"arm": arm, "seed": 1}, "steps.parquet")
    steps = read_runs(tmp_path).steps.set_index(["arm", "step"])
    assert steps.loc[("trl", 2), "frac_zero_var"] == 0.5 and steps.loc[("builtin", 1), "frac_zero_var"] == 0.5
    assert pd.isna(steps.loc[("trl", 1), "kept_frac"])
