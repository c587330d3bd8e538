"""The command backend: run a user's trainer (verl, OpenRLHF …) once per (arm, seed) from a command template.

The template (``command.template``) holds ``str.format`` placeholders: ``{arm}``, ``{seed}``, ``{estimator}``,
``{data_policy}`` (registry names), ``{output_dir}``, every scalar recipe field (``{steps}``, ``{lr}`` …) and the
fields that ``command.estimator_fields`` declares for the arm's estimator; anything but a plain ``{name}`` from that
set is rejected at config validation and again before running.

By default the template runs without a shell, as an argument vector: a list holds one argument per item, a string is
split into words as ``shlex.split`` splits them (quotes and backslashes honoured). Placeholders are filled inside each
word after the split, so a value is part of one literal argument whatever it holds and never becomes shell code. Shell
syntax that only a shell would act on is refused rather than passed on literally: outside quotes ``;`` ``&`` ``|``
``<`` ``>`` ``(`` ``)``, a newline and a ``#`` comment, outside single quotes ``$`` and backticks; so are a
placeholder in the first word (a value would choose the program) and a leading ``NAME=value`` (write
``env NAME=value program …``). Globs and ``~`` are not expanded.

``command.shell: true`` is the explicit escape hatch for a template that needs the shell (``&&``, redirections,
variables): the string runs under ``/bin/bash -c`` with every value shell-quoted (``shlex.quote``), which keeps it
one literal word only where the shell parses the template once: so a placeholder written inside quotes or inside
``$(...)`` and any template with a heredoc (``<<``, whose body is not quoted) or backticks (parsed twice) are
rejected, and so is a placeholder right after a backslash (which would escape the opening quote).

In both modes a placeholder passed to a command that parses its arguments as code again (``eval``,
``source``/``.``, a shell or an interpreter with ``-c``/``-e``, ``ssh``, ``su -c``, ``watch``) is refused: pass
values to a script file as arguments instead. After the command exits 0, the checkpoint is the last match (in sorted
order) of the glob ``command.checkpoint`` under ``{output_dir}`` (a relative glob that stays inside it, checked at
validation); ``manifest.json`` records it, with the sha256 of each of its files, for evaluation.

    python -m training.backends.command --config results/<exp>/config/train/<arm>.json --arm grpo --seed 1 \
        --out results/<exp>/runs/grpo/seed-1
"""

from __future__ import annotations

import re
import shlex
import shutil
import string
import subprocess
import time
from pathlib import Path, PurePosixPath

from armlab import registration
from armlab.files import one_line_errors
from training.recipe import resolve_arm
from training.utils import config_hash, run_arguments, write_manifest

RUN_FIELDS = ("arm", "seed", "estimator", "data_policy", "output_dir")
TRAINER_DIR = "trainer"
# commands that run their argument text as code: always, with -c (shells, su), or with -c/-e (interpreters)
REPARSE_ALWAYS = ("eval", "source", "ssh", "watch")
REPARSE_WITH_C = ("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox", "su")
REPARSE_WITH_C_OR_E = ("python", "python3", "perl", "ruby", "node")
COMMAND_SEPARATORS = (";", "&&", "||", "|", "|&", "&", "(", ")", ";;")
# what only a shell acts on, refused in a template run without one: outside quotes (a newline escaped or not) ...
SHELL_OPERATORS = ";&|<>()\n"
# ... and, outside single quotes, expansions
SHELL_EXPANSIONS = "$`"
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
FIELD_MARK = "ARMLABFIELD"  # stands for a placeholder in the words that the re-parser check reads


def template_fields(template: str | list[str], shell: bool = False) -> list[str]:
    """The placeholder names of ``template``, in order; ``ValueError`` (starting "template:") for an unsafe template."""
    if not shell:
        return _argv_fields(template)
    if not isinstance(template, str):
        raise ValueError("template: with command.shell: true the template is one command line; give it as a string")
    return _shell_fields(template)


