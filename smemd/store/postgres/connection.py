"""A psycopg connection as the shared SQL's Connection (smemd.store.sql.connection).

The shared statements use SQLite's placeholders (`?`, `:name`); they become psycopg's (`%s`,
`%(name)s`) once per statement text. Values are bound by the client (psycopg's ClientCursor),
so the server types each as it would a literal in its place: statements written for SQLite's
loose typing (`? IS NULL`, `min(n, ?)`) need no casts. A Python bool is bound as 0 or 1, as the
integer flag columns hold it. An empty list, `IN ()`, which SQLite allows and PostgreSQL does
not, becomes a comparison with the empty array of the left side's type: as false, or for
`NOT IN ()` as true, as in SQLite. `CROSS JOIN … ON`, SQLite's inner join that keeps its tables' order, is an inner join. And
`lower(?)` folds its text under the "C" collation, as
`lower()` of every text column does (ASCII only, as SQLite folds), whatever the database's own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import psycopg

from smemd.store.postgres.dialect import PostgresDialect
from smemd.store.sql.connection import Params, Row

DIALECT = PostgresDialect()
_EMPTY_LIST = re.compile(r"\b(NOT\s+)?IN\s*\(\s*\)", re.IGNORECASE)


class PostgresConnection:
    __slots__ = ("raw",)

    def __init__(self, raw: psycopg.AsyncConnection[Any]) -> None:
        self.raw = raw

    @property
    def dialect(self) -> PostgresDialect:
        return DIALECT

    async def execute_fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        async with self.raw.cursor() as cursor:
            await cursor.execute(translated(sql), _bound(params))
            return await cursor.fetchall() if cursor.description is not None else []

    async def execute(self, sql: str, params: Params = ()) -> int:
        async with self.raw.cursor() as cursor:
            await cursor.execute(translated(sql), _bound(params))
            return cursor.rowcount

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        async with self.raw.cursor() as cursor:
            await cursor.executemany(translated(sql), [_bound(row) for row in rows])

    async def stream(self, sql: str, params: Params, size: int) -> AsyncIterator[list[Row]]:
        async with self.raw.cursor() as cursor:
            await cursor.execute(translated(sql), _bound(params))
            while rows := await cursor.fetchmany(size):
                yield rows


def _bound(params: Params) -> Any:
    if isinstance(params, Mapping):
        return {key: _value(value) for key, value in params.items()}
    return [_value(value) for value in params]


def _value(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


@functools.lru_cache(maxsize=4096)
def translated(sql: str) -> bytes:
    """`sql` with psycopg's placeholders for SQLite's, and every other `%` doubled; quoted text
    and identifiers are left as they are."""
    out: list[str] = []
    quote: str | None = None
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if quote is not None:
            out.append("%%" if ch == "%" else ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        elif ch == "%":
            out.append("%%")
        elif ch == "?":
            out.append("%s")
        elif ch == ":" and i + 1 < n and (sql[i + 1].isalpha() or sql[i + 1] == "_"):
            if i > 0 and sql[i - 1] == ":":  # a cast, `x::text`
                out.append(ch)
            else:
                j = i + 1
                while j < n and (sql[j].isalnum() or sql[j] == "_"):
                    j += 1
                out.append(f"%({sql[i + 1 : j]})s")
                i = j
                continue
        else:
            out.append(ch)
        i += 1
    text = "".join(out).replace("lower(%s)", 'lower(%s COLLATE "C")').replace("CROSS JOIN", "JOIN")
    return _EMPTY_LIST.sub(_empty_list, text).encode()


def _empty_list(match: re.Match[str]) -> str:
    return "<> ALL ('{}')" if match.group(1) else "= ANY ('{}')"
