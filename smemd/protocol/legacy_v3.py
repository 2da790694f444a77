"""Wire types of the legacy v3 routes (reference §5), as SDK 3.62.0 sends and reads them.

Request bodies ignore fields they do not model (older clients send some smem has no use for:
`filepath`, `categoriesFilter`, `documentThreshold`, `useAdvancedProcessing`, …) but are strict
on the types of those they do. Replies carry the fields SDK 3's models require.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from smemd.protocol import Query, Reply
from smemd.protocol.memory import (
    BatchResult,
    CallerId,
    Content,
    Metadata,
    Pagination,
    Status,
    SupportingContext,
)

TaskType = Literal["memory", "superrag"]
Dreaming = Literal["dynamic", "instant"]
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Tags = Annotated[list[Tag], msgspec.Meta(max_length=100)]
# SDK 3 sends `page` and `limit` of the list as a number or a string.
Count = int | float | str


class LegacyRequest(msgspec.Struct, kw_only=True, rename="camel"):
    """A legacy body: unknown fields are ignored, as the old API did."""


class Shared(LegacyRequest):
    """What an add names besides its content; a batch names it once for every document."""

    container_tag: Tag | None = None
    container_tags: Tags | None = None
    document_date: str | None = None
    dreaming: Dreaming | None = None
    entity_context: SupportingContext | None = None
    filter_by_metadata: Metadata | None = None
    metadata: Metadata | None = None
    task_type: TaskType | None = None


class V3Add(Shared, kw_only=True):
    content: Content
    custom_id: CallerId | None = None


class V3Batch(Shared, kw_only=True):
    documents: Annotated[list[V3Add | Content], msgspec.Meta(min_length=1, max_length=600)]


class V3Update(LegacyRequest):
    content: Content | None = None
    container_tag: Tag | None = None
    container_tags: Tags | None = None
    document_date: str | None = None
    filter_by_metadata: Metadata | None = None
    metadata: Metadata | None = None
    task_type: TaskType | None = None


class V3BulkDelete(LegacyRequest):
    ids: (
        Annotated[list[Annotated[str, msgspec.Meta(min_length=1)]], msgspec.Meta(max_length=100)]
        | None
    ) = None
    container_tags: Tags | None = None


class V3List(LegacyRequest):
    container_tags: Tags | None = None
    filters: Any = None  # a legacy filter, or one as a JSON string: smemd.api.legacy.filters
    include_content: bool = False
    limit: Count = 10
    page: Count = 1
    sort: Literal["createdAt", "updatedAt"] = "createdAt"
    order: Literal["asc", "desc"] = "desc"


class V3Search(LegacyRequest):
    q: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    container_tag: Tag | None = None
    container_tags: Tags | None = None
    chunk_threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.0
    doc_id: Annotated[str, msgspec.Meta(min_length=1, max_length=255)] | None = None
    filters: Any = None
    include_full_docs: bool = False
    include_summary: bool = False
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    only_matching_chunks: bool = False
    rerank: bool | None = None
    rewrite_query: bool = False


class V3TagSettings(LegacyRequest):
    entity_context: SupportingContext | None = None


class V3ProcessingQuery(Query):
    container_tags: str | None = None  # comma-separated
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    page: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 1
    view: Literal["active", "pending", "all"] = "active"


class V3FileForm(LegacyRequest):
    """The multipart fields of `POST /v3/documents/file` (`metadata` and `filterByMetadata` as
    JSON; `containerTags` a JSON array or one tag)."""

    file: bytes
    container_tag: str | None = None
    container_tags: str | None = None
    custom_id: str | None = None
    dreaming: str | None = None
    entity_context: str | None = None
    file_type: str | None = None
    filter_by_metadata: str | None = None
    metadata: str | None = None
    mime_type: str | None = None
    task_type: str | None = None
    filepath: str | None = None  # accepted, ignored
    use_advanced_processing: str | None = None  # accepted, ignored (SDK 3: deprecated)


# --- replies ----------------------------------------------------------------------------------


class V3Ref(Reply):
    id: str
    status: Status


class V3BatchReply(Reply):
    results: list[BatchResult]
    success: int
    failed: int


class V3Memory(Reply):
    id: str
    memory: str
    is_static: bool
    is_latest: bool
    is_inference: bool
    is_forgotten: bool
    version: int
    source_count: int
    parent_memory_id: str | None
    root_memory_id: str | None
    created_at: str
    updated_at: str
    metadata: dict[str, Any]


class V3Item(Reply, omit_defaults=True):
    """A document as `POST /v3/documents/list` lists it."""

    id: str
    custom_id: str | None
    status: Status
    title: str | None
    summary: str | None
    type: str
    metadata: dict[str, Any]
    container_tags: list[str]
    created_at: str
    updated_at: str
    connection_id: None = None
    content: str | None = None
    url: str | None = None


class V3Document(Reply, omit_defaults=True):
    """A document as `GET /v3/documents/{id}` (and `GET /v3/memories/{id}`) shows it."""

    id: str
    custom_id: str | None
    content: str | None
    title: str | None
    summary: str | None
    type: str
    status: Status
    dreaming_status: Literal["dreaming", "done"]
    task_type: str
    latest_revision: int
    metadata: dict[str, Any]
    container_tags: list[str]
    created_at: str
    updated_at: str
    raw: None
    source: None
    connection_id: None
    url: str | None
    memories: list[V3Memory] | None = None


class V3ListReply(Reply):
    memories: list[V3Item]  # documents, under the key the old API used
    pagination: Pagination


class V3ProcessingReply(Reply):
    documents: list[V3Item]
    total_count: int
    pagination: Pagination


class V3IdError(Reply):
    id: str
    error: str


class V3BulkDeleted(Reply, omit_defaults=True):
    deleted_count: int
    success: bool
    container_tags: list[str] | None = None
    errors: list[V3IdError] | None = None


class V3Chunk(Reply):
    content: str
    is_relevant: bool
    position: int
    score: float


class V3SearchResult(Reply, omit_defaults=True):
    document_id: str
    title: str | None
    type: str
    score: float
    chunks: list[V3Chunk]
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    content: str | None = None
    summary: str | None = None


class V3SearchReply(Reply):
    results: list[V3SearchResult]
    timing: float
    total: int


class V3TagDetails(Reply, omit_defaults=True):
    container_tag: str
    entity_context: str | None
    updated_at: str
    created_at: str | None = None


class V3TagDeleted(Reply):
    success: bool
    container_tag: str
    deleted_documents_count: int
    deleted_memories_count: int
