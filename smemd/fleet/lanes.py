"""The engine's model interfaces over the pool, one lane each: embeddings, reranking, chat."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from smemd.fleet.builtin import Kind, Vectors
from smemd.fleet.llama import Chat, Message
from smemd.fleet.pool import Lane, Pool


class LaneEmbedder:
    """The `Embedder` interface over the pool, for one lane."""

    is_fallback = False

    def __init__(self, pool: Pool, lane: Lane, name: str, dimension: int) -> None:
        self.pool = pool
        self.lane: Lane = lane
        self.name = name
        self.dimension = dimension

    async def embed(self, texts: Sequence[str], *, kind: Kind = "document") -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        batch = list(texts)
        if not batch:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return await self.pool.call(
            "embed", self.lane, lambda client: client.embed(batch, kind=kind)
        )


class LaneChatter:
    """LlamaClient's `chat` over the pool, for one lane: the node is picked per call."""

    def __init__(self, pool: Pool, lane: Lane) -> None:
        self.pool = pool
        self.lane: Lane = lane

    async def chat(
        self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
        grammar: str | None = None, json_schema: Mapping[str, Any] | None = None,
        logprobs: bool = False, top_logprobs: int | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Chat:  # fmt: skip
        return await self.pool.call(
            "llm", self.lane,
            lambda client: client.chat(
                messages, max_tokens=max_tokens, temperature=temperature, grammar=grammar,
                json_schema=json_schema, logprobs=logprobs, top_logprobs=top_logprobs,
                timeout=timeout,
            ),
        )  # fmt: skip


class LaneReranker:
    """The `Reranker` interface over the pool: raw cross-encoder scores, on the interactive lane."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        documents = list(texts)
        return await self.pool.call(
            "rerank", "interactive", lambda client: client.rerank(query, documents)
        )
