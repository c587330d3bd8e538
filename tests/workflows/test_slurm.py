"""The tiny sequential design through a real one-node SLURM cluster (ci/slurm_single_node.sh) equals the local run.

In CI (``CI=true``) this test always runs and must pass. Elsewhere it runs where the host allows — root, and
slurm installed or installable with apt-get — and says why when skipped. The cluster is this checkout's own (its
config, state, ports, cluster name and jobs; see the script's header): every SLURM client here, and the Snakemake
runs, get its SLURM_CONF and its client wrappers first on PATH, so clones of the repository test side by side.
The flags below are what the SLURM executor plugin (2.8) needs on a cluster without an accounting database:
``--slurm-status-command squeue`` (with the cluster's MinJobAge=3600; sacct would hang), a short wait before the
first status check (the plugin waits that long again after a check that saw a job end, and 10 s longer after each
one that saw none: a short first wait takes most of a tiny job's waiting away), and no account.
"""

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from functools import cache
from pathlib import Path

import fork_server
import pandas as pd
import pytest
from conftest import REPO, RUN_TIMEOUT_S, SEQUENTIAL, snakemake_command

# one cluster per checkout: its tests take turns on one worker (make test hands out whole modules)
pytestmark = pytest.mark.slurm

SCRIPT = REPO / "ci" / "slurm_single_node.sh"
SEQUENTIAL_OUT = Path("results/tiny_sequential")
PARTITION = "debug"  # the partition the script's cluster defines
SLURM_FLAGS = [
    "--slurm-no-account",
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--latency-wait",
    "5",
]


def _why_not_here() -> str | None:
    """Why this host cannot run the test (outside CI), or None."""
    if os.geteuid() != 0:
        return "needs root to start munged, slurmctld and slurmd"
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        return "slurm is not installed and apt-get is not available to install it"
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "snakemake-executor-plugin-slurm is not installed"
    return None


def _cluster_env(script: Path = SCRIPT, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) pointed at the cluster of ``script``'s checkout: its SLURM_CONF, and
    its client wrappers first on PATH (a job's srun runs without SLURM_CONF: the jobstep executor drops SLURM_*)."""
    base = dict(os.environ if base is None else base)
    out = subprocess.run([str(script), "env"], env=base, capture_output=True, text=True, check=True).stdout
    settings = dict(line.split("=", 1) for line in out.splitlines())
    path = f"{settings['ARMLAB_SLURM_BIN']}:{Path(sys.executable).parent}:{base['PATH']}"
    return {**base, "SLURM_CONF": settings["SLURM_CONF"], "PATH": path}


@cache
def _env() -> dict[str, str]:
    """This checkout's cluster, for the SLURM clients and the Snakemake runs."""
    return _cluster_env()


def _slurm_profile(tmp_path: Path) -> Path:
    """The project's SLURM profile with its partition placeholder set, as a user would set it."""
    profile = tmp_path / "profile"
    profile.mkdir()
    text = (REPO / "profiles" / "slurm" / "config.yaml").read_text()
    assert "CHANGE_ME_partition" in text
    (profile / "config.yaml").write_text(text.replace("CHANGE_ME_partition", PARTITION))
    return profile


def _snakemake(
    workdir: Path, *extra: str, configfile: Path, log: Path, timeout_s: int = RUN_TIMEOUT_S
) -> subprocess.Popen:
    """Snakemake in ``workdir``, started; its output goes to ``log``."""
    workdir.mkdir()
    workflow = ["-s", str(REPO / "Snakefile"), "--configfile", str(configfile), "--replace-workflow-config", *extra]
    # its interpreters forked from a warm one (tests/fork_server.py): the driver's, and through its sys.executable
    # (which sbatch's job runs) the job steps' and their jobs'
    command, env = fork_server.warm([snakemake_command(), *workflow], _env())
    return subprocess.Popen(
        ["timeout", "-s", "KILL", str(timeout_s), *command],
        cwd=workdir,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )


def _skip_unless_possible() -> None:
    reason = _why_not_here()
    if reason and os.environ.get("CI") != "true":
        pytest.skip(f"SLURM end-to-end test skipped: {reason}")


def _wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s:.0f} s waiting for {what}"
        time.sleep(0.5)


