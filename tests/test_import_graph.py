"""Imports follow the data flow: armlab's core (the neutral home) <- training <- evals; analysis reads files only,
and inside it the statistics (armlab.analysis.stats) sit below everything but its errors;
the experiment (armlab.experiment: whole-config validation, run planning) sits above training, evals and analysis, and
the command line (armlab.cli) on top.

Every import statement of every module (top level or inside a function) is read with ast, so a lazy import
that reaches upstream counts as much as a top-level one. The stages live in the repository's top-level folders and
are imported as ``armlab.<stage>`` (pyproject.toml maps them).
"""

import ast

import pytest
from conftest import REPO

# layer -> its source files; a module's layer is the longest layer name its dotted name starts with
LAYERS = {
    "armlab": [
        p
        for p in (REPO / "armlab").rglob("*.py")
        if p.name not in ("cli.py", "__main__.py") and "experiment" not in p.relative_to(REPO).parts
    ],
    "armlab.training": list((REPO / "training").rglob("*.py")),
    "armlab.evals": [p for p in (REPO / "evals").rglob("*.py") if p.name != "commands.py"],
    # the analysis's rooms: its errors, the statistics, the inputs, the rest above them, the report above all that,
    # and the subcommands on top
    "armlab.analysis.errors": [REPO / "analysis" / "errors.py"],
    "armlab.analysis.stats": list((REPO / "analysis" / "stats").rglob("*.py")),
    "armlab.analysis.inputs": list((REPO / "analysis" / "inputs").rglob("*.py")),
    "armlab.analysis": [
        p
        for p in (REPO / "analysis").rglob("*.py")
        if p.parent.name not in ("stats", "inputs", "reporting") and p.stem not in ("errors", "commands")
    ],
    "armlab.analysis.reporting": list((REPO / "analysis" / "reporting").rglob("*.py")),
    "armlab.analysis.commands": [REPO / "analysis" / "commands.py"],
    "armlab.experiment": list((REPO / "armlab" / "experiment").rglob("*.py")),
    # python -m armlab; and the evaluation's subcommands, since `armlab probe` runs the experiment's probe
    "armlab.cli": [REPO / "armlab" / "cli.py", REPO / "armlab" / "__main__.py", REPO / "evals" / "commands.py"],
}
FOLDERS = {"armlab.training": "training", "armlab.evals": "evals", "armlab.analysis": "analysis"}
# what each layer may import of the others: earlier stages only; the command line sits on top of all
ALLOWED = {
    "armlab": set(),
    "armlab.training": {"armlab"},
    "armlab.evals": {"armlab", "armlab.training"},
    "armlab.analysis.errors": set(),
    # the statistics are pure functions of arrays: nothing of the analysis above them (its config, its Settings)
    "armlab.analysis.stats": {"armlab", "armlab.analysis.errors"},
    # the inputs: the files of docs/contracts.md into the tidy table; of the analysis above them only the config's
    # type (test_the_inputs_know_the_config_only_as_a_type)
    "armlab.analysis.inputs": {"armlab", "armlab.analysis.errors", "armlab.analysis"},
    "armlab.analysis": {
        "armlab",
        "armlab.analysis.errors",
        "armlab.analysis.stats",
        "armlab.analysis.inputs",
    },
    "armlab.analysis.reporting": {
        "armlab",
        "armlab.analysis.errors",
        "armlab.analysis.stats",
        "armlab.analysis.inputs",
        "armlab.analysis",
    },
    "armlab.analysis.commands": {
        "armlab",
        "armlab.analysis.errors",
        "armlab.analysis.inputs",  # armlab steps: step logs from elsewhere into run folders
        "armlab.analysis",
        "armlab.analysis.reporting",
    },
    # the whole experiment: its config checked by every stage's rules, its runs, its locks; and the run job of runs
    # made elsewhere, which reads their step logs with the inputs' readers (armlab steps)
    "armlab.experiment": {"armlab", "armlab.training", "armlab.evals", "armlab.analysis", "armlab.analysis.inputs"},
    "armlab.cli": {
        "armlab",
        "armlab.training",
        "armlab.evals",
        "armlab.analysis.commands",
        "armlab.analysis.errors",
        "armlab.experiment",  # armlab rescore: the evaluations' answers through the analysis again, when it runs
    },
}


def layer_of(name):
    """The layer of a dotted module (or module.attribute) name of armlab; None outside armlab."""
    matches = [layer for layer in LAYERS if name == layer or name.startswith(layer + ".")]
    return max(matches, key=len, default=None)


