"""Strict loading of config files, and the rules every name that becomes a path follows.

One loader for the workflow and for ``armlab analyze``: duplicate keys are an
error (YAML and JSON), YAML aliases may not expand past :data:`MAX_EXPANDED_NODES`
(a "billion laughs" file is refused before it is built), includes may not nest past
:data:`MAX_INCLUDE_DEPTH`, non-finite numbers and control characters are refused, and
names (experiment, arm, benchmark, domain, lm-eval task) match :data:`NAME_PATTERN` and
fit, as file names, on the file system the results are written to (:func:`max_name_length`).
"""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

import yaml

from armlab.files import BadFile, regular_file
from armlab.limits import DEFAULT_LIMITS
from armlab.spec import Comparison, SequentialDesign, default_of, settings_of

# letters, digits, '_', '.', '-'; not starting with '.' or '-'; no '..' anywhere (checked separately)
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
NAME_RULE = "letters, digits, '_', '.' and '-', not starting with '.' or '-', without '..'"
# a YAML document whose aliases expand to more nodes than this is refused (real configs have < 10,000)
MAX_EXPANDED_NODES = 200_000
# a chain of includes longer than this is refused (a shared block includes another at most a few times)
MAX_INCLUDE_DEPTH = 16
# lists and mappings nested deeper than this are refused (a config nests a few levels; Python's parsers and the checks
# here recurse once a level)
MAX_NESTING = 64
# the most characters a name gains in a file name: ``samples_armlab_<benchmark>.jsonl`` of an evaluation (21),
# written beside a temporary sibling ``.<name>.armlab-tmp-<pid>-<8 random>`` (29; pid up to 7 digits), see
# armlab.files.atomic_path
NAME_OVERHEAD = 21 + 29
# control characters a string value may hold (a command template spans lines); keys may hold none
ALLOWED_CONTROLS = "\t\n\r"


class ConfigError(ValueError):
    """A config that cannot be run; the message names the file and the key."""


# a format spec of str.format's mini-language, read for its width and precision (the rest format() itself checks)
FORMAT_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d*)[,_]?(?:\.(?P<precision>\d*))?[A-Za-z%]?", re.S)


def _spec_problem(spec: str, conversion: str | None, longest: int) -> str | None:
    """Why the format spec (after ``:``) and conversion (after ``!``) of a template's field cannot format a text of
    at most ``longest`` characters, or None: a field nested in the spec, an unknown conversion or format code, or a
    width or precision above ``longest`` (a width pads every prompt to it, whatever the question)."""
    if conversion not in (None, "r", "s", "a"):
        return f"it converts a field with !{conversion}, which is not !r, !s or !a"
    if "{" in spec or "}" in spec:
        return f"its format spec {spec[:40]!r} holds a field; write a plain spec such as :.500"
    parts = FORMAT_SPEC.fullmatch(spec)
    for part in ("width", "precision"):
        digits = parts[part] if parts else None
        if digits and (len(digits) > len(str(longest)) or int(digits) > longest):
            return (
                f"its format spec {spec[:40]!r} asks for a {part} of {digits[:20]}{'...' if len(digits) > 20 else ''} "
                f"characters, above the limit of {longest} on a prompt; set limits.prompt_chars to allow it"
            )
    try:
        format("x", spec)
    except ValueError as exc:
        return f"its format spec {spec[:40]!r} does not format a text ({exc})"
    return None


