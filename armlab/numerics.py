"""What decides a run's floating-point bits on the CPU: recorded in every manifest, and pinned in `portable` mode.

torch picks its vectorised kernels by the CPU's instruction set (ATen's CPU capability: DEFAULT, AVX2, AVX512), and
MKL and oneDNN pick theirs; a sum or a matrix product then adds in another order, and a training run amplifies the
last bit into another model, another score and, at a few seeds, another verdict. ``native`` lets each library choose
for the machine it runs on, so a run's bits hold on machines of one numerics class (:func:`numerics_class`);
``portable`` pins all three to code paths every x86-64 machine with AVX2 runs (ATen's AVX2 kernels, MKL's COMPATIBLE
branch of its conditional numerical reproducibility, oneDNN's AVX2), so they do not depend on the CPU generation.
The variables must be set before torch's first operation in a process: each job calls :func:`start` first, and the
workflow sets them for every job it starts (the Snakefile), so a command or vLLM worker inherits them too.
"""

from __future__ import annotations

import ctypes
import os
import platform
from functools import cache
from pathlib import Path

MODES = ("portable", "native")
DEFAULT_MODE = "portable"
PORTABLE_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"}
PORTABLE_CAPABILITY = "AVX2"
# what a manifest records of the environment: the kernel pins, and what limits or spreads the libraries' threads
RECORDED_VARIABLES = (*PORTABLE_ENV, "MKL_ENABLE_INSTRUCTIONS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# mkl_cbwr_get(MKL_CBWR_BRANCH): the branch MKL runs (mkl_service.h)
MKL_BRANCHES = {0: "off", 1: "off", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 6: "SSSE3", 7: "SSE4_1", 8: "SSE4_2",
                9: "AVX", 10: "AVX2", 12: "AVX512", 14: "AVX512_E1"}  # fmt: skip


class NumericsError(RuntimeError):
    """The requested numerics cannot hold on this machine or in this process."""


def environment(mode: str) -> dict[str, str]:
    """The environment variables that pin ``mode``'s kernels (none for ``native``)."""
    if mode not in MODES:
        raise NumericsError(f"numerics: {mode!r} is not one of {', '.join(MODES)}")
    return dict(PORTABLE_ENV) if mode == "portable" else {}


@cache
def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this CPU (/proc/cpuinfo; empty where the file is not there)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@cache
def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_problem(mode: str) -> str | None:
    """Why ``mode`` cannot run on this machine, or None: portable pins x86-64 AVX2 kernels."""
    if mode != "portable":
        return None
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        return f"numerics: portable pins x86-64 AVX2 kernels and this machine is {machine}; set numerics: native"
    flags = cpu_flags()
    if flags and not {"avx2", "fma"} <= flags:
        return "numerics: portable pins AVX2 kernels and this CPU has no AVX2/FMA; set numerics: native"
    return None


def _mkl_branch() -> str | None:
    """The branch MKL runs in this process (its conditional numerical reproducibility), or None without MKL."""
    import torch

    try:
        library = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        get = library.mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return None
    get.argtypes, get.restype = [ctypes.c_int], ctypes.c_int
    branch = get(1)
    return MKL_BRANCHES.get(branch, str(branch))


def start(mode: str, threads: int, strict: bool = True) -> dict:
    """Pin ``mode``'s kernels and torch's thread count in this process, before its first torch operation; what the
    manifest records (:func:`record`). ``strict`` (a job's entry point): check that the pins hold, and refuse where
    they cannot; otherwise (the library called in a process that may have run torch already, a notebook or a test)
    pin what can still be pinned and let the record say which kernels ran."""
    problem = machine_problem(mode)
    if problem and strict:
        raise NumericsError(problem)
    if not problem:
        os.environ.update(environment(mode))
    import torch

    torch.set_num_threads(threads)
    if mode == "portable" and strict:
        capability = torch.backends.cpu.get_cpu_capability()
        branch = _mkl_branch()
        if capability != PORTABLE_CAPABILITY or branch not in (None, "COMPATIBLE"):
            raise NumericsError(
                f"numerics: portable asks for ATen {PORTABLE_CAPABILITY} kernels and MKL's COMPATIBLE branch, and "
                f"this process runs ATen {capability}, MKL {branch}: they were fixed by a torch operation before "
                "the job started (set the variables in the environment: armlab.numerics.PORTABLE_ENV)"
            )
    return record(mode)


def _build() -> dict:
    """torch's BLAS and oneDNN builds (torch.__config__.show())."""
    import torch

    shown = torch.__config__.show().splitlines()
    blas = next((line.strip(" -") for line in shown if "Math Kernel Library" in line or "OpenBLAS" in line), None)
    dnn = next((line.strip(" -") for line in shown if "MKL-DNN" in line or "oneDNN" in line), None)
    return {"blas": blas, "onednn": dnn}


def record(mode: str) -> dict:
    """What decides this process's bits: the mode asked for and the one in effect (portable only where its pins
    held), the CPU, torch's kernels and libraries, threads and dtype."""
    import torch

    capability, threads, branch = torch.backends.cpu.get_cpu_capability(), torch.get_num_threads(), _mkl_branch()
    effective = "portable" if capability == PORTABLE_CAPABILITY and branch in (None, "COMPATIBLE") else "native"
    return {
        "mode": effective,
        "requested": mode,
        "cpu": cpu_model(),
        "machine": platform.machine(),
        "cpu_has": sorted(cpu_flags() & {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "neon", "sve"}),
        "torch": torch.__version__,
        "aten_capability": capability,
        "mkl_branch": branch,
        **_build(),
        "threads": threads,
        "interop_threads": torch.get_num_interop_threads(),
        "dtype": str(torch.get_default_dtype()).removeprefix("torch."),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "environment": {name: os.environ.get(name) for name in RECORDED_VARIABLES},
        "class": numerics_class(effective, capability, torch.__version__, threads),
    }


def numerics_class(mode: str, capability: str, torch_version: str, threads: int) -> str:
    """The machines a run's bits are reproducible on: every x86-64 machine with AVX2 under ``portable``, else CPUs
    whose kernels torch and MKL choose alike (the same capability); always the same torch and thread count."""
    where = (
        "x86-64 with AVX2 (ATen AVX2, MKL COMPATIBLE, oneDNN AVX2 pinned)"
        if mode == "portable"
        else f"{cpu_model()} and CPUs whose kernels torch and MKL choose alike (ATen {capability})"
    )
    return f"{mode}: {where}; torch {torch_version}, {threads} thread{'s' if threads != 1 else ''}"
