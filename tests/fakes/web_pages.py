"""A web server for the fetch tests: a real aiohttp app on a loopback address, ephemeral port."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler

from tests.fakes.documents import ARTICLE, make_pdf

PDF_TITLE = "Moons and Tides"
PDF = make_pdf(["The Moon keeps one face toward the Earth.", "Io does the same."], title=PDF_TITLE)
BIG = 64 * 1024 * 1024  # more than loopback socket buffers hold, so a client that stops is seen
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Seen:
    path: str  # with the query
    host: str  # the Host header
    peer: str  # the address the request came from
    user_agent: str
    accept: str


@dataclass
class Streamed:
    """What the server managed to send of a big body before the client went away (or not)."""

    sent: int = 0
    completed: bool = False


class PageServer:
    """`async with PageServer() as pages: pages.url("/article")`; records what it was asked."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host, self.port = host, 0
        self.requests: list[Seen] = []
        self.streamed = Streamed()
        self.streamed_done = asyncio.Event()
        self.release = asyncio.Event()  # the slow pages wait for this (set on close)
        self._runner: web.AppRunner | None = None

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    @property
    def paths(self) -> list[str]:
        return [seen.path for seen in self.requests]

    async def __aenter__(self) -> PageServer:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/article", self._article)
        app.router.add_get("/doc.pdf", self._pdf)
        app.router.add_get("/hops/{n:\\d+}", self._hops)
        app.router.add_get("/redirect", self._redirect)
        app.router.add_get("/big", self._big)
        app.router.add_get("/slow", self._slow)
        app.router.add_get("/slow-body", self._slow_body)
        app.router.add_get("/sized/{n:\\d+}", self._sized)
        app.router.add_get("/status/{code:\\d+}", self._status)
        app.router.add_get("/blob", self._blob)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.05)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, 0).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _record(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        headers = request.headers
        self.requests.append(Seen(request.path_qs, request.host, request.remote or "",
            headers.get("User-Agent", ""), headers.get("Accept", "")))  # fmt: skip
        return await handler(request)

    async def _article(self, request: web.Request) -> web.Response:
        return web.Response(body=ARTICLE, content_type="text/html", charset="utf-8")

    async def _pdf(self, request: web.Request) -> web.Response:
        return web.Response(body=PDF, content_type="application/pdf")

    async def _hops(self, request: web.Request) -> web.Response:
        """/hops/3 redirects to /hops/2 (relative Location), ..., /hops/0 is the article."""
        n = int(request.match_info["n"])
        if n == 0:
            return await self._article(request)
        raise web.HTTPFound(f"{n - 1}")

    async def _redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    async def _big(self, request: web.Request) -> web.StreamResponse:
        """BIG bytes, with a Content-Length when ?length=1, else chunked."""
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        if request.query.get("length") == "1":
            response.content_length = BIG
        await response.prepare(request)
        try:
            while self.streamed.sent < BIG:
                await response.write(b"x" * _CHUNK)
                self.streamed.sent += _CHUNK
            await response.write_eof()
            self.streamed.completed = True
        except ConnectionError:
            pass  # the client went away
        finally:
            self.streamed_done.set()
        return response

    async def _sized(self, request: web.Request) -> web.Response:
        """/sized/N: N bytes of text, with a Content-Length."""
        n = int(request.match_info["n"])
        line = b"All work and no play makes Jack a dull boy.\n"
        return web.Response(body=(line * (n // len(line) + 1))[:n], content_type="text/plain")

    async def _status(self, request: web.Request) -> web.Response:
        """/status/503: an error page with that status."""
        return web.Response(status=int(request.match_info["code"]), text="no page for you")

    async def _blob(self, request: web.Request) -> web.Response:
        """Bytes of no kind that can be read as text."""
        return web.Response(body=bytes(range(256)) * 4, content_type="application/octet-stream")

    async def _slow(self, request: web.Request) -> web.Response:
        await asyncio.wait_for(self.release.wait(), 10)
        return web.Response(text="late")

    async def _slow_body(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await response.write(b"the start, then nothing")
        await asyncio.wait_for(self.release.wait(), 10)
        return response
