"""One registry idiom for every extension point: a name → entry mapping that knows what it holds, and one error,
naming the setting, the near misses and every known name, for a name that is not there.

A new method is one function and one entry in its registry (estimators, data policies, policy losses, task
families, backends, lm-eval models, statistics, interval methods, spending rules).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


class Registry(dict[str, T]):
    """Entries by name, in registration order; ``kind`` says what an entry is ("estimator", "backend", ...)."""

    def __init__(self, kind: str, entries: Mapping[str, T]) -> None:
        super().__init__(entries)
        self.kind = kind

    def entry(self, name: object, key: str, error: type[Exception] = ValueError) -> T:
        """The entry ``name``; a name that is not one is one ``error`` line naming the setting ``key``."""
        if isinstance(name, str) and name in self:
            return self[name]
        raise error(self.unknown(name, key))

    def unknown(self, name: object, key: str) -> str:
        """``<key>: unknown <kind> <name>; did you mean ...?; expected one of [...]`` (near misses when there are)."""
        known = sorted(self)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6) if isinstance(name, str) else []
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        return f"{key}: unknown {self.kind} {name!r}{hint}; expected one of {known}"