def _placeholders(text: str) -> list[tuple[str, str | None]]:
    """``(literal, name)`` pairs of ``text`` (name None at the end); ``ValueError`` unless all are plain {name}."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:
        raise ValueError(
            f"template: {err} in {text!r}; write {{field}} for a value, {{{{ or }}}} for a brace"
        ) from None
    for _, name, spec, conversion in parsed:
        if name is not None and (not name.isidentifier() or spec or conversion):
            raise ValueError(
                f"template: placeholder {{{name}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} is not a plain name; write {{field}} only"
            )
    return [(literal, name) for literal, name, _, _ in parsed]


def _marked(text: str) -> str:
    """``text`` with FIELD_MARK for each placeholder (a literal brace for ``{{`` and ``}}``)."""
    return "".join(literal + (FIELD_MARK if name is not None else "") for literal, name in _placeholders(text))


def argv_words(template: str | list[str]) -> list[str]:
    """A template's words when run without a shell: a list as it is, a string by ``shlex.split`` minus shell syntax."""
    if not isinstance(template, str):
        return template
    context: list[str] = []
    for i, char in enumerate(template):
        bare = not context  # neither quoted nor escaped
        if (
            (char in SHELL_OPERATORS and (bare or char == "\n" and context[-1] == "\\"))
            or (char in SHELL_EXPANSIONS and (bare or context[-1] == '"'))
            or (char == "#" and bare and (i == 0 or template[i - 1] in " \t\n"))  # a comment
        ):
            raise ValueError(
                f"template: {char!r} at character {i} is shell syntax, but the template runs without a shell (its "
                f"words split as by shlex.split); quote it to pass it literally, or set command.shell: true"
            )
        context = _shell_context(char, context)
    return shlex.split(template)


def _argv_fields(template: str | list[str]) -> list[str]:
    """:func:`template_fields` without a shell: no shell syntax, placeholder program, ``NAME=value`` or re-parser."""
    words = argv_words(template)
    if not words:
        raise ValueError("template: no program to run; expected a command and its arguments")
    marked = [_marked(word) for word in words]
    if FIELD_MARK in marked[0]:
        raise ValueError(
            f"template: the program {words[0]!r} holds a placeholder, so a value would choose what runs; "
            f"write the program's name or path"
        )
    if ASSIGNMENT.match(words[0]):
        raise ValueError(
            f"template: {words[0]!r} assigns a variable, which needs a shell; write env {words[0]} <program> …"
        )
    _check_simple_command(marked)
    return [name for word in words for _, name in _placeholders(word) if name is not None]


def _shell_fields(template: str) -> list[str]:
    """:func:`template_fields` for ``command.shell``: each value stays one shell-quoted word, fed to no re-parser."""
    fields, context = [], []
    for literal, name in _placeholders(template):
        context = _shell_context(literal, context)
        if name is None:
            continue
        if context and context[-1] == "\\":
            raise ValueError(
                f"template: placeholder {{{name}}} follows a backslash, which would escape the quote around its "
                f"value and let the shell run it; remove the backslash"
            )
        if "$(" in context:
            raise ValueError(
                f"template: placeholder {{{name}}} sits inside $(...), where the shell parses it again; "
                f"pass the value as a plain argument"
            )
        if context and context[-1] in "'\"":
            raise ValueError(
                f"template: placeholder {{{name}}} sits inside {context[-1]}-quotes; values are "
                f"shell-quoted already, so write it unquoted"
            )
        fields.append(name)
    _refuse_reparsing_commands(template)
    return fields


