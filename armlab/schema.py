"""The files generated from :mod:`armlab.spec`: the workflow's JSON schema and the settings tables of the docs.

    python -m armlab.spec --check    # exit 1, naming each file that differs from what the spec generates
    python -m armlab.spec --write    # rewrite them

``workflows/schemas/config.schema.yaml`` is written whole; ``docs/settings.md`` too; ``docs/methods.md`` holds the
recipe's table between two marker lines. A test runs the check, so an edit of a generated file, or of the spec
without ``--write``, fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import operator
import sys
import typing
from collections.abc import Mapping
from dataclasses import MISSING
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml

from armlab import spec
from armlab.spec import Keywords, Setting, plain, settings_of

REPO = Path(__file__).resolve().parents[1]
SCHEMA_FILE = "workflows/schemas/config.schema.yaml"
SETTINGS_FILE = "docs/settings.md"
METHODS_FILE = "docs/methods.md"
GENERATED_BY = "python -m armlab.spec --write"
SCHEMA_HEADER = (
    f"# Generated from armlab/spec/__init__.py by `{GENERATED_BY}`: edit the spec, not this file\n"
    "# (`python -m armlab.spec --check` and tests/test_spec.py fail when they differ).\n"
)
BEGIN, END = "<!-- generated from armlab/spec/__init__.py: {name} -->", "<!-- end of generated {name} -->"
# the one schema piece no field type spells: a method of the recipe is a registry name or {name, ...parameters}
METHOD_DEFINITION = {
    "description": "a registry name, or {name, ...parameters}",
    "oneOf": [
        {"type": "string"},
        {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
    ],
}
JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}
BIG = {spec.INT64_MAX: "2⁶³−1"}  # bounds the docs write in words


# --------------------------------------------------------------------------------------------------- the schema


def schema() -> dict[str, Any]:
    """The workflow's JSON schema of a config, from :class:`armlab.spec.Experiment`."""
    top = _section(spec.Experiment)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "description": _doc(spec.Experiment),
        "type": "object",
        "additionalProperties": False,
        "required": top["required"],
        "definitions": {"method": METHOD_DEFINITION},
        "properties": top["properties"],
    }


def _doc(section: type) -> str:
    return " ".join((section.__doc__ or "").split())


def _section(section: type) -> dict[str, Any]:
    """The object schema of a section: closed (unknown keys refused, defaults filled), documented (its parser
    checks it: descriptions only) or open (its keys' types, no defaults, and any other key of its values' type,
    which its parser names)."""
    mode = getattr(section, "SCHEMA", "closed")
    settings = settings_of(section)
    if mode == "documented":
        return {"type": "object", "properties": {s.name: {"description": _description(s, False)} for s in settings}}
    out: dict[str, Any] = {"type": "object", **getattr(section, "KEYWORDS", {})}
    if mode == "closed":
        out["additionalProperties"] = False
        required = [s.name for s in settings if s.required]
        if required:
            out["required"] = required
    out["properties"] = {s.name: _field(s, fills=mode == "closed") for s in settings}
    if mode == "open":
        out["additionalProperties"] = _type(section.VALUES)  # type: ignore[attr-defined]
    return out


def _fills(setting: Setting, fills: bool) -> bool:
    """Whether the schema writes the field's default into the resolved config."""
    return fills and setting.fill and setting.default is not MISSING and setting.default is not None


def _field(setting: Setting, fills: bool) -> dict[str, Any]:
    hint = setting.type
    if not setting.nullable and _is_optional(hint):
        hint = _without_none(hint)
    out = _type(hint)
    out.update(setting.keywords)
    if _fills(setting, fills):
        out["default"] = plain(setting.default, method=_is_method(hint))
    out["description"] = _description(setting, _fills(setting, fills))
    return out


def _description(setting: Setting, filled: bool) -> str:
    """The field's meaning, with its default where the schema does not state it."""
    default = setting.shown or (
        None if filled or setting.default in (MISSING, None) else _words_of(setting.default, setting.type)
    )
    return setting.help + (f" (default {default})" if default is not None else "")


