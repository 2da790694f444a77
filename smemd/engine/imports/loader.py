"""An export (smemd.protocol.exports) put back into a namespace: `POST /ns/{ns}/import` and
`smemctl import`. The records come back as they were (every version, time, relation, label,
judgement, forgotten and retracted state) without extraction running again.

Two passes, so that nothing is written until the whole file is known good and the store's one
writer is held only for inserts: first each line is checked as it arrives (ImportCheck) and kept
in a spool file beside the store, and the texts of chunks and memories are embedded (vectors are
not exported: they belong to the embedder), their vectors spooled beside; then, in one
transaction, the namespace is found empty and the records' ids free, and the rows go in. A bad
line, a taken id or a crash leaves the namespace as it was. A document that was still being
ingested when exported is queued again.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterable, Iterator
from pathlib import Path
from typing import IO, Any

import msgspec
import numpy as np

from smemd.engine.ids import new_id, now
from smemd.engine.imports.checks import ImportCheck
from smemd.engine.imports.lines import lines_of
from smemd.engine.imports.merging import Batch, Merge, refuse_taken
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.ingest import ingest_ids
from smemd.engine.ingest.chunking import Chunk
from smemd.engine.ingest.worker import Worker
from smemd.errors import Conflict
from smemd.fleet.builtin import Embedder
from smemd.protocol.exports import (
    AnyRecord,
    ChunkRecord,
    DocumentRecord,
    ExportRecord,
    Imported,
    MemoryRecord,
    MergeRule,
    record_name,
)
from smemd.store.protocol import Reader, Store
from smemd.store.queries import OnKey
from smemd.store.records import OPEN_PHASES
from smemd.store.sql.importing import IDENTIFIED

EMBED_BATCH = 64
WRITE_BATCH = 500
_decode = msgspec.json.Decoder(AnyRecord).decode


class Imports:
    def __init__(
        self, store: Store, indexes: Indexes, embedder: Embedder, worker: Worker, spool_dir: Path
    ) -> None:
        self.store = store
        self.indexes = indexes
        self.embedder = embedder
        self.worker = worker
        self.spool_dir = spool_dir
        # What an import cut short by a crash left; this daemon alone uses its state dir.
        shutil.rmtree(spool_dir, ignore_errors=True)

    async def load(
        self, namespace: str, blocks: AsyncIterable[bytes], merge: MergeRule | None = None
    ) -> Imported:
        """Import the export whose bytes `blocks` are into `namespace`, which must hold nothing
        (409 otherwise) unless `merge` says what a record whose id it holds does
        (smemd.engine.imports.merging); 400 naming the line for a file that is not a whole,
        sound export."""
        async with self.store.read() as reader:  # at once, not after the embedding
            await _refuse_unmergeable(reader, namespace, merge)
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.spool_dir, prefix=".import-") as scratch:
            with Spool(Path(scratch), "wb") as spool:
                check = await self._spool(blocks, spool, namespace if merge else None)
            with Spool(Path(scratch), "rb") as spool:
                requeued, ingest, held = await self._write(namespace, spool, merge)
        if requeued:
            self.worker.wake()
        return Imported(
            namespace=namespace, records=dict(check.counts), requeued=requeued, ingest_id=ingest,
            merge=merge, held=held,
        )  # fmt: skip

    async def _spool(
        self, blocks: AsyncIterable[bytes], spool: Spool, merging_into: str | None
    ) -> ImportCheck:
        check = ImportCheck()
        texts: list[str] = []
        named: dict[str, list[tuple[int, Any]]] = {kind: [] for kind in IDENTIFIED}
        async for line in lines_of(blocks):
            record = check.take(line)
            spool.lines.write(line + b"\n")  # blank ones too: the lines keep their numbers
            if record is None:
                continue
            kind = record_name(type(record))
            if kind in named:  # taken ids are found as the file comes (and again at the write)
                named[kind].append((check.line, record))
                if len(named[kind]) >= WRITE_BATCH:
                    await self._refuse_taken(kind, named[kind], merging_into)
                    named[kind] = []
            if isinstance(record, ChunkRecord):
                stored = Chunk.stored(record.position, record.heading, record.text, record.context)
                texts.append(stored.embedding_text())
            elif isinstance(record, MemoryRecord):
                texts.append(record.text)
            if len(texts) >= EMBED_BATCH:
                spool.vectors.write(await self._embedded(texts))
                texts = []
        check.finish()
        for kind, batch in named.items():
            await self._refuse_taken(kind, batch, merging_into)
        if texts:
            spool.vectors.write(await self._embedded(texts))
        return check

    async def _refuse_taken(self, kind: str, batch: Batch, merging_into: str | None) -> None:
        async with self.store.read() as reader:
            await refuse_taken(reader, kind, batch, merging_into)

    async def _embedded(self, texts: list[str]) -> bytes:
        found = await self.embedder.embed(texts, kind="document")
        return np.ascontiguousarray(found, dtype=np.float32).tobytes()

    async def _write(
        self, namespace: str, spool: Spool, rule: MergeRule | None
    ) -> tuple[int, str | None, dict[str, int]]:
        """Every record into the namespace in one transaction; the documents queued again, the
        ingest id its new documents came under, and the records a merge found held, by kind."""
        width = self.embedder.dimension * 4
        t = now()
        ingest = ingest_ids.current()
        reopened: list[DocumentRecord] = []
        async with self.indexes.writing() as (writer, changes):
            await _refuse_unmergeable(writer, namespace, rule)  # again: written meanwhile?
            # Into a namespace that holds nothing, a merge is a plain import (its record too).
            merge = Merge(namespace, rule) if rule and await writer.holds_data(namespace) else None
            await writer.ensure_namespace(namespace, t)
            for kind, batch in _batches(spool.records()):
                await refuse_taken(writer, kind, batch, namespace if merge else None)
                vectors = {
                    number: spool.vectors.read(width)
                    for number, record in batch
                    if isinstance(record, ChunkRecord | MemoryRecord)
                }
                runs: list[tuple[Batch, OnKey]] = (
                    await merge.sort(writer, kind, batch) if merge else [(batch, "insert")]
                )
                for run, on_key in runs:
                    rows = []
                    for number, record in run:
                        row = msgspec.structs.asdict(record)
                        if number in vectors:
                            row["vector"] = vectors[number]
                        if isinstance(record, DocumentRecord):
                            if on_key == "insert":
                                row["ingest_id"] = ingest  # `undo` takes what came back
                            if record.status in OPEN_PHASES and on_key != "skip":
                                reopened.append(record)
                        rows.append(row)
                    await writer.import_rows(namespace, kind, rows, on_key)
            if merge:
                await merge.finish(writer)
            for doc in reopened:
                await writer.set_document_status(doc.id, "queued", t)
                await writer.insert_job(new_id("job"), namespace, doc.id, doc.revision, t)
            changes.drop(namespace)
        return len(reopened), ingest, dict(merge.held if merge else {})


class Spool:
    """The checked lines, and the vectors of their chunks and memories in the same order, kept
    in a scratch directory between the two passes."""

    def __init__(self, scratch: Path, mode: str) -> None:
        self.lines: IO[bytes] = (scratch / "lines").open(mode)
        self.vectors: IO[bytes] = (scratch / "vectors").open(mode)

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *_: object) -> None:
        self.lines.close()
        self.vectors.close()

    def records(self) -> Iterator[tuple[int, ExportRecord]]:
        """The records with their line numbers, header and trailer left out."""
        for number, line in enumerate(self.lines, start=1):
            if not line.strip():
                continue
            record: ExportRecord = _decode(line)
            if record_name(type(record)) not in ("header", "end"):
                yield number, record


def _batches(
    records: Iterator[tuple[int, ExportRecord]],
) -> Iterator[tuple[str, list[tuple[int, ExportRecord]]]]:
    """Runs of one kind, at most WRITE_BATCH long."""
    kind, batch = "", list[tuple[int, ExportRecord]]()
    for number, record in records:
        name = record_name(type(record))
        if batch and (name != kind or len(batch) >= WRITE_BATCH):
            yield kind, batch
            batch = []
        kind = name
        batch.append((number, record))
    if batch:
        yield kind, batch


async def _refuse_unmergeable(reader: Reader, namespace: str, merge: MergeRule | None) -> None:
    """An import goes into an empty namespace, or merges into one whose documents are done."""
    if merge is None and await reader.holds_data(namespace):
        raise Conflict(
            "namespace not empty",
            f"{namespace!r} holds data already; import into a new namespace (-n NS), merge"
            " into it (?merge=skip|replace: what a record whose id it holds does), or delete"
            " it first",
        )
    if merge is not None and await reader.open_job_count(namespace):
        raise Conflict(
            "documents being ingested",
            f"{namespace!r} has documents still being read; merge into it once they are done",
        )
