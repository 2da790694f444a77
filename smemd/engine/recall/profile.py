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
from smemd.engine.recall.hybrid import Query, Recall
from smemd.store.api import Store
from smemd.store.records import Memory

DYNAMIC_DAYS = 14
BUCKET_SIZE = 10
LIVE_NOW = (
    "m.is_latest = 1 AND m.forgotten_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > ?)"
)
# How connected a memory is (`connections`: the documents that state it plus its links to other
# memories, kept by the store), then the newest: the order of the store's profile index.
BEST_CONNECTED = "m.is_static DESC, m.connections DESC, m.created_at DESC"


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
        async with self.store.scan(namespace) as reader:
            static: list[Memory] = []
            for kind in ("preference", "fact"):  # one index walk each, preferences first
                if len(static) < limit:
                    static += await reader.top_memories(
                        namespace, where=f"{where} AND m.type = '{kind}'", params=params,
                        order=BEST_CONNECTED, limit=limit - len(static),
                    )  # fmt: skip
            dynamic = await reader.top_memories(
                namespace,
                where=f"{where} AND (m.type = 'episode' OR m.version > 1) AND m.created_at >= ?",
                params=[*params, t - DYNAMIC_DAYS * 86400], order="m.created_at DESC",
                limit=limit,
            )  # fmt: skip
        filled = {name: await self._bucket(namespace, name, filter) for name in buckets}
        return Profile(static=static, dynamic=dynamic, buckets=filled)

    async def _bucket(self, namespace: str, name: str, filter: Filter | None) -> list[Memory]:
        if name == "preferences":
            where, params = _admitted(filter, now())
            async with self.store.scan(namespace) as reader:
                return await reader.top_memories(
                    namespace, where=f"{where} AND m.type = 'preference'", params=params,
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
