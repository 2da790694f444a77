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

from typing import Any, Literal

import msgspec

EXPORT_FORMAT: Literal["smem-export"] = "smem-export"
EXPORT_VERSION = 1  # an import refuses an export of a later version


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
    created_at: float
    updated_at: float
    created_by: str | None


class ProfileBucketRecord(ExportRecord, tag="profileBucket"):
    name: str
    description: str
    created_at: float


class DocumentRecord(ExportRecord, tag="document"):
    id: str
    caller_id: str | None  # the caller's customId
    title: str | None
    type: str
    content: str
    url: str | None
    metadata: dict[str, Any]
    content_date: float | None
    content_hash: str
    task_type: str
    status: str  # `done`, `failed`, `retracted`, or a phase it was in when exported
    error: str | None
    revision: int
    created_at: float
    updated_at: float


class ChunkRecord(ExportRecord, tag="chunk"):
    id: str
    document_id: str
    position: int
    heading: str
    text: str
    created_at: float


class MemoryRecord(ExportRecord, tag="memory"):
    """One version of a memory: its chain is `rootId`, its place in it `version`/`parentId`."""

    id: str
    text: str
    type: str
    version: int
    is_latest: bool
    root_id: str
    parent_id: str | None
    document_id: str | None
    chunk_id: str | None
    created_at: float  # record time: when smem learned it
    updated_at: float
    event_at: float | None
    valid_from: float | None  # valid time: when it began to hold in the world
    valid_until: float | None
    superseded_at: float | None  # record time another version took over
    forgotten_at: float | None
    forget_reason: str | None
    expires_at: float | None
    is_static: bool
    is_inference: bool
    metadata: dict[str, Any]
    typed_by: str | None
    entities: list[str]
    linked_at: float | None  # when dreaming last looked for its links
    inferred_at: float | None
    retraction_id: str | None


class SourceRecord(ExportRecord, tag="source"):
    """A document (and chunk) a memory was seen in; a duplicate adds one of these."""

    memory_id: str
    document_id: str
    chunk_id: str
    created_at: float


class RelationRecord(ExportRecord, tag="relation"):
    from_id: str
    to_id: str
    kind: str  # updates, extends, derives, contradicts
    score: float
    created_at: float


class EntityRecord(ExportRecord, tag="entity"):
    """An entity, or an alias of one (`mergedInto` names the entity it was merged into)."""

    id: str
    name: str
    kind: str
    first_seen: float
    last_seen: float
    created_at: float
    merged_into: str | None


class MentionRecord(ExportRecord, tag="mention"):
    memory_id: str
    entity_id: str


class AliasDecisionRecord(ExportRecord, tag="aliasDecision"):
    id: str
    entity_id: str
    alias_id: str
    same: bool
    by: str
    probability: float | None
    judgement_id: str | None
    rows: list[str]
    created_at: float
    undone_at: float | None


class JudgementRecord(ExportRecord, tag="judgement"):
    id: str
    kind: str
    subject_id: str
    text: str
    options: list[str]
    probabilities: list[float]
    proposal: str | None
    applied: str
    fallback: str
    created_at: float


class LabelRecord(ExportRecord, tag="label"):
    kind: str  # type, judgement, contradiction
    subject_id: str
    value: str
    created_at: float


class RetractionRecord(ExportRecord, tag="retraction"):
    id: str
    subject_kind: str
    subject_id: str
    created_at: float
    undone_at: float | None
    effects: dict[str, Any]  # what it changed, so that an undo can put it back


class Trailer(ExportRecord, tag="end"):
    """The last line: how many records of each kind came before it. An export without it was
    cut off, and an import refuses it."""

    records: dict[str, int]


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
