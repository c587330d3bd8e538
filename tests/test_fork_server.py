"""The warm interpreter of the workflow tests (tests/fork_server.py): a forked job is a process of its own, as a job
started in a fresh interpreter is, in everything the jobs can see."""

import json
import os
import signal
import subprocess
import textwrap
import time

import fork_server
import pytest

pytestmark = pytest.mark.workflow  # starts a server that imports torch and lm-eval: not for the fast lane

PROBE = textwrap.dedent(
    """
    import json, os, random, subprocess, sys
    import numpy as np
    failed = subprocess.run(["sh", "-c", "exit 3"]).returncode  # SIGCHLD left ignored would make this 0
    print(json.dumps({
        "argv": sys.argv[1:], "cwd": os.getcwd(), "path0": sys.path[0], "var": os.environ.get("PROBE_VAR"),
        "random": random.random(), "numpy": float(np.random.random()), "child": failed,
        "executable": sys.executable, "dont_write_bytecode": sys.dont_write_bytecode,
        "armlab_preloaded": any(name.split(".")[0] in ("armlab", "training", "evals", "analysis")
                                for name in sys.modules),
        "stdin": sys.stdin.read(),
    }))
    sys.exit(int(sys.argv[1]))
    """
)


@pytest.fixture
def probe(tmp_path):
    (tmp_path / "probe_module.py").write_text(PROBE)
    env = {**fork_server.warm_python_env(), **fork_server.ONE_THREAD, "PROBE_VAR": "here"}
    shim = os.path.join(env["PATH"].split(os.pathsep)[0], "python")
    return tmp_path, env, shim


def _run(shim, cwd, env, *args, stdin=""):
    return subprocess.run([shim, *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=60)


def test_a_forked_module_sees_its_own_arguments_directory_environment_streams_and_status(probe):
    folder, env, shim = probe
    runs = [_run(shim, folder, env, "-m", "probe_module", "7", "x y", stdin="fed") for _ in range(2)]
    seen = [json.loads(run.stdout) for run in runs]
    for run, got in zip(runs, seen):
        assert run.returncode == 7, run.stderr
        assert got["argv"] == ["7", "x y"] and got["cwd"] == str(folder) and got["path0"] == str(folder)
        assert got["var"] == "here" and got["stdin"] == "fed" and got["child"] == 3
        assert got["executable"] == shim  # the interpreter the job ran, as a fresh one reports it
        assert got["armlab_preloaded"] is False  # only third-party libraries are shared
    # reseeded from the system in each run, as fresh interpreters are seeded
    assert seen[0]["random"] != seen[1]["random"] and seen[0]["numpy"] != seen[1]["numpy"]


def test_other_invocations_run_the_real_interpreter(probe):
    folder, env, shim = probe
    cold = _run(shim, folder, env, "-c", "import sys; print(sys.executable)")
    assert (cold.returncode, cold.stdout.strip()) == (0, env[fork_server.REAL_PYTHON_VARIABLE])


def test_a_job_whose_environment_differs_in_what_libraries_read_at_import_runs_cold(probe):
    folder, env, shim = probe
    run = _run(shim, folder, {**env, "OMP_NUM_THREADS": "2"}, "-m", "probe_module", "0")
    assert run.returncode == 0
    # a fresh interpreter: sys.executable is the real one, not the shim
    assert json.loads(run.stdout)["executable"] == env[fork_server.REAL_PYTHON_VARIABLE]


def test_a_job_killed_by_signal_ends_its_forked_run(probe):
    folder, env, shim = probe
    (folder / "sleeper.py").write_text("import os, sys, time\nprint(os.getpid(), flush=True)\ntime.sleep(600)\n")
    for signum in (signal.SIGTERM, signal.SIGKILL):
        job = subprocess.Popen([shim, "-m", "sleeper"], cwd=folder, env=env, stdout=subprocess.PIPE, text=True)
        pid = int(job.stdout.readline())
        assert pid != job.pid  # the forked run, not the shim
        job.send_signal(signum)
        assert job.wait(timeout=30) == -signum
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{pid}") and _state(pid) != "Z":
            assert time.monotonic() < deadline, f"the forked run outlived its job ({signal.Signals(signum).name})"
            time.sleep(0.05)


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_an_uncaught_exception_prints_its_traceback_and_exits_1(probe):
    folder, env, shim = probe
    (folder / "broken.py").write_text("raise ValueError('planted')\n")
    run = _run(shim, folder, env, "-m", "broken")
    assert run.returncode == 1
    assert "Traceback" in run.stderr and "ValueError: planted" in run.stderr


def test_a_run_that_leaves_a_thread_pool_open_exits_as_the_interpreter_does(probe):
    """An executor's worker threads are stopped by threading's exit hook before the interpreter waits for them; a
    forked Snakemake waited for its own executor forever when the threads were joined first."""
    folder, env, shim = probe
    (folder / "pool.py").write_text(
        "from concurrent.futures import ThreadPoolExecutor\n"
        "import atexit, sys\n"
        "atexit.register(print, 'atexit ran')\n"
        "sys.pool = ThreadPoolExecutor(2)  # alive until the interpreter exits, as Snakemake's is\n"
        "print(sys.pool.submit(sum, [1, 2]).result())\n"
    )
    run = _run(shim, folder, env, "-m", "pool")
    assert (run.returncode, run.stdout.split()) == (0, ["3", "atexit", "ran"])
