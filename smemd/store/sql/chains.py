"""A memory's versions as one chain, ordered by valid time whatever order they were stored in.

Ingest, a person's edit, a document's delete and the migration that brought valid time all end
a change to a chain here, so every chain is settled the same way.
"""

from __future__ import annotations

import itertools

import msgspec

from smemd.store.records import Version
from smemd.store.sql.connection import Connection
from smemd.store.sql.rows import columns, to_record

# Named, not MEMORY_COLUMNS: migration 0004 runs this, and later columns must not break it.
_VERSION_COLUMNS = columns(Version)


async def rechain(
    db: Connection, root_id: str, now: float, *, skip_retracted: bool = True
) -> list[Version]:
    """The versions sharing `root_id`, renumbered in valid-time order, whatever order they came.

    The earliest is the root and version 1; each later one's parent is the one before it, and
    `updates` it. A version's valid time ends where the next begins; only the last is latest.
    One that stops being latest is superseded now; one placed in the past was never believed
    current, and is superseded as it is stored. Ties in valid time keep the order of storing.
    A retracted version is out of its chain (kept as it was, for unretract to put back);
    `skip_retracted` is False only for migrations older than the column.
    """
    skip = " AND retraction_id IS NULL" if skip_retracted else ""
    rows = await db.execute_fetchall(
        f"SELECT {_VERSION_COLUMNS} FROM memories WHERE root_id = ?{skip}", [root_id]
    )
    chain = sorted(
        (to_record(Version, row) for row in rows),
        key=lambda v: (v.valid_from, v.created_at, v.seq),
    )
    if not chain:
        return []
    ids = [v.id for v in chain]
    marks = ",".join("?" * len(ids))
    existing = {
        (r[0], r[1])
        for r in await db.execute_fetchall(
            f"SELECT from_id, to_id FROM relations WHERE kind = 'updates'"
            f" AND from_id IN ({marks}) AND to_id IN ({marks})",
            [*ids, *ids],
        )
    }
    wanted = {(later.id, earlier.id) for earlier, later in itertools.pairwise(chain)}
    for pair in existing - wanted:
        await db.execute(
            "DELETE FROM relations WHERE from_id = ? AND to_id = ? AND kind = 'updates'", pair
        )
    for pair in wanted - existing:
        await db.execute(
            "INSERT INTO relations (namespace, from_id, to_id, kind, score, created_at)"
            " SELECT namespace, ?, ?, 'updates', 1.0, ? FROM memories WHERE id = ?",
            [*pair, now, pair[0]],
        )
    settled = []
    for i, version in enumerate(chain):
        is_latest = i == len(chain) - 1
        placed = msgspec.structs.replace(
            version, version=i + 1, root_id=chain[0].id,
            parent_id=chain[i - 1].id if i else None,
            valid_until=None if is_latest else chain[i + 1].valid_from, is_latest=is_latest,
            superseded_at=None if is_latest else (version.superseded_at or now),
        )  # fmt: skip
        if placed != version:
            await db.execute(
                "UPDATE memories SET version = ?, root_id = ?, parent_id = ?, valid_until = ?,"
                " is_latest = ?, superseded_at = ?, updated_at = ? WHERE seq = ?",
                [
                    placed.version, placed.root_id, placed.parent_id, placed.valid_until,
                    int(placed.is_latest), placed.superseded_at, now, placed.seq,
                ],
            )  # fmt: skip
        settled.append(placed)
    return settled
