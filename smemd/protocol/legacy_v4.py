"""Wire types of the legacy v4 routes (reference §5): `/v4/search`, `/v4/profile`, `/v4/memories`.

Bodies are lenient as the old API was: fields smem does not model are ignored (SDK 3 sends
`filepath`; old clients send more), but every modelled field is checked by type, and a bad one
is a 400 naming its path. Replies leave out optional fields that are unset.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from smemd.protocol import Reply
from smemd.protocol.memory import Metadata, Sparse

Threshold = Annotated[float, msgspec.Meta(ge=0, le=1)]
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
BucketName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=64)]
# The v4 docs' default cut-off (v5's is 0.3).
THRESHOLD = 0.5


class LegacyRequest(msgspec.Struct, kw_only=True, rename="camel"):
    """Base of legacy bodies: unknown fields are ignored, known ones checked."""


class V4Include(LegacyRequest):
    chunks: bool = False  # each memory result carries the chunk it was read from
    documents: bool = False
    summaries: bool = False
    related_memories: bool = False
    forgotten_memories: bool = False


class V4Search(LegacyRequest):
    q: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    container_tag: Tag | None = None
    container_tags: list[Tag] | None = None  # SDK 3 still sends it; the first names the namespace
    search_mode: Literal["memories", "hybrid", "documents"] = "memories"
    threshold: Threshold = THRESHOLD
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    rerank: bool | None = None  # unset: smem's default (the fleet's cross-encoder, if any)
    aggregate: bool = False
    rewrite_query: bool = False  # accepted; smem does not rewrite queries (nor does its v5)
    include: V4Include = msgspec.field(default_factory=V4Include)
    filters: Any = None  # the legacy grammar, translated by smemd.api.legacy.filters


class V4Profile(LegacyRequest):
    container_tag: Tag
    q: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)] | None = None
    threshold: Threshold = THRESHOLD
    filters: Any = None
    include: list[Literal["static", "dynamic", "buckets"]] | None = None  # None: every section
    buckets: Annotated[list[BucketName], msgspec.Meta(max_length=50)] | None = None


class V4NewMemory(LegacyRequest):
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000, pattern=r"^[^\x00]*$")]
    is_static: bool = False
    metadata: Metadata | None = None


class V4AddMemories(LegacyRequest):
    memories: Annotated[list[V4NewMemory], msgspec.Meta(min_length=1, max_length=100)]
    container_tag: Tag


class V4TemporalContext(LegacyRequest):
    document_date: str | None = None
    event_date: list[str] | None = None


class V4UpdateMemory(LegacyRequest):
    container_tag: Tag
    new_content: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=255)] | None = None
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)] | None = None
    metadata: Metadata | None = None
    # Unset: the new version keeps the old one's expiry; null: it has none.
    forget_after: str | msgspec.UnsetType | None = msgspec.UNSET
    forget_reason: str | None = None
    temporal_context: V4TemporalContext | None = None


class V4ForgetMemory(LegacyRequest):
    container_tag: Tag
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=255)] | None = None
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)] | None = None
    reason: Annotated[str, msgspec.Meta(max_length=500)] | None = None


class V4ForgetMatching(LegacyRequest):
    container_tag: Tag
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)] | None = None
    ids: (
        Annotated[list[Annotated[str, msgspec.Meta(min_length=1)]], msgspec.Meta(max_length=500)]
        | None
    ) = None
    dry_run: bool = False
    threshold: Threshold = 0.5
    max_forget: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100
    reason: Annotated[str, msgspec.Meta(max_length=500)] | None = None


# --- replies ----------------------------------------------------------------------------------


class V4Chunk(Reply):
    content: str
    document_id: str
    position: int
    score: float  # the chunk's own similarity when recall ranked it, else its memory's


class V4Document(Sparse):
    id: str
    created_at: str
    updated_at: str
    title: str | None = None
    type: str | None = None
    summary: str | None = None
    metadata: dict[str, Any] | None = None


class V4Context(Sparse):
    memory: str
    relation: str
    updated_at: str
    metadata: dict[str, Any] | None = None
    version: int | None = None  # the distance from the result: -1 its parent, +1 its child


class V4Related(Reply):
    parents: list[V4Context]
    children: list[V4Context]
    related: list[V4Context]


class V4Result(Sparse):
    id: str
    similarity: float
    updated_at: str
    metadata: dict[str, Any]
    memory: str | None = None
    chunk: str | None = None
    version: int | None = None
    root_memory_id: str | None = None
    chunks: list[V4Chunk] | None = None
    documents: list[V4Document] | None = None
    context: V4Related | None = None


class V4SearchResponse(Reply):
    results: list[V4Result]
    timing: float
    total: int


class V4ProfileBody(Sparse):
    static: list[str] | None = None
    dynamic: list[str] | None = None
    buckets: dict[str, list[str]] | None = None


class V4ProfileResponse(Sparse):
    profile: V4ProfileBody
    search_results: V4SearchResponse | None = None


class V4AddedMemory(Reply):
    id: str
    memory: str
    is_static: bool
    created_at: str


class V4AddMemoriesResponse(Reply):
    document_id: str
    memories: list[V4AddedMemory]


class V4UpdatedMemory(Reply):
    id: str
    memory: str
    version: int
    parent_memory_id: str | None
    root_memory_id: str | None
    created_at: str
    metadata: dict[str, Any] | None
    forget_after: str | None
    forget_reason: str | None


class V4Forgot(Reply):
    id: str
    forgotten: bool


class V4Candidate(Reply):
    id: str
    memory: str
    score: float


class V4ForgetMatchingResponse(Sparse):
    dry_run: bool
    count: int
    forget_batch_id: str | None
    summary: str
    candidates: list[V4Candidate] | None = None
    forgotten: list[V4Candidate] | None = None
