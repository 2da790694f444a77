"""A namespace's profile: who the memories say the user is, and what is going on now.

Static: preferences, then facts, the best connected first (stated by more sources, linked to
more memories by updates and extends). Dynamic: episodes and updated memories of the last 14
days, newest first. Buckets: the `preferences` bucket holds the preferences; any other bucket
holds what recall finds for its name. A filter narrows all three to the memories it admits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from smemd.engine.filters import Filter
from smemd.engine.ids import now
from smemd.engine.recall import Query, Recall
from smemd.store.api import Reader, Store
from smemd.store.records import Memory

DYNAMIC_DAYS = 14
BUCKET_SIZE = 10
LIVE_NOW = (
    "m.is_latest = 1 AND m.forgotten_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > ?)"
)
# How connected a memory is: the documents that state it, and its links to other memories.
CONNECTEDNESS = (
    "(SELECT count(*) FROM memory_sources s WHERE s.memory_id = m.id)"
    " + (SELECT count(*) FROM relations r WHERE r.from_id = m.id OR r.to_id = m.id)"
)


class Profile(msgspec.Struct):
    static: list[Memory]
    dynamic: list[Memory]
    buckets: dict[str, list[Memory]]


class Profiles:
    def __init__(self, store: Store, recall: Recall) -> None:
        self.store = store
        self.recall = recall

    async def build(
        self, namespace: str, *, filter: Filter | None = None, buckets: Sequence[str] = (),
        limit: int = 30,
    ) -> Profile:  # fmt: skip
        t = now()
        where, params = _admitted(filter, t)
        async with self.store.read() as reader:
            static = await self._memories(
                reader, namespace, f"{where} AND m.type IN ('preference', 'fact')", params,
                order=f"m.type = 'preference' DESC, m.is_static DESC, {CONNECTEDNESS} DESC,"
                " m.created_at DESC", limit=limit,
            )  # fmt: skip
            dynamic = await self._memories(
                reader, namespace,
                f"{where} AND (m.type = 'episode' OR m.version > 1) AND m.created_at >= ?",
                [*params, t - DYNAMIC_DAYS * 86400], order="m.created_at DESC", limit=limit,
            )  # fmt: skip
        filled = {name: await self._bucket(namespace, name, filter) for name in buckets}
        return Profile(static=static, dynamic=dynamic, buckets=filled)

    @staticmethod
    async def _memories(
        reader: Reader, namespace: str, where: str, params: list[Any], *, order: str, limit: int
    ) -> list[Memory]:
        found, _ = await reader.memories(
            namespace, where=where, params=params, order=order, limit=limit, offset=0
        )
        return list(found)

    async def _bucket(self, namespace: str, name: str, filter: Filter | None) -> list[Memory]:
        if name == "preferences":
            where, params = _admitted(filter, now())
            async with self.store.read() as reader:
                return await self._memories(
                    reader, namespace, f"{where} AND m.type = 'preference'", params,
                    order="m.created_at DESC", limit=BUCKET_SIZE,
                )  # fmt: skip
        query = Query(
            text=name.replace("-", " ").replace("_", " "), mode="memories", limit=BUCKET_SIZE,
            threshold=0.3, filter=filter,
        )  # fmt: skip
        hits = await self.recall.search(namespace, query)
        return [hit.memory for hit in hits if hit.memory is not None]


def _admitted(filter: Filter | None, at: float) -> tuple[str, list[Any]]:
    """SQL over `m` for the live memories the filter admits."""
    if filter is None:
        return LIVE_NOW, [at]
    sql, params = filter.to_sql("m.metadata")
    return f"{LIVE_NOW} AND ({sql})", [at, *params]