def _squeue(*fields: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["squeue", "-h", *fields], env=env or _env(), capture_output=True, text=True, check=True
    ).stdout


def _sinfo_states(env: dict[str, str] | None = None) -> list[str]:
    return subprocess.run(["sinfo", "-h", "-o", "%T"], env=env or _env(), capture_output=True, text=True).stdout.split()


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...), or None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def _alive(pid: int) -> bool:
    stat = _proc_stat(pid)
    return stat is not None and stat[0] != "Z"


def _submit_sleeper(env: dict[str, str], pidfile: Path) -> tuple[str, int, int]:
    """A job that sleeps 600 s on the cluster of ``env``, once running: its id, its process and the slurmstepd
    that runs it (the batch script's parent). The pids let a test kill or watch exactly these processes."""
    job = subprocess.run(
        ["sbatch", "--parsable", "-p", PARTITION, "--mem", "100", "-o", "/dev/null"],
        input=f"#!/bin/bash\necho $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile}\nexec sleep 600\n",
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    _wait_for(lambda: _squeue("-j", job, "-o", "%T", env=env).strip() == "RUNNING", 60, f"job {job} to run")
    _wait_for(pidfile.exists, 60, f"job {job} to write its pid")
    pid = int(pidfile.read_text())
    stepd = int(_proc_stat(pid)[1])
    assert Path(f"/proc/{stepd}/comm").read_text().strip() == "slurmstepd", f"job {job}'s parent {stepd}"
    return job, pid, stepd


def test_a_cluster_killed_with_a_job_running_restarts_idle(tmp_path):
    """A run killed while its cluster had a job running (CI's run after a killed one) never calls stop: the
    daemons die and the saved job state stays. The next start must begin clean; recovering the dead job kept the
    node allocated and failed the start, and with it every SLURM test."""
    _skip_unless_possible()
    state = Path(_env()["SLURM_CONF"]).parent
    subprocess.run([str(SCRIPT), "start"], check=True, timeout=600)
    try:
        # killed by pid below: this cluster's job and step daemon only, not those of another checkout's cluster
        job, job_pid, stepd = _submit_sleeper(_env(), tmp_path / "job.pid")
        running_since = time.time()
        saved = state / "ctld" / "job_state"
        # slurmctld saves its state a few seconds after a change: kill it once the running job is on disk
        _wait_for(lambda: saved.exists() and saved.stat().st_mtime > running_since, 60, "the saved job state")
        daemons = [int((state / f"{daemon}.pid").read_text()) for daemon in ("slurmctld", "slurmd")]
        for pid in [*daemons, stepd, job_pid]:
            os.kill(pid, 9)
        _wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in daemons), 30, "the daemons to die")
        _wait_for(lambda: not _alive(stepd) and not _alive(job_pid), 30, "the job and its step daemon to die")

        started = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True, timeout=600)
        assert started.returncode == 0, started.stdout + started.stderr
        assert _squeue("-o", "%i %T") == "", "the dead cluster's job came back"
        assert _sinfo_states() == ["idle"]
    finally:
        subprocess.run([str(SCRIPT), "stop"], timeout=120)


@pytest.fixture(scope="module")
def slurm_cluster():
    _skip_unless_possible()
    try:
        subprocess.run([str(SCRIPT), "start"], check=True, timeout=600)
        yield
    finally:  # a failed start stops what it started: nothing stale for the next run
        subprocess.run([str(SCRIPT), "stop"], timeout=120)


def _completed_rules(workdir: Path) -> list[str]:
    """The rule of every job of the workflow in ``workdir`` that SLURM completed (the plugin's comment names the
    rule; sbatch -D, the workflow's directory, tells two workflows on one cluster apart)."""
    rows = [line.split("|") for line in _squeue("-t", "all", "-o", "%k|%T|%Z").splitlines() if line.count("|") == 2]
    return [rule for rule, state, where in rows if state == "COMPLETED" and Path(where) == workdir]


