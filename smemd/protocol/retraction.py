"""Wire types of retraction: what a retraction withdrew, reinstated and unlinked, and what
undoing an add did."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from smemd.protocol import Reply, Request

# An add's ingest id, answered by every route that adds documents, and sent by a client that
# gathers several requests into one add (smemd.engine.ingest.ingest_ids).
INGEST_HEADER = "Smem-Ingest-Id"


class RetractionResult(Reply):
    """The memory ids a retraction withdrew (out of recall until unretracted), reinstated (a
    version latest again because the one that superseded it was withdrawn) and unlinked (kept,
    having another live source, but no longer sourced by the retracted document). An unretract
    answers the same lists, of what it undid, with `undone` true."""

    retraction_id: str
    subject_kind: Literal["document", "memory"]
    subject_id: str
    undone: bool
    withdrawn: list[str]
    reinstated: list[str]
    unlinked: list[str]


class IngestUndone(Reply):
    """What undoing one add (`undone` true) or redoing it did: the documents it retracted or
    unretracted, and the memory ids of those retractions, merged (see RetractionResult)."""

    ingest_id: str
    undone: bool
    documents: list[str]
    withdrawn: list[str]
    reinstated: list[str]
    unlinked: list[str]


class RederiveRequest(Request):
    """`POST /ns/{ns}/rederive`'s optional body: `llamaUrl`, the base URL of a llama-server
    whose chat model reads the shadow's documents in place of the daemon's (admin only)."""

    llama_url: (
        Annotated[str, msgspec.Meta(pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$", max_length=2048)]
        | None
    ) = None


class Rederived(Reply):
    """A re-derivation of a namespace's memory from its documents, in its shadow namespace:
    `running` while the shadow's documents are being ingested; then what would change (`none`:
    there is no re-derivation of the namespace)."""

    namespace: str
    shadow: str
    state: Literal["none", "running", "ready", "applied", "discarded"]
    documents: int  # the documents read again (retracted ones are left out)
    pending: int  # of them, not yet ingested
    counts: dict[str, int]  # added, gone, retyped, rechained, relationsGained, relationsLost
    examples: dict[str, list[str]]  # a few of each, as memory texts (a relation: "a -kind-> b")
    not_carried: list[str]  # what an apply loses: labels and memories not read from a document
    model: str | None = None  # the llama-server that reads the shadow; None: the daemon's fleet
