"""Test processes forked from a server that has already imported what they need, instead of started cold.

Two kinds, one server of each per test process (started on first use, ended with it: at exit, or when its standard
input, the test process's pipe, closes):

``snakemake``
    A Snakemake start spends about a second importing Snakemake and its plugins before it reads the Snakefile; the
    tests that only start the workflow (dry runs, configs refused at start) pay it dozens of times.
    :func:`run_snakemake` runs ``snakemake.cli.main`` from the beginning in a forked process.
``python``
    A workflow job (``python -m armlab.evals.run ...``) spends 2-4 s importing torch, lm-eval and pandas before
    seconds of work on a tiny config, and the workflow tests run about 150 such jobs. :func:`warm_python_env` gives a
    Snakemake run an environment whose ``python`` (first on PATH) hands ``python -m MODULE ARGS`` to this server,
    which forks and runs the module as ``__main__``. Only third-party libraries are imported beforehand (torch,
    lm-eval, datasets, pandas, pyarrow, scipy, matplotlib, ...); every armlab module is imported by the job itself.

Either way each run is a process of its own, with its own working directory, environment, argument list, standard
streams, exit status and random state (``random`` and numpy's global generator are reseeded from the system, as a
fresh interpreter seeds them). What the forked runs share, and a fresh interpreter would not: the string hash
seed, and the values of environment variables that a library reads when it is imported. So the server declines a
job (the shim then execs the real interpreter) whose environment differs from the server's in those variables.
Runs killed midway start in fresh interpreters (tests/conftest.py ``start_and_kill_when``), and the killed
training run is resumed in fresh ones too: its policies, scores and tables must equal the session's forked run byte
for byte, so a result that depended on the hash seed or on being forked would fail it. On SLURM
(tests/workflows/test_slurm.py) the jobs go through sbatch, the job step and srun as ever; the interpreter they start
is the shim.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

# the job's libraries, imported by the server once: what evaluation, training, merging and analysis jobs import
PYTHON_PRELOAD = (
    "snakemake.cli",  # the workflow's driver, and on SLURM each job's step
    "torch",
    "lm_eval",
    "lm_eval.api.registry",
    "lm_eval.evaluator",
    "lm_eval.tasks",
    "datasets",
    "numpy",
    "pandas",
    "pyarrow.parquet",
    "scipy.stats",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    "matplotlib.backends.backend_svg",
    "yaml",
    "jsonschema",
)
# read at import by the preloaded libraries (thread pools, hub access, plotting backend) or by the interpreter: a job
# whose environment has other values for these runs in a fresh interpreter instead
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
# what Snakemake sets for a job of one thread (config threads: 1); the server starts with it, and numpy's BLAS reads it
# when imported
ONE_THREAD = dict.fromkeys(THREAD_VARIABLES, "1")
IMPORT_TIME_ENV = (
    *THREAD_VARIABLES,
    "HF_DATASETS_OFFLINE",
    "HF_HUB_OFFLINE",
    "HF_HOME",
    "HF_DATASETS_CACHE",
    "TOKENIZERS_PARALLELISM",
    "MPLBACKEND",
    "MPLCONFIGDIR",
    "PYTHONHASHSEED",
    "PYTHONPATH",
    "PYTHONWARNINGS",
)
SOCKET_VARIABLE = "ARMLAB_TEST_FORK_SOCKET"
REAL_PYTHON_VARIABLE = "ARMLAB_TEST_REAL_PYTHON"
SHIM = Path(__file__).with_name("fork_shim.py")

_servers: dict[str, tuple[subprocess.Popen, str, str]] = {}


def _become(request: dict, fds: list[int]) -> None:
    """In the forked process: the request's directory, environment, standard streams and fresh random state."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if "executable" in request:  # the interpreter the caller ran, as a job that started it would see it
        sys.executable = request["executable"]
    if len(fds) == 2:  # a test's run: no input (the server's own stdin is the pipe that tells it its test ended)
        fds = [os.open(os.devnull, os.O_RDONLY), *fds]
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    import io
    import random
    import signal
    import tempfile as tempfile_module

    # what the interpreter sets from the environment when it starts
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    if os.environ.get("PYTHONUNBUFFERED"):
        for fd, name in ((1, "stdout"), (2, "stderr")):
            old = getattr(sys, name)
            raw = open(fd, "wb", buffering=0, closefd=False)
            setattr(sys, name, io.TextIOWrapper(raw, old.encoding, old.errors, write_through=True))
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    if "snakemake.workflow" in sys.modules:  # Snakemake sets it from the directory it was imported in
        sys.modules["snakemake.workflow"].Workflow._rundir = os.getcwd()
    random.seed()
    tempfile_module.tempdir = None  # found again from this environment's TMPDIR
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


def _watch_caller(connection: socket.socket) -> None:
    """The run dies with its caller: a caller killed (SIGKILL, as Snakemake or a test kills a job) closes the socket."""

    def watch():
        try:
            while connection.recv(1):
                pass
        finally:
            os.kill(os.getpid(), 9)

    threading.Thread(target=watch, daemon=True).start()


def _run_snakemake(argv: list[str]) -> None:
    from snakemake.cli import main

    sys.argv = ["snakemake", *argv]
    main(argv)


