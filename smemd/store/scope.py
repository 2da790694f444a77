"""The namespaces a caller may see: names or glob patterns, or every namespace.

Patterns use `*` (any run) and `?` (one character) over namespace characters only, where
Python's `fnmatchcase`, SQLite's `GLOB` and a PostgreSQL `LIKE` of the same pattern agree
exactly (all case-sensitive; none is given brackets to disagree on), so a check in Python and a
filter in SQL say the same.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Annotated

import msgspec

if TYPE_CHECKING:
    from smemd.store.sql.connection import Dialect

PATTERN = r"^[a-zA-Z0-9_:*?-]{1,100}$"
Pattern = Annotated[str, msgspec.Meta(pattern=PATTERN)]


class Scope(msgspec.Struct, frozen=True):
    patterns: tuple[str, ...] | None = None  # None: every namespace

    @property
    def is_every(self) -> bool:
        return self.patterns is None or "*" in self.patterns

    def sees(self, namespace: str) -> bool:
        return self.is_every or any(fnmatchcase(namespace, p) for p in self.patterns or ())

    def where(self, column: str, dialect: Dialect) -> tuple[str, list[object]]:
        """SQL over `column` (trusted) for the namespaces in scope."""
        if self.is_every:
            return "TRUE", []
        patterns = list(self.patterns or ())
        if not patterns:
            return "FALSE", []
        test = dialect.matches_pattern(column)
        return "(" + " OR ".join(test for _ in patterns) + ")", [
            dialect.pattern(p) for p in patterns
        ]


EVERY = Scope()
