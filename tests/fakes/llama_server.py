"""A fake llama-server: a real aiohttp app on loopback with llama-server's routes and shapes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from smemd.fleet.builtin import Embedder, HashedEmbedder


@dataclass(frozen=True)
class Reply:
    """A chat answer; `probs` is the first token's distribution before any grammar."""

    text: str | None = None  # None: the most probable of `probs`
    probs: Mapping[str, float] = field(default_factory=dict)
    # An answer of several words (letters, say), one distribution per word: the text is each
    # one's most probable, joined by spaces, and word i > 0 is the token " word" (as in BPE).
    positions: Sequence[Mapping[str, float]] = ()


ChatRule = Callable[[Mapping[str, Any]], "str | Reply"]  # gets the request body
Rules = ChatRule | Sequence[tuple[str, "str | Reply"]]  # or (regex on the messages, answer)
Handler = Callable[[Mapping[str, Any]], Awaitable[web.Response]]

WORK = frozenset({"embeddings", "rerank", "chat"})
_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
          501: "not_supported_error", 503: "unavailable_error"}  # fmt: skip
_ALTERNATION = re.compile(r'\(?\s*"[^"\\]*"(?:\s*\|\s*"[^"\\]*")*\s*\)?\s*')
_ROOT = re.compile(r"^\s*root\s*::=(.*)$", re.MULTILINE)
_ROUTES = [("health", "GET", "/health"), ("health", "GET", "/v1/health"), ("props", "GET", "/props"),
           ("models", "GET", "/v1/models"), ("embeddings", "POST", "/v1/embeddings"),
           ("embeddings", "POST", "/embeddings"), ("chat", "POST", "/v1/chat/completions"),
           ("chat", "POST", "/chat/completions"), ("rerank", "POST", "/rerank"),
           ("rerank", "POST", "/reranking"), ("rerank", "POST", "/v1/rerank"),
           ("rerank", "POST", "/v1/reranking")]  # fmt: skip


@dataclass
class Fault:
    remaining: int
    status: int
    body: bytes
    routes: Collection[str]


