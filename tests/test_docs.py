"""The README and docs/ as a user reads them: every shell command, config snippet and relative link is checked.

A page's fenced blocks say their language (``bash``, ``yaml``, ``python``, ``text``). Each is checked as what it is:

- a shell command by what its program offers for it: ``armlab`` by its own argument parser, ``snakemake`` by a dry
  run (``-n``, in a copy of the repository, forked from a process that has imported Snakemake: tests/fork_server.py),
  ``make`` by ``make -n`` (and the workflow runs it would start by their dry run), ``pip install`` by the extras it
  names, ``pytest`` by its paths and markers, ``lm_eval`` by lm-eval's parser; ``cp`` is run in the copy, so the
  commands after it see its file;
- a config by the validation the workflow runs at its start. A fragment says before its fence what it completes,
  ``<!-- snippet: completes config/config.yaml -->`` (it is validated as a file that includes that one and adds the
  fragment), ``<!-- snippet: analysis config completing FILE -->`` (an ``armlab analyze`` config, its ``input:``
  keys checked), ``<!-- snippet: excerpt of FILE -->`` (every key and value is that file's), or why it is not
  checked, ``<!-- snippet: illustrative (REASON) -->`` (it must still parse; so must a shell block marked so,
  whose commands name the user's own files);
- Python by compiling it and importing what it imports; ``<!-- snippet: runs -->`` runs it whole.

Commands in the prose (an inline ``armlab SUB --option``, ``snakemake --option``, ``make TARGET``) name subcommands,
options and targets that exist; every relative link and its anchor resolve; and docs/architecture.md's "where to add"
table cites files and names that exist. ``test_a_planted_*`` shows each check failing on a broken copy.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import re
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import fork_server
import pytest
import yaml
from conftest import REPO

from armlab import cli

PAGES = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
LINKED = [*PAGES, "CONTRIBUTING.md", "analysis/README.md"]  # pages whose links are checked too
LANGUAGES = {"bash", "yaml", "python", "text"}
NOT_ARMLABS = {"cd", "git", "ln"}  # shell built-ins and tools whose arguments are the user's own
DIRECTIVE = re.compile(r"<!-- snippet: (.+?) -->")


class DocError(AssertionError):
    """A command, snippet or link of the documentation that does not hold."""


@dataclass(frozen=True)
class Snippet:
    page: str  # the page's path relative to its root
    line: int
    language: str  # a fence's language, or "inline" for a code span of the prose
    text: str
    directive: str | None = None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks(root: Path, page: str) -> tuple[list[Snippet], list[tuple[int, str]]]:
    """The fenced blocks of a page (with the directive before each) and its prose, paragraph by paragraph."""
    lines = (root / page).read_text().splitlines()
    fences, prose, paragraph = [], [], []
    i = 0
    while i < len(lines):
        opened = re.match(r"^\s*```(\S*)", lines[i])
        if opened:
            start, body = i, []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i])
                i += 1
            before = [line for line in lines[:start] if line.strip()]
            directive = DIRECTIVE.fullmatch(before[-1].strip()) if before else None
            fences.append(Snippet(page, start + 1, opened.group(1), "\n".join(body), directive and directive.group(1)))
            paragraph = []
        elif lines[i].strip():
            if not paragraph:
                prose.append((i + 1, ""))
            paragraph.append(lines[i])
            prose[-1] = (prose[-1][0], " ".join(paragraph))
        else:
            paragraph = []
        i += 1
    return fences, prose


def snippets(root: Path, page: str) -> list[Snippet]:
    """Every fenced block of a page, and every code span of its prose that is a command."""
    fences, prose = _blocks(root, page)
    inline = [
        Snippet(page, line, "inline", span)
        for line, text in prose
        for span in re.findall(r"`([^`]+)`", text)
        if re.match(r"(\.venv/bin/)?(armlab|snakemake|make|pytest)( |$)|python -m armlab( |$)", span)
    ]
    return fences + inline


# ---- shell commands -----------------------------------------------------------------------------------------------


def commands(text: str) -> list[list[str]]:
    """The commands of a shell block: continued lines joined, comments dropped, ``&&`` chains split."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            out.append(words[:cut])
            words = words[cut + 1 :]
    return [c for c in out if c]


