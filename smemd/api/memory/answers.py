"""smem's answer routes: `compress` (the numbered evidence for a query) and `ask` (an answer citing it)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from aiohttp import web

from smemd.api import params
from smemd.api.state import STATE
from smemd.api.wire import decode, reply
from smemd.engine.core import Engine
from smemd.engine.recall.evidence import (
    Compressed,
    Source,
    answer_prompt,
    compress,
    parse_citations,
    redact,
)
from smemd.engine.recall.hybrid import Hit
from smemd.errors import BadRequest, Unavailable
from smemd.fleet.lanes import LaneChatter
from smemd.fleet.llama import Chat, LlamaClient, LlamaError
from smemd.http.route import Route
from smemd.instants import utc_day
from smemd.protocol.answers import Ask, AskReply, Compress, CompressReply, ContextItem
from smemd.store.records import Document

log = logging.getLogger("smemd.api.answers")

ANSWER_TOKENS = 512  # a brief answer with its citations; more is a model rambling
NO_MODEL = "no model serves the llm role: these are the sources an answer would cite"


@dataclass
class Evidence:
    """A query's hits as a compressed context, with what its items need for the wire."""

    compressed: Compressed
    hits: dict[str, Hit]  # by memory or chunk id
    documents: Mapping[str, Document]

    def items(self, sources: list[Source]) -> list[ContextItem]:
        return [self._item(source) for source in sources]

    def _item(self, source: Source) -> ContextItem:
        hit = self.hits[source.id]
        document = hit.document or self.documents.get(source.document_id or "")
        if hit.memory is not None:
            text, when = hit.memory.text, hit.memory.event_at
        else:
            text, when = (hit.chunk.text if hit.chunk is not None else ""), None
        if when is None and document is not None:
            when = document.content_date
        return ContextItem(
            n=source.n,
            kind=source.kind,
            id=source.id,
            document_id=source.document_id,
            title=redact(document.title) if document is not None and document.title else None,
            date=utc_day(when).isoformat() if when is not None else None,
            text=redact(text),
        )


async def compress_context(request: web.Request) -> web.Response:
    evidence = await _evidence(request, await decode(request, Compress), "compress")
    compressed = evidence.compressed
    return reply(
        CompressReply(
            context=compressed.context,
            items=evidence.items(compressed.items),
            tokens=compressed.tokens,
        )
    )


async def ask(request: web.Request) -> web.Response:
    body = await decode(request, Ask)
    evidence = await _evidence(request, body, "ask")
    compressed = evidence.compressed
    fleet = request.app[STATE].fleet
    llm = fleet.interactive_llm if fleet is not None else None
    if llm is None:
        return reply(
            AskReply(
                answer=None, citations=[], sources=evidence.items(compressed.items),
                context=compressed.context, tokens=compressed.tokens, answered_by=None,
                note=NO_MODEL,
            )
        )  # fmt: skip
    chat, model = await _answer(llm, answer_prompt(body.q, compressed, today=time.time()))
    citations = parse_citations(chat.content, len(compressed.items))
    by_number = {item.n: item for item in compressed.items}
    log.debug("ask answered by %s citing %s of %d items", model, citations, len(by_number))
    return reply(
        AskReply(
            answer=chat.content.strip(), citations=citations,
            sources=evidence.items([by_number[n] for n in citations]),
            context=compressed.context, tokens=compressed.tokens, answered_by=model,
        )
    )  # fmt: skip


async def _answer(llm: LaneChatter, messages: list[dict[str, str]]) -> tuple[Chat, str]:
    """The model's answer on the interactive lane, and the model's name."""

    async def answer(client: LlamaClient) -> tuple[Chat, str]:
        # Thinking stays off (LlamaClient's default): a reasoning model would spend the budget on it.
        chat = await client.chat(messages, max_tokens=ANSWER_TOKENS)
        if not client.name:  # the llm role's model is not learnt at start-up, only the embedder's
            try:
                await client.props(timeout=5.0)
            except LlamaError as err:
                log.debug("node %s: no model name: %s", client.node, err)
        return chat, client.name or client.node

    try:
        return await llm.pool.call("llm", llm.lane, answer)
    except LlamaError as err:
        log.warning("ask: %s", err.message)
        raise Unavailable(f"no answer from node {err.node}", err.message) from err


async def _evidence(
    request: web.Request, body: Compress, purpose: Literal["ask", "compress"]
) -> Evidence:
    if not body.q.strip():
        raise BadRequest("invalid request body", "$.q: must not be blank")
    namespace = params.namespace_in_scope(request, body.namespace)
    engine = params.engine(request)
    query = params.search_query(engine, body.q, body)
    hits = await engine.recall.search(namespace, query, purpose=purpose)
    documents = await _documents(engine, hits)
    compressed = compress(hits, documents, body.max_tokens)
    by_id = {}
    for hit in hits:
        if hit.memory is not None:
            by_id[hit.memory.id] = hit
        elif hit.chunk is not None:
            by_id[hit.chunk.id] = hit
    return Evidence(compressed, by_id, documents)


async def _documents(engine: Engine, hits: list[Hit]) -> dict[str, Document]:
    """The documents of memory hits, for their titles and dates (chunk hits carry theirs)."""
    hydrated = await engine.hydration.hits(
        [h for h in hits if h.memory is not None and h.document is None], documents=True
    )
    return {h.document.id: h.document for h in hydrated if h.document is not None}


ROUTES = [
    Route(
        method="POST", path="/v1/compress", handler=compress_context, namespace_from="body",
        body=Compress, reply=CompressReply,
        summary="The numbered, bounded evidence a query recalls, for an agent's prompt",
    ),
    Route(
        method="POST", path="/v1/ask", handler=ask, namespace_from="body", body=Ask,
        reply=AskReply, summary="An answer from the model that cites the evidence it used",
    ),
]  # fmt: skip
