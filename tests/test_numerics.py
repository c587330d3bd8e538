"""armlab/numerics.py: the kernels that decide a job's bits, pinned (portable) or chosen by the CPU (native), and
recorded; each case runs in a fresh interpreter, because torch and MKL read their variables once per process."""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO

from armlab import numerics

# a training step's worth of the operations whose kernels the capability picks: products, softmax, layer norm, long
# sums, exp/log, and their gradients; the sha256 of every result
PROBE = """
import hashlib, json, os, sys
from armlab import numerics
record = numerics.start(sys.argv[1], 1, *sys.argv[2:])  # [capability]: a numerics control's
import torch
torch.manual_seed(0)
x = torch.randn(97, 211, requires_grad=True)
w = torch.randn(211, 53, requires_grad=True)
h = torch.nn.functional.layer_norm(torch.softmax(x @ w, -1), (53,))
loss = (h.exp().log1p() * torch.randn(97, 53)).sum() + torch.randn(100_003).sum()
loss.backward()
digest = hashlib.sha256()
for t in (h, loss, x.grad, w.grad):
    digest.update(t.detach().numpy().tobytes())
print(json.dumps({"digest": digest.hexdigest(), "record": record}))
"""

# what an older CPU's libraries would choose, forced: ATen and MKL at AVX2, or at no vector extension
OLDER_CPU = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
OLDEST_CPU = {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}
NEWER_CPU = {"ATEN_CPU_CAPABILITY": "avx512", "MKL_ENABLE_INSTRUCTIONS": "AVX512"}


def probe(mode: str, *capability: str, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in numerics.RECORDED_VARIABLES}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, mode, *capability], env={**clean, **env}, capture_output=True, text=True,
        cwd=REPO, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


needs_x86_avx2 = pytest.mark.skipif(numerics.machine_problem("portable") is not None, reason="an x86-64 CPU with AVX2")


@pytest.mark.simulation
@needs_x86_avx2
def test_portable_numerics_give_the_same_bits_whatever_the_cpu_would_pick():
    native = probe("portable")
    assert native["record"]["aten_capability"] == "AVX2"
    assert native["record"]["mkl_branch"] in ("COMPATIBLE", None)
    assert native["record"]["class"].startswith("portable: x86-64 with AVX2")
    for stand_in in (OLDEST_CPU, NEWER_CPU):
        forced = probe("portable", **stand_in)
        assert forced["digest"] == native["digest"], stand_in
        assert forced["record"]["aten_capability"] == "AVX2"


@pytest.mark.simulation
@needs_x86_avx2
def test_native_numerics_follow_the_cpu_so_the_bits_differ_between_generations():
    """The planted effect the portable mode removes: the same operations, other bits under another capability."""
    older, oldest = probe("native", **OLDER_CPU), probe("native", **OLDEST_CPU)
    assert older["record"]["aten_capability"] == "AVX2" and oldest["record"]["aten_capability"] == "DEFAULT"
    assert older["digest"] != oldest["digest"]
    if "avx512f" in numerics.cpu_flags():
        newer = probe("native", **NEWER_CPU)
        assert newer["record"]["aten_capability"] == "AVX512"
        assert len({newer["digest"], older["digest"], oldest["digest"]}) == 3


