"""The backend registry: the workflow, validation and evaluation read each backend's entry, never its name."""

import dataclasses
import re
import subprocess

import pytest
import yaml
from conftest import REPO, TINY

from armlab.configfile import ConfigError
from armlab.experiment.stages import stage_config
from armlab.experiment.validate import load_config
from armlab.training.backends import BACKENDS, job_resources


def test_every_backend_names_a_trainer_with_a_main_and_an_lm_eval_model():
    import importlib

    from lm_eval.api.registry import get_model

    from armlab.evals.run import MODELS

    for name, backend in BACKENDS.items():
        assert callable(importlib.import_module(backend.train_module).main), name
        importlib.import_module(MODELS[backend.lm_eval_model][0])
        assert get_model(backend.lm_eval_model), name
        assert "manifest" in backend.outputs, name  # evaluation and the corruption check read it


def test_every_lm_eval_model_says_how_it_samples_and_every_engine_is_served_by_one():
    import typing

    from armlab.evals.run import MODELS, engine_model
    from armlab.spec import Eval, settings_of

    engines = typing.get_args(next(s.type for s in settings_of(Eval) if s.name == "engine"))
    for name, model in MODELS.items():  # the manifest's sampling.how
        assert isinstance(model.sampling, str) and model.sampling.strip(), name
        assert model.engine is None or model.engine in engines, name
    for engine in engines:
        assert [m.engine for m in MODELS.values()].count(engine) == 1, engine
        assert MODELS[engine_model({"eval": {"engine": engine}}, "hf")].engine == engine
    assert engine_model({"eval": {"engine": "vllm"}}, "armlab-builtin") == "armlab-builtin"


def test_an_unknown_backend_is_refused_naming_the_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(TINY.read_text() + "backend: slurmified\n")
    with pytest.raises(
        ConfigError,
        match=r"c\.yaml: backend: unknown backend 'slurmified'; expected one of "
        r"\['builtin', 'checkpoints', 'command', 'trl'\]",
    ):
        load_config([path])


def test_resources_come_from_the_registry_and_the_backend_section():
    builtin = load_config([TINY])
    assert job_resources(builtin, "train") == {"mem_mb": 2000, "runtime": 120, "gpu": 0}
    assert job_resources(builtin, "eval") == {"mem_mb": 2000, "runtime": 30, "gpu": 0}
    verl = load_config([REPO / "config" / "experiments" / "verl_example.yaml"])
    settings = verl["command"]
    assert job_resources(verl, "train") == {
        "mem_mb": settings["mem_mb"],
        "runtime": settings["runtime"],
        "gpu": settings["gpus"],
    }
    assert job_resources(verl, "eval")["gpu"] == settings["eval_gpus"]


def test_a_new_backend_is_one_registry_entry(monkeypatch, tmp_path, snakemake_bin):
    """Register a backend without touching the workflow: the one train rule runs its entry point and outputs."""
    monkeypatch.setitem(BACKENDS, "builtin_copy", dataclasses.replace(BACKENDS["builtin"]))  # the same trainer
    raw = yaml.safe_load(TINY.read_text())
    config = load_config([TINY], {"backend": "builtin_copy"})
    assert stage_config(config, "train", "grpo") == stage_config(load_config([TINY]), "train", "grpo")
    # the registry entry is read by the workflow too: a dry run of the real Snakefile with that entry in place
    sitecustomize = tmp_path / "plugin" / "sitecustomize.py"
    sitecustomize.parent.mkdir()
    sitecustomize.write_text(
        "from armlab.training.backends import BACKENDS, Backend\n"
        "BACKENDS['builtin_copy'] = Backend(train_module='armlab.training.train', reads=('data', 'base'),\n"
        "    outputs={'policy': 'policy.pt', 'steps': 'steps.parquet', 'manifest': 'manifest.json'},\n"
        "    lm_eval_model='armlab-builtin', checkpoint='policy.pt', step_logs=True)\n"
    )
    cfg = tmp_path / "copy.yaml"
    cfg.write_text(yaml.safe_dump({**raw, "backend": "builtin_copy"}))
    proc = subprocess.run(
        [
            snakemake_bin,
            "-s",
            str(REPO / "Snakefile"),
            "--configfile",
            str(cfg),
            "--cores",
            "1",
            "-n",
            "-p",
            "--workflow-profile",
            "none",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(sitecustomize.parent)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(re.findall(r"-m armlab\.training\.train --config", proc.stdout)) == 4  # 2 arms x 2 seeds
    assert "--model armlab-builtin --checkpoint results/tiny/runs/grpo/seed-1/policy.pt" in proc.stdout