def check_template(
    template: object, key: str, fields: tuple[str, ...] = ("question",), longest: int = DEFAULT_LIMITS["prompt_chars"]
) -> None:
    """A prompt template names ``{question}`` and otherwise only ``fields``, each by its plain name (no attribute
    or index), and formats a text of at most ``longest`` characters (``limits.prompt_chars``) with a format spec
    and conversion that ``str.format`` accepts: one line naming ``key`` otherwise, before any prompt is built."""
    import string

    if template is None:
        return
    braces = "; write a literal brace as {{ or }}"
    try:
        parsed = [(field, spec, conversion) for _, field, spec, conversion in string.Formatter().parse(str(template))]
    except ValueError as exc:
        problem: str | None = f"it is not a format string ({exc}){braces}"
    else:
        named = [field for field, _, _ in parsed if field is not None]
        unknown = [field for field in named if field not in fields]
        problem = f"it names {{{unknown[0]}}}{braces}" if unknown else None
        problem = problem or (None if "question" in named else f"it has no {{question}}{braces}")
        specs = (_spec_problem(spec or "", conversion, longest) for field, spec, conversion in parsed if field)
        problem = problem or next((p for p in specs if p), None)
    if problem:
        allowed = ", ".join(f"{{{field}}}" for field in fields) + (" with {question} in it" if fields[1:] else "")
        shown = f"{str(template)[:200]!r}{'...' if len(str(template)) > 200 else ''}"
        raise ConfigError(f"{key}: {shown} is not a template of {allowed}: {problem}")


def missing_package(package: str, extra: str | None, key: str, who: str) -> ConfigError:
    """The one-line error of a package that is not installed, with the armlab extra that installs it."""
    return ConfigError(f"{key}: {who} needs the {package} package: pip install 'armlab[{extra}]'")


def check_name(source: str, key: str, name) -> str:
    """Return ``name`` if it is a safe name (see :data:`NAME_RULE`), else raise naming ``key``."""
    if not isinstance(name, str):
        hint = (
            " (YAML reads an unquoted null, ~, yes, no, on, off, true, false or a number as a non-string:"
            " quote the name)"
        )
        raise ConfigError(f"{source}: {key}: expected a name, got {name!r} of type {type(name).__name__}{hint}")
    if not NAME_PATTERN.fullmatch(name) or ".." in name:
        raise ConfigError(f"{source}: {key}: {name!r} is not a valid name; use {NAME_RULE}")
    longest = max_name_length()
    if len(name) > longest:
        raise ConfigError(
            f"{source}: {key}: {name[:20]!r}... is {len(name)} characters; names become file names with up to "
            f"{NAME_OVERHEAD} more characters (samples_armlab_<name>.jsonl, written under a temporary name "
            f".<name>.armlab-tmp-<pid>-<random>), and this file system takes {longest + NAME_OVERHEAD}: "
            f"use at most {longest}"
        )
    return name


def max_name_length(folder: str | Path = ".") -> int:
    """The longest name whose file names fit in ``folder``'s file system (``PC_NAME_MAX``, else 255, less
    :data:`NAME_OVERHEAD`); the workflow writes its results below the folder it runs in."""
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    return name_max - NAME_OVERHEAD