def _imported_names(node):
    """The dotted names an import statement reaches (``from a import b``: ``a.b``, which may be a module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return [f"{node.module}.{a.name}" for a in node.names]
    return []


def _imports(layer):
    """``(module file, imported layer)`` for every import of another layer inside ``layer``."""
    found = []
    for path in sorted(LAYERS[layer]):
        for node in ast.walk(ast.parse(path.read_text())):
            for name in _imported_names(node):
                target = layer_of(name)
                if target is not None and target != layer:
                    found.append((str(path.relative_to(REPO)), target))
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_what_comes_before_it(layer):
    upstream = [(module, target) for module, target in _imports(layer) if target not in ALLOWED[layer]]
    assert upstream == [], f"{layer} reaches {upstream}"


def test_the_graph_is_what_the_docs_draw():
    used = {layer: {target for _, target in _imports(layer)} for layer in LAYERS}
    assert used == ALLOWED


def test_the_inputs_know_the_config_only_as_a_type():
    """The inputs room reaches the analysis above it for the ``Config`` annotation alone (under TYPE_CHECKING)."""
    at_run_time = [
        (str(path.relative_to(REPO)), name)
        for path in LAYERS["armlab.analysis.inputs"]
        for node in _runtime_nodes(ast.parse(path.read_text()))
        for name in _imported_names(node)
        if layer_of(name) == "armlab.analysis"
    ]
    assert at_run_time == []


def test_no_stage_is_imported_by_its_folder_name():
    """Nothing imports ``analysis``, ``training`` or ``evals`` as a top-level package: they are installed only
    inside armlab, so such an import would fail for a user (or find the user's own package of that name)."""
    bare = [
        (str(path.relative_to(REPO)), name)
        for path in sorted(p for files in LAYERS.values() for p in files)
        for node in ast.walk(ast.parse(path.read_text()))
        for name in _imported_names(node)
        if name.split(".")[0] in {"analysis", "training", "evals", "armlab_cli"}
    ]
    assert bare == []


def _runtime_nodes(tree):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (imports for annotations only never run)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for statement in node.body for child in ast.walk(statement)}
    return [node for node in ast.walk(tree) if id(node) not in skipped]


def _module_name(path):
    """The dotted name a source file is imported by (a package is its ``__init__``)."""
    relative = path.relative_to(REPO).with_suffix("")
    prefix = next((layer for layer, folder in FOLDERS.items() if relative.parts[0] == folder), None)
    parts = (prefix, *relative.parts[1:]) if prefix else relative.parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph(type_only=False):
    """Project module -> the project modules it imports (``a.b`` names; a package is its ``__init__``); with
    ``type_only``, the imports under ``if TYPE_CHECKING:`` too."""
    modules = {_module_name(path): path for files in LAYERS.values() for path in files}
    graph = {}
    for name, path in modules.items():
        targets = set()
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree) if type_only else _runtime_nodes(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.add(node.module)
            targets |= set(_imported_names(node))
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


@pytest.mark.parametrize("type_only", [False, True], ids=["run time", "type-only imports included"])
def test_no_module_import_cycle(type_only):
    """Not even through a lazy import (e2d0814: training.config <-> training.backends.trl_backend), nor through
    the imports of annotations (before: analysis.config <-> intervals, io, summaries, predictions through the
    statistics' Settings, and pipeline <-> tables through AnalysisResult)."""
    graph, state, cycles = _module_graph(type_only), {}, []

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
    # what the Snakefile does at every start: validate the whole config, check the locks, plan the runs and print
    # what the seeds can decide
    code = (
        "import sys\n"
        "from armlab import experiment\n"
        "from armlab.analysis import planning, predictions, waves\n"
        "from armlab.experiment.plan import RunPlan\n"
        f"config = experiment.load([{str(REPO / 'tests' / 'fixtures' / 'tiny.yaml')!r}])\n"
        "plan = RunPlan(config)\n"
        "planning.plan_text(config, plan.analysis, jobs=plan.out, cores=2)\n"
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


# a folder of tests/ -> the folder of the code it tests (the experiment lives in armlab/experiment/)
MIRRORED = {"experiment": "armlab/experiment"}
TEST_HELPERS = {"conftest", "hostile", "fork_server", "fork_shim"}


def test_the_tests_mirror_the_code_and_share_helpers_only_through_the_helper_modules():
    folders = [
        p.relative_to(REPO / "tests")
        for p in (REPO / "tests").rglob("*")
        if p.is_dir() and not {"fixtures", "__pycache__"} & set(p.parts)
    ]
    assert folders, "tests/ has no folders"
    for folder in folders:
        code = REPO / MIRRORED.get(str(folder), str(folder))
        assert code.is_dir(), f"tests/{folder}: no code folder {code.relative_to(REPO)} to mirror"
    modules = list((REPO / "tests").rglob("test_*.py"))
    names = [p.stem for p in modules]
    assert len(names) == len(set(names)), "two test modules share a name (they are imported by name)"
    for (
        path
    ) in modules:  # a test module imports helpers, never another test module (whose folder may not be on sys.path)
        for node in ast.walk(ast.parse(path.read_text())):
            imported = [node.module] if isinstance(node, ast.ImportFrom) else []
            imported += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            stray = [name for name in imported if name and name.split(".")[0] in names]
            assert not stray, f"{path.relative_to(REPO)} imports the test module {stray[0]}: move the helper out"
