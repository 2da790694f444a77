"""Wire types of the Supermemory v5 API (reference §3) and smem's extensions to it.

Requests forbid unknown fields: a misplaced option is a 400, as upstream. Replies leave out
optional fields that are unset, so "present only when requested" holds on the wire.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from smemd.protocol import Query, Reply, Request

# SQLite's JSON functions stop at U+0000, so metadata strings may not hold it (filters would lie).
Text = Annotated[str, msgspec.Meta(pattern=r"^[^\x00]*$")]
MetadataValue = Text | int | float | bool | list[Text]
Metadata = dict[str, MetadataValue]
Status = Literal[
    "unknown", "queued", "extracting", "chunking", "embedding", "indexing", "done", "failed"
]
SearchMode = Literal["hybrid", "memories", "chunks"]
NAMESPACE_PATTERN = r"^[a-zA-Z0-9_:-]{1,100}$"
# The whole string: Python's `$` (msgspec's patterns, re.match) also matches before a final
# newline, and "evil\n" would make a namespace that prints like "evil".
_NAMESPACE = re.compile(NAMESPACE_PATTERN.strip("^$"))


def check_namespace(name: str) -> str:
    """`name` if it is a namespace name; ValueError saying why not."""
    if not _NAMESPACE.fullmatch(name):
        raise ValueError(f"{name[:120]!r} does not match {NAMESPACE_PATTERN}")
    return name


CallerId = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
Content = Annotated[str, msgspec.Meta(min_length=1)]
SupportingContext = Annotated[str, msgspec.Meta(max_length=1500)]


class Sparse(Reply, omit_defaults=True):
    """A reply whose unset optional fields are left out."""


# --- requests ---------------------------------------------------------------------------------


class BatchDocument(Request):
    content: Content
    id: CallerId | None = None
    supporting_context: SupportingContext | None = None
    metadata: Metadata | None = None
    group: Metadata | None = None
    date: str | None = None


class AddDocument(BatchDocument):
    task_type: Literal["memory", "superrag"] | None = None
    dreaming: Literal["dynamic", "instant"] | None = None


class BatchAdd(Request):
    documents: Annotated[list[BatchDocument], msgspec.Meta(min_length=1, max_length=600)]
    task_type: Literal["memory", "superrag"] | None = None
    dreaming: Literal["dynamic", "instant"] | None = None


class UpdateDocument(Request):
    content: Content | None = None
    supporting_context: SupportingContext | None = None
    metadata: Metadata | None = None
    group: Metadata | None = None
    date: str | None = None
    task_type: Literal["memory", "superrag"] | None = None
    dreaming: Literal["dynamic", "instant"] | None = None


class DeleteIds(Request):
    ids: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1)]], msgspec.Meta(min_length=1, max_length=100)
    ]


class SearchInclude(Request):
    documents: bool = False
    related: bool = False
    forgotten: bool = False


class Search(Request):
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    search_mode: SearchMode = "hybrid"
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.3
    filter: Any = None  # validated by smemd.engine.filters, which names the bad path
    include: SearchInclude = msgspec.field(default_factory=SearchInclude)
    # Unset: the fleet's cross-encoder re-scores the top when there is one; "none" turns it off.
    rerank: Literal["none", "order", "aggregate"] | None = None
    rewrite_query: bool = False
    # smem's extensions: time travel and recency decay.
    as_of: str | None = None  # valid time: what held then, as known now
    as_of_recorded: str | None = None  # record time: what smem believed then
    half_life_days: Annotated[float, msgspec.Meta(ge=0)] | None = None
    # Only memories naming this entity (its id, or its name in any case), and the chunks they
    # were read from; an entity the namespace does not have finds nothing.
    entity: Annotated[str, msgspec.Meta(min_length=1, max_length=255)] | None = None


class Profile(Request):
    filter: Any = None
    buckets: (
        Annotated[
            list[Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=64)]],
            msgspec.Meta(max_length=50),
        ]
        | None
    ) = None
    as_of: str | None = None  # smem's extension: the profile as it held then (valid time)


class ListInclude(Request):
    content: bool = False
    memory_count: bool = False
    forgotten: bool = False


class ListBody(Request):
    filter: Any = None
    include: ListInclude = msgspec.field(default_factory=ListInclude)
    # smem's extensions for memories: every version, and one type only.
    history: bool = False
    type: Literal["fact", "preference", "episode"] | None = None
    # One status only, whatever `history` and `include.forgotten` say: `live` the latest versions
    # neither forgotten nor expired, `superseded` older versions not forgotten, `forgotten` any
    # version forgotten or expired.
    status: Literal["live", "superseded", "forgotten"] | None = None
    # Only the memories this document (smem's id or the caller's) is a source of.
    document: Annotated[str, msgspec.Meta(min_length=1, max_length=255)] | None = None
    # Only the memories naming this entity (its id, or its name in any case).
    entity: Annotated[str, msgspec.Meta(min_length=1, max_length=255)] | None = None


class ForgetIds(Request):
    ids: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1)]], msgspec.Meta(min_length=1, max_length=500)
    ]
    reason: Annotated[str, msgspec.Meta(max_length=500)] | None = None


class ForgetQuery(Request):
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    dry_run: bool
    threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.5
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 20


class UpdateMemory(Request):
    """smem's PATCH of a memory: new text (a new version), an expiry, or both."""

    memory: Content | None = None
    forget_after: str | None = None  # ISO-8601: the memory leaves recall then (legacy v4's name)


