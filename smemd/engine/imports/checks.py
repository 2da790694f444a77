"""An export's lines checked one at a time, before anything is written: each a record of the
format (smemd.protocol.exports) in its place, each reference to a record the file holds, each key
once. The first line that fails is refused with its number and the field, as a 400.

References to a record that comes earlier are checked as the line is read; the few that may point
forward (a memory's retraction, another version of its chain, an entity merged into a later one)
are kept with their line and checked at the trailer, when the whole file is known.
"""

from __future__ import annotations

from collections import Counter

import msgspec

from smemd.errors import BadRequest
from smemd.protocol.exports import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    RECORD_TYPES,
    AliasDecisionRecord,
    AnyRecord,
    ChunkRecord,
    DocumentRecord,
    EntityRecord,
    ExportRecord,
    Header,
    JudgementRecord,
    LabelRecord,
    MemoryRecord,
    MentionRecord,
    ProfileBucketRecord,
    RelationRecord,
    RetractionRecord,
    SourceRecord,
    Trailer,
    record_name,
)
from smemd.store.records import entity_key

_decode = msgspec.json.Decoder(AnyRecord).decode
RANK = {record: rank for rank, record in enumerate(RECORD_TYPES)}
# The kinds a reference may name, each by the ids of its records.
NAMED = ("document", "chunk", "memory", "entity", "aliasDecision", "judgement", "retraction")


