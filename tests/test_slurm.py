"""The tiny experiment through a real one-node SLURM cluster (ci/slurm_single_node.sh) equals the local run.

In CI (``CI=true``) this test always runs and must pass. Elsewhere it runs where the host allows — root, and
slurm installed or installable with apt-get, and no other SLURM config on the host — and says why when skipped.
The flags below are what the SLURM executor plugin (2.8) needs on a cluster without an accounting database:
``--slurm-status-command squeue`` (with the cluster's MinJobAge=600; sacct would hang), a short wait before the
first status check, and no account.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, TINY

SCRIPT = REPO / "ci" / "slurm_single_node.sh"
SLURM_CONF = Path("/etc/slurm/slurm.conf")
PARTITION = "debug"  # the partition the script's cluster defines
RUN_TIMEOUT_S = 600  # the tiny runs share the cluster with the sequential one (see sequential_on_slurm)
SLURM_FLAGS = [
    "--slurm-no-account",
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "5",
    "--latency-wait",
    "5",
]


def _why_not_here() -> str | None:
    """Why this host cannot run the test (outside CI), or None."""
    if os.geteuid() != 0:
        return "needs root to start munged, slurmctld and slurmd"
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        return "slurm is not installed and apt-get is not available to install it"
    if SLURM_CONF.exists() and "written by ci/slurm_single_node.sh" not in SLURM_CONF.read_text():
        return f"{SLURM_CONF} belongs to another SLURM installation; not replacing it"
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "snakemake-executor-plugin-slurm is not installed"
    return None


def _slurm_profile(tmp_path: Path) -> Path:
    """The project's SLURM profile with its partition placeholder set, as a user would set it."""
    profile = tmp_path / "profile"
    profile.mkdir()
    text = (REPO / "profiles" / "slurm" / "config.yaml").read_text()
    assert "CHANGE_ME_partition" in text
    (profile / "config.yaml").write_text(text.replace("CHANGE_ME_partition", PARTITION))
    return profile


def _snakemake(
    workdir: Path, *extra: str, configfile: Path = TINY, timeout_s: int = RUN_TIMEOUT_S, log: Path | None = None
) -> subprocess.Popen:
    """Snakemake in ``workdir``; its output is piped, or written to ``log`` for a run nobody reads until it ends."""
    snakemake_bin = shutil.which("snakemake") or str(Path(sys.executable).parent / "snakemake")
    workdir.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.Popen(
        [
            "timeout",
            "-s",
            "KILL",
            str(timeout_s),
            snakemake_bin,
            "-s",
            str(REPO / "Snakefile"),
            "--configfile",
            str(configfile),
            "--replace-workflow-config",
            *extra,
        ],
        cwd=workdir,
        env=env,
        stdout=log.open("w") if log else subprocess.PIPE,
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


def _squeue(*fields: str) -> str:
    return subprocess.run(["squeue", "-h", *fields], capture_output=True, text=True, check=True).stdout


def test_a_cluster_killed_with_a_job_running_restarts_idle():
    """A run killed while its cluster had a job running (CI's run after a killed one) never calls stop: the
    daemons die and the saved job state stays. The next start must begin clean; recovering the dead job kept the
    node allocated and failed the start, and with it every SLURM test."""
    _skip_unless_possible()
    state = Path(os.environ.get("SLURM_CI_STATE", "/run/armlab-slurm"))
    subprocess.run([str(SCRIPT), "start"], check=True, timeout=600)
    try:
        # exec -a names the job's process, so that only it is killed below
        sbatch = ["sbatch", "--parsable", "-p", PARTITION, "-o", "/dev/null"]
        job = subprocess.run(
            [*sbatch, "--wrap", "bash -c 'exec -a armlab-dead-job sleep 600'"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        _wait_for(lambda: _squeue("-j", job, "-o", "%T").strip() == "RUNNING", 60, f"job {job} to run")
        running_since = time.time()
        saved = state / "ctld" / "job_state"
        # slurmctld saves its state a few seconds after a change: kill it once the running job is on disk
        _wait_for(lambda: saved.exists() and saved.stat().st_mtime > running_since, 60, "the saved job state")
        daemons = [int((state / f"{daemon}.pid").read_text()) for daemon in ("slurmctld", "slurmd")]
        for pid in daemons:
            os.kill(pid, 9)
        subprocess.run(["pkill", "-9", "-x", "slurmstepd"])
        subprocess.run(["pkill", "-9", "-f", "armlab-dead-job"])
        _wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in daemons), 30, "the daemons to die")

        started = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True, timeout=600)
        assert started.returncode == 0, started.stdout + started.stderr
        assert _squeue("-o", "%i %T") == "", "the dead cluster's job came back"
        assert subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True).stdout.split() == ["idle"]
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
def sequential_on_slurm(slurm_cluster, tmp_path_factory):
    """The waves of tests/fixtures/tiny_sequential.yaml (see tests/test_sequential_workflow.py) through sbatch, cut
    to two looks (at most 3 seeds). It starts with the first test and runs beside it: most of a SLURM run is
    waiting between status checks, so the two overlap instead of adding up."""
    root = tmp_path_factory.mktemp("sequential_slurm")
    config = root / "tiny_sequential.yaml"
    fixture = (REPO / "tests" / "fixtures" / "tiny_sequential.yaml").read_text()
    assert "max: 4," in fixture
    config.write_text(fixture.replace("max: 4,", "max: 3,"))
    workdir, log = root / "slurm", root / "slurm.log"
    proc = _snakemake(
        workdir, "--profile", str(_slurm_profile(root)), *SLURM_FLAGS, configfile=config, timeout_s=900, log=log
    )
    yield proc, workdir, log
    if proc.poll() is None:
        proc.kill()