def usage_words(words: list[str]) -> list[str]:
    """A command as usage text writes it, as arguments: ``[--x X]`` is ``--x X``, ``...`` and ``…`` go."""
    return [w.strip("[]") for w in words if w.strip("[]") not in ("...", "…", "")]


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program a command runs (``.venv/bin/`` and ``python -m`` stripped) and its arguments."""
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words = words[1:]
    program, args = words[0].removeprefix(".venv/bin/"), words[1:]
    if program in ("python", "python3") and args[:1] == ["-m"]:
        program, args = args[1], args[2:]
    return program, args


def _parse_armlab(args: list[str], where: Snippet) -> None:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            cli.build_parser().parse_args(usage_words(args))
    except SystemExit as exit:
        if exit.code:
            raise DocError(f"{where}: armlab {' '.join(args)}: {err.getvalue().strip().splitlines()[-1]}") from None


def _subparsers() -> dict:
    return cli.build_parser()._subparsers._group_actions[0].choices


def _options_exist(parser, args: list[str], what: str, where: Snippet) -> None:
    for word in usage_words(args):
        option = word.split("=")[0]
        if option.startswith("-") and option not in parser._option_string_actions:
            raise DocError(f"{where}: {what}: no option {option}")


@functools.cache
def _snakemake_parser():
    from snakemake.cli import get_argument_parser

    return get_argument_parser()


@functools.cache
def make_targets(root: Path) -> frozenset[str]:
    return frozenset(
        name for line in (root / "Makefile").read_text().splitlines() for name in _targets_of(line) if name
    )


def _targets_of(line: str) -> list[str]:
    found = re.match(r"^([A-Za-z][\w -]*):(?!=)", line)
    return found.group(1).split() if found else []


_DRY_RUNS: dict[tuple, tuple[int, str]] = {}


def dry_run(workdir: Path, args: list[str]) -> tuple[int, str]:
    """``snakemake ARGS -n`` in the copy, once per workflow: a run and its dry run, with any cores, are one."""
    argv = [word for word in args if word not in ("-n", "--dry-run")]
    key = (workdir, *_without_cores(argv))
    if key not in _DRY_RUNS:
        run = fork_server.run_snakemake([*argv, "-n"], workdir)
        _DRY_RUNS[key] = run.returncode, (run.stdout + run.stderr)[-3000:]
    return _DRY_RUNS[key]


def _without_cores(argv: list[str]) -> list[str]:
    kept, skip = [], False
    for word in argv:
        if not skip and word not in ("--cores", "-c"):
            kept.append(word)
        skip = word in ("--cores", "-c")
    return kept


def check_command(words: list[str], where: Snippet, workdir: Path) -> None:
    """One command of a shell block, checked by what its program offers (see the module docstring)."""
    program, args = _program(words)
    if program in ("armlab", "armlab.cli"):
        _parse_armlab(args, where)
    elif program == "snakemake":
        code, output = dry_run(workdir, args)
        if code:
            raise DocError(f"{where}: snakemake {' '.join(args)} -n failed:\n{output}")
    elif program == "make":
        run = subprocess.run(["make", "-n", *args], cwd=workdir, capture_output=True, text=True)
        if run.returncode:
            raise DocError(f"{where}: make {' '.join(args)}: {run.stderr.strip()}")
        for line in run.stdout.splitlines():  # the workflow runs the target starts, by their dry run
            if re.match(r"\S*/snakemake ", line):
                check_command(shlex.split(line), where, workdir)
    elif program == "pip" and args[:1] == ["install"]:
        _check_pip_install(args[1:], where)
    elif program == "pytest":
        _check_pytest(args, where, workdir)
    elif program in ("lm_eval", "lm-eval", "armlab.evals.lm_eval_adapter"):
        _check_lm_eval(args, where)
    elif program == "cp":
        if not (workdir / args[0]).exists():
            raise DocError(f"{where}: cp: no file {args[0]}")
        shutil.copy(workdir / args[0], workdir / args[1])
    elif program not in NOT_ARMLABS:
        raise DocError(f"{where}: no check for the program {program!r}: add one to tests/test_docs.py")


def _check_pip_install(args: list[str], where: Snippet) -> None:
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for word in args:
        if word.startswith("-"):
            continue
        found = re.fullmatch(r"(\.|armlab)(?:\[([\w,]+)\])?", word)
        if not found:
            raise DocError(f"{where}: pip install {word}: not armlab or the checkout")
        unknown = set((found.group(2) or "").split(",")) - extras - {""}
        if unknown:
            raise DocError(f"{where}: pip install {word}: no extra {sorted(unknown)} in pyproject.toml")


def _check_pytest(args: list[str], where: Snippet, workdir: Path) -> None:
    markers = {m.split(":")[0] for m in tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
               ["ini_options"]["markers"]}  # fmt: skip
    for option, value in zip(args, args[1:] + [""]):
        if option == "-m":
            unknown = set(re.findall(r"\w+", value)) - markers - {"and", "or", "not"}
            if unknown:
                raise DocError(f"{where}: pytest -m {value}: no marker {sorted(unknown)}")
    for word in args:
        if word.startswith("tests") and not (REPO / word.split("::")[0]).exists():
            raise DocError(f"{where}: pytest: no {word}")


def _check_lm_eval(args: list[str], where: Snippet) -> None:
    from lm_eval._cli import HarnessCLI

    harness = HarnessCLI()
    argv = args if args[:1] and args[0] in harness._subparsers.choices else ["run", *args]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            harness._parser.parse_args(argv)
    except SystemExit as exit:
        if exit.code:
            raise DocError(f"{where}: lm_eval {' '.join(args)}: {err.getvalue().strip()}") from None


def check_inline(span: Snippet) -> None:
    """A command in the prose names a subcommand, options and targets that exist (it may leave out arguments)."""
    program, args = _program(shlex.split(span.text.replace("…", "")))
    if program in ("armlab", "armlab.cli"):
        if not args or args[0].startswith("-"):
            _options_exist(cli.build_parser(), args, "armlab", span)
        elif args[0] not in _subparsers():
            raise DocError(f"{span}: armlab has no subcommand {args[0]!r}")
        else:
            _options_exist(_subparsers()[args[0]], args[1:], f"armlab {args[0]}", span)
    elif program == "snakemake":
        _options_exist(_snakemake_parser(), args, "snakemake", span)
    elif program == "make":
        for target in (a for a in args if "=" not in a and not a.startswith("-")):
            if target not in make_targets(REPO):
                raise DocError(f"{span}: the Makefile has no target {target!r}")
    elif program == "pytest":
        _check_pytest(args, span, REPO)


# ---- configs and Python -------------------------------------------------------------------------------------------


def _is_part(part, whole) -> bool:
    """Every key and value of ``part`` is ``whole``'s (a list's items each one of ``whole``'s items)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and _is_part(v, whole[k]) for k, v in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and all(any(_is_part(p, w) for w in whole) for p in part)
    return part == whole


