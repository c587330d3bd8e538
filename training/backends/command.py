"""The command backend: run a user's trainer (verl, OpenRLHF …) once per (arm, seed) from a command template.

The template (``command.template``) holds ``str.format`` placeholders: ``{arm}``, ``{seed}``, ``{estimator}``,
``{data_policy}`` (registry names), ``{output_dir}``, every scalar recipe field (``{steps}``, ``{lr}`` …) and the
fields that ``command.estimator_fields`` declares for the arm's estimator; anything but a plain ``{name}`` from that
set is rejected at config validation and again before running. Those fields, the only free-form values, must be names
(armlab's name rule), numbers or booleans.

By default the template runs without a shell, as an argument vector: a list holds one argument per item, a string is
split into words as ``shlex.split`` splits them (quotes and backslashes honoured). Placeholders are filled inside each
word after the split, so a value is part of one literal argument whatever it holds and never becomes shell code. Shell
syntax that only a shell would act on is refused rather than passed on literally: outside quotes ``;`` ``&`` ``|``
``<`` ``>`` ``(`` ``)``, a newline and a ``#`` comment, outside single quotes ``$`` and backticks; so are a
placeholder in the program's word (also after a wrapper such as ``env``, ``timeout``, ``nice``, ``sudo``, ``xargs``:
a value would choose the program), a leading ``NAME=value`` (write ``env NAME=value program …``) and an empty word.
Globs and ``~`` are not expanded.

``command.shell: true`` is the explicit escape hatch for a template that needs the shell (``&&``, redirections,
variables): the string runs under ``/bin/bash -c`` with every value shell-quoted (``shlex.quote``), which keeps it
one literal word only where the shell parses the template once: so a placeholder written inside quotes or inside
``$(...)`` and any template with a heredoc (``<<``, whose body is not quoted) or backticks (parsed twice) are
rejected, and so is a placeholder right after a backslash (which would escape the opening quote), inside a process
substitution ``<(...)``, in a ``NAME=value`` assignment (its variable may later expand unquoted), or piped into a
shell or interpreter that reads its program from stdin.

In both modes a placeholder passed to a command that parses its arguments as code again (``eval``,
``source``/``.``, ``trap``, a shell or an interpreter with ``-c``/``-e``/``-p``/``-m`` …, matched by family as in
``python3.11``, ``env -S``, ``sudo -s``, ``git -c``, awk or sed program text, ``ssh``, ``watch``) is refused: pass
values to a script file as arguments instead. So is a placeholder that a command runs or keeps for a later one:
the program after ``find -exec``, the script an interpreter runs (``bash {arm}``), an argument of ``set``,
``printf -v``, ``let`` or ``getopts``, a value piped into ``read`` or ``mapfile`` (a later ``bash -c "$1"`` or
``eval "$x"`` would run it). That refusal is a best effort over known commands; what holds is that without a shell
a value is one literal argument, and that values are names, numbers and the run's own output folder (a program
that runs its arguments as code itself, a user's script or ``torchrun {arm}``, is not detected). After the command
exits 0, the checkpoint is the last match (in sorted order) of the glob ``command.checkpoint`` under
``{output_dir}`` (a relative glob that stays inside it, checked at validation); ``manifest.json`` records it, with
the sha256 of each of its files, for evaluation.

    python -m armlab.training.backends.command --config results/<exp>/config/train/<arm>.json --arm grpo --seed 1 \
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
from armlab.configfile import NAME_PATTERN, NAME_RULE
from armlab.files import one_line_errors, write_manifest
from armlab.spec import Recipe
from armlab.training.recipe import resolve_arm
from armlab.training.utils import config_hash, run_arguments

RUN_FIELDS = ("arm", "seed", "estimator", "data_policy", "output_dir")
TRAINER_DIR = "trainer"
# commands that run their argument text as code: always, or (program family: a name, optionally digits and dots, as
# in python3.11) after one of its short-option letters or long options
REPARSE_ALWAYS = ("eval", "source", "ssh", "watch", "trap", "alias")
SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox", "csh", "tcsh")
CODE_OPTIONS = {
    **dict.fromkeys(SHELLS, ("c", ())),
    "su": ("c", ("--command",)),
    **dict.fromkeys(("pwsh", "powershell"), ("cCeE", ())),
    **dict.fromkeys(("python", "pypy"), ("c", ("--command",))),
    "perl": ("eE", ()),
    "ruby": ("e", ()),
    **dict.fromkeys(("node", "nodejs"), ("ep", ("--eval", "--print"))),
    "php": ("rBRFE", ()),
    **dict.fromkeys(("Rscript", "lua", "luajit"), ("e", ())),
    "env": ("S", ("--split-string",)),
    **dict.fromkeys(("sudo", "doas"), ("si", ("--shell", "--login"))),
    "git": ("c", ("--config-env",)),
}
# commands whose first operand is program text unless a script file (-f) is given; their options taking a value
PROGRAM_TEXT = {**dict.fromkeys(("awk", "gawk", "mawk", "nawk"), "Fvf"), "sed": "ef"}
# commands that run the next word as the program; their options taking a separate value (short letters, long names)
WRAPPERS = {
    "env": ("uC", ("--unset", "--chdir")),
    "timeout": ("sk", ("--signal", "--kill-after")),
    "nice": ("n", ("--adjustment",)),
    "nohup": ("", ()),
    "xargs": ("adEILnPs", ("--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars")),
    "sudo": ("CDghprTuU", ("--user", "--group", "--host", "--prompt", "--chdir", "--role", "--type", "--other-user")),
    "doas": ("Cu", ()),
    "exec": ("a", ()),
    "command": ("", ()),
    "stdbuf": ("ioe", ("--input", "--output", "--error")),
    "setsid": ("", ()),
    "time": ("fo", ("--format", "--output")),
    "ionice": ("cnp", ("--class", "--classdata", "--pid")),
    "taskset": ("", ()),
    "chrt": ("", ()),
}
WRAPPER_OPERAND = re.compile(r"[0-9][0-9A-Fa-fx.,:-]*[smhd]?")  # a duration, priority, CPU mask or list
# shell options taking a separate value: their value is no script file
VALUE_OPTIONS = ("-o", "+o", "-O", "+O", "-W", "-X")
STDIN_READERS = (
    *SHELLS,
    "python",
    "pypy",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "lua",
    "luajit",
    "pwsh",
    "powershell",
)
DECLARATIONS = ("export", "declare", "typeset", "local", "readonly")
# commands that put their arguments (or stdin) into variables or positional parameters, which a later command may
# expand unquoted or evaluate: set -- {v}; bash -c "$1", printf -v x {v}; eval "$x", let (arithmetic reads names)
VARIABLE_SETTERS = ("set", "let", "getopts", "read", "mapfile", "readarray")
FIND_COMMANDS = ("-exec", "-execdir", "-ok", "-okdir")  # find runs the next word as a program
# words before a command that the shell reads as part of a compound command, not as the program
SHELL_KEYWORDS = ("{", "!", "if", "then", "elif", "else", "do", "while", "until")
SUBSTITUTIONS = ("$(", "<(", ">(")  # a command or process substitution: its text is parsed again
SUBSHELLS = (*SUBSTITUTIONS, "(")
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
    """``text`` with each placeholder's name between two FIELD_MARKs (a literal brace for ``{{`` and ``}}``)."""
    return "".join(
        literal + (f"{FIELD_MARK}{name}{FIELD_MARK}" if name else "") for literal, name in _placeholders(text)
    )


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
    if "" in words:
        raise ValueError(
            f"template: word {words.index('') + 1} is empty; write the program and each argument as a non-empty word"
        )
    if ASSIGNMENT.match(words[0]):
        raise ValueError(
            f"template: {words[0]!r} assigns a variable, which needs a shell; write env {words[0]} <program> …"
        )
    _check_simple_command([_marked(word) for word in words])
    return [name for word in words for _, name in _placeholders(word) if name is not None]