@pytest.fixture(scope="module")
def sequential_on_slurm(slurm_cluster, request, tmp_path_factory):
    """The waves of tests/fixtures/tiny_sequential.yaml through sbatch, to its end, and the session's local run of
    the same design (tests/conftest.py), which another worker makes meanwhile: most of a SLURM run is waiting
    between status checks. The local run shared the cores with the cluster's jobs: results do not depend on timing.
    """
    root = tmp_path_factory.mktemp("sequential_slurm")
    workdir, log = root / "slurm", root / "slurm.log"
    start = time.perf_counter()
    proc = _snakemake(
        workdir, "--profile", str(_slurm_profile(root)), *SLURM_FLAGS, configfile=REPO / SEQUENTIAL, log=log
    )
    try:
        local = request.getfixturevalue("sequential_run")[0]
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, f"SLURM run failed (rc {proc.returncode}, -9 = timeout):\n{log.read_text()[-4000:]}"
    print(f"SLURM end-to-end: {time.perf_counter() - start:.0f} s wall (local run alongside)")
    return workdir, local


def _ledger(workdir: Path) -> list[dict]:
    lines = (workdir / SEQUENTIAL_OUT / "sequential" / "looks.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_finished_jobs_stay_in_squeue_as_long_as_a_run_may_take():
    """The cluster forgets a finished job MinJobAge seconds after it ends; the SLURM run's check below counts every
    job from squeue, and two checkouts' suites at once slowed the run to 826 s, past the 600 s it was, so the first
    wave's jobs were gone (5 of 11 train jobs counted)."""
    script = (REPO / "ci" / "slurm_single_node.sh").read_text()
    ages = [int(line.split("=", 1)[1]) for line in script.splitlines() if line.startswith("MinJobAge=")]
    assert ages == [RUN_TIMEOUT_S]


def test_slurm_run_equals_local_run(sequential_on_slurm):
    slurm, local = sequential_on_slurm
    # every training and evaluation job went through sbatch: the 11 runs the looks asked for, and the base
    completed = _completed_rules(slurm)
    assert sum(c.startswith("rule_train_") for c in completed) == 11, completed
    assert sum(c.startswith("rule_evaluate_") for c in completed) == 12, completed
    scores = {
        name: pd.read_parquet(root / SEQUENTIAL_OUT / "scores.parquet")
        for name, root in (("local", local), ("slurm", slurm))
    }
    pd.testing.assert_frame_equal(scores["slurm"], scores["local"])
    for table in ("comparisons.csv", "sequential.csv"):
        assert (slurm / SEQUENTIAL_OUT / "analysis" / table).read_bytes() == (
            local / SEQUENTIAL_OUT / "analysis" / table
        ).read_bytes(), table


def test_a_sequential_design_runs_its_waves_on_slurm(sequential_on_slurm):
    """Each wave's jobs are submitted only once the look before it has decided, and decide as the local run did."""
    slurm, local = sequential_on_slurm
    looks = _ledger(slurm)
    assert [r["runs_evaluated"] for r in looks] == [6, 9, 11]  # grpo_copy equivalent at look 2, as in the local run
    assert looks[-1]["done"] and looks[-1]["runs_fixed"] == 12
    assert [r["decisions"] for r in looks] == [r["decisions"] for r in _ledger(local)]
    completed = _completed_rules(slurm)
    assert sum(rule.startswith("rule_look_") for rule in completed) == 3
    assert {"rule_analyze", "rule_report"} <= {rule.split("_wildcards")[0] for rule in completed}, completed


def _conf_value(env: dict[str, str], key: str) -> str:
    lines = Path(env["SLURM_CONF"]).read_text().splitlines()
    return next(line.split("=", 1)[1] for line in lines if line.startswith(f"{key}="))


def test_another_checkouts_cluster_runs_beside_this_one(slurm_cluster, tmp_path):
    """Two clones testing at once: another checkout's cluster (the script copied elsewhere, its own state under
    /run) starts, runs a job and stops while this checkout's cluster runs a job of its own, which it never
    touches. Each cluster runs the job submitted to it; the job's srun, without SLURM_CONF as under the jobstep
    executor, finds its own cluster through the wrappers on PATH."""
    ours = _env()
    other_script = tmp_path / "other_checkout" / "ci" / SCRIPT.name
    shutil.copytree(REPO / "ci", other_script.parent)
    other_state = Path(f"/run/armlab-slurm-test-{uuid.uuid4().hex[:8]}")
    other_base = {**os.environ, "SLURM_CI_STATE": str(other_state)}
    theirs = _cluster_env(other_script, other_base)
    assert Path(theirs["SLURM_CONF"]).parent == other_state
    assert theirs["SLURM_CONF"] != ours["SLURM_CONF"]
    _wait_for(lambda: _sinfo_states(ours) == ["idle"], 120, "this checkout's node to be idle")

    long_job, long_pid, long_stepd = _submit_sleeper(ours, tmp_path / "long.pid")
    try:
        subprocess.run([str(other_script), "start"], env=other_base, check=True, timeout=600)
        try:
            their_daemons = [int((other_state / f"{daemon}.pid").read_text()) for daemon in ("slurmctld", "slurmd")]
            assert _sinfo_states(theirs) == ["idle"]
            for key in ("ClusterName", "SlurmctldPort", "SlurmdPort", "SlurmdSpoolDir", "StateSaveLocation"):
                assert _conf_value(ours, key) != _conf_value(theirs, key), key
            assert _alive(long_pid) and _squeue("-j", long_job, "-o", "%T", env=ours).strip() == "RUNNING"

            # a job on each cluster at once; each reports the cluster its srun reached
            wrap = "env -u SLURM_CONF srun -n1 printenv SLURM_CLUSTER_NAME"
            runs = {
                name: subprocess.Popen(
                    ["sbatch", "--wait", "--parsable", "-p", PARTITION, "--mem", "100"]
                    + ["-o", str(tmp_path / f"{name}.out"), "--wrap", wrap],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                for name, env in (("ours", ours), ("theirs", theirs))
            }
            jobs = {}
            for name, run in runs.items():
                out = run.communicate(timeout=120)[0]
                assert run.returncode == 0, f"{name}: {out}"
                jobs[name] = out.strip()
            for name, env in (("ours", ours), ("theirs", theirs)):
                assert (tmp_path / f"{name}.out").read_text().split() == [_conf_value(env, "ClusterName")]
                assert _squeue("-t", "all", "-j", jobs[name], "-o", "%T", env=env).strip() == "COMPLETED"
            assert _squeue("-t", "all", "-o", "%i", env=theirs).split() == [jobs["theirs"]]
            ours_before = _squeue("-t", "all", "-j", f"{long_job},{jobs['ours']}", "-o", "%i %T", env=ours)
        finally:
            subprocess.run([str(other_script), "stop"], env=other_base, timeout=120)
        assert not other_state.exists()
        assert not any(_alive(pid) for pid in their_daemons)

        # this checkout's cluster: up, its running job and its step daemon untouched, its finished job still listed
        assert _alive(long_pid) and _alive(long_stepd) and _proc_stat(long_pid)[1] == str(long_stepd)
        assert _squeue("-t", "all", "-j", f"{long_job},{jobs['ours']}", "-o", "%i %T", env=ours) == ours_before
        assert "RUNNING" in ours_before and "COMPLETED" in ours_before
        assert _sinfo_states(ours) in (["mixed"], ["allocated"])
    finally:
        subprocess.run(["scancel", long_job], env=ours)
    _wait_for(lambda: _sinfo_states(ours) == ["idle"], 60, "this checkout's node to be idle again")
    assert not _alive(long_pid)
