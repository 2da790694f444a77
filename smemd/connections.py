"""Each listener's connections: an accept loop of smemd's own, a cap, and the descriptor limit.

aiohttp bounds a connection in time (`[api] idle-timeout-s` is its keep-alive timeout, which
since 3.14.4 also closes a connection that never completes a request's headers) but not in
number, and asyncio's accept loop meets a full descriptor table badly: on EMFILE, CPython 3.11
logs a traceback and schedules a retry for each of up to `backlog` attempts in the same turn, so
a daemon out of descriptors writes thousands of tracebacks a second. Here instead:

- a listener serves at most `[api] max-connections` connections; one past it is answered 503 at
  once and closed, after a moment in which its request is read and dropped, so that the client
  reads the reply rather than a reset;
- EMFILE, ENFILE, ENOBUFS and ENOMEM pause accepting, 50 ms doubling to 1 s while they last,
  with one warning a minute that says how often it happened;
- every connection is aiohttp's own request handler, counted from its birth to its loss.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import msgspec
from aiohttp import web
from aiohttp.web_request import BaseRequest

from smemd.protocol import ErrorBody

log = logging.getLogger("smemd.daemon")

BACKLOG = 128  # aiohttp's own: connections the kernel holds before smemd accepts them
# What one turn of the loop accepts before it serves anything else.
ACCEPTS_PER_TURN = 64
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
FIRST_PAUSE_S, LAST_PAUSE_S = 0.05, 1.0
WARN_EVERY_S = 60.0
# A refused connection stays open this long for its request to arrive and be dropped, and at most
# this many stay so at once; past that they close at once.
REFUSAL_LINGER_S = 0.5
MAX_LINGERING = 64
# Descriptors kept for everything but connections: the store's files, index files, model
# sessions, pipes to child processes, connections to model servers.
RESERVED_DESCRIPTORS = 256
_BODY = b'{"error":"too many connections","details":"this listener holds its limit ([api] max-connections); try again shortly"}'
REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: " + str(len(_BODY)).encode() + b"\r\n\r\n" + _BODY
)


def raise_descriptor_limit() -> int:
    """Lift the soft limit on open files to the hard one, as a server should; the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as err:
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, hard, err)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_cap(configured: int, listeners: int, limit: int) -> int:
    """Connections one listener may hold: the configured cap, or less when the descriptor limit
    cannot hold that many on every listener besides what the rest of smemd needs."""
    room = max(1, (limit - min(RESERVED_DESCRIPTORS, limit // 2)) // listeners)
    if room < configured:
        log.warning(
            "the open-file limit (%d) holds %d connections per listener, not the %d of"
            " [api] max-connections; raise LimitNOFILE (or ulimit -n) for more",
            limit, room, configured,
        )  # fmt: skip
    return min(configured, room)


# What serves one accepted connection, given the call that frees its place when it ends.
Connection = Callable[[Callable[[], None]], asyncio.Protocol]


def aiohttp_connections(server: web.Server, **options: Any) -> Connection:
    """aiohttp's request handler for each connection, with the runner's handler options."""
    return lambda release: _Counted(release, server, loop=asyncio.get_running_loop(), **options)


class Listener:
    """One listening socket's accept loop, feeding its connections to `connection`."""

    def __init__(self, sock: socket.socket, connection: Connection, cap: int) -> None:
        self.sock = sock
        bound = sock.getsockname()
        self.name = bound if isinstance(bound, str) else f"{bound[0]}:{bound[1]}"  # for the log
        self.connection = connection
        self.cap = cap
        self.open = 0  # connections served, from accept to loss
        self.refused = 0  # connections answered 503 since start
        self._loop = asyncio.get_running_loop()
        self._lingering: dict[socket.socket, asyncio.TimerHandle] = {}  # refused, closing
        self._pause_s = 0.0
        self._resume: asyncio.TimerHandle | None = None
        self._put_off = 0  # accepts the descriptor limit put off since the last warning
        self._warned_at = -WARN_EVERY_S
        self._tasks: set[asyncio.Task[None]] = set()
        self.is_accepting = False
        sock.listen(BACKLOG)
        sock.setblocking(False)

    def start(self) -> None:
        self._loop.add_reader(self.sock.fileno(), self._accept)
        self.is_accepting = True

    def close(self) -> None:
        """Accept no more, and stop listening; the connections already accepted go on."""
        self._pause()
        if self._resume is not None:
            self._resume.cancel()
            self._resume = None
        self.sock.close()
        for conn in list(self._lingering):
            self._close_refused(conn)

    def _pause(self) -> None:
        if self.is_accepting:
            self._loop.remove_reader(self.sock.fileno())
            self.is_accepting = False

    async def settled(self) -> None:
        """Until every accepted socket has become a connection (or failed to)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    def _accept(self) -> None:
        for _ in range(ACCEPTS_PER_TURN):
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionAbortedError:
                continue
            except OSError as err:
                if err.errno not in OUT_OF_RESOURCES:
                    log.warning("accept on %s failed: %s", self.name, err)
                    break
                self._back_off(err)
                return
            conn.setblocking(False)
            if self.open >= self.cap:
                self._refuse(conn)
                continue
            self.open += 1
            task = self._loop.create_task(self._serve(conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._pause_s = 0.0

    async def _serve(self, conn: socket.socket) -> None:
        place = _Place(self)
        protocol = self.connection(place.release)
        try:
            await self._loop.connect_accepted_socket(lambda: protocol, conn)
        except Exception as err:  # the socket died before its transport was made
            log.debug("connection on %s lost before it began: %s", self.name, err)
            conn.close()
            place.release()

    def _refuse(self, conn: socket.socket) -> None:
        self.refused += 1
        try:
            conn.send(REFUSAL)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            conn.close()
            return
        if len(self._lingering) >= MAX_LINGERING:
            conn.close()
            return
        self._lingering[conn] = self._loop.call_later(REFUSAL_LINGER_S, self._close_refused, conn)

    def _close_refused(self, conn: socket.socket) -> None:
        self._lingering.pop(conn).cancel()
        try:  # what the client sent, dropped, so that closing sends a FIN rather than a reset
            while conn.recv(65536):
                pass
        except OSError:
            pass
        conn.close()

    def _back_off(self, err: OSError) -> None:
        self._pause()
        self._pause_s = min(LAST_PAUSE_S, max(FIRST_PAUSE_S, self._pause_s * 2))
        self._put_off += 1
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY_S:
            log.warning(
                "%s: cannot accept (%s); %d time(s) since the last warning, pausing up to %.0f"
                " ms each time; %d connection(s) open",
                self.name, err.strerror or err, self._put_off, LAST_PAUSE_S * 1000, self.open,
            )  # fmt: skip
            self._warned_at, self._put_off = now, 0
        self._resume = self._loop.call_later(self._pause_s, self._start_again)

    def _start_again(self) -> None:
        self._resume = None
        if not self.is_accepting:
            self.start()


class _Place:
    """A connection's place on its listener, given back once however the connection ended."""

    __slots__ = ("listener",)

    def __init__(self, listener: Listener) -> None:
        self.listener: Listener | None = listener

    def release(self) -> None:
        if self.listener is not None:
            self.listener.open -= 1
            self.listener = None


_CLIENT_ERRORS = frozenset(s.value for s in HTTPStatus if 400 <= s.value < 500)


class _Counted(web.RequestHandler):
    """aiohttp's request handler, giving its place back when its connection ends, and refusing
    what aiohttp cannot parse as every error is refused."""

    def __init__(self, release: Callable[[], None], server: web.Server, **options: Any) -> None:
        super().__init__(server, **options)
        self._release = release

    def handle_error(
        self, request: BaseRequest, status: int = 500, exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:  # fmt: skip
        """A request aiohttp could not read (a request line or header past 8190 bytes, a
        malformed one) gets `{"error", "details"}` in JSON, not aiohttp's plain text; the
        connection closes, as aiohttp closes it."""
        super().handle_error(request, status, exc, message)  # logs it; raises if a reply began
        if status not in _CLIENT_ERRORS:
            status, message = 500, "the request could not be read"
        error = ErrorBody(error=HTTPStatus(status).phrase.lower(), details=message or "")
        # smemd.api.wire.error_reply's reply, built here: smemd.api imports this module.
        reply = web.Response(
            body=msgspec.json.encode(error), status=status, content_type="application/json"
        )
        reply.force_close()
        return reply

    def connection_lost(self, exc: BaseException | None) -> None:
        super().connection_lost(exc)
        self._release()