def _shell_fields(template: str) -> list[str]:
    """:func:`template_fields` for ``command.shell``: each value stays one shell-quoted word, fed to no re-parser."""
    fields: list[str] = []
    context: list[str] = []
    for literal, name in _placeholders(template):
        context = _shell_context(literal, context)
        if name is None:
            continue
        if context and context[-1] == "\\":
            raise ValueError(
                f"template: placeholder {{{name}}} follows a backslash, which would escape the quote around its "
                f"value and let the shell run it; remove the backslash"
            )
        opened = [c for c in SUBSTITUTIONS if c in context]
        if opened:
            raise ValueError(
                f"template: placeholder {{{name}}} sits inside {opened[0]}...), where the shell parses it again; "
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
    lexer = shlex.shlex(_marked(template).replace("\\\n", "").replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    redirected = False  # the word after a redirection is its file, not an argument
    fed = False  # a value reaches the current command's stdin: an earlier stage of its pipeline holds one
    outer: list[list[str]] = []  # the words of the commands around open process substitutions
    for token in [*lexer, ";"]:
        if token in ("<(", ">("):
            outer.append(words)
            words, redirected = [], False
        elif token == ")" and outer:
            _check_simple_command(words)
            words, redirected = outer.pop(), False
        elif token in COMMAND_SEPARATORS:
            _check_simple_command(words)
            if fed:
                _check_fed_command(words)
            fed = token in ("|", "|&") and (fed or any(FIELD_MARK in word for word in words))
            words, redirected = [], False
        elif token and set(token) <= set(lexer.punctuation_chars):
            redirected = True
        elif redirected:
            redirected = False
        else:
            words.append(token)


def _check_fed_command(words: list[str]) -> None:
    """``ValueError`` if ``words``, fed a value on stdin, run it as program text or as xargs' arguments."""
    programs = _programs(words)
    if any(_family(words[i]) == "xargs" for i in programs[:-1]):  # xargs running a command: the value, its argument
        _check_simple_command([*words, f"{FIELD_MARK}stdin{FIELD_MARK}"])
    setter = next((words[i] for i in programs if _family(words[i]) in VARIABLE_SETTERS[3:]), None)
    if setter:
        raise ValueError(
            f"template: a value is piped into {setter!r}, which puts it into a variable that a later command could "
            f"expand unquoted or run; pass the value as a plain argument"
        )
    if not programs or _family(words[programs[-1]]) not in STDIN_READERS:
        return
    i = programs[-1] + 1
    while i < len(words) and words[i] not in ("-", "-s"):
        if not words[i].startswith(("-", "+")):
            return  # a script file
        i += 2 if words[i] in VALUE_OPTIONS else 1
    raise ValueError(
        f"template: a value is piped into {words[programs[-1]]!r}, which reads its program from stdin, so the value "
        f"would run as code; give it a script file"
    )


def _family(word: str) -> str:
    """The program family of ``word``: its file name less a version suffix (``/usr/bin/python3.11`` -> python)."""
    name = word.rsplit("/", 1)[-1]
    return name if name == "." else re.sub(r"[0-9.]+$", "", name)


def _programs(words: list[str]) -> list[int]:
    """The indices of the programs that ``words`` runs: the first after assignments, then each wrapper's command."""
    i = 0
    while i < len(words) and (ASSIGNMENT.match(words[i]) or words[i] in SHELL_KEYWORDS):
        i += 1
    programs = [i]
    while i < len(words) and FIELD_MARK not in words[i] and _family(words[i]) in WRAPPERS:
        (letters, long_options), i = WRAPPERS[_family(words[i])], i + 1
        while i < len(words) and (
            words[i].startswith("-") or ASSIGNMENT.match(words[i]) or WRAPPER_OPERAND.fullmatch(words[i])
        ):
            takes_value = words[i] in long_options or (len(words[i]) == 2 and words[i][1] in letters)
            i += 2 if takes_value and words[i][0] == "-" else 1
        programs.append(i)
    if i < len(words) and _family(words[i]) == "find":  # find . -exec PROGRAM ... ;
        programs += [j + 1 for j in range(i + 1, len(words)) if words[j] in FIND_COMMANDS]
    return [i for i in programs if i < len(words)]


def _is_program_text(words: list[str], j: int, first: int, option: str) -> bool:
    """Whether the placeholder at ``words[first]`` is program text of the awk or sed at ``words[j]``."""
    if {option, words[first - 1]} & {"-e", "--expression", "--source"}:
        return True  # the value of a program-text option, glued or not: sed -e s/x/{v}/
    operands, i = False, j + 1
    while i < first:
        word = words[i]
        if word.startswith(("-f", "-e", "--file", "--expression", "--source")):
            return False  # the program comes from an option
        operands = operands or not word.startswith("-")
        i += 2 if len(word) == 2 and word[0] == "-" and word[1] in PROGRAM_TEXT[_family(words[j])] else 1
    return not operands


def _check_simple_command(words: list[str]) -> None:
    """``ValueError`` if a value in marked ``words`` could choose the program, set a variable or run as code."""
    marked = [i for i, word in enumerate(words) if FIELD_MARK in word]
    if not marked:
        return
    first = marked[0]
    before = words[:first]
    glued = words[first].split(FIELD_MARK)[0].removesuffix("=")  # an option written onto it: -c{arm}, --eval=
    option = glued or (before[-1] if before else "")  # the option whose value the placeholder may be
    for j, word in enumerate(before):
        program = _family(word)
        options = [*before[j + 1 :], glued]
        flags = [w for w in options if re.fullmatch(r"-[A-Za-z]+", w)]  # short-option clusters
        letters, long_options = CODE_OPTIONS.get(program, ("", ()))
        reparses = (
            program in REPARSE_ALWAYS
            or (program == "." and j == 0)
            or any(set(f[1:]) & set(letters) for f in flags)
            or bool(set(long_options) & set(options))
            or (program in ("python", "pypy") and re.fullmatch(r"-[A-Za-z]*m", option) is not None)  # a module
            or (program in PROGRAM_TEXT and _is_program_text(words, j, first, option))
        )
        if reparses:
            raise ValueError(
                f"template: a placeholder is passed to {word!r}, which runs its arguments as code again, so a value "
                f"could run as a command; call a script file with the values as its arguments instead"
            )
    programs = _programs(words)
    declares = bool(programs) and _family(words[programs[-1]]) in DECLARATIONS
    for p in programs:
        program, later = _family(words[p]), [i for i in marked if i > p]
        if later and (program in VARIABLE_SETTERS or (program == "printf" and "-v" in words[p + 1 : later[0]])):
            raise ValueError(
                f"template: a placeholder is passed to {words[p]!r}, which puts it into a variable or positional "
                f"parameter that a later command could expand unquoted or run; pass the value as a plain argument"
            )
        if later and program in STDIN_READERS and _script_operand(words, p) in later:
            raise ValueError(
                f"template: a placeholder is the script that {words[p]!r} runs, so a value would choose the code "
                f"that runs; write the script's path and pass values after it"
            )
    for i in marked:
        if ASSIGNMENT.match(words[i]) and (declares or not programs or i < programs[-1]):
            raise ValueError(
                f"template: a placeholder sits in the assignment {words[i].split('=')[0]}=…, whose variable could "
                f"later expand unquoted or reach code; pass the value as a plain argument"
            )
        if i in programs:
            shown = re.sub(f"{FIELD_MARK}(.+?){FIELD_MARK}", r"{\1}", words[i])
            raise ValueError(
                f"template: the program {shown!r} holds a placeholder, so a value would choose what runs; "
                f"write the program's name or path"
            )


def _script_operand(words: list[str], program: int) -> int:
    """The index of the script file an interpreter at ``words[program]`` runs: its first operand after options."""
    i = program + 1
    while i < len(words) and words[i].startswith(("-", "+")) and words[i] not in ("-", "--"):
        i += 2 if words[i] in VALUE_OPTIONS else 1
    return i + 1 if i < len(words) and words[i] == "--" else i


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
        elif text.startswith(("<(", ">("), i):  # a process substitution
            context.append(text[i : i + 2])
            i += 1
        elif char in "'\"":
            context.append(char)
        elif char == "(" and inner in SUBSHELLS:
            context.append("(")
        elif char == ")" and inner in SUBSHELLS:
            context.pop()
        i += 1
    return context + ["\\"] if escaped else context


def template_values(recipe: Recipe, arm: str, seed: int, output_dir: str, estimator_fields: dict) -> dict:
    """Every value a template may use for this run: run fields, scalar recipe fields, the estimator's fields."""
    values = {key: value for key, value in recipe.as_dict().items() if not isinstance(value, (dict, list))}
    values.update(
        arm=arm,
        seed=seed,
        estimator=recipe.estimator["name"],
        data_policy=recipe.data_policy["name"],
        output_dir=output_dir,
    )
    values.update(estimator_fields.get(recipe.estimator["name"], {}))
    return values


def allowed_fields(recipe: Recipe, estimator_fields: dict) -> set[str]:
    """Every placeholder name some arm could fill."""
    extra = {field for fields in estimator_fields.values() for field in fields}
    return set(RUN_FIELDS) | set(template_values(recipe, "", 0, "", {})) | extra


def _is_scalar_value(value) -> bool:
    """Whether ``value`` may fill a placeholder from ``command.estimator_fields``: a name, a number or a boolean."""
    if isinstance(value, str):
        return NAME_PATTERN.fullmatch(value) is not None and ".." not in value
    return isinstance(value, (bool, int, float))


def check_arm(command: dict, recipe: Recipe, overrides: dict) -> None:
    """Reject a template or an arm the command backend cannot run faithfully (``ValueError`` naming the problem).

    An arm's override must reach the trainer: an overridden recipe field must appear in the template (the
    estimator through ``{estimator}`` or one of its ``estimator_fields``), and estimator or data-policy
    parameters cannot be passed at all — only names.
    """
    fields = template_fields(command["template"], command["shell"])
    for estimator_name, extra in command["estimator_fields"].items():
        for field, value in extra.items():
            if not _is_scalar_value(value):
                raise ValueError(
                    f"estimator_fields.{estimator_name}.{field}: {value!r} is neither a name ({NAME_RULE}) nor a "
                    f"number or boolean; only such values reach the command"
                )
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
    estimator = recipe.estimator["name"]
    missing = [f for f in fields if f not in template_values(recipe, "", 0, "", command["estimator_fields"])]
    if missing:
        raise ValueError(
            f"estimator: command.estimator_fields.{estimator} does not define {missing}, which the template uses"
        )
    for field in ("estimator", "data_policy"):
        if len(getattr(recipe, field)) > 1:
            raise ValueError(
                f"{field}: parameters {sorted(set(getattr(recipe, field)) - {'name'})} cannot be passed to the "
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
        if not isinstance(template, str):  # template_fields raised for this already; narrows the type
            raise ValueError("template: with command.shell: true the template is one command line; give it as a string")
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
            "recipe": recipe.as_dict(),
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