@pytest.mark.simulation
@needs_x86_avx2
def test_portable_numerics_are_refused_once_torch_has_chosen_its_kernels():
    """A job whose process already ran a torch operation cannot pin the kernels any more: its entry point says so;
    the library called in such a process (a notebook) runs, and its record says the kernels were native."""
    late = "import torch; torch.ones(3).sum()\nfrom armlab import numerics\n"
    clean = {k: v for k, v in os.environ.items() if k not in numerics.RECORDED_VARIABLES}
    job = late + "numerics.start('portable', 1)"
    proc = subprocess.run([sys.executable, "-c", job], env=clean, capture_output=True, text=True, cwd=REPO)
    assert proc.returncode != 0
    assert "numerics: portable asks for ATen AVX2 kernels" in proc.stderr
    library = late + "r = numerics.start('portable', 1, strict=False); print(r['requested'], r['mode'], r['class'])"
    proc = subprocess.run([sys.executable, "-c", library], env=clean, capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    requested, effective, _ = proc.stdout.split(" ", 2)
    assert (requested, effective) == ("portable", "native") and "(ATen AVX" in proc.stdout


def test_portable_numerics_need_an_x86_cpu_with_avx2(monkeypatch):
    monkeypatch.setattr(numerics.platform, "machine", lambda: "aarch64")
    assert "this machine is aarch64; set numerics: native" in numerics.machine_problem("portable")
    assert numerics.machine_problem("native") is None
    monkeypatch.setattr(numerics.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(numerics, "cpu_flags", lambda: frozenset({"sse4_2", "avx"}))
    assert "no AVX2/FMA" in numerics.machine_problem("portable")
    with pytest.raises(numerics.NumericsError, match="no AVX2/FMA"):
        numerics.start("portable", 1)


def test_the_mode_is_one_of_two():
    assert numerics.environment("native") == {}
    assert numerics.environment("portable") == numerics.PORTABLE_ENV
    with pytest.raises(numerics.NumericsError, match="'fast' is not one of portable, native"):
        numerics.environment("fast")


def test_the_config_names_a_mode_and_every_torch_stage_view_holds_it():
    from conftest import TINY

    from armlab.configfile import ConfigError
    from armlab.experiment.stages import stage_config
    from armlab.experiment.validate import load_config

    config = load_config([TINY])
    assert config["numerics"] == "portable"  # the default
    assert {stage: "numerics" in stage_config(config, stage, "grpo" if stage == "train" else None) for stage in
            ("data", "base", "train", "eval", "analysis")} == {"data": False, "base": True, "train": True,
                                                              "eval": True, "analysis": False}  # fmt: skip
    with pytest.raises(ConfigError, match="numerics"):
        load_config([TINY], {"numerics": "fast"})


@pytest.mark.simulation
@needs_x86_avx2
def test_a_numerics_control_runs_another_cpu_generation_s_kernels_over_the_portable_pins():
    """A control's capability wins over the variables the workflow sets for every job in portable mode: ATen at that
    level, MKL off its COMPATIBLE branch, other bits than portable's; the same capability twice, the same bits."""
    portable = probe("portable", **numerics.PORTABLE_ENV)
    forced = {name: probe("portable", name, **numerics.PORTABLE_ENV) for name in numerics.available_capabilities()}
    assert {"default", "avx2"} <= set(forced)
    for name, run in forced.items():
        record = run["record"]
        assert (record["capability"], record["aten_capability"]) == (name, name.upper())
        assert record["mkl_branch"] != "COMPATIBLE" and record["environment"]["MKL_CBWR"] is None
        assert {k: record["environment"][k] for k in numerics.CAPABILITIES[name]} == numerics.CAPABILITIES[name]
        assert record["class"].startswith(f"capability {name}: x86-64 with ")
    assert forced["default"]["digest"] != portable["digest"]
    assert probe("portable", "default")["digest"] == forced["default"]["digest"]


@pytest.mark.simulation
@needs_x86_avx2
def test_a_capability_is_refused_once_torch_has_chosen_its_kernels():
    """A control's job whose process already ran torch is refused; the library called there (strict=False) runs, and
    its record names no forced capability, since the kernels that ran are portable's."""
    late = "import torch; torch.ones(3).sum()\nfrom armlab import numerics\n"
    env = {**{k: v for k, v in os.environ.items() if k not in numerics.RECORDED_VARIABLES}, **numerics.PORTABLE_ENV}
    job = late + "numerics.start('portable', 1, 'default')"
    proc = subprocess.run([sys.executable, "-c", job], env=env, capture_output=True, text=True, cwd=REPO)
    assert proc.returncode != 0
    assert (
        "numerics: capability default forces ATen DEFAULT kernels and MKL's own branch, and this process runs ATen AVX2"
        in proc.stderr
    )
    library = late + (
        "import json; r = numerics.start_job({'numerics': 'portable', 'threads': 1, 'capability': 'default'}, "
        "strict=False); print(json.dumps(r))"
    )
    proc = subprocess.run([sys.executable, "-c", library], env=env, capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert (record["requested"], record["capability"], record["aten_capability"]) == ("portable", None, "AVX2")
    assert not record["class"].startswith("capability")


def test_a_capability_the_machine_lacks_is_refused_naming_what_is_missing(monkeypatch):
    monkeypatch.setattr(numerics.platform, "machine", lambda: "aarch64")
    assert (
        numerics.capability_problem("avx2")
        == "numerics: capability avx2 forces x86-64 kernels and this machine is aarch64"
    )
    monkeypatch.setattr(numerics.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(numerics, "cpu_flags", lambda: frozenset({"sse4_2", "avx", "avx2", "fma", "avx512f"}))
    assert numerics.available_capabilities() == ["default", "avx2"]
    assert "need avx512bw, avx512dq, avx512vl, which this CPU" in numerics.capability_problem("avx512")
    assert numerics.capability_problem("avx2") is None
    with pytest.raises(numerics.NumericsError, match="capability avx512 forces kernels that need avx512bw"):
        numerics.start("portable", 1, "avx512")