def check_yaml(snippet: Snippet, workdir: Path, monkeypatch) -> None:
    try:
        data = yaml.safe_load(snippet.text)
    except yaml.YAMLError as exc:
        raise DocError(f"{snippet}: not YAML: {exc}") from None
    directive = snippet.directive or ""
    if directive.startswith("illustrative"):
        return
    excerpt = re.fullmatch(r"excerpt of (\S+)", directive)
    if excerpt:
        if not _is_part(data, yaml.safe_load((workdir / excerpt.group(1)).read_text())):
            raise DocError(f"{snippet}: not what {excerpt.group(1)} says")
        return
    completes = re.fullmatch(r"(analysis config )?(?:completes|completing) (\S+)", directive)
    if not completes and not (isinstance(data, dict) and "experiment" in data):
        raise DocError(
            f"{snippet}: a config fragment: say before it what it completes (<!-- snippet: completes FILE -->)"
        )
    config = workdir / "config" / f"snippet_{snippet.page.replace('/', '_')}_{snippet.line}.yaml"
    include = f"include: {(workdir / completes.group(2)).resolve()}\n" if completes else ""
    config.write_text(include + snippet.text + "\n")
    monkeypatch.chdir(workdir)  # relative paths are the working directory's, as for the workflow
    try:
        if completes and completes.group(1):
            from armlab.analysis.config import load_config
            from armlab.analysis.inputs import input_format

            input_format(load_config(config))
        else:
            from armlab.experiment import load

            load([config])
    except (ValueError, ImportError) as exc:  # ConfigError, AnalysisInputError are ValueErrors
        raise DocError(f"{snippet}: {exc}") from None