class UpdateNamespace(Request):
    supporting_context: SupportingContext | None = None


class FileFields(Request):
    """The text fields of a multipart upload: what `AddDocument` says (`metadata` and `group` as
    JSON)."""

    metadata: str | None = None
    group: str | None = None
    date: str | None = None
    task_type: Literal["memory", "superrag"] | None = None
    supporting_context: str | None = None
    dreaming: str | None = None
    file_type: str | None = None
    mime_type: str | None = None


class FileForm(FileFields, kw_only=True):
    """`POST /ns/{ns}/document/file[/{id}]`: the file, and its text fields."""

    file: bytes


class FilePatchForm(FileFields):
    """`PATCH /ns/{ns}/document/file/{id}`: the text fields, and a file only to replace the content."""

    file: bytes | None = None


# --- query parameters -------------------------------------------------------------------------

Page = Annotated[int, msgspec.Meta(ge=1, le=1_000_000)]


class DocumentQuery(Query):
    include: list[Literal["chunks", "memories"]] = msgspec.field(default_factory=list)


class MemoryQuery(Query):
    include: list[Literal["related", "documents"]] = msgspec.field(default_factory=list)
    related_limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5


class ListQuery(Query):
    page: Page = 1
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    sort: Literal["createdAt", "updatedAt", "position"] = "createdAt"  # position: chunks only
    order: Literal["asc", "desc"] = "desc"


class NamespacesQuery(Query):
    page: Page = 1
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    q: Annotated[str, msgspec.Meta(max_length=100)] = ""  # names that contain it


class JobsQuery(Query):
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 50
    namespace: str | None = None


# --- replies ----------------------------------------------------------------------------------


class System(Sparse):
    created_at: str | None = None
    updated_at: str | None = None
    status: str | None = None
    dreaming_status: str | None = None
    memory_count: int | None = None


class DocumentRef(Reply):
    id: str
    status: Status


class MemoryOut(Sparse):
    id: str
    memory: str
    metadata: dict[str, Any]
    is_static: bool
    is_inference: bool
    is_latest: bool
    is_forgotten: bool
    version: int
    system: System
    type: str  # smem's extensions from here on
    root_id: str | None = None
    parent_id: str | None = None
    document_id: str | None = None
    event_at: str | None = None
    # Valid time: from when and until when the fact held in the world (validUntil: the next
    # version's validFrom). Record time is `system.createdAt`, and `supersededAt` when another
    # version became the latest.
    valid_from: str | None = None
    valid_until: str | None = None
    superseded_at: str | None = None
    forgotten_at: str | None = None
    forget_reason: str | None = None
    expires_at: str | None = None
    # Who set `type`: "extraction", "judge" (dreaming), "label"; absent: the heuristic's guess.
    typed_by: str | None = None
    entities: list[str] | None = None  # as extraction named them; absent when none


