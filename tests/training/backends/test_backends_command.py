"""The command backend: argument vectors, the shell escape hatch, template checks, checkpoints, validation, DAG."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import fork_server
import pytest
import yaml
from conftest import REPO, TINY

from armlab.configfile import ConfigError
from armlab.experiment.validate import load_config
from armlab.training.backends import command
from armlab.training.recipe import resolve_arm

VERL = REPO / "config" / "experiments" / "verl_example.yaml"
# the "trainer": makes the checkpoint folder named by its first argument and writes the other arguments into it
FAKE_TRAINER = """import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True)
(out / "args.json").write_text(json.dumps(sys.argv[2:]))
"""
ARGS = ["{output_dir}/step-{steps}/model", "{arm}", "{seed}", "{estimator}", "{lr}", "{norm}"]


def _trainer(tmp_path, form="list"):
    """A template that runs FAKE_TRAINER: a list, a string split into words, or a line for bash (``shell: true``)."""
    script = tmp_path / "trainer.py"
    script.write_text(FAKE_TRAINER)
    argv = [sys.executable, str(script), *ARGS]
    if form == "list":
        return argv
    line = " ".join(shlex.quote(word) if "{" not in word else word for word in argv)
    return line if form == "string" else f"test -d {{output_dir}} && {line} > {{output_dir}}/log.txt"


def _tiny_command_config(tmp_path, template=None, arms=None, **section):
    config = yaml.safe_load(TINY.read_text())
    config["backend"] = "command"
    config["command"] = {
        "template": template or _trainer(tmp_path),
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


# commands that run their arguments as code again: refused with or without a shell
REPARSERS = [
    ("eval train {arm}", "passed to 'eval'"),
    ("bash -c {arm}", "passed to 'bash'"),
    ("/bin/bash -lc {arm}", "passed to '/bin/bash'"),
    ("env X=1 sh -ec {arm}", "passed to 'sh'"),
    ("source env.sh {arm}", "passed to 'source'"),
    (". ./env.sh {arm}", "passed to '.'"),
    ("ssh node1 train {arm}", "passed to 'ssh'"),
    ("su -c {arm} trainer", "passed to 'su'"),
    ("watch train {arm}", "passed to 'watch'"),
    ("python3 -u -c {arm}", "passed to 'python3'"),
    ("python3 -c{arm}", "passed to 'python3'"),  # the option written onto the placeholder's word
    ("perl -ne {arm}", "passed to 'perl'"),
    ("node --eval {arm}", "passed to 'node'"),
    ("node --eval={arm}", "passed to 'node'"),
    # found by a red-team: version-suffixed interpreters, more code options, program text, wrappers
    ("env -S {arm}", "passed to 'env'"),
    ("env --split-string={arm}", "passed to 'env'"),
    ("python3.11 -c {arm}", "passed to 'python3.11'"),
    ("/usr/bin/pypy3 -c {arm}", "passed to '/usr/bin/pypy3'"),
    ("perl5.36 -E {arm}", "passed to 'perl5.36'"),
    ("node -p {arm}", "passed to 'node'"),
    ("node --print {arm}", "passed to 'node'"),
    ("awk {arm}", "passed to 'awk'"),
    ("gawk -F, -v x=1 {arm} data", "passed to 'gawk'"),
    ("sed -e {arm} log", "passed to 'sed'"),
    ("sed -n {arm} log", "passed to 'sed'"),
    ("sed -i -e s/x/y/{arm} log", "passed to 'sed'"),  # a value 'e' would make sed run the line
    ("tcsh -c {arm}", "passed to 'tcsh'"),
    ("csh -fc {arm}", "passed to 'csh'"),
    ("pwsh -c {arm}", "passed to 'pwsh'"),
    ("powershell -Command {arm}", "passed to 'powershell'"),
    ("Rscript -e {arm}", "passed to 'Rscript'"),
    ("php -r {arm}", "passed to 'php'"),
    ("lua5.4 -e {arm}", "passed to 'lua5.4'"),
    ("sudo -s {arm}", "passed to 'sudo'"),
    ("git -c core.pager={arm} log", "passed to 'git'"),
    ("python -m {arm}", "passed to 'python'"),
    ("python3 -Bm{arm}", "passed to 'python3'"),
    ("trap {arm} EXIT", "passed to 'trap'"),
    ("timeout 10 bash -c {arm}", "passed to 'bash'"),
    ("timeout 10 {arm}", "the program '{arm}' holds a placeholder"),
    ("timeout -s KILL -k 5 10m {arm}", "the program '{arm}' holds a placeholder"),
    ("nice {arm}", "the program '{arm}' holds a placeholder"),
    ("timeout --signal KILL 10 {arm}", "the program '{arm}' holds a placeholder"),
    ("sudo --user bob {arm}", "the program '{arm}' holds a placeholder"),
    ("nice -n 5 {arm}", "the program '{arm}' holds a placeholder"),
    ("xargs -n 1 {arm}", "the program '{arm}' holds a placeholder"),
    ("env {arm}", "the program '{arm}' holds a placeholder"),
    ("env -u HOME X=1 {arm}/train", "the program '{arm}/train' holds a placeholder"),
    ("sudo -u bob {arm}", "the program '{arm}' holds a placeholder"),
    ("doas {arm}", "the program '{arm}' holds a placeholder"),
    ("exec {arm}", "the program '{arm}' holds a placeholder"),
    ("command {arm}", "the program '{arm}' holds a placeholder"),
    ("nohup {arm}", "the program '{arm}' holds a placeholder"),
    ("stdbuf -oL -e 0 {arm}", "the program '{arm}' holds a placeholder"),
    ("setsid {arm}", "the program '{arm}' holds a placeholder"),
    ("time {arm}", "the program '{arm}' holds a placeholder"),
    ("ionice -c 2 -n 7 {arm}", "the program '{arm}' holds a placeholder"),
    ("taskset 0-3,7 {arm}", "the program '{arm}' holds a placeholder"),
    ("chrt 10 {arm}", "the program '{arm}' holds a placeholder"),
    ("nice timeout 5s env {arm}", "the program '{arm}' holds a placeholder"),
    ("env X={arm} bash -c 'eval $X'", "the assignment X=…"),
]


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
        ("x; eval {arm}", "passed to 'eval'"),
        ("timeout 10 bash -c 2>/dev/null {arm}", "passed to 'bash'"),
        ("cd /x && zsh -c {arm} > log", "passed to 'zsh'"),
        # found by a red-team: code through a pipe, a variable, a process substitution or the command word
        ("echo {arm} | sh", "piped into 'sh'"),
        ("echo {arm} | tr a b | bash -o pipefail", "piped into 'bash'"),
        ("echo {arm} | python3 - x", "piped into 'python3'"),
        ("printf %s {arm} |& bash -s x", "piped into 'bash'"),
        ("echo {arm} | xargs bash -c", "passed to 'bash'"),
        ("x={arm}; $x", "the assignment x=…"),
        ('x={arm}; eval "$x"', "the assignment x=…"),
        ("export X={arm} && train", "the assignment X=…"),
        ("bash <(echo {arm})", r"inside <\(...\)"),
        ("train > >(tee {arm})", r"inside >\(...\)"),
        ("{arm} --seed 1", "the program '{arm}' holds a placeholder"),
        ("cd /x && {output_dir}/train", "the program '{output_dir}/train' holds a placeholder"),
        ("( cd /x; {arm} )", "the program '{arm}' holds a placeholder"),
        *REPARSERS,
    ],
)
def test_shell_templates_that_could_inject_are_rejected(template, message):
    with pytest.raises(ValueError, match=message):
        command.template_fields(template, shell=True)


@pytest.mark.parametrize("template, message", REPARSERS)
@pytest.mark.parametrize("form", [str, shlex.split], ids=["string", "list"])
def test_argument_vectors_passing_a_value_to_code_are_rejected(template, message, form):
    """Without a shell, ``bash -c {arm}`` would still run the value as code: refused like in shell mode."""
    with pytest.raises(ValueError, match=message):
        command.template_fields(form(template))


@pytest.mark.parametrize(
    "template, message",
    [
        ("train {arm}; touch x", "';' at character 11 is shell syntax"),
        ("train {arm} && merge", "'&' at character 12 is shell syntax"),
        ("train {arm} | tee log", "'|' at character 12"),
        ("train {arm} > log", "'>' at character 12"),
        ("train {arm} 2>&1", "'>' at character 13"),
        ("train {arm} <<EOF", "'<' at character 12"),
        ("train ( {arm} )", "'\\(' at character 6"),
        ("train --host $(hostname) {arm}", "'\\$' at character 13"),
        ('train --home "$HOME" {arm}', "'\\$' at character 14"),
        ("train `hostname` {arm}", "'`' at character 6"),
        ("train {arm}\nmerge", "'\\\\n' at character 11"),
        ("train {arm} \\\n --seed {seed}", "'\\\\n' at character 13"),  # a line continuation
        ("train {arm} # the arm", "'#' at character 12"),  # a comment
        ("# train {arm}", "'#' at character 0"),
        ("{arm} --seed {seed}", "the program '{arm}' holds a placeholder"),
        (["{output_dir}/train", "{arm}"], "the program '{output_dir}/train' holds a placeholder"),
        ("CUDA_VISIBLE_DEVICES=0 train {arm}", "'CUDA_VISIBLE_DEVICES=0' assigns a variable.*env"),
        ([""], "word 1 is empty"),
        (["train", "", "{arm}"], "word 2 is empty"),
        ("train '' {arm}", "word 2 is empty"),
        ("  ", "no program to run"),
        ("train {arm", "expected '}' before end of string"),
    ],
)
def test_argument_vectors_refuse_what_only_a_shell_acts_on(template, message):
    with pytest.raises(ValueError, match=f"^template: {message}"):
        command.template_fields(template)


ARM, SEED = ";touch pwned;#", "$(touch pwned) `touch pwned`\n'\"\\"  # hostile values


@pytest.mark.parametrize(
    "template, words",
    [
        ("python train.py --arm {arm} --seed {seed}", ["python", "train.py", "--arm", ARM, "--seed", SEED]),
        (["train", "--arm={arm}/{seed}"], ["train", f"--arm={ARM}/{SEED}"]),
        ("train '--name={arm} x' \"{seed}\"", ["train", f"--name={ARM} x", SEED]),  # quotes are fine: no shell follows
        ("train \\{arm} 'a; b' \\$", ["train", ARM, "a; b", "$"]),  # quoted or escaped shell syntax is literal
        ("bash run.sh {arm}", ["bash", "run.sh", ARM]),  # a script file: its arguments are $1, $2
        ("timeout 10 python train.py {arm}", ["timeout", "10", "python", "train.py", ARM]),
        ("env -u HOME X=1 nice -n 5 train {arm}", ["env", "-u", "HOME", "X=1", "nice", "-n", "5", "train", ARM]),
        ("awk -f prog.awk {arm}", ["awk", "-f", "prog.awk", ARM]),
        ("sed -e s/a/b/ {arm}", ["sed", "-e", "s/a/b/", ARM]),
        ("python3.11 -m train --arm {arm}", ["python3.11", "-m", "train", "--arm", ARM]),
        ("git commit -m {arm}", ["git", "commit", "-m", ARM]),
        ("train lr={arm}", ["train", f"lr={ARM}"]),
        ("find . -name {arm}", ["find", ".", "-name", ARM]),
        ("python -Werror train.py {{x}} {arm}", ["python", "-Werror", "train.py", "{x}", ARM]),
        ("env CUDA_VISIBLE_DEVICES=0 train {seed}", ["env", "CUDA_VISIBLE_DEVICES=0", "train", SEED]),
        ("train --tag=a#1 '#' {arm}", ["train", "--tag=a#1", "#", ARM]),  # '#' inside a word starts no comment
        (["train", "$HOME;", "# x", "{arm}"], ["train", "$HOME;", "# x", ARM]),  # a list's items are literal
    ],
)
def test_an_argument_vector_holds_each_value_literally_in_its_own_word(template, words):
    assert command.render(template, {"arm": ARM, "seed": SEED}) == words


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
        "echo {arm} | python filter.py",  # a script file reads the value as data
        "echo {arm} | xargs -n 1 train",
        "echo {arm} | xargs",
        "echo {arm} | bash -o pipefail run.sh",
        "cat data | sh; echo {arm}",  # the pipe carries no value
        "timeout 10 python3 -m verl.trainer.main_ppo trainer.seed={arm} lr={seed} > {output_dir}/log",
        "train <(cat data) {arm}",
    ],
)
def test_shell_templates_that_keep_values_literal_are_accepted(template):
    fields = command.template_fields(template, shell=True)
    assert fields == [n for n in ("arm", "seed", "output_dir") if f"{{{n}}}" in template]
    values = {"arm": "$(touch pwned)", "seed": "1; touch pwned", "output_dir": "out"}
    words = shlex.split(command.render(template, values, shell=True)[-1])
    for name in fields:  # each value stays inside one word, its text unchanged
        assert any(values[name] in word for word in words), (name, words)


def test_a_backslashed_placeholder_would_have_run_the_value(tmp_path):
    """Why the backslash rule exists: quoted by hand, the template runs the value; the backend refuses it first."""
    template, value = "echo \\{arm}", ";touch pwned;#"  # the value closes nothing: # comments out its end quote
    unchecked = template.format(arm=shlex.quote(value))
    subprocess.run(["/bin/bash", "-c", unchecked], cwd=tmp_path, capture_output=True)
    assert (tmp_path / "pwned").exists()
    (tmp_path / "pwned").unlink()
    with pytest.raises(ValueError, match="follows a backslash"):
        command.render(template, {"arm": value}, shell=True)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "template, shell, message",
    [
        ("train \\{arm} {seed} {estimator} {norm} --out {output_dir}", True, "follows a backslash"),
        ("bash -c {arm} {seed} {estimator} {norm} {output_dir}", True, "passed to 'bash'"),
        (["bash", "-c", "{arm} {seed} {estimator} {norm} {output_dir}"], False, "passed to 'bash'"),
        ("train {arm} {estimator} {norm} > {output_dir}/log", False, "'>' at character .* command.shell: true"),
        ("train {estimator} {norm} && merge {output_dir}", False, "'&' at character .* command.shell: true"),
        ("train --host $(hostname) {estimator} {norm}", False, "'\\$' at character .* command.shell: true"),
        (["train", "{estimator}", "{norm}"], True, "with command.shell: true the template is one command line"),
        ([""], False, "word 1 is empty"),
        (["train", "", "{estimator}", "{norm}"], False, "word 2 is empty"),
    ],
)
def test_validation_refuses_unsafe_templates_in_one_line(tmp_path, template, shell, message):
    with pytest.raises(ConfigError) as error:
        load_config([_tiny_command_config(tmp_path, template=template, shell=shell)])
    assert str(error.value).count("\n") == 0
    assert re.search(f": command\\.template: .*{message}", str(error.value)), str(error.value)


@pytest.mark.parametrize("value", ["a b", "$(id)", ";touch pwned", "-rf", ".hidden", "a..b", "", "x/y"])
def test_validation_admits_only_names_and_numbers_as_estimator_fields(tmp_path, value):
    fields = {"grpo": {"norm": True}, "dr_grpo": {"norm": value}}
    with pytest.raises(ConfigError) as error:
        load_config([_tiny_command_config(tmp_path, estimator_fields=fields)])
    assert str(error.value).count("\n") == 0
    assert ": command.estimator_fields.dr_grpo.norm: " in str(error.value), str(error.value)


@pytest.mark.parametrize("value", ["grpo", "seq-mean-token-sum-norm", "v1.2", True, 3, 0.5, -1e-05])
def test_names_numbers_and_booleans_are_estimator_fields(tmp_path, value):
    fields = {"grpo": {"norm": value}, "dr_grpo": {"norm": False}}
    assert load_config([_tiny_command_config(tmp_path, estimator_fields=fields)])["command"]["estimator_fields"]


# templates that ran a value as code before they were refused: (form, template, value); each writes ./pwned
RAN_CODE = [
    ("list", ["env", "-S", "{norm}"], "touch pwned"),
    ("list", ["python3.11", "-c", "{norm}"], "open('pwned', 'w')"),
    ("shell", "echo {norm} | sh", "touch pwned"),
]


@pytest.mark.parametrize("form, template, value", RAN_CODE)
def test_templates_that_ran_a_value_as_code_now_fail_before_running(tmp_path, monkeypatch, form, template, value):
    """Unchecked, each template runs the value; the backend refuses it before the trainer starts."""
    monkeypatch.chdir(tmp_path)
    python = tmp_path / "python3.11"  # a version-suffixed interpreter, wherever the tests run
    python.symlink_to(sys.executable)
    if form == "list":
        template = [str(python) if word == "python3.11" else word for word in template]
        unchecked = [word.format(norm=value) for word in template]
    else:
        unchecked = ["/bin/bash", "-c", template.format(norm=shlex.quote(value))]
    subprocess.run(unchecked, check=True)
    assert (tmp_path / "pwned").exists()
    (tmp_path / "pwned").unlink()
    config = load_config([_tiny_command_config(tmp_path, _trainer(tmp_path, form), shell=form == "shell")])
    config["command"].update(template=template, estimator_fields={"grpo": {"norm": value}})
    with pytest.raises(ValueError, match="^template: "):
        command.run(config, "grpo", 1, tmp_path / "run")
    assert not any(tmp_path.rglob("pwned"))


@pytest.mark.parametrize(
    "template",
    ["train {arm} {estimator} {norm} > {output_dir}/log", "cd {output_dir} && train {estimator} {norm} | tee log"],
)
def test_shell_syntax_runs_with_the_escape_hatch(tmp_path, template):
    assert load_config([_tiny_command_config(tmp_path, template=template, shell=True)])["command"]["shell"] is True


@pytest.mark.parametrize("form", ["list", "string", "shell"])
@pytest.mark.parametrize("pattern", ["/abs/step-*/model", "../elsewhere/*", "step-*/../../x"])
def test_validation_keeps_the_checkpoint_glob_inside_the_run_folder(tmp_path, pattern, form):
    path = _tiny_command_config(tmp_path, _trainer(tmp_path, form), checkpoint=pattern, shell=form == "shell")
    with pytest.raises(ConfigError, match=r"command\.checkpoint: .* relative to \{output_dir\} that stays inside"):
        load_config([path])


def test_placeholders_after_closed_quotes_are_fine():
    assert command.template_fields("""echo 'it''s' "a \\" b" {arm} --seed {seed}""", shell=True) == ["arm", "seed"]


