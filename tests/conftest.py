import functools
import gc
import hashlib
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import fork_server
import pytest
from filelock import FileLock

from armlab import numerics

# the hostile-input fixtures (pristine, work, tiny_pipeline, tiny), shared by the two hostile suites in two folders
pytest_plugins = ["hostile"]

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the tests that train or evaluate in their own process run under the workflow's default numerics, pinned before any
# torch operation of the session, as a workflow job pins them (armlab/numerics.py)
if numerics.machine_problem(numerics.DEFAULT_MODE) is None:
    os.environ.update(numerics.environment(numerics.DEFAULT_MODE))

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "fixtures" / "tiny.yaml"
REPORT_FIXTURE = REPO / "tests" / "fixtures" / "report"


@functools.cache
def report_build() -> dict:
    """The functions and constants of tests/fixtures/report/build.py (``write_experiment``, ``CONFIG``, ...), loaded
    once per process, for the tests that need the demo-like fixture experiment."""
    return runpy.run_path(str(REPORT_FIXTURE / "build.py"))


# import names of what the base install (`pip install .`) leaves out: torch and pyarrow, the workflow, evaluation,
# TRL, reasoning-gym, the development tools
HEAVY = (
    "torch",
    "pyarrow",
    "snakemake",
    "lm_eval",
    "datasets",
    "math_verify",
    "reasoning_gym",
    "trl",
    "transformers",
    "accelerate",
    "selenium",
    "pytest",
    "ruff",
    "statsmodels",
)


def without_extras(folder: Path) -> dict[str, str]:
    """The environment of a Python that finds none of :data:`HEAVY`, as the base install (without building one): a
    ``sitecustomize`` in ``folder`` makes the finder of installed packages miss them, so ``import torch`` fails and
    ``importlib.util.find_spec("torch")`` is None as where torch was never installed."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "from importlib.machinery import PathFinder\n"
        f"HEAVY = {set(HEAVY)!r}\n"
        "_find_spec = PathFinder.find_spec.__func__\n"
        "def find_spec(cls, name, path=None, target=None):\n"
        "    return None if name.split('.')[0] in HEAVY else _find_spec(cls, name, path, target)\n"
        "PathFinder.find_spec = classmethod(find_spec)\n"
    )
    return {"PYTHONPATH": str(folder), "PATH": "/usr/bin:/bin", "MPLBACKEND": "agg"}


# a guard against a hung workflow run, not a speed check: two checkouts may test at once on two cores, where a
# tiny sequential design took over 900 s
RUN_TIMEOUT_S = 3600


# Modules whose tests take minutes start first, longest first, so that the workers of `make test` end together
# instead of one of them starting a long run at the end: pytest-xdist (--dist loadscope --no-loadscope-reorder)
# hands out whole modules, in collection order. The SLURM module's worker makes the sequential run while its
# cluster runs the same design, so the sequential module comes after two others instead of waiting for it.
LONGEST_FIRST = [
    "tests/workflows/test_slurm.py",
    "tests/training/backends/test_per_arm_backend.py",
    "tests/workflows/test_checkpoints_workflow.py",
    "tests/workflows/test_pipeline_e2e.py",
    "tests/workflows/test_sequential_workflow.py",
    "tests/experiment/test_configured_is_what_runs.py",
    "tests/notebooks/test_notebooks.py",
]


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within a module and among the other modules stays as written


def pytest_collection_finish(session):
    # statsmodels' Holm (the tests' reference) calls gc.collect(): a full pass over every object the collected modules'
    # imports made (torch, transformers, lm-eval: 0.16 s a call in a worker, against 0.00005 s once they are frozen).
    # Those objects live to the end of the session anyway; what the tests create is still collected.
    gc.freeze()


@pytest.fixture
def heap_frozen():
    """What is alive now, collected once and then frozen (gc.freeze), for tests that call statsmodels' Holm many
    times: each call runs a full gc.collect(), whose cost grows with what earlier modules left on the heap (1 ms a
    call after the collection-time freeze, 65 ms behind the report and hostile-input modules), so that the order of
    modules cannot make such a test 60 times slower. Nothing is unfrozen: that would undo the freeze above too."""
    gc.collect()
    gc.freeze()


def job_counts(output: str) -> dict[str, int]:
    """The "Job stats" table of a Snakemake dry run, as {rule: count}."""
    table = output.split("Job stats:")[1].splitlines()[3:]
    counts = {}
    for line in table:
        fields = line.split()
        if len(fields) != 2 or not fields[1].isdigit():
            break
        counts[fields[0]] = int(fields[1])
    counts.pop("total", None)
    return counts


def rewrite_with_a_backdated_time(root):
    """Change the locked prediction, recompute the lock's hash and put locked_at back: the lock file alone cannot
    tell (tests/test_registration.py; tests/workflows/test_sequential_workflow.py does it to a finished workflow)."""
    from armlab import registration
    from armlab.analysis import predictions

    path = root / registration.PREDICTIONS_LOCK
    lock = json.loads(path.read_text())
    lock["predictions"][0]["direction"] = "worse"
    locked = [predictions.Prediction(**p) for p in lock["predictions"]]
    lock["hash"] = predictions.predictions_hash(locked, lock.get("meanings"))
    lock["locked_at"] = "2020-01-01T00:00:00Z"
    path.write_text(json.dumps(lock))


def tree_digest(root) -> str:
    """The sha256 of every name under ``root`` (files, links, folders), each file's modification time and bytes and
    each link's target: what a job that must not write there leaves as it was."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        digest.update(f"{Path(folder).relative_to(root)}/\0".encode())
        for name in sorted(files):
            path = Path(folder, name)
            content = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            stamp = os.lstat(path).st_mtime_ns
            digest.update(f"{path.relative_to(root)}\0{stamp}\0".encode() + hashlib.sha256(content).digest())
    return digest.hexdigest()


