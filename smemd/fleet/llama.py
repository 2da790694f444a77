"""A client for one llama-server: health, props, embeddings, rerank and chat, each under a timeout."""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any, Literal, Protocol, TypeVar

import aiohttp
import msgspec
import numpy as np

from smemd.errors import SmemError
from smemd.fleet.builtin import Kind, Vectors

log = logging.getLogger("smemd.fleet.llama")

T = TypeVar("T")
Message = Mapping[str, str]  # {"role": "user", "content": "..."}
NO_THINKING: Mapping[str, Any] = {"enable_thinking": False}
_TOO_LARGE = re.compile(
    r"input \((?P<tokens>\d+) tokens\) is too large to process.*batch size: (?P<batch>\d+)"
)


class LlamaError(SmemError):
    status = 502
    code = "llama_error"
    retryable = False  # whether another node might answer where this one failed

    def __init__(self, node: str, endpoint: str, problem: str) -> None:
        super().__init__(f"node {node}: {endpoint}: {problem}")
        self.node = node
        self.endpoint = endpoint


class LlamaUnavailable(LlamaError):
    """Refused, reset, unresolvable, or 503 (loading, no free slot)."""

    status = 503
    code = "llama_unavailable"
    retryable = True


class LlamaTimeout(LlamaError):
    status = 504
    code = "llama_timeout"
    retryable = True


class LlamaServerError(LlamaError):
    """A 5xx other than 503, or a reply that does not decode."""

    code = "llama_server_error"
    retryable = True


class LlamaBadRequest(LlamaError):
    code = "llama_bad_request"


class LlamaContextOverflow(LlamaBadRequest):
    """The input does not fit: a 400 past the context, or a 500 past the physical batch (-ub)."""

    status = 413
    code = "llama_context_overflow"

    def __init__(self, node: str, endpoint: str, problem: str, *, n_prompt_tokens: int, n_ctx: int):
        super().__init__(node, endpoint, problem)
        self.n_prompt_tokens = n_prompt_tokens
        self.n_ctx = n_ctx


class LlamaEmptyAnswer(LlamaError):
    """finish_reason "length" with no content: a reasoning model spent max_tokens thinking."""

    code = "llama_empty_answer"


class Health(msgspec.Struct, frozen=True):
    status: Literal["ok", "loading"]

    @property
    def is_ready(self) -> bool:
        return self.status == "ok"


class Props(msgspec.Struct, frozen=True, kw_only=True):
    total_slots: int
    model_path: str
    model_alias: str
    n_ctx: int  # per slot: the most one request can use (-c / -np unless the KV cache is unified)

    @property
    def model(self) -> str:
        return _model_name(self.model_alias or self.model_path)