def _refuse_reparsing_commands(template: str) -> None:
    """``ValueError`` for a placeholder in a simple command of shell ``template`` that runs its arguments as code."""
    lexer = shlex.shlex(_marked(template).replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    redirected = False  # the word after a redirection is its file, not an argument
    for token in [*lexer, ";"]:
        if token in COMMAND_SEPARATORS:
            _check_simple_command(words)
            words, redirected = [], False
        elif token and set(token) <= set(lexer.punctuation_chars):
            redirected = True
        elif redirected:
            redirected = False
        else:
            words.append(token)


def _check_simple_command(words: list[str]) -> None:
    """``ValueError`` if a command among ``words`` (FIELD_MARK for placeholders) runs its first placeholder as code."""
    marked = [i for i, word in enumerate(words) if FIELD_MARK in word]
    if not marked:
        return
    before = words[: marked[0]]
    glued = words[marked[0]].split(FIELD_MARK)[0].removesuffix("=")  # an option written onto it: -c{arm}, --eval=
    for j, word in enumerate(before):
        program = word.rsplit("/", 1)[-1]
        options = [*before[j + 1 :], glued]
        flags = [w for w in options if re.fullmatch(r"-[A-Za-z]+", w)]  # short-option clusters
        reparses = (
            program in REPARSE_ALWAYS
            or (program == "." and j == 0)
            or (program in REPARSE_WITH_C and any("c" in f for f in flags))
            or (
                program in REPARSE_WITH_C_OR_E
                and (any(f[-1] in "ce" for f in flags) or {"--eval", "--command"} & set(options))
            )
        )
        if reparses:
            raise ValueError(
                f"template: a placeholder is passed to {word!r}, which runs its arguments as code again, so a value "
                f"could run as a command; call a script file with the values as its arguments instead"
            )


def _shell_context(text: str, context: list[str]) -> list[str]:
    """The shell constructs open after ``text`` (innermost last: ``'``, ``"``, ``$(``, ``(``, and ``\\`` for a
    backslash escaping the next character), from ``context``.

    Raises ``ValueError`` for a heredoc or a backtick outside single quotes.
    """
    context = list(context)
    escaped = bool(context) and context[-1] == "\\"
    if escaped:
        context.pop()
    i = 0
    while i < len(text):
        char, inner = text[i], context[-1] if context else None
        if escaped:
            escaped = False
        elif inner == "'":
            if char == "'":
                context.pop()
        elif char == "\\":
            escaped = True
        elif char == "`":
            raise ValueError(
                "template: backticks run a command whose text the shell parses again; use $(...) "
                "without placeholders inside, or a plain argument"
            )
        elif text.startswith("$(", i):
            context.append("$(")
            i += 1
        elif inner == '"':
            if char == '"':
                context.pop()
        elif text.startswith("<<", i):
            raise ValueError(
                "template: a heredoc (<<) does not quote its body, so a value's $(...) would run; "
                "pass values as arguments"
            )
        elif char in "'\"":
            context.append(char)
        elif char == "(" and inner in ("$(", "("):
            context.append("(")
        elif char == ")" and inner in ("$(", "("):
            context.pop()
        i += 1
    return context + ["\\"] if escaped else context


def template_values(recipe: dict, arm: str, seed: int, output_dir: str, estimator_fields: dict) -> dict:
    """Every value a template may use for this run: run fields, scalar recipe fields, the estimator's fields."""
    values = {key: value for key, value in recipe.items() if not isinstance(value, (dict, list))}
    values.update(
        arm=arm,
        seed=seed,
        estimator=recipe["estimator"]["name"],
        data_policy=recipe["data_policy"]["name"],
        output_dir=output_dir,
    )
    values.update(estimator_fields.get(recipe["estimator"]["name"], {}))
    return values


def allowed_fields(recipe: dict, estimator_fields: dict) -> set[str]:
    """Every placeholder name some arm could fill."""
    extra = {field for fields in estimator_fields.values() for field in fields}
    return set(RUN_FIELDS) | set(template_values(recipe, "", 0, "", {})) | extra


def check_arm(command: dict, recipe: dict, overrides: dict) -> None:
    """Reject a template or an arm the command backend cannot run faithfully (``ValueError`` naming the problem).

    An arm's override must reach the trainer: an overridden recipe field must appear in the template (the
    estimator through ``{estimator}`` or one of its ``estimator_fields``), and estimator or data-policy
    parameters cannot be passed at all — only names.
    """
    fields = template_fields(command["template"], command["shell"])
    pattern = PurePosixPath(command["checkpoint"])
    if pattern.is_absolute() or ".." in pattern.parts:
        raise ValueError(
            f"checkpoint: {command['checkpoint']!r} must be a glob relative to {{output_dir}} that stays inside it "
            f"(no absolute path, no '..')"
        )
    unknown = sorted(set(fields) - allowed_fields(recipe, command["estimator_fields"]))
    if unknown:
        raise ValueError(
            f"template: unknown placeholder(s) {unknown}; allowed are run fields {list(RUN_FIELDS)}, "
            f"scalar recipe fields and the fields of command.estimator_fields"
        )
    estimator = recipe["estimator"]["name"]
    missing = [f for f in fields if f not in template_values(recipe, "", 0, "", command["estimator_fields"])]
    if missing:
        raise ValueError(
            f"estimator: command.estimator_fields.{estimator} does not define {missing}, which the template uses"
        )
    for field in ("estimator", "data_policy"):
        if len(recipe[field]) > 1:
            raise ValueError(
                f"{field}: parameters {sorted(set(recipe[field]) - {'name'})} cannot be passed to the "
                f"command backend; only the name is substituted"
            )
    estimator_used = "estimator" in fields or any(f in command["estimator_fields"].get(estimator, {}) for f in fields)
    for field in overrides:
        used = estimator_used if field == "estimator" else field in fields
        if not used:
            raise ValueError(
                f"{field}: this arm overrides {field!r} but the command template never passes it to "
                f"the trainer (no {{{field}}} placeholder), so the ablation would silently do nothing"
            )


def render(template: str | list[str], values: dict, shell: bool = False) -> list[str]:
    """The checked ``template``'s argument vector with ``values``: its words filled in, or bash and the quoted line."""
    template_fields(template, shell)
    text = {key: str(value) for key, value in values.items()}
    if shell:
        return ["/bin/bash", "-c", template.format(**{key: shlex.quote(value) for key, value in text.items()})]
    return [word.format(**text) for word in argv_words(template)]


def find_checkpoint(output_dir: Path, pattern: str) -> Path:
    """The last match (sorted) of the glob ``pattern`` under ``output_dir`` (a match elsewhere does not count)."""
    matches = sorted(m for m in output_dir.glob(pattern) if m.resolve().is_relative_to(output_dir))
    if not matches:
        raise FileNotFoundError(
            f"command backend: no checkpoint matches {pattern!r} under {output_dir} "
            f"(command.checkpoint); did the trainer write elsewhere?"
        )
    return matches[-1].resolve()


def run(config: dict, arm: str, seed: int, out_dir: Path) -> Path:
    """Run the arm's command into ``out_dir/trainer``, locate its checkpoint, write ``out_dir/manifest.json``."""
    command, recipe = config["command"], resolve_arm(config, arm)
    output_dir = (out_dir / TRAINER_DIR).resolve()
    shutil.rmtree(output_dir, ignore_errors=True)  # a failed earlier attempt must not supply the checkpoint
    output_dir.mkdir(parents=True)
    values = template_values(recipe, arm, seed, str(output_dir), command["estimator_fields"])
    argv = render(command["template"], values, command["shell"])
    print(f"[{arm} seed {seed}] $ {argv[-1] if command['shell'] else shlex.join(argv)}", flush=True)
    start = time.perf_counter()
    subprocess.run(argv, check=True)
    checkpoint = find_checkpoint(output_dir, command["checkpoint"])
    write_manifest(
        out_dir,
        {
            "experiment": config["experiment"],
            "arm": arm,
            "seed": seed,
            "backend": "command",
            "recipe": recipe,
            "command": argv,
            "checkpoint": str(checkpoint),
            "config_hash": config_hash(config),
            "config": config,
            "seconds": time.perf_counter() - start,
            **registration.record(out_dir),
        },
        checkpoint.relative_to(out_dir.resolve()).as_posix(),
    )
    print(f"[{arm} seed {seed}] checkpoint {checkpoint}", flush=True)
    return checkpoint


@one_line_errors
def main(argv=None) -> None:
    config, args = run_arguments(__doc__.splitlines()[0], argv=argv)
    run(config, args.arm, args.seed, args.out)


if __name__ == "__main__":
    main()