def session_folder(tmp_path_factory) -> Path:
    """A folder every worker of this test session shares (the session's own base folder without pytest-xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(tmp_path_factory, name: str, build) -> dict:
    """``build(folder)`` once per test session, by whichever worker asks first; the others wait and share it.

    ``build`` fills ``folder`` and returns a JSON-able record, which every caller gets. A build that failed is not
    retried by the next worker: that one fails at once with the first one's message.
    """
    root = session_folder(tmp_path_factory)
    folder, record, failed = root / name, root / f"{name}.json", root / f"{name}.failed"
    with FileLock(str(root / f"{name}.lock")):
        if failed.exists():
            pytest.fail(f"{name} failed in another worker of this session:\n{failed.read_text()}")
        if not record.exists():
            try:
                result = build(folder)
            except BaseException as error:
                failed.write_text(f"{type(error).__name__}: {error}")
                raise
            record.write_text(json.dumps(result))
    return json.loads(record.read_text())


def snakemake_command() -> str:
    """The Snakemake of the environment that runs the tests."""
    return shutil.which("snakemake") or str(Path(sys.executable).parent / "snakemake")


def readme_run(
    workdir: Path,
    *extra: str,
    configfile: Path = TINY,
    timeout: float = RUN_TIMEOUT_S,
    replace_config: bool = True,
    warm: bool = True,
) -> subprocess.CompletedProcess:
    """The README's command for one's own experiment, from ``workdir`` (a copy of the repository root).

    ``replace_config=False``: the config is merged with config/config.yaml, as plain ``--configfile`` does.
    ``warm``: Snakemake and its jobs run in processes forked from a server that has imported their libraries
    (tests/fork_server.py); ``warm=False`` starts each in a fresh interpreter, as a user's run does.
    """
    replace = ["--replace-workflow-config"] if replace_config else []
    command = [snakemake_command(), "--configfile", str(configfile), *replace, "--cores", "2", *extra]
    command, env = fork_server.warm(command) if warm else (command, None)
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """tests/fixtures/tiny.yaml run to the end with the README's command from a copy of the repository, once per
    test session (the end-to-end tests read it; the SLURM test compares its cluster's run with it).

    Returns the checkout and the dry run before it (``stdout``, ``stderr``, ``returncode``). Tests that change
    files copy the checkout first.
    """

    def build(folder):
        workdir = copy_of_the_repository(folder / "checkout")
        dry = readme_run(workdir, "-n")
        proc = readme_run(workdir)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return {"workdir": str(workdir), "dry": {k: getattr(dry, k) for k in ("stdout", "stderr", "returncode")}}

    run = build_once(tmp_path_factory, "tiny_run", build)
    return Path(run["workdir"]), run["dry"]


REAL_ARCHITECTURE = "config/experiments/real_architecture.yaml"  # relative: the checkouts' own copy


@pytest.fixture(scope="session")
def real_architecture_run(tmp_path_factory):
    """config/experiments/real_architecture.yaml run to the end with the README's command from a copy of the
    repository, once per test session: its TRL runs' Hugging Face checkpoints (final and every 10 steps) are what
    config/experiments/evaluate_checkpoints.yaml evaluates. Returns the checkout and the run's console output; tests
    that change its files copy them first."""

    def build(folder):
        workdir = copy_of_the_repository(folder / "checkout")
        proc = readme_run(workdir, configfile=REAL_ARCHITECTURE)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return {"workdir": str(workdir), "stdout": proc.stdout}

    run = build_once(tmp_path_factory, "real_architecture_run", build)
    return Path(run["workdir"]), run["stdout"]


SEQUENTIAL = Path("tests/fixtures/tiny_sequential.yaml")  # relative: the checkouts' own copy


def sequential_readme_run(
    workdir: Path, *extra: str, configfile: Path = SEQUENTIAL, warm: bool = True
) -> subprocess.CompletedProcess:
    """:func:`readme_run` of the sequential fixture (by default), merged with config/config.yaml."""
    return readme_run(workdir, *extra, configfile=configfile, replace_config=False, warm=warm)


@pytest.fixture(scope="session")
def sequential_run(tmp_path_factory):
    """tests/fixtures/tiny_sequential.yaml run to its end once per test session, with the dry run before it
    (tests/workflows/test_sequential_workflow.py reads it; the SLURM test compares its cluster's run with it).
    Tests that change it copy it.

    Returns the checkout, the dry run, whether the dry run locked the design, and the run's console output.
    """

    def build(folder):
        workdir = copy_of_the_repository(folder / "checkout")
        dry = sequential_readme_run(workdir, "-n")
        locked_by_dry_run = (workdir / "results" / "tiny_sequential" / "sequential" / "design.json").exists()
        proc = sequential_readme_run(workdir)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return {
            "workdir": str(workdir),
            "dry": {k: getattr(dry, k) for k in ("stdout", "stderr", "returncode")},
            "locked_by_dry_run": locked_by_dry_run,
            "run": {k: getattr(proc, k) for k in ("stdout", "stderr")},
        }

    run = build_once(tmp_path_factory, "sequential_run", build)
    return Path(run["workdir"]), run["dry"], run["locked_by_dry_run"], run["run"]


@pytest.fixture(scope="session")
def tiny_config():
    from armlab.experiment.validate import load_config

    return load_config([TINY])


@pytest.fixture(scope="session")
def tiny_experiment(tiny_config, tmp_path_factory):
    """Data and base policy of the tiny experiment, built once per test session."""
    from armlab.training import base, data

    root = tmp_path_factory.mktemp("tiny")
    data.write(tiny_config, root / "data")
    base.train_base(tiny_config, root / "data", root / "base")
    return root


@pytest.fixture
def snakemake_bin():
    return snakemake_command()


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


def snakemake_dry_run(workdir: Path, configfile: Path, *targets: str) -> subprocess.CompletedProcess:
    """``snakemake -n -p`` of ``configfile`` in ``workdir`` (the repository's Snakefile); asserts that it succeeded."""
    dry = fork_server.run_snakemake(
        ["-s", str(REPO / "Snakefile"), "--configfile", str(configfile), "--replace-workflow-config"]
        + ["--cores", "2", "-n", "-p", "--workflow-profile", "none", *targets],
        workdir,
    )
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    return dry


def start_and_kill_when(
    snakemake_bin, workdir: Path, configfile: Path, fault_point, timeout: float = RUN_TIMEOUT_S
) -> None:
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
