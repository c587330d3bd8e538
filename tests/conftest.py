import os
import shutil
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