def _run_python(argv: list[str]) -> None:
    """``python -m MODULE ARGS`` or ``python SCRIPT ARGS``, with what each puts first on sys.path."""
    import runpy

    if argv[0] == "-m":
        sys.argv = argv[1:]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.realpath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")


def _child(kind: str, connection: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked process: become the requested command, tell the caller its pid and then its exit status."""
    code = 1
    try:
        _become(request, fds)
        connection.sendall(f"pid {os.getpid()}\n".encode())
        _watch_caller(connection)
        (_run_snakemake if kind == "snakemake" else _run_python)(request["argv"])
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if not isinstance(done.code, int | None):
            print(done.code, file=sys.stderr)
    except BaseException:
        sys.excepthook(*sys.exc_info())  # the traceback an uncaught exception prints
    finally:
        _exit_as_the_interpreter_does(connection, code)


def _exit_as_the_interpreter_does(connection: socket.socket, code: int) -> None:
    import atexit as atexit_module
    import logging

    # what the interpreter does at exit, in its order: threading's exit hooks (which stop executors' worker threads),
    # then wait for the non-daemon threads, then the atexit functions
    threading._shutdown()
    atexit_module._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    connection.sendall(f"{code}\n".encode())
    os._exit(code)


def serve(kind: str, path: str) -> None:
    import importlib

    for module in ("snakemake.cli",) if kind == "snakemake" else PYTHON_PRELOAD:
        importlib.import_module(module)
    expected = {name: os.environ.get(name) for name in IMPORT_TIME_ENV}

    def end_with_the_test_process():
        while os.read(0, 1 << 16):
            pass
        os._exit(0)

    # a test process killed without its atexit still closes the pipe: the server ends with it
    threading.Thread(target=end_with_the_test_process, daemon=True).start()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(connection, 1 << 22, 3)
        request = json.loads(message)
        differs = sorted(k for k, v in expected.items() if request["env"].get(k) != v) if kind == "python" else []
        if differs:
            connection.sendall(f"declined: the environment differs in {', '.join(differs)}\n".encode())
        elif os.fork() == 0:
            listener.close()
            _child(kind, connection, request, fds)
        connection.close()
        for fd in fds:
            os.close(fd)
        while True:  # reap the runs that ended (not SIG_IGN for SIGCHLD: the forked runs inherit it)
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


def _server(kind: str, env: Mapping[str, str]) -> tuple[str, str]:
    """The socket of this test process's server of ``kind`` (started with ``env``) and its folder."""
    known = _servers.get(kind)
    if known is None or known[0].poll() is not None:
        folder = tempfile.mkdtemp(prefix=f"fork-{kind}-")
        path = os.path.join(folder, "socket")
        process = subprocess.Popen(
            [sys.executable, __file__, kind, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        assert process.stdout.readline().strip() == "ready", f"the {kind} fork server did not start"
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        atexit.register(process.kill)
        known = _servers[kind] = (process, path, folder)
    return known[1], known[2]


def warm(command: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """``command`` (a console script such as snakemake, and its arguments) run by the warm ``python``, and the
    environment for it: a workflow driver whose interpreter is the shim puts the shim's folder first on its jobs'
    PATH (workflows/rules/common.smk), so its jobs are forked too."""
    # the thread counts the server was started with: the driver itself is forked only with them
    env = warm_python_env({**(os.environ if env is None else env), **ONE_THREAD})
    return [str(Path(env["PATH"].split(os.pathsep)[0]) / "python"), *command], env


def warm_python_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (this process's environment) with a ``python`` first on PATH that runs ``python -m`` and scripts in a
    forked process of the server (see the module's docstring); anything else, or a declined job, execs the
    interpreter."""
    env = dict(os.environ if env is None else env)
    path, folder = _server("python", {**env, **ONE_THREAD})
    bin_dir = Path(folder) / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        shim = bin_dir / "python"
        # -SE: the shim needs the standard library only, and starts in about 20 ms
        shim.write_text(f"#!{sys.executable} -SE\n" + SHIM.read_text())
        shim.chmod(0o755)
    # the interpreter of the tests, whose folder a workflow started cold puts first on its jobs' PATH
    real = {REAL_PYTHON_VARIABLE: sys.executable}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", SOCKET_VARIABLE: path, **real}


def run_snakemake(
    argv: Sequence[str], cwd: Path | str, *, timeout: float = 300, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``snakemake *argv`` from ``cwd``, as ``subprocess.run(..., capture_output=True, text=True)`` returns it."""
    request = {"argv": list(argv), "cwd": str(cwd), "env": dict(os.environ if env is None else env)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, socket.socket(socket.AF_UNIX) as caller:
        caller.connect(_server("snakemake", os.environ)[0])
        socket.send_fds(caller, [json.dumps(request).encode()], [out.fileno(), err.fileno()])
        caller.settimeout(timeout)
        replies = caller.makefile()
        first = replies.readline()
        assert first.startswith("pid "), first
        try:
            code = int(replies.readline())
        except TimeoutError:
            os.kill(int(first.split()[1]), 9)
            raise subprocess.TimeoutExpired(["snakemake", *argv], timeout) from None
        output = []
        for stream in (out, err):
            stream.seek(0)
            output.append(stream.read().decode())
    return subprocess.CompletedProcess(["snakemake", *argv], code, *output)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
