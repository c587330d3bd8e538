import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "fixtures" / "tiny.yaml"


@pytest.fixture(scope="session")
def tiny_config():
    from training.config import load_config

    return load_config([TINY])


@pytest.fixture(scope="session")
def tiny_experiment(tiny_config, tmp_path_factory):
    """Data and base policy of the tiny experiment, built once per test session."""
    from training import base, data

    root = tmp_path_factory.mktemp("tiny")
    data.write(tiny_config, root / "data")
    base.train_base(tiny_config, root / "data", root / "base")
    return root


@pytest.fixture
def snakemake_bin():
    path = shutil.which("snakemake") or str(Path(os.sys.executable).parent / "snakemake")
    return path


def copy_of_the_repository(destination: Path) -> Path:
    """A checkout-like copy (Snakefile, environment.yml, profiles/, workflows/, config/, tests/fixtures/) to run in.

    Users run from the repository root, where `config/config.yaml` exists; a workflow test
    run anywhere else cannot see what that file does to a user's experiment.
    """
    destination.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "environment.yml"):  # the rules' conda: directives name environment.yml
        shutil.copy2(REPO / name, destination / name)
    for folder in ("profiles", "workflows", "config", "tests/fixtures"):
        shutil.copytree(REPO / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def snakemake_dry_run(snakemake_bin, workdir: Path, configfile: Path, *targets: str) -> subprocess.CompletedProcess:
    """``snakemake -n -p`` of ``configfile`` in ``workdir`` (the repository's Snakefile); asserts that it succeeded."""
    dry = subprocess.run(
        [snakemake_bin, "-s", str(REPO / "Snakefile"), "--configfile", str(configfile), "--replace-workflow-config"]
        + ["--cores", "2", "-n", "-p", "--workflow-profile", "none", *targets],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    return dry


def start_and_kill_when(snakemake_bin, workdir: Path, configfile: Path, fault_point, timeout: float = 600) -> None:
    """Start the README's command, SIGKILL its whole process group as soon as ``fault_point(workdir)`` holds."""
    proc = subprocess.Popen(
        [snakemake_bin, "--configfile", str(configfile), "--cores", "2"],
        cwd=workdir,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    try:
        while not fault_point(workdir):
            assert proc.poll() is None, "the run finished before the fault point"
            assert time.monotonic() < deadline, "the fault point never came"
            time.sleep(0.02)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: Snakemake and the jobs it started
        except ProcessLookupError:
            pass
        proc.wait()


DATAFLEX_CSV = REPO.parent / "shared" / "data" / "dataflex-rl" / "all_runs_171.csv"


def require_dataflex_table() -> Path:
    """DataFlex-RL's released table beside the repository (as CI has it); skipped where absent, except in CI."""
    if DATAFLEX_CSV.exists():
        return DATAFLEX_CSV
    message = (
        f"{DATAFLEX_CSV} is missing: DataFlex-RL's released table (results/all_runs_171.csv of its "
        f"repository); put a copy there to run this test"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
