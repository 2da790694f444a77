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

import msgspec

from smemd.engine.filters import Filter
from smemd.engine.ids import now
from smemd.engine.recall.hybrid import Recall
from smemd.engine.recall.query import Query
from smemd.store.protocol import Store
from smemd.store.queries import ProfilePick
from smemd.store.records import Memory

DYNAMIC_DAYS = 14
BUCKET_SIZE = 10


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
        with self.recall.latency.timing("profile", "buckets" if buckets else "plain"):
            return await self._build(namespace, filter, buckets, limit, as_of)

    async def _build(
        self, namespace: str, filter: Filter | None, buckets: Sequence[str], limit: int,
        as_of: float | None,
    ) -> Profile:  # fmt: skip
        t = now()
        pick = ProfilePick(now=t, limit=limit, order="connections", as_of=as_of, filter=filter)
        async with self.store.scan(namespace) as reader:
            static: list[Memory] = []
            for kind in ("preference", "fact"):  # one index walk each, preferences first
                if len(static) < limit:
                    static += await reader.profile_memories(
                        namespace,
                        msgspec.structs.replace(pick, type=kind, limit=limit - len(static)),
                    )
            since = (t if as_of is None else as_of) - DYNAMIC_DAYS * 86400
            dynamic = await reader.profile_memories(
                namespace,
                msgspec.structs.replace(
                    pick, order="stored" if as_of is None else "valid", changed_since=since
                ),
            )
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
            pick = ProfilePick(
                now=now(), limit=BUCKET_SIZE, order="stored", as_of=as_of, filter=filter,
                type="preference",
            )  # fmt: skip
            async with self.store.scan(namespace) as reader:
                return await reader.profile_memories(namespace, pick)
        query = Query(
            text=description or name.replace("-", " ").replace("_", " "), mode="memories",
            limit=BUCKET_SIZE,
            threshold=0.3, filter=filter, as_of=as_of,
        )  # fmt: skip
        hits = await self.recall.search(namespace, query, purpose="bucket")
        return [hit.memory for hit in hits if hit.memory is not None]