class ChatModel(Protocol):
    """A chat model: LlamaClient, or a lane of the fleet that picks the node per call."""

    async def chat(
        self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
        grammar: str | None = None, json_schema: Mapping[str, Any] | None = None,
        logprobs: bool = False, top_logprobs: int | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Chat: ...  # fmt: skip


class TopLogprob(msgspec.Struct, frozen=True):
    token: str
    logprob: float


class TokenLogprob(msgspec.Struct, frozen=True):
    token: str
    logprob: float
    top_logprobs: list[TopLogprob] = []


class Chat(msgspec.Struct, frozen=True, kw_only=True):
    """An answer; with logprobs, a "stop" adds a last entry for the end token, whose text is ""."""

    content: str
    finish_reason: str
    logprobs: list[TokenLogprob] = []

    def top_probs(self, position: int = 0) -> dict[str, float]:
        """The candidates for one generated token and their probabilities (before any grammar)."""
        if position >= len(self.logprobs):
            return {}
        return {t.token: math.exp(t.logprob) for t in self.logprobs[position].top_logprobs}


# Wire shapes, holding only the fields read.
class _ErrorBody(msgspec.Struct):
    message: str = ""
    type: str = ""
    n_prompt_tokens: int = 0
    n_ctx: int = 0


class _ErrorReply(msgspec.Struct):
    error: _ErrorBody


class _Settings(msgspec.Struct, frozen=True):
    n_ctx: int = 0


class _Props(msgspec.Struct):
    default_generation_settings: _Settings = _Settings()
    total_slots: int = 1
    model_path: str = ""
    model_alias: str = ""


class _Embedding(msgspec.Struct):
    index: int
    embedding: list[float]


class _Embeddings(msgspec.Struct):
    data: list[_Embedding]
    model: str = ""


class _Ranked(msgspec.Struct):
    index: int
    relevance_score: float


class _Rerank(msgspec.Struct):
    results: list[_Ranked]


class _Logprobs(msgspec.Struct):
    content: list[TokenLogprob] | None = None


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None
    logprobs: _Logprobs | None = None


class _Completion(msgspec.Struct):
    choices: list[_Choice]


class LlamaClient:
    """One llama-server base URL, over a session the caller owns."""

    is_fallback = False

    def __init__(
        self, session: aiohttp.ClientSession, url: str, *, node: str, timeout: float = 30.0,
        health_timeout: float = 5.0,
    ) -> None:  # fmt: skip
        self.session = session
        self.url = url.rstrip("/")
        self.node = node
        self.timeout = timeout
        self.health_timeout = health_timeout
        # The model as the server names it, and its embedding width: learnt from props() or the
        # first embed(); "" and 0 until then.
        self.name = ""
        self.dimension = 0

    # A per-call `timeout` (ASYNC109) rather than the caller's asyncio.timeout: expiry must become a
    # LlamaTimeout that names the node and endpoint, like every other failure here.
    async def health(self, *, timeout: float | None = None) -> Health:  # noqa: ASYNC109
        endpoint = "GET /health"
        limit = self.health_timeout if timeout is None else timeout
        status, raw = await self._send(endpoint, None, limit)
        if status == 200:
            return Health("ok")
        if status == 503:
            return Health("loading")
        raise self._error(endpoint, status, raw)

    async def props(self, *, timeout: float | None = None) -> Props:  # noqa: ASYNC109
        endpoint = "GET /props"
        wire = self._decode(endpoint, await self._call(endpoint, None, timeout), _Props)
        props = Props(
            total_slots=wire.total_slots,
            model_path=wire.model_path,
            model_alias=wire.model_alias,
            n_ctx=wire.default_generation_settings.n_ctx,
        )
        self.name = props.model
        return props

    async def embed(
        self,
        texts: Sequence[str],
        *,
        kind: Kind = "document",
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Vectors:
        """L2-normalised float32 rows in the order of `texts`."""
        # `kind` is for the Embedder interface: a model that wants query/document prefixes gets
        # them from whoever builds the texts; llama-server embeds what it is sent.
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        batch = list(texts)
        if not batch:
            return np.zeros((0, self.dimension), dtype=np.float32)
        endpoint = "POST /v1/embeddings"
        raw = await self._call(endpoint, {"input": batch}, timeout)
        reply = self._decode(endpoint, raw, _Embeddings)
        if sorted(item.index for item in reply.data) != list(range(len(batch))):
            raise self._bad_reply(endpoint, f"{len(reply.data)} rows for {len(batch)} inputs")
        widths = {len(item.embedding) for item in reply.data}
        if len(widths) != 1 or (self.dimension and widths != {self.dimension}):
            raise self._bad_reply(endpoint, f"widths {sorted(widths)}, not {self.dimension}")
        rows = sorted(reply.data, key=lambda item: item.index)
        vectors = np.array([item.embedding for item in rows], dtype=np.float32)
        if not np.all(np.linalg.norm(vectors, axis=1) > 0.5):
            # A --reranking server answers /v1/embeddings with a 200: zero vectors, or NaNs.
            raise self._bad_reply(endpoint, "not unit vectors (is it a reranking server?)")
        self.dimension = vectors.shape[1]
        self.name = self.name or _model_name(reply.model)
        return vectors

    async def rerank(
        self,
        query: str,
        documents: Sequence[str],
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> list[float]:
        """The raw relevance scores (logits, not 0-1), in the order of `documents`."""
        if not documents:
            return []  # llama-server answers an empty list with a 400
        endpoint = "POST /v1/rerank"
        body = {"query": query, "documents": list(documents), "top_n": len(documents)}
        reply = self._decode(endpoint, await self._call(endpoint, body, timeout), _Rerank)
        scores: list[float | None] = [None] * len(documents)
        for ranked in reply.results:
            if 0 <= ranked.index < len(scores):
                scores[ranked.index] = ranked.relevance_score
        if len(reply.results) != len(documents) or None in scores:
            raise self._bad_reply(endpoint, f"{len(reply.results)} scores for {len(documents)}")
        return [s for s in scores if s is not None]

    async def chat(
        self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
        grammar: str | None = None, json_schema: Mapping[str, Any] | None = None,
        logprobs: bool = False, top_logprobs: int | None = None,
        chat_template_kwargs: Mapping[str, Any] = NO_THINKING,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Chat:  # fmt: skip
        """One completion; `top_logprobs` implies `logprobs`. Needs the server's --jinja."""
        if grammar is not None and json_schema is not None:
            raise ValueError("chat() takes a grammar or a json_schema, not both")
        body: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "chat_template_kwargs": dict(chat_template_kwargs),
        }
        if grammar is not None:
            body["grammar"] = grammar
        if json_schema is not None:
            body["json_schema"] = dict(json_schema)
        if logprobs or top_logprobs is not None:
            body["logprobs"] = True
            if top_logprobs is not None:
                body["top_logprobs"] = top_logprobs
        endpoint = "POST /v1/chat/completions"
        reply = self._decode(endpoint, await self._call(endpoint, body, timeout), _Completion)
        if not reply.choices:
            raise self._bad_reply(endpoint, "no choices")
        choice = reply.choices[0]
        content = choice.message.content or ""
        finish = choice.finish_reason or ""
        if not content and finish == "length":
            raise LlamaEmptyAnswer(
                self.node,
                endpoint,
                f"no content within max_tokens={max_tokens} (a reasoning model thinking?)",
            )
        tokens = choice.logprobs.content if choice.logprobs and choice.logprobs.content else []
        return Chat(content=content, finish_reason=finish, logprobs=tokens)

    async def _call(self, endpoint: str, body: object, limit: float | None) -> bytes:
        status, raw = await self._send(endpoint, body, self.timeout if limit is None else limit)
        if status != 200:
            raise self._error(endpoint, status, raw)
        return raw

    async def _send(self, endpoint: str, body: object, limit: float) -> tuple[int, bytes]:
        method, path = endpoint.split(" ", 1)
        data = None if body is None else msgspec.json.encode(body)
        headers = {} if data is None else {"Content-Type": "application/json"}
        try:
            async with asyncio.timeout(limit):
                async with self.session.request(
                    method, self.url + path, data=data, headers=headers
                ) as response:
                    return response.status, await response.read()
        except TimeoutError as err:  # aiohttp's own timeouts are TimeoutErrors too
            raise LlamaTimeout(self.node, endpoint, f"no answer within {limit:g} s") from err
        except aiohttp.ClientError as err:
            raise LlamaUnavailable(
                self.node, endpoint, f"{self.url}: {err or type(err).__name__}"
            ) from err

    def _error(self, endpoint: str, status: int, raw: bytes) -> LlamaError:
        try:
            body = msgspec.json.decode(raw, type=_ErrorReply).error
            problem = f"{status} {body.type}: {body.message}"
        except msgspec.DecodeError:
            body = _ErrorBody()
            problem = f"{status}: {raw[:200].decode(errors='replace')}"
        log.debug("node %s: %s: %s", self.node, endpoint, problem)
        if body.type == "exceed_context_size_error":
            sizes = (body.n_prompt_tokens, body.n_ctx)
        elif too_large := _TOO_LARGE.search(body.message):
            # A 500, but an input past the physical batch fails alike on every node: retrying
            # it elsewhere, or counting it against this node's health, would be wrong.
            sizes = (int(too_large["tokens"]), int(too_large["batch"]))
        else:
            sizes = None
        if sizes is not None:
            return LlamaContextOverflow(
                self.node, endpoint, problem, n_prompt_tokens=sizes[0], n_ctx=sizes[1]
            )
        if status == 503:
            return LlamaUnavailable(self.node, endpoint, problem)
        if 400 <= status < 500:
            return LlamaBadRequest(self.node, endpoint, problem)
        return LlamaServerError(self.node, endpoint, problem)

    def _decode(self, endpoint: str, raw: bytes, shape: type[T]) -> T:
        try:
            return msgspec.json.decode(raw, type=shape)
        except msgspec.DecodeError as err:
            raise self._bad_reply(endpoint, str(err)) from err

    def _bad_reply(self, endpoint: str, problem: str) -> LlamaServerError:
        return LlamaServerError(self.node, endpoint, f"malformed reply: {problem}")


def _model_name(reported: str) -> str:
    """An alias as it is; a model path by its file name, so moving the file changes nothing."""
    return PurePath(reported).name if reported.endswith(".gguf") else reported
