"""Engine records into v5 wire types. Times leave as ISO-8601 UTC with a `Z`."""

from __future__ import annotations

from smemd import instants
from smemd.engine.memories import Related
from smemd.engine.recall.hybrid import Hit
from smemd.protocol.memory import (
    ChunkOut,
    DocumentOut,
    DocumentRef,
    IncludedDocument,
    JobOut,
    MemoryOut,
    NamespaceOut,
    Pagination,
    ProfileBody,
    RelatedMemory,
    RelatedSet,
    SearchResult,
    Status,
    System,
)
from smemd.store.records import Chunk, Document, Job, Memory, Namespace, Phase

# The job phases as the v5 status enum names them: "reconciling" is its "indexing", and the
# enum has no word for fetching a URL, so it reads as the "extracting" of rich content it is.
STATUS: dict[Phase, Status] = {
    "queued": "queued",
    "fetching": "extracting",
    "chunking": "chunking",
    "embedding": "embedding",
    "extracting": "extracting",
    "reconciling": "indexing",
    "done": "done",
    "failed": "failed",
}


iso = instants.iso


def document_ref(doc: Document) -> DocumentRef:
    return DocumentRef(id=doc.id, status=STATUS[doc.status])


def document(
    doc: Document, *, content: bool = True, memory_count: int | None = None
) -> DocumentOut:
    return DocumentOut(
        id=doc.id, title=doc.title, type=doc.type, summary=None,
        content=doc.content if content else None, metadata=doc.metadata, url=doc.url,
        custom_id=doc.caller_id,
        system=System(
            status=STATUS[doc.status],
            dreaming_status="done" if doc.status in ("done", "failed") else "dreaming",
            created_at=iso(doc.created_at), updated_at=iso(doc.updated_at), memory_count=memory_count,
        ),
    )  # fmt: skip


def chunk(
    c: Chunk, metadata: dict[str, object] | None = None, *, with_document: bool = False
) -> ChunkOut:
    return ChunkOut(
        id=c.id, position=c.position, content=c.text, type="text", metadata=dict(metadata or {}),
        system=System(created_at=iso(c.created_at)),
        document_id=c.document_id if with_document else None, said_at=iso(c.said_at),
    )  # fmt: skip


def memory(m: Memory, now: float) -> MemoryOut:
    return MemoryOut(
        id=m.id, memory=m.text, metadata=m.metadata, is_static=m.is_static,
        is_inference=m.is_inference, is_latest=m.is_latest, is_forgotten=m.is_forgotten(now),
        version=m.version, system=System(created_at=iso(m.created_at), updated_at=iso(m.updated_at)),
        type=m.type, root_id=m.root_id, parent_id=m.parent_id, document_id=m.document_id,
        event_at=iso(m.event_at), valid_from=iso(m.valid_from), valid_until=iso(m.valid_until),
        superseded_at=iso(m.superseded_at), forgotten_at=iso(m.forgotten_at),
        forget_reason=m.forget_reason, expires_at=iso(m.expires_at), typed_by=m.typed_by,
        entities=m.entities or None,
    )  # fmt: skip


def search_result(hit: Hit, now: float) -> SearchResult:
    similarity = round(hit.similarity, 4)
    if hit.memory is not None:
        m = hit.memory
        return SearchResult(
            id=m.id, memory=m.text, metadata=m.metadata, similarity=similarity,
            is_latest=m.is_latest and not m.is_forgotten(now), is_inference=m.is_inference,
            system=System(created_at=iso(m.created_at), updated_at=iso(m.updated_at)),
            document_id=m.document_id, version=m.version, type=m.type, typed_by=m.typed_by,
            entities=m.entities or None, valid_from=iso(m.valid_from),
            valid_until=iso(m.valid_until),
        )  # fmt: skip
    assert hit.chunk is not None
    c, doc = hit.chunk, hit.document
    return SearchResult(
        id=c.id, chunk=c.text, metadata=doc.metadata if doc else {}, similarity=similarity,
        is_latest=True, is_inference=False,
        system=System(created_at=iso(c.created_at), updated_at=iso(doc.updated_at if doc else c.created_at)),
        document_id=c.document_id,
    )  # fmt: skip


def related(rel: Related) -> RelatedSet:
    def one(m: Memory, relation: str, outgoing: bool | None = None) -> RelatedMemory:
        return RelatedMemory(
            id=m.id, relation=relation, version=m.version, memory=m.text, metadata=m.metadata,
            system=System(updated_at=iso(m.updated_at)), outgoing=outgoing,
        )  # fmt: skip

    return RelatedSet(
        parents=[one(m, "updates") for m in rel.parents],
        children=[one(m, "updates") for m in rel.children],
        siblings=[one(m, kind, m.id in rel.pointed_to) for m, kind in rel.siblings],
    )


def included_document(doc: Document) -> IncludedDocument:
    return IncludedDocument(
        id=doc.id, title=doc.title, type=doc.type, metadata=doc.metadata, summary=None,
        system=System(created_at=iso(doc.created_at), updated_at=iso(doc.updated_at)),
    )  # fmt: skip


def pagination(page: int, limit: int, total: int) -> Pagination:
    return Pagination(
        current_page=page, limit=limit, total_items=total, total_pages=-(-total // limit)
    )


def namespace(ns: Namespace) -> NamespaceOut:
    return NamespaceOut(
        id=ns.name, namespace=ns.name, document_count=ns.document_count, memory_count=ns.memory_count,
        description=ns.supporting_context or None,
        system=System(created_at=iso(ns.created_at), updated_at=iso(ns.updated_at)),
    )  # fmt: skip


def job(j: Job) -> JobOut:
    return JobOut(
        id=j.id, namespace=j.namespace, document_id=j.document_id, revision=j.revision, phase=j.phase,
        attempts=j.attempts, created_at=iso(j.created_at) or "", updated_at=iso(j.updated_at) or "",
        error=j.error,
    )  # fmt: skip


def prefers_markdown(accept: str) -> bool:
    """Whether an Accept header ranks `text/markdown` first (by q, then by order)."""
    ranked: list[tuple[float, int, str]] = []
    for n, part in enumerate(accept.split(",")):
        media, *options = (p.strip() for p in part.split(";"))
        q = 1.0
        for option in options:
            name, _, value = option.partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media:
            ranked.append((-q, n, media.lower()))
    return bool(ranked) and min(ranked)[2] == "text/markdown" and min(ranked)[0] < 0


def profile_markdown(namespace: str, profile: ProfileBody) -> str:
    """The profile as a short markdown document, for a prompt or a person."""
    sections = [("Static", profile.static), ("Dynamic", profile.dynamic)]
    sections += [(f"Bucket: {name}", facts) for name, facts in profile.buckets.items()]
    lines = [f"# Profile of {namespace}"]
    for title, facts in sections:
        lines += ["", f"## {title}", ""]
        lines += [f"- {fact.memory}" for fact in facts] or ["_nothing yet_"]
    return "\n".join(lines) + "\n"
