"""Rows into Structs and back: the column lists and the few conversions a row needs (JSON kept
as text, flags kept as integers)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import msgspec

from smemd.store.records import Chunk, Document, Job, Memory, Record
from smemd.store.sql.connection import Connection, Row

R = TypeVar("R", bound=Record)
T = TypeVar("T")

_json_encode = msgspec.json.Encoder().encode
_json_decode = msgspec.json.Decoder(dict[str, Any]).decode
_json_list = msgspec.json.Decoder(list[str]).decode


def columns(record: type[Record], prefix: str = "") -> str:
    """The SELECT list for a record, in field order (optionally table-qualified)."""
    return ", ".join(f"{prefix}{name}" for name in record.__struct_fields__)


DOCUMENT_COLUMNS = columns(Document)
# A document with its content cut to its opening, the first parameter's characters: the turns
# before a turn are read only as far as its context can hold.
DOCUMENT_OPENING_COLUMNS = ", ".join(
    "substr(content, 1, ?)" if name == "content" else name for name in Document.__struct_fields__
)
CHUNK_COLUMNS = columns(Chunk)
MEMORY_COLUMNS = columns(Memory)
JOB_COLUMNS = columns(Job)
# What BM25 reads of a chunk `c`: its text and its context (PostgreSQL's `words` are made alike).
CHUNK_WORDS = "c.text || ' ' || c.context"


def to_record(record: type[R], row: Row) -> R:
    return msgspec.convert(_values(record, row), record, strict=False)


def to_records(record: type[R], rows: list[Any]) -> list[R]:
    """Many rows in one convert: a search hydrates about 80 per query."""
    many: Any = list[record]  # type: ignore[valid-type]  # a runtime type, built per record
    return msgspec.convert([_values(record, row) for row in rows], many, strict=False)


def _values(record: type[Record], row: Row) -> dict[str, Any]:
    values = dict(zip(record.__struct_fields__, row, strict=True))
    if "metadata" in values:
        values["metadata"] = _json_decode(values["metadata"])
    if "entities" in values:  # most rows have none: skip the decoder for them
        raw = values["entities"]
        values["entities"] = [] if raw == "[]" else _json_list(raw)
    return values


def batches(ids: Sequence[T], size: int = 200) -> Iterator[list[T]]:
    """Ids in lists of `size`: well within what a backend binds in one statement."""
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def metadata_json(metadata: dict[str, Any]) -> str:
    return _json_encode(metadata).decode()


def list_json(items: Sequence[str]) -> str:
    return _json_encode(list(items)).decode()


async def page(
    db: Connection, record: type[R], source: str, params: Sequence[Any], *,
    order: str, limit: int, offset: int,
) -> tuple[list[R], int]:  # fmt: skip
    """One page of `record`s `FROM … WHERE …` (`source`), and how many there are in all."""
    rows = await db.execute_fetchall(
        f"SELECT {columns(record)} {source} ORDER BY {order} LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    total = await db.execute_fetchall(f"SELECT count(*) {source}", list(params))
    return to_records(record, list(rows)), int(next(iter(total))[0])
