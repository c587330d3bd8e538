"""What decides a run's floating-point bits on the CPU: recorded in every manifest, and pinned in `portable` mode.

torch picks its vectorised kernels by the CPU's instruction set (ATen's CPU capability: DEFAULT, AVX2, AVX512), and
MKL and oneDNN pick theirs; a sum or a matrix product then adds in another order, and a training run amplifies the
last bit into another model, another score and, at a few seeds, another verdict. ``native`` lets each library choose
for the machine it runs on, so a run's bits hold on machines of one numerics class (:func:`numerics_class`);
``portable`` pins all three to code paths every x86-64 machine with AVX2 runs (ATen's AVX2 kernels, MKL's COMPATIBLE
branch of its conditional numerical reproducibility, oneDNN's AVX2), so they do not depend on the CPU generation.
The variables must be set before torch's first operation in a process: each job calls :func:`start` first, and the
workflow sets them for every job it starts (the Snakefile), so a command or vLLM worker inherits them too.

An arm may force the kernels of one CPU generation instead (``arms.<arm>.numerics.capability``: :data:`CAPABILITIES`,
what torch, MKL and oneDNN would choose on such a CPU): a numerics control, run beside its reference to measure how
far the kernels alone move a result (docs/statistics.md, "Numerics as a variance component").
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Mapping
from functools import cache
from pathlib import Path

MODES = ("portable", "native")
DEFAULT_MODE = "portable"
PORTABLE_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"}
PORTABLE_CAPABILITY = "AVX2"
# what a manifest records of the environment: the kernel pins, and what limits or spreads the libraries' threads
RECORDED_VARIABLES = (*PORTABLE_ENV, "MKL_ENABLE_INSTRUCTIONS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# the key of an arm that declares it a numerics control: it differs from its comparison's reference in these only
ARM_KEY = "numerics"
ARM_FIELDS = ("capability", "threads", "eval_batch_size", "engine")
# the kernels a CPU generation makes ATen, MKL and oneDNN choose, forced (native kernels of that generation), and the
# instruction sets the CPU must have to run them (/proc/cpuinfo's names; ATen's AVX512 kernels need F, BW, VL, DQ)
CAPABILITIES = {
    "default": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "avx512": {
        "ATEN_CPU_CAPABILITY": "avx512",
        "MKL_ENABLE_INSTRUCTIONS": "AVX512",
        "ONEDNN_MAX_CPU_ISA": "AVX512_CORE",
    },
}
CAPABILITY_NEEDS = {
    "default": frozenset({"sse4_2"}),
    "avx2": frozenset({"avx2", "fma"}),
    "avx512": frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq", "fma"}),
}
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


def capability_problem(capability: str) -> str | None:
    """Why this machine cannot run the kernels ``capability`` forces (:data:`CAPABILITIES`), or None."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        return f"numerics: capability {capability} forces x86-64 kernels and this machine is {machine}"
    missing = sorted(CAPABILITY_NEEDS[capability] - cpu_flags()) if cpu_flags() else []
    if missing:
        return (
            f"numerics: capability {capability} forces kernels that need {', '.join(missing)}, which this CPU "
            f"({cpu_model()}) lacks; name a capability it has ({', '.join(available_capabilities()) or 'none'})"
        )
    return None


def available_capabilities() -> list[str]:
    """The capabilities this CPU can run (:data:`CAPABILITIES`)."""
    return [name for name, needs in CAPABILITY_NEEDS.items() if needs <= cpu_flags()]


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


