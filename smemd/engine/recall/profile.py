"""A namespace's profile: who the memories say the user is, and what is going on now.

Static: preferences, then facts, the best connected first (stated by more sources, linked to
more memories by updates and extends). Dynamic: episodes and updated memories of the last 14
days, newest first. Buckets: the `preferences` bucket holds the preferences; any other bucket
holds what recall finds for its description (a namespace's own buckets have one), else its name. A filter narrows all three to the memories it admits.
With `as_of` the profile is the one that held then: the versions valid at that instant, and
the 14 days before it, by valid time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from smemd.engine.filters import Filter
from smemd.engine.ids import now
from smemd.engine.recall.hybrid import Recall
from smemd.engine.recall.query import Query
from smemd.engine.recall.visibility import memory_conditions
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
        limit: int = 30, as_of: float | None = None,
    ) -> Profile:  # fmt: skip
        t = now()
        where, params = _admitted(namespace, filter, t, as_of)
        async with self.store.scan(namespace) as reader:
            static: list[Memory] = []
            for kind in ("preference", "fact"):  # one index walk each, preferences first
                if len(static) < limit:
                    static += await reader.top_memories(
                        namespace, where=f"{where} AND m.type = '{kind}'", params=params,
                        order=BEST_CONNECTED, limit=limit - len(static),
                    )  # fmt: skip
            recent = "m.created_at >= ?" if as_of is None else "m.valid_from BETWEEN ? AND ?"
            since = (t if as_of is None else as_of) - DYNAMIC_DAYS * 86400
            dynamic = await reader.top_memories(
                namespace,
                where=f"{where} AND (m.type = 'episode' OR m.version > 1) AND {recent}",
                params=[*params, since] if as_of is None else [*params, since, as_of],
                order="m.created_at DESC" if as_of is None else "m.valid_from DESC",
                limit=limit,
            )  # fmt: skip
            described = await reader.buckets(namespace) if buckets else {}
        filled = {
            name: await self._bucket(namespace, name, described.get(name), filter, as_of)
            for name in buckets
        }
        return Profile(static=static, dynamic=dynamic, buckets=filled)

    async def _bucket(
        self, namespace: str, name: str, description: str | None, filter: Filter | None,
        as_of: float | None,
    ) -> list[Memory]:  # fmt: skip
        """The preferences; else what recall finds for the bucket's description (the namespace
        defined it: `PUT /ns/{ns}/profile/buckets`), or its name."""
        if name == "preferences":
            where, params = _admitted(namespace, filter, now(), as_of)
            async with self.store.scan(namespace) as reader:
                return await reader.top_memories(
                    namespace, where=f"{where} AND m.type = 'preference'", params=params,
                    order="m.created_at DESC", limit=BUCKET_SIZE,
                )  # fmt: skip
        query = Query(
            text=description or name.replace("-", " ").replace("_", " "), mode="memories",
            limit=BUCKET_SIZE,
            threshold=0.3, filter=filter, as_of=as_of,
        )  # fmt: skip
        hits = await self.recall.search(namespace, query)
        return [hit.memory for hit in hits if hit.memory is not None]


def _admitted(
    namespace: str, filter: Filter | None, at: float, as_of: float | None
) -> tuple[str, list[Any]]:
    """SQL over `m` for the memories the filter admits: live now, or valid at `as_of`."""
    if as_of is not None:
        return memory_conditions(namespace, Query(text="", filter=filter, as_of=as_of), at)
    if filter is None:
        return LIVE_NOW, [at]
    sql, params = filter.to_sql("m.metadata")
    return f"{LIVE_NOW} AND ({sql})", [at, *params]
