"""The export format, version 1: one namespace as JSON Lines (`GET /ns/{ns}/export`,
`smemctl export`), optionally gzip'd (`.jsonl.gz`). This module is its one definition; the README shows it.

The first line is the header and the last the trailer (`"record": "end"`, with the counts: an
export without it was cut off); every line between is one record, tagged by its `record` field,
in an order in which whatever a record names came before it (a document before its chunks, a
memory before its sources, relations and mentions). Field names are camelCase; times are Unix
seconds (floats) exactly as stored, so nothing is rounded away on the way back. Vectors are not
exported: they belong to the embedder, and an import embeds the texts again. Ids are the store's
own, so every reference between records (`rootId`, `parentId`, `documentId`, `fromId`, …) holds.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from smemd.protocol.calibration import JudgeKind, MemoryType
from smemd.protocol.entities import EntityKindName as EntityKind

# As the store names them (smemd.store.records; tests/test_export.py holds the two the same).
RelationKind = Literal["updates", "extends", "derives", "contradicts"]
TypedBy = Literal["extraction", "judge", "label"]
LabelKind = Literal["type", "judgement", "contradiction"]
# How an import into a namespace with data treats a record whose id (or key) the namespace holds:
# `skip` it (the namespace's stays) or `replace` the namespace's with it.
MergeRule = Literal["skip", "replace"]
Phase = Literal[
    "queued", "fetching", "chunking", "embedding", "extracting", "reconciling", "done", "failed"
]

EXPORT_FORMAT: Literal["smem-export"] = "smem-export"
EXPORT_VERSION = 1  # an import refuses an export of a later version
# The longest line an import reads: a document's content is one line, and a text past
# `[ingest] max-chunks` was never stored.
MAX_LINE_BYTES = 64 * 1024 * 1024

# What an import checks each value against (an export of what smem stored always passes):
# a time from year 1 to year 9999; an id that is not empty.
Time = Annotated[float, msgspec.Meta(ge=-62135596800.0, le=253402300799.0)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]


class ExportRecord(msgspec.Struct, kw_only=True, rename="camel", tag_field="record"):
    pass


class Header(ExportRecord, tag="header"):
    format: Literal["smem-export"]
    version: int
    smem_version: str
    exported_at: str  # ISO 8601, UTC: the moment the store was read at
    namespace: str  # the namespace exported; an import may put it under another name


class NamespaceRecord(ExportRecord, tag="namespace"):
    supporting_context: str
    created_at: Time
    updated_at: Time
    created_by: str | None


class ProfileBucketRecord(ExportRecord, tag="profileBucket"):
    name: str
    description: str
    created_at: Time


class DocumentRecord(ExportRecord, tag="document"):
    id: Id
    caller_id: str | None  # the caller's customId
    title: str | None
    type: str
    content: str
    url: str | None
    metadata: dict[str, Any]
    content_date: Time | None
    content_hash: str
    task_type: Literal["memory", "superrag"]
    status: Phase  # `done`, `failed`, or the phase it was in (an import queues it again)
    error: str | None
    revision: int
    created_at: Time
    updated_at: Time


class ChunkRecord(ExportRecord, tag="chunk"):
    id: Id
    document_id: Id
    position: int
    heading: str
    text: str
    created_at: Time
    context: str = ""  # what came just before its document (the turns before), searched with it
    said_at: Time | None = None  # when its message was sent, as its chat log stated it


class MemoryRecord(ExportRecord, tag="memory"):
    """One version of a memory: its chain is `rootId`, its place in it `version`/`parentId`."""

    id: Id
    text: str
    type: MemoryType
    version: int
    is_latest: bool
    root_id: Id
    parent_id: str | None
    document_id: str | None
    chunk_id: str | None
    created_at: Time  # record time: when smem learned it
    updated_at: Time
    event_at: Time | None
    valid_from: Time | None  # valid time: when it began to hold in the world
    valid_until: Time | None
    superseded_at: Time | None  # record time another version took over
    forgotten_at: Time | None
    forget_reason: str | None
    expires_at: Time | None
    is_static: bool
    is_inference: bool
    metadata: dict[str, Any]
    typed_by: TypedBy | None
    entities: list[str]
    linked_at: Time | None  # when dreaming last looked for its links
    inferred_at: Time | None
    retraction_id: str | None


class SourceRecord(ExportRecord, tag="source"):
    """A document (and chunk) a memory was seen in; a duplicate adds one of these."""

    memory_id: Id
    document_id: Id
    chunk_id: str
    created_at: Time


class RelationRecord(ExportRecord, tag="relation"):
    from_id: Id
    to_id: Id
    kind: RelationKind
    score: float
    created_at: Time


class EntityRecord(ExportRecord, tag="entity"):
    """An entity, or an alias of one (`mergedInto` names the entity it was merged into)."""

    id: Id
    name: str
    kind: EntityKind
    first_seen: Time
    last_seen: Time
    created_at: Time
    merged_into: str | None


class MentionRecord(ExportRecord, tag="mention"):
    memory_id: Id
    entity_id: Id


class AliasDecisionRecord(ExportRecord, tag="aliasDecision"):
    id: Id
    entity_id: Id
    alias_id: Id
    same: bool
    by: Literal["person", "judge"]
    probability: float | None
    judgement_id: str | None
    rows: list[str]
    created_at: Time
    undone_at: Time | None


class JudgementRecord(ExportRecord, tag="judgement"):
    id: Id
    kind: JudgeKind
    subject_id: Id
    text: str
    options: list[str]
    probabilities: list[float]
    proposal: str | None
    applied: str
    fallback: str
    created_at: Time


class LabelRecord(ExportRecord, tag="label"):
    kind: LabelKind
    subject_id: Id
    value: str
    created_at: Time


class RetractionRecord(ExportRecord, tag="retraction"):
    id: Id
    subject_kind: Literal["document", "memory"]
    subject_id: Id
    created_at: Time
    undone_at: Time | None
    effects: dict[str, Any]  # what it changed, so that an undo can put it back


class Trailer(ExportRecord, tag="end"):
    """The last line: how many records of each kind came before it. An export without it was
    cut off, and an import refuses it."""

    records: dict[str, int]


class ImportQuery(msgspec.Struct, kw_only=True, rename="camel"):
    """`POST /ns/{ns}/import?merge=…`: without it the namespace must hold nothing."""

    merge: MergeRule | None = None


class Imported(msgspec.Struct, kw_only=True, rename="camel"):
    """What `POST /ns/{ns}/import` put back."""

    namespace: str
    records: dict[str, int]  # by kind
    requeued: int  # documents queued again: they were being ingested when exported
    ingest_id: str | None  # what `undo` takes back: the documents imported (None outside a request)
    merge: MergeRule | None = None
    # Records whose id or key the namespace held already, by kind: skipped or replaced (merge).
    held: dict[str, int] = msgspec.field(default_factory=dict)


# In the order they are written: each after what it names.
RECORD_TYPES: tuple[type[ExportRecord], ...] = (
    NamespaceRecord, ProfileBucketRecord, DocumentRecord, ChunkRecord, MemoryRecord,
    SourceRecord, RelationRecord, EntityRecord, MentionRecord, AliasDecisionRecord,
    JudgementRecord, LabelRecord, RetractionRecord,
)  # fmt: skip
AnyRecord = (
    Header | NamespaceRecord | ProfileBucketRecord | DocumentRecord | ChunkRecord | MemoryRecord
    | SourceRecord | RelationRecord | EntityRecord | MentionRecord | AliasDecisionRecord
    | JudgementRecord | LabelRecord | RetractionRecord | Trailer
)  # fmt: skip


def record_name(record: type[ExportRecord]) -> str:
    """The record's tag, as its lines carry it."""
    return str(record.__struct_config__.tag)
