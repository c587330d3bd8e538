"""The command backend: template checks, shell quoting, checkpoint discovery, config validation, Snakemake DAG."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, TINY

from training.backends import command
from training.config import ConfigError, load_config, resolve_arm

VERL = REPO / "config" / "experiments" / "verl_example.yaml"
FAKE_TRAINER = (
    "mkdir -p {output_dir}/step-{steps}/model && "
    "echo {arm} {seed} {estimator} {lr} {norm} > {output_dir}/step-{steps}/model/args.txt"
)


def _tiny_command_config(tmp_path, template=FAKE_TRAINER, arms=None, **section):
    config = yaml.safe_load(TINY.read_text())
    config["backend"] = "command"
    config["command"] = {
        "template": template,
        "checkpoint": "step-*/model",
        "gpus": 0,
        "eval_gpus": 0,
        "estimator_fields": {"grpo": {"norm": True}, "dr_grpo": {"norm": False}},
        **section,
    }
    config["arms"] = arms or {"grpo": {}, "dr_grpo": {"estimator": "dr_grpo"}}
    config["comparisons"] = [
        {"family": "estimators", "reference": "grpo", "arms": [a for a in config["arms"] if a != "grpo"]}
    ]
    path = tmp_path / "command.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(
    "template, message",
    [
        ("train --arm={arm.__class__}", "not a plain name"),
        ("train {0}", "not a plain name"),
        ("train {arm!r}", "not a plain name"),
        ("train --lr={lr:.3f}", "not a plain name"),
        ("train --name='{arm}'", "inside '-quotes"),
        ('train --name="x {arm}"', 'inside "-quotes'),
        # a backslash escapes the opening quote of the value, which then runs as shell code
        ("train \\{arm}", "follows a backslash"),
        ("train --name=\\{arm}", "follows a backslash"),
        # commands that run their arguments as code again
        ("eval train {arm}", "passed to 'eval'"),
        ("x; eval {arm}", "passed to 'eval'"),
        ("bash -c {arm}", "passed to 'bash'"),
        ("/bin/bash -lc {arm}", "passed to '/bin/bash'"),
        ("env X=1 sh -ec {arm}", "passed to 'sh'"),
        ("timeout 10 bash -c 2>/dev/null {arm}", "passed to 'bash'"),
        ("cd /x && zsh -c {arm} > log", "passed to 'zsh'"),
        ("source env.sh {arm}", "passed to 'source'"),
        (". ./env.sh {arm}", "passed to '.'"),
        ("ssh node1 train {arm}", "passed to 'ssh'"),
        ("su -c {arm} trainer", "passed to 'su'"),
        ("watch train {arm}", "passed to 'watch'"),
        ("python3 -u -c {arm}", "passed to 'python3'"),
        ("perl -ne {arm}", "passed to 'perl'"),
        ("node --eval {arm}", "passed to 'node'"),
    ],
)
def test_templates_that_could_inject_are_rejected(template, message):
    with pytest.raises(ValueError, match=message):
        command.template_fields(template)


@pytest.mark.parametrize(
    "template",
    [
        "python train.py --arm {arm} --seed {seed} > {output_dir}/log 2>&1",
        "bash run.sh {arm} {seed}",  # a script file: its arguments are $1, $2, never parsed as code
        "bash -c 'echo start' && train {arm}",  # -c without a placeholder
        "find . -name {arm}",  # '.' as an argument, not the command
        "python -Werror train.py {arm}",
        "ssh-keygen -y; train {arm}",
        "train \\\\{arm}",  # an escaped backslash: the quote stays
        "train x\\\n{arm}",  # a line continuation
    ],
)
def test_templates_that_keep_values_literal_are_accepted(template):
    assert command.template_fields(template) == [n for n in ("arm", "seed", "output_dir") if f"{{{n}}}" in template]
    values = {"arm": "$(touch pwned)", "seed": "1; touch pwned", "output_dir": "out"}
    words = shlex.split(command.render(template, values))
    for name in command.template_fields(template):  # each value stays inside one word, its text unchanged
        assert any(values[name] in word for word in words), (name, words)


def test_a_backslashed_placeholder_would_have_run_the_value(tmp_path):
    """Why the backslash rule exists: quoted by hand, the template runs the value; the backend refuses it first."""
    template, value = "echo \\{arm}", ";touch pwned;#"  # the value closes nothing: # comments out its end quote
    unchecked = template.format(arm=shlex.quote(value))
    subprocess.run(["/bin/bash", "-c", unchecked], cwd=tmp_path, capture_output=True)
    assert (tmp_path / "pwned").exists()
    (tmp_path / "pwned").unlink()
    with pytest.raises(ValueError, match="follows a backslash"):
        command.render(template, {"arm": value})
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "template, key",
    [
        ("train \\{arm} {seed} {estimator} {norm} --out {output_dir}", "command.template"),
        ("bash -c {arm} {seed} {estimator} {norm} {output_dir}", "command.template"),
    ],
)
def test_validation_refuses_unsafe_templates_in_one_line(tmp_path, template, key):
    with pytest.raises(ConfigError) as error:
        load_config([_tiny_command_config(tmp_path, template=template)])
    assert str(error.value).count("\n") == 0 and f"{key}:" in str(error.value)


@pytest.mark.parametrize("pattern", ["/abs/step-*/model", "../elsewhere/*", "step-*/../../x"])
def test_validation_keeps_the_checkpoint_glob_inside_the_run_folder(tmp_path, pattern):
    with pytest.raises(ConfigError, match=r"command\.checkpoint: .* relative to \{output_dir\} that stays inside"):
        load_config([_tiny_command_config(tmp_path, checkpoint=pattern)])


def test_placeholders_after_closed_quotes_are_fine():
    assert command.template_fields("""echo 'it''s' "a \\" b" {arm} --seed {seed}""") == ["arm", "seed"]


