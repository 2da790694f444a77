"""A namespace as a whole: its supporting context, removing it or moving its contents into
another, its profile buckets, its census, and the organisation's context that every namespace
shares.

Removal and move are one store transaction each, so a crash part-way leaves all or nothing. The
namespace's loaded indexes are dropped after the commit; the next search reloads them. A move
re-queues the documents still being ingested under their new namespace: each one's job starts
again, queued, on a new revision (the worker doing it sees the revision and drops its work).
"""

from __future__ import annotations

import msgspec

from smemd.engine.ids import now
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.ingest.worker import Worker
from smemd.errors import BadRequest, Conflict, NotFound
from smemd.store.protocol import Store
from smemd.store.records import MemoryCensus, Namespace, Removed

# The buckets every namespace has: the organisation's, which a namespace cannot change.
BUILT_IN_BUCKETS = {"preferences": "What the subject likes, dislikes and habitually chooses"}


class Census(msgspec.Struct, kw_only=True):
    """A namespace at a glance."""

    memories: MemoryCensus
    documents: int
    jobs_open: int


class NamespaceChanges:
    def __init__(self, store: Store, indexes: Indexes, worker: Worker) -> None:
        self.store = store
        self.indexes = indexes
        self.worker = worker

    async def set_context(
        self, name: str, supporting_context: str | None, *, create: bool = False
    ) -> Namespace:
        """Set the namespace's supporting context (unless None); 404 when it does not exist,
        unless `create` (a write that names it makes it)."""
        async with self.store.write() as writer:
            if create:
                await writer.ensure_namespace(name, now())
            elif await writer.namespace(name) is None:
                raise NotFound(
                    "namespace not found", f"no namespace {name!r}; its first write makes it"
                )
            if supporting_context is not None:
                await writer.set_supporting_context(name, supporting_context, now())
        async with self.store.read() as reader:
            ns = await reader.namespace(name)
        assert ns is not None
        return ns

    async def census(self, name: str, *, now: float, since: float, facts_cap: int) -> Census:
        """Its memories counted by status, type, hour since `since` and per document (up to
        `facts_cap`), its documents and its open jobs."""
        async with self.store.scan(name) as reader:
            return Census(
                memories=await reader.census(name, now=now, since=since, facts_cap=facts_cap),
                documents=await reader.document_count(name),
                jobs_open=await reader.open_job_count(name),
            )

    async def remove(self, name: str) -> Removed:
        async with self.indexes.writing() as (writer, changes):
            if await writer.namespace(name) is None:
                raise NotFound("namespace not found", f"no namespace {name!r}")
            removed = await writer.remove_namespace(name)
            changes.drop(name)
        return removed

    async def move(self, source: str, target: str) -> Removed:
        """Everything of `source` into `target` (made if need be), then `source` is gone."""
        if source == target:
            raise BadRequest("invalid moveTo", "$.moveTo: the namespace itself")
        t = now()
        async with self.indexes.writing() as (writer, changes):
            if await writer.namespace(source) is None:
                raise NotFound("namespace not found", f"no namespace {source!r}")
            clashes = await writer.clashing_caller_ids(source, target)
            if clashes:
                raise Conflict(
                    "caller ids in both namespaces",
                    f"{target!r} already has documents with the ids {clashes}; delete or"
                    " rename them first",
                )
            await writer.ensure_namespace(target, t)
            requeued = await writer.open_job_documents(source)
            moved = await writer.move_namespace(source, target)
            for doc in requeued:
                doc = await writer.revise_document(doc, revision=doc.revision + 1, status="queued")
                await writer.requeue_open_job(doc, doc.revision, t)
            changes.drop(source)
            changes.drop(target)
        if requeued:
            self.worker.wake()
        return moved

    async def buckets(self, name: str) -> dict[str, str]:
        """The effective buckets: the built-in ones, then the namespace's own."""
        async with self.store.read() as reader:
            return BUILT_IN_BUCKETS | await reader.buckets(name)

    async def put_buckets(self, name: str, buckets: dict[str, str]) -> dict[str, str]:
        _refuse_built_in(buckets)
        async with self.store.write() as writer:
            await writer.ensure_namespace(name, now())
            await writer.put_buckets(name, buckets, now())
        return await self.buckets(name)

    async def delete_buckets(self, name: str, names: list[str]) -> dict[str, str]:
        """Unknown names are ignored; a built-in bucket cannot go (409)."""
        _refuse_built_in(names)
        async with self.store.write() as writer:
            await writer.delete_buckets(name, names)
        return await self.buckets(name)

    async def organisation(self) -> tuple[str | None, int]:
        async with self.store.read() as reader:
            return await reader.organisation_context(), await reader.namespace_count()

    async def set_organisation_context(self, text: str) -> None:
        async with self.store.write() as writer:
            await writer.set_organisation_context(text)


def _refuse_built_in(names: object) -> None:
    built_in = sorted(set(BUILT_IN_BUCKETS) & set(names))  # type: ignore[call-overload]
    if built_in:
        raise Conflict(
            "built-in bucket",
            f"{built_in} belong to the organisation; a namespace cannot change them",
        )