def _type(hint: Any) -> dict[str, Any]:
    """The JSON schema of a type (``Annotated`` extras after its type keywords)."""
    if typing.get_origin(hint) is Annotated:
        inner, *extras = typing.get_args(hint)
        keywords = {k: v for extra in extras if isinstance(extra, Keywords) for k, v in extra.items()}
        if dataclasses.is_dataclass(keywords.get("properties")):  # the named keys of an otherwise open mapping
            keywords["properties"] = _section(keywords["properties"])["properties"]
        if "$ref" in keywords:
            return dict(keywords)
        return {**_type(inner), **keywords}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return {"enum": list(args)}
    if hint in JSON_TYPES:
        return {"type": JSON_TYPES[hint]}
    if hint is Any:
        return {}
    if dataclasses.is_dataclass(hint):
        return _section(hint)  # type: ignore[arg-type]
    if origin is tuple:
        return {"type": "array", "items": _type(args[0])}
    if origin in (dict, Mapping):
        return {"type": "object"} if args[1] is Any else {"type": "object", "additionalProperties": _type(args[1])}
    if origin in (typing.Union, type(int | None)):
        branches = [_type(arg) for arg in args if arg is not type(None)]
        if any(
            "type" not in b or isinstance(b["type"], list) or b.get("additionalProperties") is False for b in branches
        ):
            return {"oneOf": branches}
        merged: dict[str, Any] = {"type": [b["type"] for b in branches] + (["null"] if type(None) in args else [])}
        for b in branches:
            merged.update({k: v for k, v in b.items() if k != "type"})
        return merged
    raise TypeError(f"armlab.spec: no JSON schema for the type {hint!r}")


def _is_optional(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, type(int | None)) and type(None) in typing.get_args(hint)


def _without_none(hint: Any) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return functools.reduce(operator.or_, args)


def _is_method(hint: Any) -> bool:
    return typing.get_origin(hint) is Annotated and spec.METHOD_REF in typing.get_args(hint)[1:]


def _words_of(value: Any, hint: Any = None) -> str:
    """A default in the words of a description: YAML's flow form (null, [0.25, 0.4, 0.6], {})."""
    written = plain(value, method=_is_method(hint))
    return written if isinstance(written, str) else json.dumps(written, ensure_ascii=False).replace('"', "")


class _Dumper(yaml.SafeDumper):
    """Block style, except a leaf mapping or list (no description, nothing nested) on one line."""


