"""Wire types of the review of contradictions (`/ns/{ns}/review`, `/v1/review`)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from smemd.protocol import Query, Reply, Request
from smemd.protocol.calibration import Id
from smemd.protocol.memory import MemoryOut, Page, Pagination


class ReviewQuery(Query):
    page: Page = 1
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 20


class Resolve(Request):
    """`keep`: `memoryId` or `contradicts` (that one stands, the other is forgotten), or `both`."""

    memory_id: Id
    contradicts: Id
    keep: Id


class ContradictionOut(Reply):
    namespace: str
    memory: MemoryOut  # the newer memory
    contradicts: MemoryOut  # the memory it contradicts
    score: float
    created_at: str  # when the contradiction was found
    label: str | None = None  # the pair's last resolution: a kept memory whose pair reopened


class Review(Reply):
    contradictions: list[ContradictionOut]
    pagination: Pagination


class Resolved(Reply):
    memory: MemoryOut  # `memoryId`, as it is now
    contradicts: MemoryOut
    keep: str
    subject_id: str  # the label's subject: the pair's ids in order, joined by `|`
    resolved_at: str  # when the label was given (for an unchanged repeat, the first time)
    changed: bool  # false: the same resolution stood already, and nothing was done
