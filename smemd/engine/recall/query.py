"""A recall query: what to search for, and what of the store it may see."""

from __future__ import annotations

from typing import Literal

import msgspec

from smemd.engine.filters import Filter
from smemd.store.queries import Visibility

Mode = Literal["hybrid", "memories", "chunks"]


class Query(msgspec.Struct, kw_only=True):
    text: str
    mode: Mode = "hybrid"
    limit: int = 10
    threshold: float = 0.0  # a floor on relevance (smemd.engine.recall.scoring.Scorer.members)
    filter: Filter | None = None
    as_of: float | None = None  # valid time: what held in the world then, as smem knows it now
    as_of_recorded: float | None = None  # record time: what smem believed then
    half_life_days: float = 0.0  # recency decay on memories; 0 = off
    include_forgotten: bool = False
    rerank: bool = True  # re-score the top with the fleet's cross-encoder, when it has one
    # Only memories naming this entity (its id, or its name in any case), and the chunks they
    # were read from.
    entity: str | None = None

    def visibility(self, now: float) -> Visibility:
        """What of the store this query may see (recall scans only that when it restricts)."""
        return Visibility(
            now=now, as_of=self.as_of, as_of_recorded=self.as_of_recorded,
            include_forgotten=self.include_forgotten, filter=self.filter, entity=self.entity,
        )  # fmt: skip
