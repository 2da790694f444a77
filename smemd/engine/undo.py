"""Undoing an add: every document one ingest id brought (smemd.engine.ingest.ingest_ids) is
retracted, each by decision 19's cascading retraction (smemd.engine.retraction), so what those
documents alone taught leaves recall and what they superseded is latest again; redo unretracts
them, exactly.

One document's retraction is one transaction; an undo cut off part-way is finished by running
it again (a document retracted already is passed over), and redo unretracts every document of
the add that is retracted, in the reverse order. An add still being ingested is refused (409):
what it has not yet taught could not be taken back.
"""

from __future__ import annotations

from smemd.engine.retraction import Retractions
from smemd.errors import Conflict, NotFound
from smemd.protocol.retraction import IngestUndone
from smemd.store.protocol import Store
from smemd.store.records import OPEN_PHASES, Document


class Undos:
    def __init__(self, store: Store, retractions: Retractions) -> None:
        self.store = store
        self.retractions = retractions

    async def undo(self, namespace: str, ingest_id: str) -> IngestUndone:
        done = IngestUndone(
            ingest_id=ingest_id, undone=True, documents=[], withdrawn=[], reinstated=[],
            unlinked=[],
        )  # fmt: skip
        documents = await self._documents(namespace, ingest_id)
        still = [d.id for d in documents if d.status in OPEN_PHASES]
        if still:
            raise Conflict(
                "still being ingested",
                f"{len(still)} of its documents are not done ({still[0]}, …); undo it once they are",
            )
        for doc in documents:
            if await self._retracted(doc):
                continue
            outcome = await self.retractions.retract(namespace, "document", doc.id)
            _merge(done, doc, outcome.withdrawn, outcome.reinstated, outcome.unlinked)
        return done

    async def redo(self, namespace: str, ingest_id: str) -> IngestUndone:
        done = IngestUndone(
            ingest_id=ingest_id, undone=False, documents=[], withdrawn=[], reinstated=[],
            unlinked=[],
        )  # fmt: skip
        for doc in reversed(await self._documents(namespace, ingest_id)):
            if not await self._retracted(doc):
                continue
            outcome = await self.retractions.unretract(namespace, "document", doc.id)
            _merge(done, doc, outcome.withdrawn, outcome.reinstated, outcome.unlinked)
        return done

    async def _documents(self, namespace: str, ingest_id: str) -> list[Document]:
        async with self.store.read() as reader:
            documents = await reader.documents_of_ingest(namespace, ingest_id)
        if not documents:
            raise NotFound("no such ingest", f"no document of {namespace!r} came in {ingest_id!r}")
        return documents

    async def _retracted(self, doc: Document) -> bool:
        async with self.store.read() as reader:
            return await reader.active_retraction(doc.id) is not None


def _merge(
    done: IngestUndone, doc: Document, withdrawn: list[str], reinstated: list[str],
    unlinked: list[str],
) -> None:  # fmt: skip
    done.documents.append(doc.id)
    done.withdrawn += withdrawn
    done.reinstated += reinstated
    done.unlinked += unlinked
