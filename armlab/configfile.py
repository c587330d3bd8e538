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

# letters, digits, '_', '.', '-'; not starting with '.' or '-'; no '..' anywhere (checked separately)
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
NAME_RULE = "letters, digits, '_', '.' and '-', not starting with '.' or '-', without '..'"
# a YAML document whose aliases expand to more nodes than this is refused (real configs have < 10,000)
MAX_EXPANDED_NODES = 200_000
# a chain of includes longer than this is refused (a shared block includes another at most a few times)
MAX_INCLUDE_DEPTH = 16
INT64_MAX = 2**63 - 1
# the most characters a name gains in a file name: ``samples_armlab_<benchmark>.jsonl`` of an evaluation (21),
# written beside a temporary sibling ``.<name>.armlab-tmp-<pid>-<8 random>`` (29; pid up to 7 digits), see
# armlab.files.atomic_path
NAME_OVERHEAD = 21 + 29
# control characters a string value may hold (a command template spans lines); keys may hold none
ALLOWED_CONTROLS = "\t\n\r"


class ConfigError(ValueError):
    """A config that cannot be run; the message names the file and the key."""


def check_template(template: object, key: str, fields: tuple[str, ...] = ("question",)) -> None:
    """A prompt template names ``{question}`` and otherwise only ``fields``, each by its plain name (no attribute
    or index): one line naming ``key`` otherwise."""
    import string

    if template is None:
        return
    try:
        named = [field for _, field, _, _ in string.Formatter().parse(str(template)) if field is not None]
    except ValueError as exc:
        problem: str | None = f"it is not a format string ({exc})"
    else:
        unknown = [field for field in named if field not in fields]
        problem = f"it names {{{unknown[0]}}}" if unknown else None if "question" in named else "it has no {question}"
    if problem:
        allowed = ", ".join(f"{{{field}}}" for field in fields) + (" with {question} in it" if fields[1:] else "")
        raise ConfigError(
            f"{key}: {template!r} is not a template of {allowed}: {problem}; write a literal brace as {{{{ or }}}}"
        )


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


def _expanded_size(node, memo: dict) -> int:
    """Nodes in the document once every alias is expanded, counted without expanding (memoised per node)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = 1  # a recursive alias counts once here; the constructor refuses nothing else about it
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, memo) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    else:
        size = 1
    memo[id(node)] = size
    return size


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
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node, {})
        if size > MAX_EXPANDED_NODES:
            raise ConfigError(
                f"{path}: its aliases expand to {size:,} nodes (more than {MAX_EXPANDED_NODES:,}); "
                f"a config this large is refused before it is built"
            )
        return loader.construct_document(node)
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


# the defaults of a sequential design's optional keys (``seeds: {initial, wave, max, start, spending}``), defined once:
# config validation, the seed list, the analysis and armlab.analysis.stats.sequential.Design all take them from here
SEQUENTIAL_DEFAULTS: dict[str, Any] = {"start": 1, "spending": "obrien_fleming"}


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


def parse_comparisons(source: str, value, arms=None) -> list[dict]:
    """The ``comparisons`` list, checked once for the workflow and the analysis: each ``{family, reference, arms}``.

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
        if not isinstance(comparison, dict) or set(comparison) != {"family", "reference", "arms"}:
            raise ConfigError(f"{where}: expected exactly the keys family, reference, arms; got {comparison!r}")
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