def _represent_dict(dumper: yaml.SafeDumper, data: dict[str, Any]) -> yaml.Node:
    leaf = "description" not in data and not any(isinstance(v, dict) for v in data.values())
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=leaf)


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    leaf = not any(isinstance(v, (dict, list)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=leaf)


_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(list, _represent_list)


def schema_text() -> str:
    """The schema file's text."""
    body = yaml.dump(schema(), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=118)
    return SCHEMA_HEADER + body


# ------------------------------------------------------------------------------------------------- the settings


def recipe_keys() -> list[dict[str, Any]]:
    """Every recipe key with its schema default (None where the schema has none) and its meaning, in order: what
    ``armlab arms`` prints and the recipe table of docs/methods.md holds."""
    return [
        {
            "name": s.name,
            "default": plain(s.default, _is_method(s.type)) if _fills(s, True) else None,
            "description": s.help,
        }
        for s in settings_of(spec.Recipe)
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _kind(hint: Any, keywords: Mapping[str, Any] | None = None) -> str:
    """A type and its range in words."""
    keywords = dict(keywords or {})
    if typing.get_origin(hint) is Annotated:
        inner, *extras = typing.get_args(hint)
        if spec.METHOD_REF in extras:
            return "a method: a name or {name, ...parameters}"
        for extra in extras:
            if isinstance(extra, Keywords):
                keywords = {**extra, **keywords}
        hint = inner
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, type(int | None)):
        words = [_kind(a) for a in args if a is not type(None)]
        return " or ".join(words) + _range(keywords)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if "enum" in keywords:
        return "one of " + ", ".join(f"`{a}`" for a in keywords["enum"])
    if hint in JSON_TYPES:
        return {"boolean": "true or false", "integer": "integer", "number": "number", "string": "text"}[
            JSON_TYPES[hint]
        ] + _range(keywords)
    if dataclasses.is_dataclass(hint):
        return "a section (below)"
    if origin is tuple:
        return f"list{_range(keywords)} of {_kind(args[0])}"
    if origin in (dict, Mapping):
        value = "anything" if args[1] is Any else _kind(args[1])
        return f"mapping: name → {value}" if value != "anything" else "mapping"
    return "anything"


def _range(keywords: Mapping[str, Any]) -> str:
    words = {
        "minimum": "≥ {}",
        "exclusiveMinimum": "> {}",
        "maximum": "≤ {}",
        "exclusiveMaximum": "< {}",
        "minLength": "at least {} character(s)",
        "minItems": "of at least {}",
        "minProperties": "at least {} entry(ies)",
        "uniqueItems": "each once",
        "pattern": "matching `{}`",
    }
    parts = [words[k].format(BIG.get(v, v)) for k, v in keywords.items() if k in words and v is not False]
    return f" {', '.join(parts)}" if parts else ""


def _default_words(setting: Setting) -> str:
    if setting.shown:
        return setting.shown
    if setting.default is MISSING:
        return "required"
    if setting.default is None:
        return "`null`" if setting.nullable else "absent"
    if dataclasses.is_dataclass(setting.default):
        return "(below)"
    return f"`{_words_of(setting.default, setting.type)}`"


def _sections(section: type, path: str) -> list[tuple[str, type]]:
    """``(path, section)`` of ``section`` and every section nested in it, depth first."""
    out = [(path, section)]
    for s in settings_of(section):
        for nested, suffix in _nested(s.type):
            out += _sections(nested, f"{path}.{s.name}{suffix}" if path else f"{s.name}{suffix}")
    return out


def _nested(hint: Any) -> list[tuple[type, str]]:
    """The sections a field's type holds, with the path suffix of one of them (``.<name>`` in a mapping)."""
    if typing.get_origin(hint) is Annotated:
        inner, *extras = typing.get_args(hint)
        named = [
            e["properties"] for e in extras if isinstance(e, Keywords) and dataclasses.is_dataclass(e.get("properties"))
        ]
        return [(section, "") for section in named] + _nested(inner)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        return [(hint, "")]  # type: ignore[list-item]
    if origin in (typing.Union, type(int | None)):
        return [found for arg in args for found in _nested(arg)]
    if origin is tuple:
        return [(section, f"[]{suffix}") for section, suffix in _nested(args[0])]
    if origin in (dict, Mapping):
        return [(section, f".<name>{suffix}") for section, suffix in _nested(args[1])]
    return []


def settings_text() -> str:
    """docs/settings.md: every section's keys, each with its type and range, default and meaning."""
    lines = [
        "# Settings",
        "",
        f"<!-- Generated from armlab/spec/__init__.py by `{GENERATED_BY}`; edit the spec, not this page. -->",
        "",
        "Every key of an experiment config, section by section: its type and range, its default and its meaning,",
        "each written once, in `armlab/spec/__init__.py` (`armlab.spec`), from which this page and",
        "`workflows/schemas/config.schema.yaml` are generated (`python -m armlab.spec --check` fails when they",
        "differ). A default in backticks is filled in when the key is absent; *absent* means the key stays out of",
        "the resolved config; a setting's name means that setting's value.",
    ]
    for path, section in _sections(spec.Experiment, ""):
        title = path or "top level"
        lines += ["", f"## {title}", "", _doc(section), ""]
        lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for s in settings_of(section):
            kind = _kind(s.type if s.nullable or not _is_optional(s.type) else _without_none(s.type), s.keywords)
            if s.nullable:
                kind += " or null"
            lines.append(f"| `{s.name}` | {_cell(kind)} | {_cell(_default_words(s))} | {_cell(s.help)} |")
    return "\n".join(lines) + "\n"


def recipe_table() -> str:
    """docs/methods.md's table of the recipe's keys (``armlab arms`` prints the same)."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key in recipe_keys():
        default = "none" if key["default"] is None else f"`{key['default']}`"
        rows.append(f"| `{key['name']}` | {default} | {key['description']} |")
    return "\n".join(rows)


def _between_markers(text: str, name: str, body: str, where: str) -> str:
    begin, end = BEGIN.format(name=name), END.format(name=name)
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ValueError(f"{where}: expected one line {begin!r} and one {end!r} around the generated {name}")
    head, rest = text.split(begin)
    return f"{head}{begin}\n\n{body}\n\n{end}{rest.split(end)[1]}"


def generated(root: Path = REPO) -> dict[str, str]:
    """Each generated file (relative path) and the text the spec gives it."""
    methods = (root / METHODS_FILE).read_text()
    return {
        SCHEMA_FILE: schema_text(),
        SETTINGS_FILE: settings_text(),
        METHODS_FILE: _between_markers(methods, "recipe table", recipe_table(), METHODS_FILE),
    }


def check(root: Path = REPO) -> list[str]:
    """One line per generated file under ``root`` that differs from what the spec gives it (its first differing
    line); none when all agree."""
    problems = []
    for name, text in generated(root).items():
        path = root / name
        have = path.read_text() if path.is_file() else ""
        if have != text:
            mine, theirs = have.splitlines(), text.splitlines()
            line = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
            problems.append(
                f"{name}: line {line + 1} differs from what armlab/spec/__init__.py generates "
                f"({(mine[line] if line < len(mine) else '<end of file>')[:80]!r}); edit the spec and run "
                f"`{GENERATED_BY}`"
            )
    return problems


def write(root: Path = REPO) -> list[str]:
    """Rewrite every generated file under ``root`` that differs; returns their names."""
    from armlab.files import write_text

    changed = []
    for name, text in generated(root).items():
        path = root / name
        if not path.is_file() or path.read_text() != text:
            write_text(path, text)
            changed.append(name)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m armlab.spec", description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="exit 1 if a generated file differs from the spec")
    action.add_argument("--write", action="store_true", help="rewrite the generated files")
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    if args.write:
        for name in write(args.root):
            print(f"armlab.spec: wrote {name}")
        return 0
    problems = check(args.root)
    for problem in problems:
        print(f"armlab.spec: {problem}", file=sys.stderr)
    return 1 if problems else 0