class ChunkOut(Sparse):
    id: str
    position: int
    content: str
    type: str
    metadata: dict[str, Any]
    system: System
    document_id: str | None = None
    said_at: str | None = None  # when its message was sent, as its chat log stated it


class DocumentOut(Sparse):
    id: str
    title: str | None
    type: str
    summary: str | None
    content: str | None
    metadata: dict[str, Any]
    system: System
    url: str | None = None
    custom_id: str | None = None
    chunks: list[ChunkOut] | None = None
    memories: list[MemoryOut] | None = None


class BatchResult(Sparse):
    id: str
    status: str
    error: str | None = None
    details: str | None = None
    url: str | None = None  # when the content was a URL, to be fetched


class BatchAddResult(Reply):
    results: list[BatchResult]
    count: int
    failed: int


class IdError(Reply):
    id: str
    error: str


class DeleteResult(Reply):
    count: int
    errors: list[IdError]


class RelatedMemory(Sparse):
    id: str
    relation: str
    memory: str
    metadata: dict[str, Any]
    system: System
    version: int | None = None
    # smem's extension, on siblings: whether the link points from the memory asked about to this
    # one (it `extends` this one) or from this one to it (it is extended by this one).
    outgoing: bool | None = None


class RelatedSet(Reply):
    parents: list[RelatedMemory]
    children: list[RelatedMemory]
    siblings: list[RelatedMemory]


class IncludedDocument(Reply):
    id: str
    title: str | None
    type: str | None
    metadata: dict[str, Any]
    summary: str | None
    system: System


class Included(Sparse):
    related: RelatedSet | None = None
    document: IncludedDocument | None = None


class SearchResult(Sparse):
    id: str
    metadata: dict[str, Any]
    similarity: float
    is_latest: bool
    is_inference: bool
    system: System
    memory: str | None = None
    chunk: str | None = None
    included: Included | None = None
    # smem's extensions
    document_id: str | None = None
    version: int | None = None
    type: str | None = None
    typed_by: str | None = None
    entities: list[str] | None = None
    valid_from: str | None = None  # a memory's valid time, as on MemoryOut
    valid_until: str | None = None


class SearchResponse(Reply):
    results: list[SearchResult]
    search_time: float


class Fact(Reply):
    id: str
    memory: str


class ProfileBody(Reply):
    static: list[Fact]
    dynamic: list[Fact]
    buckets: dict[str, list[Fact]]


class ProfileResponse(Reply):
    profile: ProfileBody


class Pagination(Reply):
    current_page: int
    limit: int
    total_items: int
    total_pages: int


class ListResponse(Reply):
    documents: list[DocumentOut]
    chunks: list[ChunkOut]
    memories: list[MemoryOut]
    pagination: Pagination


class MemoryMatch(Reply):
    id: str
    memory: str


class ForgetResult(Reply):
    count: int
    errors: list[IdError]
    matches: list[MemoryMatch]


class MemoryDetails(MemoryOut):
    included: Included | None = None


class History(Reply):
    memories: list[MemoryOut]


class NamespaceOut(Sparse):
    id: str
    namespace: str
    document_count: int
    memory_count: int
    system: System
    description: str | None = None


class NamespaceList(Reply):
    namespaces: list[NamespaceOut]
    pagination: Pagination


class NamespaceDetails(Sparse):
    namespace: str
    system: System
    supporting_context: str | None = None
    # smem's extensions
    document_count: int | None = None
    memory_count: int | None = None


class JobOut(Sparse):
    id: str
    namespace: str
    document_id: str
    revision: int
    phase: str
    attempts: int
    created_at: str
    updated_at: str
    error: str | None = None


class Jobs(Reply):
    jobs: list[JobOut]
    counts: dict[str, int]
