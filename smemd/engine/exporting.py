"""A namespace exported as JSON Lines (smemd.protocol.exports): the lines of `GET
/ns/{ns}/export` and `smemctl export`, made a page at a time from one moment of the store."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import UTC, datetime
from typing import Any

import msgspec

from smemd import __version__
from smemd.errors import NotFound
from smemd.protocol.exports import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    RECORD_TYPES,
    ExportRecord,
    Header,
    LabelRecord,
    Trailer,
    record_name,
)
from smemd.store.protocol import Store

_encode = msgspec.json.Encoder().encode


class Exports:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def lines(self, namespace: str) -> AsyncGenerator[bytes]:
        """The export's lines, each ending in a newline; NotFound before the first when the
        namespace does not exist. One scan of the namespace is held until the last."""
        async with self.store.scan(namespace) as reader, reader.one_moment():
            if await reader.namespace(namespace) is None:
                raise NotFound("no such namespace", namespace)
            began = datetime.fromtimestamp(time.time(), UTC).isoformat(timespec="seconds")
            yield _line(
                Header(
                    format=EXPORT_FORMAT, version=EXPORT_VERSION, smem_version=__version__,
                    exported_at=began, namespace=namespace,
                )
            )  # fmt: skip
            counts: dict[str, int] = {}
            for record in RECORD_TYPES:
                kind = record_name(record)
                counts[kind] = 0
                if record is LabelRecord:
                    pages = _whole(await reader.export_labels(namespace))
                else:
                    pages = reader.export_rows(namespace, kind, record.__struct_fields__)
                names = {f.name: f.encode_name for f in msgspec.structs.fields(record)}
                many: Any = list[record]  # type: ignore[valid-type]  # a runtime type
                async for rows in pages:
                    # From the store's column names to the wire's (a Struct converts from those).
                    wire = [{names[column]: value for column, value in row.items()} for row in rows]
                    made: list[ExportRecord] = msgspec.convert(wire, many, strict=False)
                    counts[kind] += len(made)
                    yield b"".join(_line(one) for one in made)
            yield _line(Trailer(records=counts))


def _line(record: ExportRecord) -> bytes:
    return _encode(record) + b"\n"


async def _whole(rows: list[dict[str, Any]]) -> AsyncIterator[list[dict[str, Any]]]:
    if rows:
        yield rows