def start(mode: str, threads: int, capability: str | None = None, strict: bool = True) -> dict:
    """Pin ``mode``'s kernels (or force those of ``capability``, a numerics control's) and torch's thread count in
    this process, before its first torch operation; what the manifest records (:func:`record`). ``strict`` (a job's
    entry point): check that the pins hold, and refuse where they cannot; otherwise (the library called in a process
    that may have run torch already, a notebook or a test) pin what can still be pinned and let the record say which
    kernels ran."""
    problem = machine_problem(mode) if capability is None else capability_problem(capability)
    if problem and strict:
        raise NumericsError(problem)
    if not problem and capability is not None:
        os.environ.pop("MKL_CBWR", None)  # portable's pin, set by the workflow for every job: native kernels here
        os.environ.update(CAPABILITIES[capability])
    elif not problem:
        os.environ.update(environment(mode))
    import torch

    torch.set_num_threads(threads)
    found, branch = torch.backends.cpu.get_cpu_capability(), _mkl_branch()
    if not strict:
        return record(mode, capability)
    if capability is not None and not _forced_held(capability, found, branch):
        asked = f"capability {capability} forces ATen {capability.upper()} kernels and MKL's own branch"
    elif capability is None and mode == "portable" and not _portable_held(found, branch):
        asked = f"portable asks for ATen {PORTABLE_CAPABILITY} kernels and MKL's COMPATIBLE branch"
    else:
        return record(mode, capability)
    raise NumericsError(
        f"numerics: {asked}, and this process runs ATen {found}, MKL {branch}: they were fixed by a torch operation "
        "before the job started (set the variables in the environment: armlab.numerics.PORTABLE_ENV, CAPABILITIES)"
    )


def _portable_held(found: str, branch: str | None) -> bool:
    """Whether portable's pins hold in a process that runs ATen ``found`` kernels and MKL's ``branch``."""
    return found == PORTABLE_CAPABILITY and branch in (None, "COMPATIBLE")


def _forced_held(capability: str, found: str, branch: str | None) -> bool:
    """Whether a forced ``capability``'s kernels hold in a process that runs ATen ``found`` and MKL's ``branch``."""
    return found == capability.upper() and branch != "COMPATIBLE"


def start_job(view: Mapping, strict: bool = True) -> dict:
    """:func:`start` as a job's stage view says: its mode, threads and, in a numerics control's view, capability."""
    return start(view["numerics"], view["threads"], view.get("capability"), strict)


def _build() -> dict:
    """torch's BLAS and oneDNN builds (torch.__config__.show())."""
    import torch

    shown = torch.__config__.show().splitlines()
    blas = next((line.strip(" -") for line in shown if "Math Kernel Library" in line or "OpenBLAS" in line), None)
    dnn = next((line.strip(" -") for line in shown if "MKL-DNN" in line or "oneDNN" in line), None)
    return {"blas": blas, "onednn": dnn}


def record(mode: str, capability: str | None = None) -> dict:
    """What decides this process's bits: the mode asked for and the one in effect (portable only where its pins
    held), the ``capability`` a numerics control forced (None where none was, or where its kernels did not hold), the
    CPU, torch's kernels and libraries, threads and dtype."""
    import torch

    found, threads, branch = torch.backends.cpu.get_cpu_capability(), torch.get_num_threads(), _mkl_branch()
    effective = "portable" if _portable_held(found, branch) else "native"
    forced = capability if capability is not None and _forced_held(capability, found, branch) else None
    return {
        "mode": effective,
        "requested": mode,
        "capability": forced,
        "cpu": cpu_model(),
        "machine": platform.machine(),
        "cpu_has": sorted(cpu_flags() & {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "neon", "sve"}),
        "torch": torch.__version__,
        "aten_capability": found,
        "mkl_branch": branch,
        **_build(),
        "threads": threads,
        "interop_threads": torch.get_num_interop_threads(),
        "dtype": str(torch.get_default_dtype()).removeprefix("torch."),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "environment": {name: os.environ.get(name) for name in RECORDED_VARIABLES},
        "class": numerics_class(effective, found, torch.__version__, threads, forced),
    }


def numerics_class(mode: str, capability: str, torch_version: str, threads: int, forced: str | None = None) -> str:
    """The machines a run's bits are reproducible on: every x86-64 machine with AVX2 under ``portable``, every one
    with the ``forced`` capability's instructions under a numerics control's, else CPUs whose kernels torch and MKL
    choose alike (the same capability); always the same torch and thread count."""
    if forced is not None:
        pins = ", ".join(f"{name}={value}" for name, value in CAPABILITIES[forced].items())
        mode, where = f"capability {forced}", f"x86-64 with {', '.join(sorted(CAPABILITY_NEEDS[forced]))} ({pins})"
    elif mode == "portable":
        where = "x86-64 with AVX2 (ATen AVX2, MKL COMPATIBLE, oneDNN AVX2 pinned)"
    else:
        where = f"{cpu_model()} and CPUs whose kernels torch and MKL choose alike (ATen {capability})"
    return f"{mode}: {where}; torch {torch_version}, {threads} thread{'s' if threads != 1 else ''}"
