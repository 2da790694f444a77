"""What the SQL of every concern needs from a backend: one connection in a transaction, and the
few phrases in which SQLite and PostgreSQL differ.

The concern modules beside this one write their statements once, with `?` placeholders and the
SQL both engines share (`ON CONFLICT`, `RETURNING`, integer flags, JSON kept as text); where the
engines differ they ask the connection's `dialect`. Each backend (`smemd/store/sqlite/`,
`smemd/store/postgres/`) supplies a `Connection`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol

from smemd.store.filter_tree import Filter

Row = Sequence[Any]
# `?` placeholders bind a sequence; `:name` ones a mapping.
Params = Sequence[Any] | Mapping[str, Any]


class Dialect(Protocol):
    def least(self, a: str, b: str) -> str:
        """The smaller of two values, neither NULL (on NULL the engines differ)."""
        ...

    def greatest(self, a: str, b: str) -> str: ...

    def whole(self, number: str) -> str:
        """A non-negative number's integer part."""
        ...

    def name_list(self, expression: str) -> str:
        """An aggregate: the JSON array text of `expression` over the group ('[]' for none)."""
        ...

    def has_element(self, array_json: str) -> str:
        """A condition: the JSON array text `array_json` holds the string bound to its `?`."""
        ...

    def matches_pattern(self, column: str) -> str:
        """A condition: `column` matches the pattern bound to its `?` (made by `pattern`)."""
        ...

    def pattern(self, glob: str) -> str:
        """A namespace pattern (`*` any run, `?` one character; smemd.store.scope) as bound."""
        ...

    def for_update(self) -> str:
        """After a SELECT: lock the rows read until the transaction ends (SQLite: every
        write is serial already, so nothing)."""
        ...

    def skip_locked(self) -> str:
        """After a SELECT in a write: lock the rows read, passing over rows another transaction
        has locked (SQLite: nothing, as above)."""
        ...

    def begin_snapshot(self) -> str:
        """Begin a read-only transaction whose every read sees the store as of its start."""
        ...

    def columns_sql(self) -> str:
        """A query of a table's column names (the table's name bound to its `?`)."""
        ...

    def sequence_reset(self, table: str) -> str | None:
        """After rows came in with their own `seq`: the statement that moves the table's next
        `seq` past them, or None where the engine does that itself."""
        ...

    def indexed_by(self, index: str) -> str:
        """A FROM clause's hint to use this index, where the engine needs one ('' if not)."""
        ...

    def metadata_filter(self, tree: Filter, column: str) -> tuple[str, list[object]]:
        """A WHERE fragment testing the metadata JSON in `column` as `Filter.matches` does."""
        ...


class Connection(Protocol):
    @property
    def dialect(self) -> Dialect: ...

    async def execute_fetchall(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; the number of rows it changed."""
        ...

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def stream(self, sql: str, params: Params, size: int) -> AsyncIterator[list[Row]]:
        """The rows of a large result, `size` at a time, without holding them all."""
        ...
