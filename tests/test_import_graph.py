"""Imports follow the data flow: armlab (the neutral home) <- training <- evals; analysis reads files only.

Every import statement of every module (top level or inside a function) is read with ast, so a lazy import
that reaches upstream counts as much as a top-level one.
"""

import ast

import pytest
from conftest import REPO

PACKAGES = ("armlab", "training", "evals", "analysis", "armlab_cli")
# what each package may import of the others: earlier stages only; the command line sits on top of all
ALLOWED = {
    "armlab": set(),
    "training": {"armlab"},
    "evals": {"armlab", "training"},
    "analysis": {"armlab"},
    "armlab_cli": {"armlab", "training", "evals", "analysis"},
}


def _imports(package):
    """``(module file, imported package)`` for every import of another project package inside ``package``."""
    found = []
    for path in sorted((REPO / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                else []
            )
            for name in names:
                top = name.split(".")[0]
                if top in PACKAGES and top != package:
                    found.append((str(path.relative_to(REPO)), top))
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_what_comes_before_it(package):
    upstream = [(module, top) for module, top in _imports(package) if top not in ALLOWED[package]]
    assert upstream == [], f"{package} reaches {upstream}"


def test_the_graph_is_what_the_docs_draw():
    used = {package: {top for _, top in _imports(package)} for package in PACKAGES}
    assert used == {
        "armlab": set(),
        "training": {"armlab"},
        "evals": {"armlab", "training"},
        "analysis": {"armlab"},
        "armlab_cli": {"armlab", "training", "evals", "analysis"},
    }


def _runtime_nodes(tree):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (imports for annotations only never run)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for statement in node.body for child in ast.walk(statement)}
    return [node for node in ast.walk(tree) if id(node) not in skipped]


def _module_graph():
    """Project module -> the project modules it imports (``a.b`` names; a package is its ``__init__``)."""
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in _runtime_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def test_no_module_import_cycle():
    """Not even through a lazy import (e2d0814: training.config <-> training.backends.trl_backend)."""
    graph, state, cycles = _module_graph(), {}, []

    def visit(node, trail):
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                cycles.append(trail[trail.index(target) :] + [target])
            elif target not in state:
                visit(target, trail + [target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_parsing_the_workflow_loads_neither_torch_nor_scipy_stats():
    """The workflow's parse (every Snakemake start: each dry run, each cluster job step) validates the config
    against the method registries and the analysis settings; their torch and scipy code loads on first use
    (armlab/lazy.py), which saves three of the five seconds of a start. A module-level import that slips back
    in fails here."""
    import subprocess
    import sys

    heavy = ("torch._C", "scipy.stats._stats_py", "statsmodels", "transformers", "lm_eval")
    # what the Snakefile does at every start: validate, parse the analysis section, check the locks and plan
    code = (
        "import sys\n"
        "from training.config import load_config\n"
        "from analysis import planning, predictions, waves\n"
        "from analysis.config import parse_config\n"
        "from armlab import registration\n"
        f"config = load_config([{str(REPO / 'tests' / 'fixtures' / 'tiny.yaml')!r}])\n"
        "analysis = parse_config(config)\n"
        "registration.against_locks('results/tiny')\n"
        "planning.plan_text(config, analysis, jobs='results/tiny', cores=2)\n"
        f"print([name for name in {heavy!r} if name in sys.modules])\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr


def test_a_lazy_module_loads_at_first_use_and_is_the_module_itself():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from armlab.lazy import lazy_module\n"
        "colorsys = lazy_module('colorsys')\n"
        "print('colorsys' in sys.modules, hasattr(colorsys, 'ONE_THIRD') and 'rgb_to_hsv' in vars(colorsys))\n"
        "import colorsys as again\n"
        "print(again is colorsys, lazy_module('colorsys') is colorsys, colorsys.rgb_to_hsv(1, 0, 0)[1])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.split() == ["True", "True", "True", "True", "1.0"]