def _nodes(data, key: str = ""):
    """``(dotted key, value)`` of ``data`` and of everything nested in it."""
    yield key, data
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _nodes(v, f"{key}.{k}" if key else str(k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _nodes(v, f"{key}[{i}]")


def _nesting(data) -> int:
    """How deep lists and mappings nest in ``data`` (a scalar: 0), found without recursion."""
    deepest, stack = 0, [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in (value.values() if isinstance(value, dict) else value))
    return deepest


def check_finite(source: str, data) -> None:
    """Refuse NaN and infinite numbers anywhere in ``data`` (YAML's .nan/.inf), naming the key."""
    for key, value in _nodes(data):
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{source}: {key or '(top level)'}: expected a finite number, got {value}")


def _refuse_controls(source: str, where: str, text: str, allowed: str = "") -> None:
    control = next((c for c in text if unicodedata.category(c) == "Cc" and c not in allowed), None)
    if control is not None:
        raise ConfigError(
            f"{source}: {where}: holds the control character U+{ord(control):04X}; expected printable text"
        )


def check_text(source: str, data) -> None:
    """Refuse control characters (YAML's "\\x07", JSON's "\\u001b") in keys, and in string values beyond tab and
    line breaks: they would end up in file names, table cells and one-line errors. The error names the key."""
    for key, value in _nodes(data):
        if isinstance(value, str):
            _refuse_controls(source, key or "(top level)", value, ALLOWED_CONTROLS)
        for name in value if isinstance(value, dict) else ():
            if isinstance(name, str):
                _refuse_controls(source, f"{key}.{name!r}" if key else repr(name), name)


class _StrictLoader(yaml.SafeLoader):
    """A YAML loader that rejects duplicate keys instead of keeping the last one."""


def _check_node_count(path: Path, text: str) -> None:
    """Refuse a document of more than :data:`MAX_EXPANDED_NODES` nodes once every alias is expanded, counted over
    the parser's events (an alias adds its anchor's count; nothing is expanded or built), by libyaml where it is
    installed, and stopped at the first node past the limit: a large plain list is refused without being composed."""
    parser = yaml.cyaml.CParser(text) if yaml.__with_libyaml__ else yaml.SafeLoader(text)
    nodes, aliased = 0, False
    sizes: dict[str, int] = {}  # anchor -> its expanded size
    open_: list[tuple[str | None, int]] = []  # the collections being counted: anchor, nodes before them
    try:
        while (event := parser.get_event()) is not None and not isinstance(event, yaml.StreamEndEvent):
            if isinstance(event, yaml.AliasEvent):
                aliased, nodes = True, nodes + sizes.get(event.anchor, 1)  # a recursive alias counts once
            elif isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
                nodes += 1
                if isinstance(event, yaml.CollectionStartEvent):
                    open_.append((event.anchor, nodes - 1))
                elif event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, before = open_.pop()
                if anchor is not None:
                    sizes[anchor] = nodes - before
            if len(open_) > MAX_NESTING:
                raise ConfigError(
                    f"{path}: line {event.start_mark.line + 1}: lists and mappings nested more than {MAX_NESTING} "
                    f"deep; a config nests a few levels"
                )
            if nodes > MAX_EXPANDED_NODES:
                what = "its aliases expand to" if aliased else "it holds"
                raise ConfigError(
                    f"{path}: {what} more than {MAX_EXPANDED_NODES:,} nodes (by line {event.start_mark.line + 1}); "
                    f"a config this large is refused before it is built"
                )
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):  # libyaml's own limit (1000), met while it scans ahead
            raise ConfigError(
                f"{path}: lists and mappings nested more than {MAX_NESTING} deep; a config nests a few levels"
            ) from None
        return  # the loader names what is wrong with the text
    finally:
        if hasattr(parser, "dispose"):
            parser.dispose()


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(
                f"{loader.name}: line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                f"(first at line {seen[key]}); keys must be unique"
            )
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load_yaml(path: Path, text: str):
    try:
        loader = _StrictLoader(text)  # reads the whole text: a raw control character fails here
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise ConfigError(
            f"{path}: line {line}: holds the control character U+{exc.character:04X}, which YAML does not allow; "
            f"expected printable text"
        ) from None
    loader.name = str(path)
    try:
        _check_node_count(path, text)
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    finally:
        loader.dispose()


def _reject_duplicate_json_keys(path: Path):
    def hook(pairs):
        keys = [k for k, _ in pairs]
        duplicates = sorted({k for k in keys if keys.count(k) > 1})
        if duplicates:
            raise ConfigError(f"{path}: duplicate key(s) {duplicates}; keys must be unique")
        return dict(pairs)

    return hook


def load_mapping(path: str | Path, _including: tuple = ()) -> dict:
    """Load one YAML or JSON config file strictly; raise :class:`ConfigError` naming the file.

    A top-level ``include: FILE`` (or a list of files) names shared blocks, e.g. the testbed's benchmarks
    and model: they are loaded first (a relative path is relative to the including file's folder) and the
    file's own keys update them recursively.
    """
    path = Path(path)
    if path.resolve() in _including:
        raise ConfigError(f"{path}: include: the file includes itself (through {' -> '.join(map(str, _including))})")
    if len(_including) >= MAX_INCLUDE_DEPTH:
        raise ConfigError(
            f"{path}: include: {len(_including) + 1} files deep (from {_including[0]}), more than "
            f"{MAX_INCLUDE_DEPTH}; expected a shorter chain of includes"
        )
    try:
        text = regular_file(path, "config", "json_file_bytes").read_text()  # not a FIFO, device or huge file
    except BadFile as exc:
        raise ConfigError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config ({getattr(exc, 'strerror', None) or exc})") from None
    if path.suffix == ".json":
        try:
            data = json.loads(text, object_pairs_hook=_reject_duplicate_json_keys(path))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON: {exc}") from None
        except RecursionError:
            data = None  # refused below, as too deep
        if data is None or _nesting(data) > MAX_NESTING:
            raise ConfigError(
                f"{path}: lists and mappings nested more than {MAX_NESTING} deep; a config nests a few levels"
            )
    else:
        data = _load_yaml(path, text)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    check_finite(str(path), data)
    check_text(str(path), data)
    if "include" not in data:
        return data
    included = data.pop("include")
    names = included if isinstance(included, list) else [included]
    if not names or not all(isinstance(name, str) and name for name in names):
        raise ConfigError(f"{path}: include: expected a file name or a list of file names, got {included!r}")
    merged: dict = {}
    for name in names:
        target = path.parent / name
        if not target.is_file():
            raise ConfigError(
                f"{path}: include: {name!r} is not a file ({target}; a relative path is relative "
                f"to the including file's folder)"
            )
        merged = deep_update(merged, load_mapping(target, (*_including, path.resolve())))
    return deep_update(merged, data)


def deep_update(base: dict, update: dict) -> dict:
    """``base`` updated recursively by ``update`` (Snakemake's rule for several config files); returns a new dict."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_update(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_configs(paths, overrides: dict | None = None) -> dict:
    """Load config file(s) strictly, each later one updating the earlier ones recursively, then ``overrides``."""
    config: dict = {}
    for path in paths:
        config = deep_update(config, load_mapping(path))
    return deep_update(config, overrides or {})


# the defaults of a sequential design's optional keys (``seeds: {initial, wave, max, start, spending}``), those of
# armlab.spec.SequentialDesign: config validation, the seed list, the analysis and
# armlab.analysis.stats.sequential.Design take them from here
SEQUENTIAL_DEFAULTS: dict[str, Any] = {key: default_of(SequentialDesign, key) for key in ("start", "spending")}


def seed_list(seeds) -> list:
    """The seeds a config can run, in their fixed order: a list as given, or a sequential design's
    ``start .. start + max - 1`` (``seeds: {initial, wave, max, start}``)."""
    if isinstance(seeds, dict):
        start = seeds.get("start", SEQUENTIAL_DEFAULTS["start"])
        return list(range(start, start + seeds["max"]))
    return list(seeds)


def limits_of(source: str, config: dict) -> dict:
    """The size limits in force: :data:`DEFAULT_LIMITS` updated by the config's ``limits:`` section."""
    section = config.get("limits") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: limits: expected a mapping of size -> limit, got {section!r}")
    for key, value in section.items():
        if key not in DEFAULT_LIMITS:
            raise ConfigError(f"{source}: limits.{key}: unknown limit; known: {sorted(DEFAULT_LIMITS)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{source}: limits.{key}: expected a positive integer, got {value!r}")
    return {**DEFAULT_LIMITS, **section}


def check_limit(source: str, key: str, value: int, limits: dict, limit: str) -> None:
    """Refuse ``value`` (at ``key``) above ``limits[limit]``, saying how to raise the limit."""
    if value > limits[limit]:
        raise ConfigError(
            f"{source}: {key}: {value} is above the limit of {limits[limit]}; "
            f"set limits.{limit} in the config to allow it"
        )


COMPARISON_KEYS = {setting.name for setting in settings_of(Comparison)}  # family, reference, arms, control


def parse_comparisons(source: str, value, arms=None) -> list[dict]:
    """The ``comparisons`` list, checked once for the workflow and the analysis: each ``{family, reference, arms}``
    and optionally ``control`` (a boolean: a planted control, whose answer is known).

    A family is one multiplicity family: its name is unique, its arms are distinct names and do not include its
    reference. ``arms``, when given, are the arms that exist (the workflow's); references and arms must be among them.
    (Names are not path-checked here: the analysis also reads results from elsewhere, whose arm names may hold
    '/'; the workflow checks its names with :func:`check_name` first.)
    """
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{source}: comparisons: expected a non-empty list of {{family, reference, arms}}")
    families = set()
    for i, comparison in enumerate(value):
        where = f"{source}: comparisons[{i}]"
        if (
            not isinstance(comparison, dict)
            or not {"family", "reference", "arms"} <= set(comparison) <= COMPARISON_KEYS
        ):
            raise ConfigError(
                f"{where}: expected the keys family, reference, arms (and optionally control); got {comparison!r}"
            )
        if not isinstance(comparison.get("control", False), bool):
            raise ConfigError(f"{where}.control: expected true or false, got {comparison['control']!r}")
        family, reference, compared = comparison["family"], comparison["reference"], comparison["arms"]
        if not isinstance(family, str) or not family:
            raise ConfigError(f"{where}.family: expected a non-empty string, got {family!r}")
        if family in families:
            raise ConfigError(f"{where}.family: duplicate family name {family!r}; a family is one multiplicity family")
        families.add(family)
        if not isinstance(reference, str) or not reference:
            raise ConfigError(f"{where}.reference: expected an arm name, got {reference!r}")
        if not isinstance(compared, list) or not compared or not all(isinstance(a, str) and a for a in compared):
            raise ConfigError(f"{where}.arms: expected a non-empty list of arm names, got {compared!r}")
        if len(set(compared)) != len(compared):
            raise ConfigError(f"{where}.arms: duplicate arm names in {compared}")
        if reference in compared:
            raise ConfigError(f"{where}.arms: the reference {reference!r} cannot also be compared with itself")
        for field, name in [("family", family), ("reference", reference), *(("arms", arm) for arm in compared)]:
            if name != name.strip():
                raise ConfigError(
                    f"{where}.{field}: {name!r} begins or ends in white space, which tables and reports do not show; "
                    f"names are matched exactly: remove it"
                )
        if arms is not None:
            for field, names in (("reference", [reference]), ("arms", compared)):
                for name in names:
                    if name not in arms:
                        raise ConfigError(
                            f"{where}.{field}: arm {name!r} does not exist; defined arms are {sorted(arms)}"
                        )
    return value


def numerics_controls(source: str, arms: object, comparisons: list[dict]) -> dict[str, str]:
    """The numerics controls of a config (arms whose ``numerics`` key declares them: armlab.numerics.ARM_KEY) and the
    reference each repeats, checked once for the workflow and the analysis: control -> reference.

    A control is compared with exactly one reference, its comparison's, which runs the experiment's numerics, in a
    family of controls only (Holm would correct a treatment's verdict for a control's test); it is no comparison's
    reference itself.
    """
    from armlab.numerics import ARM_KEY

    declared = [
        arm
        for arm, spec in (arms.items() if isinstance(arms, dict) else ())
        if isinstance(spec, dict) and spec.get(ARM_KEY)
    ]
    found = {}
    for arm in declared:
        key = f"arms.{arm}.{ARM_KEY}"
        for i, comparison in enumerate(comparisons):
            if comparison["reference"] == arm:
                raise ConfigError(
                    f"{source}: comparisons[{i}].reference: {arm!r} is a numerics control ({key}); a control is "
                    f"compared with the arm it repeats, not used as a reference"
                )
            treatments = [other for other in comparison["arms"] if other not in declared]
            if arm in comparison["arms"] and treatments:
                raise ConfigError(
                    f"{source}: comparisons[{i}].arms: numerics control {arm!r} shares a family with "
                    f"{treatments[0]!r}, which is not a control; Holm would correct its verdict for the control's "
                    f"test: give the controls a family of their own"
                )
        references = list(dict.fromkeys(c["reference"] for c in comparisons if arm in c["arms"]))
        if len(references) != 1:
            raise ConfigError(
                f"{source}: {key}: a numerics control is compared with exactly one reference, the arm it repeats "
                f"under other numerics (e.g. {{family: numerics, reference: <arm>, arms: [{arm}]}}); "
                f"{arm!r} is compared with {references or 'none'}"
            )
        found[arm] = references[0]
    for arm, reference in found.items():
        if reference in found:
            raise ConfigError(
                f"{source}: arms.{arm}.{ARM_KEY}: its reference {reference!r} is a numerics control too; a control's "
                f"reference runs the experiment's numerics"
            )
    return found
