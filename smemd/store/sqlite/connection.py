"""An aiosqlite connection as the shared SQL's Connection (smemd.store.sql.connection)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiosqlite

from smemd.store.sql.connection import Params, Row
from smemd.store.sqlite.dialect import SqliteDialect

DIALECT = SqliteDialect()


class SqliteConnection:
    __slots__ = ("raw",)

    def __init__(self, raw: aiosqlite.Connection) -> None:
        self.raw = raw

    @property
    def dialect(self) -> SqliteDialect:
        return DIALECT

    async def execute_fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return list(await self.raw.execute_fetchall(sql, params))

    async def execute(self, sql: str, params: Params = ()) -> int:
        async with self.raw.execute(sql, params) as cursor:
            return cursor.rowcount

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self.raw.executemany(sql, rows)

    async def stream(self, sql: str, params: Params, size: int) -> AsyncIterator[list[Row]]:
        async with self.raw.execute(sql, params) as cursor:
            while rows := await cursor.fetchmany(size):
                yield list(rows)
