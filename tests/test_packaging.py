"""The pins in pyproject.toml, environment.yml and the lock file agree."""

import re
import tomllib

import yaml
from conftest import REPO


def _pins(lines):
    return dict(re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)", line.strip()).groups() for line in lines if "==" in line)


def test_environment_yml_mirrors_pyproject_pins():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pyproject = _pins(project["dependencies"])
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_section = next(dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict))
    assert _pins(pip_section) == pyproject
    assert pyproject["torch"] == "2.13.0"


def test_lock_file_pins_every_top_level_dependency():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lock = {
        k.lower().replace("_", "-"): v for k, v in _pins((REPO / "requirements.txt").read_text().splitlines()).items()
    }
    for name, version in _pins(project["dependencies"]).items():
        assert lock.get(name.lower()) == version, name
