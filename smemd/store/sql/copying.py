"""A whole store copied into an empty one of either backend: every table's every row (versions,
times, sources, relations, labels, judgements, jobs and their candidates, entities, retractions),
keys and sequence numbers as they are, in one transaction of the target, counted afterwards.

Both backends have the same tables and columns (smemd.store.sqlite.schema, smemd.store.postgres.
schema), so rows go across column by name. The target must hold no row: a copy that fails, or is
refused, rolls its one transaction back and leaves it as empty as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from smemd.errors import Conflict
from smemd.store.sql.connection import Connection
from smemd.store.sql.sessions import Sessions

# In the order a row's references exist before it (documents after their namespace, chunks after
# their document). Sources and relations go in before memories: the triggers that count a
# memory's connections then find no memory to count, and the counts come with the memories.
TABLES = (
    "settings", "namespaces", "documents", "chunks", "memory_sources", "relations", "memories",
    "jobs", "candidates", "judgements", "labels", "profile_buckets", "entities",
    "memory_entities", "retractions", "alias_decisions",
)  # fmt: skip
BATCH = 500


class Copied(msgspec.Struct, frozen=True):
    rows: dict[str, int]  # by table, as counted in the target after the copy


async def copy_store(source: Sessions, target: Sessions) -> Copied:
    """Copy every row of `source` into `target` (both open); Conflict if the target holds any."""
    async with source.read() as reader, target.write() as writer:
        theirs, ours = reader.db, writer.db
        for table in TABLES:
            if await _count(ours, table):
                raise Conflict(
                    "the target store is not empty",
                    f"its {table} table has rows; a copy goes only into a new, empty store",
                )
        counts: dict[str, int] = {}
        for table in TABLES:
            names = await _columns(theirs, table)
            wanted = await _columns(ours, table)
            if set(names) != set(wanted):
                raise Conflict(
                    "the stores' schemas differ",
                    f"{table}: {sorted(set(names) ^ set(wanted))}; start each with this version"
                    " of smemd once, so that both are migrated, then copy",
                )
            insert = (
                f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
            )
            select = f"SELECT {', '.join(names)} FROM {table}"
            async for rows in theirs.stream(select, [], BATCH):
                await ours.executemany(insert, [tuple(row) for row in rows])
            reset = ours.dialect.sequence_reset(table) if "seq" in names else None
            if reset is not None:
                await ours.execute_fetchall(reset)
            counts[table] = await _count(ours, table)
            expected = await _count(theirs, table)
            if counts[table] != expected:
                raise Conflict(
                    "the copy does not add up",
                    f"{table}: {expected} rows in the source, {counts[table]} in the target;"
                    " nothing was kept",
                )
    return Copied(rows=counts)


async def _count(db: Connection, table: str) -> int:
    rows = await db.execute_fetchall(f"SELECT count(*) FROM {table}")
    return int(rows[0][0])


async def _columns(db: Connection, table: str) -> Sequence[str]:
    rows = await db.execute_fetchall(db.dialect.columns_sql(), [table])
    return [str(row[0]) for row in rows]
