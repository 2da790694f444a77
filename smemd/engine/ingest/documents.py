"""Documents in and out: accept (durably, as a job), revise, read, list, hard-delete.

Content that is a single http(s) URL is stored as the document's `url` and fetched by the
worker; its content hash stays the URL's, so the same id and URL again is a no-op.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from smemd.config import IngestConfig
from smemd.engine.dates.stated import stated_date
from smemd.engine.filters import Filter
from smemd.engine.ids import content_hash, new_id, now
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.ingest import chat_logs, ingest_ids
from smemd.engine.ingest.chunking import check_count, title_of
from smemd.engine.ingest.fetching import url_of
from smemd.engine.ingest.worker import Worker
from smemd.errors import STORE_CANNOT_WRITE, Conflict, NotFound
from smemd.store.protocol import Store, Writer
from smemd.store.queries import ChunkSelection, DocumentSelection, Listing, Sort
from smemd.store.records import Chunk, Document
from smemd.store.scope import Scope

TaskType = Literal["memory", "superrag"]
DOCUMENT_SORTS: dict[str, Sort] = {"createdAt": "created", "updatedAt": "updated"}
# A chunk is never changed: its `updatedAt` is when it was made.
CHUNK_SORTS: dict[str, Sort] = {"position": "position", "updatedAt": "created"}
URL_TYPE = "webpage"  # what a URL document is called until its fetch says what it served


INSTANT = 1  # the job priority of a document sent with `dreaming: "instant"`


class NewDocument(msgspec.Struct, kw_only=True):
    """`type` and `title`, when given, say what the content already is (an uploaded file made
    text): such content is taken as it is, even if it reads as a URL."""

    content: str
    caller_id: str | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    date: float | None = None
    task_type: TaskType = "memory"
    type: str | None = None
    title: str | None = None
    instant: bool = False  # worked before the queue (v5 `dreaming: "instant"`)


class DocumentChange(msgspec.Struct, kw_only=True):
    """A PATCH: fields left None stay as they are; `type` and `title` go with `content`."""

    content: str | None = None
    metadata: dict[str, Any] | None = None
    date: float | None = None
    task_type: TaskType | None = None
    type: str | None = None
    title: str | None = None


class Origin(msgspec.Struct, frozen=True):
    """Where new content came from: its url (None for text), type and title until processed."""

    url: str | None
    type: str
    title: str

    @classmethod
    def of(cls, content: str, type: str | None, title: str | None, *, fetch: bool) -> Origin:
        """`fetch` False: a URL is only text (`[ingest] fetch-urls = false`)."""
        url = url_of(content) if type is None and fetch else None
        if url is not None:
            return cls(url, URL_TYPE, title or title_of(url))
        return cls(None, type or "text", title or title_of(content))


class Documents:
    def __init__(
        self, store: Store, indexes: Indexes, worker: Worker, *, fetch_urls: bool = True,
        max_chunks: int = IngestConfig().max_chunks,
    ) -> None:  # fmt: skip
        self.store = store
        self.indexes = indexes
        self.worker = worker
        self.fetch_urls = fetch_urls
        self.max_chunks = max_chunks

    async def add(self, namespace: str, new: NewDocument) -> Document:
        """Commit the document and its job before answering; the same id and content is a no-op.
        A text past `[ingest] max-chunks` is refused (413) and nothing is written."""
        await self.check_size(new.content)
        digest = content_hash(new.content)  # before the store's writer is held: a long text
        async with self.store.write() as writer:
            doc = await self._add(writer, namespace, new, digest, now())
        self.worker.wake()
        return doc

    async def add_many(self, items: Sequence[tuple[str, NewDocument]]) -> list[Document]:
        """A batch's documents (each in its namespace, sizes checked by the caller) in one
        commit, as `add` would each, in order. One commit, not one each: a batch waits for the
        store's writer once, however busy ingest keeps it. Whatever one of them is refused for
        is raised, and nothing is written."""
        digests = [content_hash(new.content) for _, new in items]
        t = now()
        async with self.store.write() as writer:
            docs = [
                await self._add(writer, namespace, new, digest, t)
                for (namespace, new), digest in zip(items, digests, strict=True)
            ]
        self.worker.wake()
        return docs

    async def _add(
        self, writer: Writer, namespace: str, new: NewDocument, digest: str, t: float
    ) -> Document:
        await writer.ensure_namespace(namespace, t)
        existing = await writer.document(namespace, new.caller_id) if new.caller_id else None
        if existing is None:
            origin = Origin.of(new.content, new.type, new.title, fetch=self.fetch_urls)
            doc = await writer.insert_document(
                Document(
                    seq=0, id=new_id("doc"), namespace=namespace, caller_id=new.caller_id,
                    title=origin.title, type=origin.type, content=new.content, url=origin.url,
                    metadata=new.metadata, content_date=_date_of(new.date, new.metadata),
                    content_hash=digest, task_type=new.task_type, status="queued", error=None,
                    revision=1, created_at=t, updated_at=t, ingest_id=ingest_ids.current(),
                )
            )  # fmt: skip
            await writer.insert_job(
                new_id("job"), namespace, doc.id, 1, t, priority=INSTANT if new.instant else 0
            )
            return doc
        if existing.content_hash == digest and existing.status != "failed":
            return existing  # an idempotent re-send
        return await self._revise(writer, existing, DocumentChange(
            content=new.content, metadata={**existing.metadata, **new.metadata},
            date=new.date, task_type=new.task_type, type=new.type, title=new.title,
        ))  # fmt: skip

    async def check_size(self, content: str) -> None:
        """413 for a text that makes more than `[ingest] max-chunks` chunks (a URL is checked
        once fetched), as the worker cuts it. A text shorter than that many characters makes
        fewer; cutting a large one takes a while: off the loop."""
        if len(content) > self.max_chunks:
            count = await asyncio.to_thread(chat_logs.count, content, self.max_chunks)
            check_count(count, self.max_chunks)

    async def update(self, namespace: str, ref: str, change: DocumentChange) -> Document:
        if change.content is not None:
            await self.check_size(change.content)
        async with self.store.write() as writer:
            doc = await writer.document(namespace, ref)
            if doc is None:
                raise NotFound(
                    "document not found", f"no document {ref!r} in namespace {namespace!r}"
                )
            doc = await self._revise(writer, doc, change)
        self.worker.wake()
        return doc

    async def get(self, namespace: str, ref: str) -> Document:
        async with self.store.read() as reader:
            doc = await reader.document(namespace, ref)
        if doc is None:
            raise NotFound("document not found", f"no document {ref!r} in namespace {namespace!r}")
        return doc

    async def find(self, ref: str, scope: Scope) -> Document:
        """A document by id, or caller id, in any namespace `scope` holds (the legacy routes name
        none); outside the scope it is as unknown as a missing one."""
        async with self.store.read() as reader:
            doc = await reader.document_in_scope(ref, scope)
        if doc is None:
            raise NotFound("document not found", f"no document {ref!r}")
        return doc

    async def list_unfinished(
        self, scope: Scope, namespace: str | None, *, include_failed: bool, since: float | None,
        page: int, limit: int,
    ) -> tuple[list[Document], int]:  # fmt: skip
        """Documents still being processed (and failed ones, with `include_failed`) in
        `namespace` or every namespace in scope, newest change first; with `since`, only those
        changed since then."""
        async with self.store.read() as reader:
            return await reader.unfinished_documents(
                scope, namespace, include_failed=include_failed, since=since, limit=limit,
                offset=(page - 1) * limit,
            )  # fmt: skip

    async def chunks_of(self, document_id: str) -> list[Chunk]:
        async with self.store.read() as reader:
            return await reader.chunks_of(document_id)

    async def list_documents(
        self, namespace: str, *, page: int, limit: int, sort: str, order: str, filter: Filter | None
    ) -> tuple[list[Document], int]:
        listing = Listing(
            sort=DOCUMENT_SORTS.get(sort, "created"), descending=order == "desc", limit=limit,
            offset=(page - 1) * limit,
        )  # fmt: skip
        async with self.store.scan(namespace) as reader:
            return await reader.page(namespace, DocumentSelection(filter), listing)

    async def list_chunks(
        self, namespace: str, *, page: int, limit: int, sort: str, order: str, filter: Filter | None
    ) -> tuple[list[Chunk], int]:
        listing = Listing(
            sort=CHUNK_SORTS.get(sort, "created"), descending=order == "desc", limit=limit,
            offset=(page - 1) * limit,
        )  # fmt: skip
        async with self.store.scan(namespace) as reader:
            return await reader.page(namespace, ChunkSelection(filter), listing)

    async def delete(self, namespace: str, refs: list[str]) -> tuple[int, list[tuple[str, str]]]:
        """Hard delete: the documents, their chunks and the memories only they support."""
        deleted, errors = 0, []
        for i, ref in enumerate(refs):
            try:
                async with self.indexes.writing() as (writer, changes):
                    doc = await writer.document(namespace, ref)
                    if doc is None:
                        errors.append((ref, "not found"))
                        continue
                    effects = await _delete_document(writer, doc)
                    changes.remove(namespace, "chunks", effects.chunk_seqs)
                    changes.remove(namespace, "memories", effects.memory_seqs)
                    for seq in effects.reinstated_seqs:
                        changes.set_live(namespace, "memories", seq, True)
            except STORE_CANNOT_WRITE as err:
                # Each document is its own commit: say which went, and that the rest did not.
                if not deleted:
                    raise
                errors += [(rest, f"not deleted: {err.message}") for rest in refs[i:]]
                break
            deleted += 1
        return deleted, errors

    async def _revise(self, writer: Writer, doc: Document, change: DocumentChange) -> Document:
        if (retraction := await writer.active_retraction(doc.id)) is not None:
            # What it says now would be read as live while what it said is withdrawn.
            raise Conflict(
                "document retracted", f"unretract {doc.id!r} ({retraction.id}) to change it"
            )
        t = now()
        changes: dict[str, Any] = {"updated_at": t}
        if change.metadata is not None:
            changes["metadata"] = change.metadata
            await writer.set_derived_metadata(doc.id, change.metadata)
        date = _date_of(change.date, change.metadata or {})
        if date is not None:
            changes["content_date"] = date
        if change.task_type is not None:
            changes["task_type"] = change.task_type
        reprocess = change.content is not None and (
            content_hash(change.content) != doc.content_hash or doc.status == "failed"
        )
        if change.content is not None and reprocess:
            origin = Origin.of(change.content, change.type, change.title, fetch=self.fetch_urls)
            changes.update(
                content=change.content, content_hash=content_hash(change.content),
                title=origin.title, type=origin.type, url=origin.url, revision=doc.revision + 1,
                status="queued", error=None,
            )  # fmt: skip
            if not await writer.requeue_open_job(doc, doc.revision + 1, t):
                await writer.insert_job(new_id("job"), doc.namespace, doc.id, doc.revision + 1, t)
        return await writer.revise_document(doc, **changes)


def _date_of(date: float | None, metadata: dict[str, Any]) -> float | None:
    """When content is from: the date the request gives, else the one its metadata states
    (smemd.engine.dates.stated)."""
    return date if date is not None else stated_date(metadata)


class _Deleted(msgspec.Struct):
    chunk_seqs: list[int]
    memory_seqs: list[int]
    reinstated_seqs: list[int]


async def _delete_document(writer: Writer, doc: Document) -> _Deleted:
    chunk_seqs = [c.seq for c in await writer.chunks_of(doc.id)]
    derived = [m for m in await writer.memories_of_document(doc.id) if m.document_id == doc.id]
    doomed: list[str] = []
    for memory in derived:
        others = [d for d in await writer.sources_of(memory.id) if d != doc.id]
        if others:  # another document said it too: the memory stays, sourced there
            await writer.rehome_memory(memory.id, others[0])
            continue
        doomed.append(memory.id)
    # The same cascade as a retraction: what was inferred from these alone goes with them.
    doomed, _ = await writer.unsupported(doomed, [], doc.id, past_withdrawn=True)
    gone = await writer.memories_by_id(doomed)
    memory_seqs = [m.seq for m in gone]
    # Chains that lose a version close over the gap: an update this document made is undone,
    # and the version it replaced is latest again.
    chains = {m.root_id for m in gone}
    await writer.delete_memories(doomed)
    reinstated: list[int] = []
    for root_id in chains:
        for version in await writer.rechain(root_id, now()):
            if version.is_latest and version.forgotten_at is None:
                reinstated.append(version.seq)
    await writer.delete_document_rows(doc.id)
    return _Deleted(chunk_seqs, memory_seqs, reinstated)