def test_values_are_shell_quoted():
    line = command.render("echo {arm} {output_dir}", {"arm": "a; touch /tmp/pwned", "output_dir": "/x y/$(id)"})
    assert shlex.split(line) == ["echo", "a; touch /tmp/pwned", "/x y/$(id)"]
    assert (
        subprocess.run(["/bin/bash", "-c", line], capture_output=True, text=True).stdout
        == "a; touch /tmp/pwned /x y/$(id)\n"
    )


def test_validation_rejects_unknown_placeholders(tmp_path):
    with pytest.raises(ConfigError, match=r"command\.template: unknown placeholder\(s\) \['secret'\]"):
        load_config([_tiny_command_config(tmp_path, template="train {arm} {secret}")])


def test_validation_rejects_an_arm_the_template_cannot_express(tmp_path):
    arms = {"grpo": {}, "difffilter": {"data_policy": "difffilter"}}
    with pytest.raises(
        ConfigError,
        match=r"arms\.difffilter\.data_policy: this arm overrides 'data_policy' but the "
        r"command template never passes it",
    ):
        load_config([_tiny_command_config(tmp_path, arms=arms)])


def test_validation_rejects_an_estimator_without_its_fields(tmp_path):
    arms = {"grpo": {}, "rloo": {"estimator": "rloo"}}
    with pytest.raises(
        ConfigError,
        match=r"arms\.rloo\.estimator: command\.estimator_fields\.rloo does not define "
        r"\['norm'\]",
    ):
        load_config([_tiny_command_config(tmp_path, arms=arms)])


def test_validation_rejects_method_parameters(tmp_path):
    arms = {"grpo": {}, "nostd": {"estimator": {"name": "grpo", "norm_std": False}}}
    with pytest.raises(ConfigError, match=r"arms\.nostd\.estimator: parameters \['norm_std'\] cannot be passed"):
        load_config([_tiny_command_config(tmp_path, arms=arms)])


def test_the_verl_example_validates():
    config = load_config([VERL])
    assert config["backend"] == "command"
    fields = command.template_values(
        resolve_arm(config, "dr_grpo"), "dr_grpo", 1, "/out", config["command"]["estimator_fields"]
    )
    line = command.render(config["command"]["template"], fields)
    assert "algorithm.adv_estimator=grpo algorithm.norm_adv_by_std_in_grpo=False" in line
    assert "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum-norm" in line


def test_run_substitutes_and_finds_the_checkpoint(tmp_path):
    config = load_config([_tiny_command_config(tmp_path)])
    out = tmp_path / "runs" / "dr_grpo" / "seed-2"
    checkpoint = command.run(config, "dr_grpo", 2, out)
    assert checkpoint == (out / "trainer" / "step-4" / "model").resolve()
    assert (checkpoint / "args.txt").read_text().split() == ["dr_grpo", "2", "dr_grpo", "0.0003", "False"]
    manifest = yaml.safe_load((out / "manifest.json").read_text())
    assert manifest["checkpoint"] == str(checkpoint) and manifest["backend"] == "command"


def test_a_missing_checkpoint_fails_the_job(tmp_path):
    config = load_config([_tiny_command_config(tmp_path, checkpoint="nowhere/*")])
    with pytest.raises(FileNotFoundError, match="no checkpoint matches 'nowhere/\\*'"):
        command.run(config, "grpo", 1, tmp_path / "run")


@pytest.mark.workflow
def test_snakemake_trains_every_arm_and_seed_through_the_command(tmp_path, snakemake_bin):
    path = _tiny_command_config(tmp_path)
    targets = [f"results/tiny/runs/{arm}/seed-{seed}/manifest.json" for arm in ("grpo", "dr_grpo") for seed in (1, 2)]
    proc = subprocess.run(
        [
            snakemake_bin,
            "-s",
            str(REPO / "Snakefile"),
            "--configfile",
            str(path),
            "--replace-workflow-config",
            "--cores",
            "2",
            *targets,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    args = (tmp_path / "results/tiny/runs/grpo/seed-2/trainer/step-4/model/args.txt").read_text()
    assert args.split() == ["grpo", "2", "grpo", "0.0003", "True"]
    dry = subprocess.run(
        [
            snakemake_bin,
            "-s",
            str(REPO / "Snakefile"),
            "--configfile",
            str(path),
            "--replace-workflow-config",
            "--cores",
            "2",
            "-n",
            "results/tiny/scores.parquet",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )
    # no builtin base policy is trained, and without command.base_checkpoint no base is evaluated
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    assert "base_policy" not in dry.stdout and "evaluate" in dry.stdout


def _env():
    """The test's environment with this interpreter's bin directory first (the jobs call `python`)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
