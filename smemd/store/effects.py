"""What a retraction changed, as images of the rows before and after, so undoing it puts back
exactly: the memory rows it touched (the columns below), the `updates` links of the chains it
closed, and the source links it removed. Undo checks that the rows still hold the after-images
(updated_at aside) and writes the before-images back."""

from __future__ import annotations

from typing import Any

import msgspec

from smemd.store.records import Record

# What a retraction may change on a memory row, and so what it saves and puts back.
IMAGE_COLUMNS = (
    "version", "is_latest", "root_id", "parent_id", "valid_until", "superseded_at",
    "forgotten_at", "forget_reason", "retraction_id", "document_id", "chunk_id", "updated_at",
)  # fmt: skip
UNCOMPARED = IMAGE_COLUMNS.index("updated_at")  # later touches of updated_at are no conflict
UpdatesLink = tuple[str, str, float, float]  # an `updates` relation: from, to, score, created_at
SourceRow = tuple[str, str, str, float]  # a memory_sources row


class Image(msgspec.Struct, array_like=True):
    """A memory row as a retraction saw it: its seq (for the indexes) and IMAGE_COLUMNS."""

    seq: int
    values: list[Any]

    def column(self, name: str) -> Any:
        return self.values[IMAGE_COLUMNS.index(name)]

    @property
    def is_live(self) -> bool:
        return bool(self.column("is_latest")) and self.column("forgotten_at") is None


class Snapshot(msgspec.Struct):
    memories: dict[str, Image]
    links: list[UpdatesLink]


class Effects(msgspec.Struct):
    before: Snapshot
    after: Snapshot
    sources_removed: list[SourceRow]


class Retraction(Record):
    id: str
    namespace: str
    subject_kind: str
    subject_id: str
    created_at: float
    undone_at: float | None
    effects: Effects
