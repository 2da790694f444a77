"""SQL for pages of memories, documents and chunks: one method, one page and its total."""

from __future__ import annotations

from typing import overload

from smemd.store.queries import (
    ChunkSelection,
    DocumentSelection,
    Listing,
    MemorySelection,
    Selection,
)
from smemd.store.records import Chunk, Document, Memory
from smemd.store.sql.conditions import (
    chunk_selected,
    document_selected,
    listing_order,
    memory_selected,
)
from smemd.store.sql.connection import Connection
from smemd.store.sql.rows import page


class ListingReads:
    db: Connection

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
    async def page(
        self, namespace: str, selection: Selection, listing: Listing
    ) -> tuple[list[Memory], int] | tuple[list[Document], int] | tuple[list[Chunk], int]:
        """One page of what `selection` takes of the namespace, and how many it takes in all."""
        bounds = {"limit": listing.limit, "offset": listing.offset}
        if isinstance(selection, MemorySelection):
            where, params = memory_selected(self.db.dialect, namespace, selection)
            source = f"FROM memories m WHERE m.namespace = ? AND ({where})"
            order = listing_order(listing, "m")
            return await page(self.db, Memory, source, [namespace, *params], order=order, **bounds)
        if isinstance(selection, DocumentSelection):
            where, params = document_selected(self.db.dialect, selection)
            source = f"FROM documents WHERE namespace = ? AND ({where})"
            order = listing_order(listing)
            return await page(
                self.db, Document, source, [namespace, *params], order=order, **bounds
            )
        where, params = chunk_selected(self.db.dialect, selection)
        source = f"FROM chunks c WHERE c.namespace = ? AND ({where})"
        order = listing_order(listing, "c")
        return await page(self.db, Chunk, source, [namespace, *params], order=order, **bounds)