class FakeLlamaServer:
    """`async with FakeLlamaServer(host="127.0.31.1") as fake: fake.url`; restartable on its port.

    `roles` says which of llama-server's --embeddings and --reranking it was "started" with; chat
    is always served, as the real one does. `n_ctx` is per slot, as /props reports it.
    """

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, *, embedder: Embedder | None = None,
        chat: Rules = (), roles: Collection[str] = ("embed", "rerank"),
        model: str = "/models/fake.gguf", n_ctx: int = 4096, n_batch: int = 512, slots: int = 1,
        latency: float = 0.0, loading_for: float = 0.0, thinks: int = 0, scramble: bool = False,
    ) -> None:  # fmt: skip
        self.host, self.port = host, port
        self.embedder = embedder or HashedEmbedder()
        self.rules, self.roles, self.model = chat, frozenset(roles), model
        self.n_ctx, self.n_batch, self.slots = n_ctx, n_batch, slots
        self.latency = latency  # added to each embeddings, rerank and chat call, inside a slot
        self.loading_for = loading_for  # seconds of 503 after each start; math.inf: until ready()
        self.thinks = thinks  # a reasoning model: this many tokens of thought unless told not to
        self.scramble = scramble  # embeddings listed in reverse: only `index` gives the order
        self.calls: Counter[str] = Counter()  # per route name: health, props, models, + WORK
        self.in_flight = self.max_in_flight = 0
        self.last: dict[str, Any] = {}  # the last request body per route
        self._fault: Fault | None = None
        self._unhung = asyncio.Event()
        self._unhung.set()
        self._slots = asyncio.Semaphore(slots)
        self._ready_at = 0.0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        handlers: dict[str, Handler] = {"health": self._health, "props": self._props,
            "models": self._models, "embeddings": self._embeddings, "rerank": self._rerank,
            "chat": self._chat}  # fmt: skip
        app = web.Application()
        for name, method, path in _ROUTES:
            app.router.add_route(method, path, self._serve(name, handlers[name]))
        # A stop is a kill: handlers still running are cancelled, their connections dropped.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.05)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port, reuse_address=True).start()
        self.port = self._runner.addresses[0][1]
        self._ready_at = time.monotonic() + self.loading_for

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeLlamaServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def ready(self) -> None:
        """End the loading phase now."""
        self._ready_at = 0.0

    def hang(self) -> None:
        """Embeddings, rerank and chat calls wait, unanswered, until release()."""
        self._unhung.clear()

    def release(self) -> None:
        self._unhung.set()

    def fail_next(
        self, n: int, status: int = 500, *, message: str = "", error_type: str = "",
        body: bytes | None = None, routes: Collection[str] = WORK,
    ) -> None:  # fmt: skip
        """Answer the next `n` calls to `routes` with `status` and an error body (or `body`)."""
        if body is None:
            kind = error_type or _TYPES.get(status, "server_error")
            body = json.dumps(_error_body(status, message or f"injected {status}", kind)).encode()
        self._fault = Fault(n, status, body, routes)

    def _serve(
        self, name: str, handler: Handler
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def serve(request: web.Request) -> web.Response:
            self.calls[name] += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                return await self._handle(name, request, handler)
            finally:
                self.in_flight -= 1

        return serve

    async def _handle(self, name: str, request: web.Request, handler: Handler) -> web.Response:
        if time.monotonic() < self._ready_at:  # the real one answers every route so
            return _error(503, "Loading model", "unavailable_error")
        fault = self._fault
        if fault is not None and fault.remaining > 0 and name in fault.routes:
            fault.remaining -= 1
            return web.Response(
                status=fault.status, body=fault.body, content_type="application/json"
            )
        body: Mapping[str, Any] = {}
        if request.method == "POST":
            try:
                body = json.loads(await request.read())
            except ValueError as err:
                return _bad(f"[json.exception.parse_error.101] {err}")
            self.last[name] = body
        if name not in WORK:
            return await handler(body)
        await self._unhung.wait()
        async with self._slots:
            if self.latency:
                await asyncio.sleep(self.latency)
            return await handler(body)

    async def _health(self, body: Mapping[str, Any]) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _props(self, body: Mapping[str, Any]) -> web.Response:
        return web.json_response({
            "default_generation_settings": {"n_ctx": self.n_ctx, "params": {}},
            "total_slots": self.slots, "model_path": self.model, "model_alias": self.model,
            "chat_template": "", "modalities": {"vision": False}, "build_info": "fake",
        })  # fmt: skip

    async def _models(self, body: Mapping[str, Any]) -> web.Response:
        meta = {"n_ctx": self.n_ctx, "n_embd": self.embedder.dimension}
        data = [{"id": self.model, "object": "model", "owned_by": "llamacpp", "meta": meta}]
        return web.json_response({"object": "list", "data": data})

    async def _embeddings(self, body: Mapping[str, Any]) -> web.Response:
        if not self.roles & {"embed", "rerank"}:  # --reranking implies --embeddings
            return _unsupported(
                "This server does not support embeddings. Start it with `--embeddings`"
            )
        if "input" not in body:
            return _bad('"input" or "content" must be provided')
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        if not texts:
            return _bad('"input" must not be empty')
        if not all(isinstance(t, str) and t for t in texts):
            return _bad("Input content cannot be empty")
        counts = [len(_tokens(t)) + 1 for t in texts]
        if max(counts) > self.n_batch:
            return _error(
                500,
                f"input ({max(counts)} tokens) is too large to process. increase the physical batch size (current batch size: {self.n_batch})",
                "server_error",
            )
        vectors = await self.embedder.embed(texts)
        if "embed" not in self.roles:
            vectors = vectors * 0  # what a --reranking server answers, with a 200
        data = [
            {"embedding": v.tolist(), "index": i, "object": "embedding"}
            for i, v in enumerate(vectors)
        ]
        usage = {"prompt_tokens": sum(counts), "total_tokens": sum(counts)}
        data = data[::-1] if self.scramble else data
        return web.json_response(
            {"model": self.model, "object": "list", "usage": usage, "data": data}
        )

    async def _rerank(self, body: Mapping[str, Any]) -> web.Response:
        if "rerank" not in self.roles:
            return _unsupported(
                "This server does not support reranking. Start it with `--reranking`"
            )
        query, docs = body.get("query"), body.get("documents")
        if not isinstance(query, str):
            return _bad('"query" must be provided')
        if not isinstance(docs, list) or not docs or not all(isinstance(d, str) for d in docs):
            return _bad('"documents" must be a non-empty string array')
        vectors = await self.embedder.embed([query, *docs])
        scores = vectors[1:] @ vectors[0]
        ranked = sorted(range(len(docs)), key=lambda i: -scores[i])[
            : body.get("top_n") or len(docs)
        ]
        results = [{"index": i, "relevance_score": float(scores[i])} for i in ranked]
        return web.json_response({"model": self.model, "object": "list", "results": results})

    async def _chat(self, body: Mapping[str, Any]) -> web.Response:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _bad("'messages' is required")
        if "grammar" in body and "json_schema" in body:
            return _error(500, "Cannot use both json_schema and grammar", "server_error")
        if "top_logprobs" in body and not body.get("logprobs"):
            return _bad("top_logprobs requires logprobs to be set to true")
        thinking = body.get("chat_template_kwargs", {}).get("enable_thinking", True)
        if not isinstance(thinking, bool):
            return _bad(
                f'invalid type for "enable_thinking" (expected boolean, got {type(thinking).__name__})'
            )
        alternatives = _alternatives(body["grammar"]) if "grammar" in body else []
        if alternatives is None:
            return _bad("Failed to initialize samplers: failed to parse grammar")
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        n_prompt = len(_tokens(prompt)) + 4 * len(messages)
        if n_prompt >= self.n_ctx:
            message = f"request ({n_prompt} tokens) exceeds the available context size ({self.n_ctx} tokens), try increasing it"
            return _error(
                400,
                message,
                "exceed_context_size_error",
                n_prompt_tokens=n_prompt,
                n_ctx=self.n_ctx,
            )
        choice, n_out = self._generate(body, prompt, alternatives, thinking)
        usage = {"completion_tokens": n_out, "prompt_tokens": n_prompt}
        return web.json_response({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": self.model, "choices": [choice], "usage": usage,
        })  # fmt: skip

    def _generate(
        self, body: Mapping[str, Any], prompt: str, alternatives: list[str], thinking: bool
    ) -> tuple[dict[str, Any], int]:
        """The choice the rules give, within the grammar and max_tokens; and its token count."""
        reply = self._answer(body, prompt)
        if reply.positions:
            reply = Reply(
                text=" ".join(max(d, key=d.__getitem__) for d in reply.positions),
                probs=reply.positions[0], positions=reply.positions,
            )  # fmt: skip
        probs = dict(reply.probs) or {_pieces(reply.text or "OK")[0]: 1.0}
        text = reply.text if reply.text is not None else max(probs, key=probs.__getitem__)
        if alternatives and text not in alternatives:  # the grammar masks what it forbids
            text = max(alternatives, key=lambda a: probs.get(_pieces(a)[0], 0.0))
        budget = int(body.get("max_tokens") or 10**6)
        thought = self.thinks if thinking else 0
        pieces = _pieces(text)[: max(budget - thought, 0)]
        # The end-of-generation token needs a place in the budget too, as it does for real.
        finish = "stop" if thought + len(_pieces(text)) < budget else "length"
        message: dict[str, Any] = {"role": "assistant", "content": "".join(pieces)}
        if thought:
            message["reasoning_content"] = "Hmm. " * min(thought, budget)
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        if body.get("logprobs"):
            k = int(body.get("top_logprobs", 20))
            later = [{f" {t}": p for t, p in d.items()} for d in reply.positions[1:]]
            dists = [probs, *later]
            tokens = [
                _logprob(p, dists[i] if i < len(dists) else {p: 1.0}, k)
                for i, p in enumerate(pieces)
            ]
            if finish == "stop":  # the real one lists the end-of-generation token too, as ""
                tokens.append(_logprob("", {"": 1.0}, k))
            choice["logprobs"] = {"content": tokens}
        return choice, thought + len(pieces)

    def _answer(self, body: Mapping[str, Any], prompt: str) -> Reply:
        if callable(self.rules):
            answer = self.rules(body)
        else:
            answer = next((a for pattern, a in self.rules if re.search(pattern, prompt)), "OK")
        return Reply(answer) if isinstance(answer, str) else answer


def _alternatives(grammar: str) -> list[str] | None:
    """A root alternation's strings; [] for grammars the fake cannot read; None if malformed."""
    root = _ROOT.search(grammar)
    if root is None or grammar.count('"') % 2:
        return None  # llama.cpp: no root symbol, or an unterminated string
    if not _ALTERNATION.fullmatch(root.group(1)):
        return []
    return re.findall(r'"([^"\\]*)"', root.group(1))


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


def _pieces(text: str) -> list[str]:
    """Answer text as tokens that join back into it: words with their leading space."""
    return re.findall(r"\s*\S+|\s+$", text) or [""]


def _logprob(token: str, probs: Mapping[str, float], k: int) -> dict[str, Any]:
    """llama-server's entry: the chosen token's own probability (before any grammar) and the
    top k, which need not include it."""

    def entry(t: str, p: float) -> dict[str, Any]:
        token_id = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=2).digest(), "little")
        return {
            "id": token_id,
            "token": t,
            "bytes": list(t.encode()),
            "logprob": math.log(max(p, 1e-30)),
        }

    ranked = sorted(probs.items(), key=lambda kv: -kv[1])[:k]
    return {
        **entry(token, probs.get(token, 1e-30)),
        "top_logprobs": [entry(t, p) for t, p in ranked],
    }


def _error_body(status: int, message: str, kind: str, **extra: int) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "type": kind, **extra}}


def _error(status: int, message: str, kind: str, **extra: int) -> web.Response:
    return web.json_response(_error_body(status, message, kind, **extra), status=status)


def _bad(message: str) -> web.Response:
    return _error(400, message, "invalid_request_error")


def _unsupported(message: str) -> web.Response:
    return _error(501, message, "not_supported_error")