def test_slurm_run_equals_local_run(slurm_cluster, sequential_on_slurm, tmp_path):
    start = time.perf_counter()
    # the local run shares the two cores with the cluster's jobs: results do not depend on timing
    local = _snakemake(tmp_path / "local", "--profile", str(REPO / "profiles" / "default"))
    slurm = _snakemake(tmp_path / "slurm", "--profile", str(_slurm_profile(tmp_path)), *SLURM_FLAGS)
    slurm_log, local_log = slurm.communicate()[0], local.communicate()[0]
    wall = time.perf_counter() - start
    assert slurm.returncode == 0, f"SLURM run failed (rc {slurm.returncode}, -9 = timeout):\n{slurm_log[-4000:]}"
    assert local.returncode == 0, f"local run failed:\n{local_log[-4000:]}"

    # every training and evaluation job went through sbatch
    completed = _completed_rules(tmp_path / "slurm")
    assert sum(c.startswith("rule_train_") for c in completed) == 4, completed
    assert sum(c.startswith("rule_evaluate_") for c in completed) == 5, completed

    scores = {
        name: pd.read_parquet(tmp_path / name / "results" / "tiny" / "scores.parquet") for name in ("local", "slurm")
    }
    pd.testing.assert_frame_equal(scores["slurm"], scores["local"])
    print(f"SLURM end-to-end: {wall:.0f} s wall (local run alongside), {len(scores['slurm'])} identical score rows")


def test_a_sequential_design_runs_its_waves_on_slurm(sequential_on_slurm):
    """The second wave's jobs are submitted only once the first look has decided (sequential_on_slurm)."""
    import json

    slurm, workdir, log = sequential_on_slurm
    slurm.wait()
    assert slurm.returncode == 0, f"SLURM run failed (rc {slurm.returncode}, -9 = timeout):\n{log.read_text()[-4000:]}"
    ledger = workdir / "results" / "tiny_sequential" / "sequential" / "looks.jsonl"
    looks = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert [r["runs_evaluated"] for r in looks] == [6, 9]  # grpo_copy equivalent at look 2, as in the local run
    assert looks[-1]["done"] and looks[-1]["runs_fixed"] == 9
    assert sum(rule.startswith("rule_look_") for rule in _completed_rules(workdir)) == 2
