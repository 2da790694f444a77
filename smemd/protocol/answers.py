"""Wire types of `POST /v1/compress` and `POST /v1/ask`: recalled evidence, and answers citing it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from smemd.protocol import Reply, Request
from smemd.protocol.memory import NAMESPACE_PATTERN, SearchMode


class Compress(Request):
    """A search whose hits come back as one numbered context; the options are search's."""

    q: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    namespace: Annotated[str, msgspec.Meta(pattern=NAMESPACE_PATTERN)] = "default"
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = None
    search_mode: SearchMode = "hybrid"
    threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.3
    filter: Any = None  # validated by smemd.engine.filters, which names the bad path
    rerank: Literal["none", "order", "aggregate"] | None = None
    as_of: str | None = None  # valid time: what held then, as known now
    as_of_recorded: str | None = None  # record time: what smem believed then
    half_life_days: Annotated[float, msgspec.Meta(ge=0)] | None = None


class Ask(Compress):
    """A question answered from what `Compress` would recall."""


class ContextItem(Reply):
    """Item [n] of a context: a memory or a chunk, its document, and its text (redacted)."""

    n: int
    kind: Literal["memory", "chunk"]
    id: str
    document_id: str | None = None
    title: str | None = None
    date: str | None = None  # YYYY-MM-DD: the memory's event, else its document's date
    text: str = ""


class CompressReply(Reply):
    context: str
    items: list[ContextItem]
    tokens: int  # an estimate: characters / 4


class AskReply(Reply):
    answer: str | None  # None when no model serves the llm role
    citations: list[int]  # the item numbers the answer cites that exist, in order of first citation
    sources: list[ContextItem]  # the cited items; every item when there is no answer
    context: str
    tokens: int
    answered_by: str | None  # the model, or None
    note: str | None = None
