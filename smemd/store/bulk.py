"""What the engine may ask of a store for a namespace's rows in bulk: a page of a listing, and
the rows an export reads and an import writes back. Part of the store's interface
(smemd.store.protocol), whose Reader and Writer include them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, overload

from smemd.store.queries import ChunkSelection, DocumentSelection, Listing, MemorySelection, OnKey
from smemd.store.records import Chunk, Document, Memory


class ListingReading(Protocol):
    @overload
    async def page(
        self, namespace: str, selection: MemorySelection, listing: Listing
    ) -> tuple[list[Memory], int]: ...
    @overload
    async def page(
        self, namespace: str, selection: DocumentSelection, listing: Listing
    ) -> tuple[list[Document], int]: ...
    @overload
    async def page(
        self, namespace: str, selection: ChunkSelection, listing: Listing
    ) -> tuple[list[Chunk], int]: ...


class ExportReading(Protocol):
    """A namespace's rows as they are, for an export (smemd.store.sql.exporting)."""

    def one_moment(self) -> AbstractAsyncContextManager[None]: ...
    def export_rows(
        self, namespace: str, kind: str, columns: Sequence[str]
    ) -> AsyncIterator[list[dict[str, Any]]]: ...
    async def export_labels(self, namespace: str) -> list[dict[str, Any]]: ...


class ImportReading(Protocol):
    """What an import must find before it writes (smemd.store.sql.importing)."""

    async def holds_data(self, namespace: str) -> bool: ...
    async def taken_ids(self, kind: str, ids: Sequence[str]) -> dict[str, str]: ...
    async def held_names(
        self, namespace: str, kind: str, names: Sequence[str]
    ) -> dict[str, str]: ...
    async def split_chains(self, namespace: str) -> list[tuple[str, list[str]]]: ...


class ImportWriting(Protocol):
    """A namespace's rows put back from an export (smemd.store.sql.importing)."""

    async def import_rows(
        self, namespace: str, kind: str, rows: Sequence[dict[str, Any]], on_key: OnKey = "insert"
    ) -> None: ...
    async def rename_merged_into(self, namespace: str, renamed: dict[str, str]) -> None: ...