def check_python(snippet: Snippet, tmp_path: Path, monkeypatch) -> None:
    try:
        tree = ast.parse(snippet.text)
    except SyntaxError as exc:
        raise DocError(f"{snippet}: not Python: {exc}") from None
    if snippet.directive != "runs":
        tree.body = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    monkeypatch.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(tree, str(snippet), "exec"), {"__name__": "docs"})
    except Exception as exc:
        raise DocError(f"{snippet}: {type(exc).__name__}: {exc}") from None


def check_snippet(snippet: Snippet, workdir: Path, tmp_path: Path, monkeypatch) -> None:
    if snippet.language == "inline":
        check_inline(snippet)
    elif snippet.language not in LANGUAGES:
        raise DocError(f"{snippet}: a fence says its language, one of {sorted(LANGUAGES)}")
    elif snippet.language == "bash":
        for words in commands(snippet.text):  # an illustrative block's commands only parse (a user's own files)
            if not (snippet.directive or "").startswith("illustrative"):
                check_command(words, snippet, workdir)
    elif snippet.language == "yaml":
        check_yaml(snippet, workdir, monkeypatch)
    elif snippet.language == "python":
        check_python(snippet, tmp_path, monkeypatch)


# ---- links --------------------------------------------------------------------------------------------------------


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    fenced = False
    for line in path.read_text().splitlines():
        if re.match(r"^\s*```", line):
            fenced = not fenced
        heading = None if fenced else re.match(r"^#{1,6} (.+)$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            found.add(slug if slug not in counts else f"{slug}-{counts[slug]}")
            counts[slug] = counts.get(slug, 0) + 1
    return found


def links(root: Path, page: str) -> list[tuple[int, str]]:
    _, prose = _blocks(root, page)
    return [(line, target) for line, text in prose for target in re.findall(r"\]\(([^)\s]+)\)", text)]


def check_link(root: Path, page: str, line: int, target: str) -> None:
    if re.match(r"[a-z]+:", target):  # https:, mailto:
        return
    path, _, anchor = target.partition("#")
    resolved = (root / page).parent / path if path else root / page
    if not resolved.exists():
        raise DocError(f"{page}:{line}: link {target}: no file {path}")
    if anchor and (resolved.is_dir() or anchor not in anchors(resolved)):
        raise DocError(f"{page}:{line}: link {target}: no heading #{anchor} in {path or page}")


# ---- the tests ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A copy of the repository's runnable part: configs and commands are checked there, and what ``cp`` writes
    stays there."""
    root = tmp_path_factory.mktemp("docs_checkout")
    for name in ("Snakefile", "environment.yml", "Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy2(REPO / name, root / name)
    for folder in ("profiles", "workflows", "config", "tests/fixtures"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


ALL_SNIPPETS = [s for page in PAGES for s in snippets(REPO, page)]
ALL_LINKS = [(page, line, target) for page in LINKED for line, target in links(REPO, page)]


@pytest.mark.parametrize("snippet", ALL_SNIPPETS, ids=[f"{s}:{s.language}" for s in ALL_SNIPPETS])
def test_every_command_and_snippet_of_the_docs_holds(snippet, workdir, tmp_path, monkeypatch):
    check_snippet(snippet, workdir, tmp_path, monkeypatch)


@pytest.mark.parametrize("page, line, target", ALL_LINKS, ids=[f"{p}:{n}:{t}" for p, n, t in ALL_LINKS])
def test_every_relative_link_and_anchor_resolves(page, line, target):
    check_link(REPO, page, line, target)


def test_the_readme_is_a_front_door():
    """At most 200 lines, its demo block written from the run (ci/quoted_results.py), every task page linked."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "<!-- quoted:demo results/demo -->\n" in readme and "\n<!-- /quoted:demo -->" in readme
    linked = {target.partition("#")[0] for _, target in links(REPO, "README.md")}
    assert {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")} <= linked


# ---- docs/architecture.md's "where to add" table ------------------------------------------------------------------

IDENTIFIER = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def where_to_add_rows(root: Path = REPO) -> list[tuple[str, list[str]]]:
    """The rows of the table under "Where to add things": what to add, and the code spans of the row."""
    text = (root / "docs" / "architecture.md").read_text()
    section = text[text.index("## Where to add things") :]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # the header row first
    return [(row.split(" | ")[0].strip("| "), re.findall(r"`([^`]+)`", row)) for row in rows]


@functools.cache
def tracked_files() -> tuple[str, ...]:
    return tuple(subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split())


def cited_file(token: str) -> Path | None:
    """The file a code span cites: a path from the repository's root, or the one tracked file whose path ends so
    (a file name, or a path from its package's folder: ``inputs/reading.py``)."""
    if (REPO / token).exists():
        return REPO / token
    found = [f for f in tracked_files() if f == token or f.endswith(f"/{token}")]
    return REPO / found[0] if len(found) == 1 else None


@functools.cache
def definitions() -> str:
    """Every tracked Python file, and the config schema, as one text to search for definitions in."""
    paths = [f for f in tracked_files() if f.endswith(".py")] + ["workflows/schemas/config.schema.yaml"]
    return "\n".join((REPO / f).read_text() for f in paths)


def defined(name: str) -> bool:
    """``name`` is a class, function, assignment, field or config key somewhere in the code."""
    return bool(re.search(rf"^\s*((class|def)\s+{name}\b|{name}\s*(:[^=\n]*)?=|{name}:)", definitions(), re.M))


def check_where_to_add(what: str, spans: list[str]) -> None:
    """Every file a row cites exists, and every name it cites is defined: a dotted ``armlab.…`` name imports, any
    other name is a word of one of the row's files or defined in the code (a class, function, assignment, field or
    config key)."""
    files = []
    for span in spans:
        if re.fullmatch(r"[\w./-]+\.(py|yaml|smk|md|toml)|[\w.-]+/[\w./-]*", span) and not re.search(r"[<{*]", span):
            found = cited_file(span)
            if found is None:
                raise DocError(f"docs/architecture.md, where to add {what}: no file {span}")
            files.append(found)
    texts = [f.read_text() for f in files if f.is_file()]
    for span in spans:
        if not IDENTIFIER.fullmatch(span) or cited_file(span) is not None:
            continue
        name = span.split(".")[-1]
        if span.startswith("armlab."):
            module, _, attribute = span.rpartition(".")
            try:
                __import__(span)
            except ImportError:
                if not hasattr(__import__(module, fromlist=[attribute]), attribute):
                    raise DocError(f"docs/architecture.md, where to add {what}: no {span}") from None
        elif not (any(re.search(rf"\b{re.escape(name)}\b", text) for text in texts) or defined(name)):
            raise DocError(f"docs/architecture.md, where to add {what}: {span} is defined nowhere")


@pytest.mark.parametrize("what, spans", where_to_add_rows(), ids=[what for what, _ in where_to_add_rows()])
def test_the_where_to_add_table_cites_files_and_names_that_exist(what, spans):
    check_where_to_add(what, spans)


# ---- the checks catch what they claim to ----------------------------------------------------------------------------

# (what is planted in a copy of the README: the text replaced, its replacement, and what the failure says)
PLANTED = {
    "a config fragment naming an unknown estimator": ("rloo: {estimator: rloo}", "rloo: {estimator: rlooo}", "rlooo"),
    "a config snippet that is not YAML": ("  grpo: {}\n  rloo:", "  grpo: {}\n rloo:", "not YAML"),
    "an excerpt that is not its file's": ("scale: percent}", "scale: fraction}", "not what config/experiments"),
    "an armlab option that does not exist": ("plan config/my.yaml ", "plan config/my.yaml --seedz 12 ", "--seedz"),
    "a subcommand that does not exist": ("armlab plan config/config.yaml --seeds 12", "armlab plans config", "plans"),
    "a workflow whose config is not there": ("real_architecture.yaml --cores", "real_architecture.yml --cores", "yml"),
    "a make target that does not exist": ("make demo   #", "make demos   #", "demos"),
    "an extra that does not exist": ("pip install .     #", "pip install '.[analysis]'     #", "no extra"),
    "Python that fails": ('reference="grpo"))))', 'reference="grp"))))', "grp"),
    "a fence without its language": ("```python", "```", "says its language"),
    "a link to a page that does not exist": ("(docs/planning.md)", "(docs/planing.md)", "no file docs/planing.md"),
    "a link to a heading that does not exist": ("#numerics-what-the-bits-hold-on", "#numerics", "no heading #numerics"),
}


def _failures(root: Path, workdir: Path, tmp_path: Path, monkeypatch, known: set) -> list[str]:
    """The checks of the README under ``root`` that are not in ``known`` (the real README's), and what each says."""
    failures = []
    for snippet in snippets(root, "README.md"):
        if (snippet.language, snippet.text, snippet.directive) not in known:
            try:
                check_snippet(snippet, workdir, tmp_path, monkeypatch)
            except DocError as error:
                failures.append(str(error))
    for line, target in links(root, "README.md"):
        if ("link", target, None) not in known:
            try:
                check_link(root, "README.md", line, target)
            except DocError as error:
                failures.append(str(error))
    return failures


@pytest.mark.parametrize("planted", PLANTED, ids=list(PLANTED))
def test_a_planted_broken_snippet_command_or_link_is_caught(planted, workdir, tmp_path, monkeypatch):
    """A copy of the README with one thing broken fails its check, naming the page and line; the checks of the
    unbroken README pass (the tests above)."""
    old, new, said = PLANTED[planted]
    readme = (REPO / "README.md").read_text()
    assert readme.count(old) == 1, old
    root = tmp_path / "copy"
    shutil.copytree(REPO / "docs", root / "docs")
    (root / "README.md").write_text(readme.replace(old, new))
    known = {(s.language, s.text, s.directive) for s in snippets(REPO, "README.md")}
    known |= {("link", target, None) for _, target in links(REPO, "README.md")}
    failures = _failures(root, workdir, tmp_path, monkeypatch, known)
    assert len(failures) == 1 and said in failures[0] and failures[0].startswith("README.md:"), failures


def test_a_planted_false_row_of_the_where_to_add_table_is_caught():
    rows = dict(where_to_add_rows())
    spans = rows["an external benchmark and its verifier"]
    check_where_to_add("an external benchmark", spans)
    for wrong, said in (("evals/catalog.py", "no file evals/catalog.py"), ("FORMAT_REGISTRY", "defined nowhere")):
        with pytest.raises(DocError, match=re.escape(said)):
            check_where_to_add("an external benchmark", [*spans, wrong])