def test_values_are_shell_quoted():
    argv = command.render("echo {arm} {output_dir}", {"arm": "a; touch /tmp/pwned", "output_dir": "/x y/$(id)"}, True)
    assert argv[:2] == ["/bin/bash", "-c"]
    assert shlex.split(argv[-1]) == ["echo", "a; touch /tmp/pwned", "/x y/$(id)"]
    assert subprocess.run(argv, capture_output=True, text=True).stdout == "a; touch /tmp/pwned /x y/$(id)\n"


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
    line = command.render(config["command"]["template"], fields, config["command"]["shell"])[-1]
    assert "algorithm.adv_estimator=grpo algorithm.norm_adv_by_std_in_grpo=False" in line
    assert "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum-norm" in line


@pytest.mark.parametrize("form", ["list", "string", "shell"])
def test_run_substitutes_and_finds_the_checkpoint(tmp_path, form):
    config = load_config([_tiny_command_config(tmp_path, _trainer(tmp_path, form), shell=form == "shell")])
    out = tmp_path / "runs" / "dr_grpo" / "seed-2"
    checkpoint = command.run(config, "dr_grpo", 2, out)
    assert checkpoint == (out / "trainer" / "step-4" / "model").resolve()
    assert json.loads((checkpoint / "args.json").read_text()) == ["dr_grpo", "2", "dr_grpo", "0.0003", "False"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["checkpoint"] == str(checkpoint) and manifest["backend"] == "command"
    assert manifest["command"][:2] == (
        ["/bin/bash", "-c"] if form == "shell" else [sys.executable, str(tmp_path / "trainer.py")]
    )


@pytest.mark.parametrize("form", ["list", "string", "shell"])
@pytest.mark.parametrize("value", [";touch pwned;#", "$(touch pwned)", "`touch pwned`", "'; touch pwned; '"])
def test_a_hostile_value_reaches_the_trainer_as_one_literal_argument(tmp_path, monkeypatch, form, value):
    """Validation admits only names and numbers; past it (edited in memory), a value still stays one argument."""
    monkeypatch.chdir(tmp_path)
    config = load_config([_tiny_command_config(tmp_path, _trainer(tmp_path, form), shell=form == "shell")])
    config["command"]["estimator_fields"] = {"grpo": {"norm": value}}
    checkpoint = command.run(config, "grpo", 1, tmp_path / "run")
    assert json.loads((checkpoint / "args.json").read_text())[-1] == value
    assert not any(tmp_path.rglob("pwned"))


def test_a_missing_checkpoint_fails_the_job(tmp_path):
    config = load_config([_tiny_command_config(tmp_path, checkpoint="nowhere/*")])
    with pytest.raises(FileNotFoundError, match="no checkpoint matches 'nowhere/\\*'"):
        command.run(config, "grpo", 1, tmp_path / "run")


@pytest.mark.workflow
def test_snakemake_trains_every_arm_and_seed_through_the_command(tmp_path, snakemake_bin):
    path = _tiny_command_config(tmp_path)
    targets = [f"results/tiny/runs/{arm}/seed-{seed}/manifest.json" for arm in ("grpo", "dr_grpo") for seed in (1, 2)]
    workflow = ["-s", str(REPO / "Snakefile"), "--configfile", str(path), "--replace-workflow-config", "--cores", "2"]
    command, env = fork_server.warm([snakemake_bin, *workflow, *targets], _env())
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    args = (tmp_path / "results/tiny/runs/grpo/seed-2/trainer/step-4/model/args.json").read_text()
    assert json.loads(args) == ["grpo", "2", "grpo", "0.0003", "True"]
    dry = fork_server.run_snakemake([*workflow, "-n", "results/tiny/scores.parquet"], tmp_path, env=_env())
    # no builtin base policy is trained, and without command.base_checkpoint no base is evaluated
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    assert "base_policy" not in dry.stdout and "evaluate" in dry.stdout


def _env():
    """The test's environment with this interpreter's bin directory first (the jobs call `python`)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
