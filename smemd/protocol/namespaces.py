"""Wire types of a namespace as a whole (delete, move), its profile buckets, the organisation,
and documents' memory counts: the v5 calls SDK 5.0.1 makes beyond documents and recall."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from smemd.protocol import Query, Request
from smemd.protocol.memory import Sparse

BucketName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=64)]
BucketText = Annotated[str, msgspec.Meta(max_length=2000)]


class DeleteNamespaceQuery(Query):
    move_to: Annotated[str, msgspec.Meta(max_length=100)] | None = None


class NamespaceDeleted(Sparse):
    """Deleted (with the counts), or moved (`queued`, as SDK 5 names it: done when answered)."""

    status: Literal["deleted", "queued"]
    namespace: str
    deleted_documents_count: int | None = None
    deleted_memories_count: int | None = None
    operation_id: str | None = None
    move_to: str | None = None


class PutBuckets(Request):
    buckets: Annotated[dict[BucketName, BucketText], msgspec.Meta(max_length=50)]


class DeleteBuckets(Request):
    buckets: Annotated[list[BucketName], msgspec.Meta(min_length=1, max_length=50)]


class ProfileBuckets(Sparse):
    buckets: dict[str, str]  # name → description: the built-in ones and the namespace's own


class Organization(Sparse):
    namespace_count: int
    organizational_context: str | None = None


class UpdateOrganization(Request):
    organizational_context: Annotated[str, msgspec.Meta(max_length=10_000)] | None = None


class MemoryCountsRequest(Request):
    ids: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1, max_length=255)]],
        msgspec.Meta(min_length=1, max_length=100),
    ]


class MemoryCount(Sparse):
    id: str
    memory_count: int


class MemoryCounts(Sparse):
    counts: list[MemoryCount]  # the documents found among the ids, in the order asked
