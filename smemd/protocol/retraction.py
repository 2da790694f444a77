"""Wire types of retraction: what a retraction withdrew, reinstated and unlinked."""

from __future__ import annotations

from typing import Literal

from smemd.protocol import Reply


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