class ImportCheck:
    def __init__(self) -> None:
        self.line = 0
        self.header: Header | None = None
        self.trailer: Trailer | None = None
        self.counts: Counter[str] = Counter()
        self.ids: dict[str, set[str]] = {kind: set() for kind in NAMED}
        self.keys: set[tuple[str, object]] = set()  # every other unique key seen, by kind
        self.rank = -1
        self.forward: list[tuple[int, str, str, str]] = []  # line, field, kind, id

    def take(self, raw: bytes) -> ExportRecord | None:
        """The line's record (None for a blank line); BadRequest naming the line when it does
        not belong here."""
        self.line += 1
        if not raw.strip():
            return None
        if self.trailer is not None:
            raise self.bad("a line after the trailer (the last line)")
        try:
            record: ExportRecord = _decode(raw)
        except msgspec.ValidationError as err:
            raise self.bad(str(err)) from None
        except msgspec.DecodeError as err:
            raise self.bad(f"not a JSON record ({err})") from None
        if self.header is None:
            self._header(record)
        elif isinstance(record, Header):
            raise self.bad("a second header")
        elif isinstance(record, Trailer):
            self._trailer(record)
        else:
            self._place(record)
            self._references(record)
            self.counts[record_name(type(record))] += 1
        return record

    def finish(self) -> Header:
        """The header, once the whole file was taken; BadRequest if it ended early."""
        if self.header is None:
            raise BadRequest("invalid export", "the body is empty: an export has a header line")
        if self.trailer is None:
            raise BadRequest(
                "invalid export",
                f'it ends at line {self.line} without its trailer (`"record": "end"`):'
                " the export was cut off; nothing was imported",
            )
        return self.header

    def bad(self, why: str, line: int | None = None) -> BadRequest:
        return BadRequest(
            "invalid export", f"line {line or self.line}: {why}; nothing was imported"
        )

    def _header(self, record: ExportRecord) -> None:
        if not isinstance(record, Header) or record.format != EXPORT_FORMAT:
            raise self.bad(
                f'not an smem export: the first line must be {{"format": "{EXPORT_FORMAT}", …}}'
            )
        if record.version > EXPORT_VERSION:
            raise self.bad(
                f"$.version: {record.version}, from a newer smem; this one reads up to"
                f" {EXPORT_VERSION}"
            )
        self.header = record

    def _trailer(self, record: Trailer) -> None:
        said = {kind: n for kind, n in record.records.items() if n}
        if said != dict(self.counts):
            raise self.bad(
                f"$.records: the trailer counts {said}, the file holds {dict(self.counts)}"
            )
        for line, field, kind, ref in self.forward:
            if ref not in self.ids[kind]:
                raise self.bad(f"{field}: no {kind} {ref!r} in the file", line)
        self.trailer = record

    def _place(self, record: ExportRecord) -> None:
        rank = RANK[type(record)]
        if rank < self.rank:
            raise self.bad(
                f"a {record_name(type(record))} record after the"
                f" {record_name(RECORD_TYPES[self.rank])} records (the format's order)"
            )
        if rank == 0 and self.counts["namespace"]:
            raise self.bad("a second namespace record")
        self.rank = rank

    def _unique(self, kind: str, key: object, field: str) -> None:
        """`key` (an id, for a kind in NAMED) not seen before in this file."""
        tagged = (kind, key)
        if (key in self.ids[kind]) if kind in NAMED else (tagged in self.keys):
            raise self.bad(f"{field}: {key!r} again (a {kind} is in an export once)")
        if kind in NAMED:
            self.ids[kind].add(str(key))
        else:
            self.keys.add(tagged)

    def _known(self, kind: str, ref: str | None, field: str) -> None:
        if ref is not None and ref not in self.ids[kind]:
            raise self.bad(f"{field}: no {kind} {ref!r} before this line")

    def _later(self, kind: str, ref: str | None, field: str) -> None:
        if ref is not None and ref not in self.ids[kind]:
            self.forward.append((self.line, field, kind, ref))

    def _references(self, record: ExportRecord) -> None:
        if isinstance(record, ProfileBucketRecord):
            self._unique("profileBucket", record.name, "$.name")
        elif isinstance(record, DocumentRecord):
            self._unique("document", record.id, "$.id")
            if record.caller_id is not None:
                self._unique("customId", record.caller_id, "$.callerId")
        elif isinstance(record, ChunkRecord):
            self._unique("chunk", record.id, "$.id")
            self._known("document", record.document_id, "$.documentId")
        elif isinstance(record, MemoryRecord):
            self._unique("memory", record.id, "$.id")
            self._known("document", record.document_id, "$.documentId")
            self._known("chunk", record.chunk_id, "$.chunkId")
            # A chain's versions need not come in its order (a rechain renumbers them).
            self._later("memory", record.root_id, "$.rootId")
            self._later("memory", record.parent_id, "$.parentId")
            self._later("retraction", record.retraction_id, "$.retractionId")
        elif isinstance(record, SourceRecord):
            self._unique("source", (record.memory_id, record.document_id, record.chunk_id), "$")
            self._known("memory", record.memory_id, "$.memoryId")
            self._known("document", record.document_id, "$.documentId")
            self._known("chunk", record.chunk_id or None, "$.chunkId")
        elif isinstance(record, RelationRecord):
            self._unique("relation", (record.from_id, record.to_id, record.kind), "$")
            self._known("memory", record.from_id, "$.fromId")
            self._known("memory", record.to_id, "$.toId")
        elif isinstance(record, EntityRecord):
            self._unique("entity", record.id, "$.id")
            # The store keeps one entity per name in any ASCII case, as its lower() compares.
            self._unique("entity name", entity_key(record.name), "$.name")
            self._later("entity", record.merged_into, "$.mergedInto")
        elif isinstance(record, MentionRecord):
            self._unique("mention", (record.memory_id, record.entity_id), "$")
            self._known("memory", record.memory_id, "$.memoryId")
            self._known("entity", record.entity_id, "$.entityId")
        elif isinstance(record, AliasDecisionRecord):
            self._unique("aliasDecision", record.id, "$.id")
            self._known("entity", record.entity_id, "$.entityId")
            self._known("entity", record.alias_id, "$.aliasId")
            self._later("judgement", record.judgement_id, "$.judgementId")
        elif isinstance(record, LabelRecord):
            self._label(record)
        elif isinstance(record, JudgementRecord | RetractionRecord):
            self._unique(record_name(type(record)), record.id, "$.id")

    def _label(self, record: LabelRecord) -> None:
        self._unique("label", (record.kind, record.subject_id), "$.subjectId")
        if record.kind == "type":
            self._known("memory", record.subject_id, "$.subjectId")
        elif record.kind == "judgement":
            self._known("judgement", record.subject_id, "$.subjectId")
        else:  # a contradiction's two memories, joined by "|"
            first, bar, second = record.subject_id.partition("|")
            if not bar:
                raise self.bad(f"$.subjectId: {record.subject_id!r} is not two memory ids a|b")
            self._known("memory", first, "$.subjectId")
            self._known("memory", second, "$.subjectId")
