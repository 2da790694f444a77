"""Connections are bounded: idle ones and ones that trickle their headers close, a body has its
deadline, each listener holds a number of connections and answers 503 past it, a full descriptor
table pauses accepting with one line in the log, and a client that leaves mid-body is a 499."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from smemd import connections
from tests.conftest import Running, StartDaemon, can_connect
from tests.daemon_process import DaemonProcess
from tests.metrics_scrape import scrape, value
from tests.pace import scaled
from tests.test_api import call
from tests.test_shutdown import Conn

HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n"


async def tcp(running: Running) -> Conn:
    host, port = running.daemon.state.listeners.tcp.rsplit(":", 1)
    return Conn(*await asyncio.open_connection(host, int(port)))


async def closed_within(conn: Conn, seconds: float) -> float:
    """How long until smemd closes the connection (it sends nothing first)."""
    started = time.monotonic()
    data = await asyncio.wait_for(conn.reader.read(), seconds)
    assert data == b"", data
    return time.monotonic() - started


async def test_idle_and_trickling_connections_close(start_daemon: StartDaemon) -> None:
    running = await start_daemon(api__idle_timeout_s=0.5)
    silent = await tcp(running)
    assert await closed_within(silent, 3) < 1.5
    # After a reply, a kept-alive connection that sends nothing more closes the same way.
    kept = await tcp(running)
    await kept.send(HEALTH)
    assert (await kept.reply()).status == 200
    assert await closed_within(kept, 3) < 1.5
    # Headers a byte at a time never make a request: closed at the same timeout.
    trickle = await tcp(running)
    started = time.monotonic()
    with pytest.raises((ConnectionError, asyncio.IncompleteReadError, OSError)):
        for byte in HEALTH:
            await trickle.send(bytes([byte]))
            await asyncio.sleep(0.1)
        await trickle.reply()
    assert time.monotonic() - started < scaled(1.5)
    for conn in (silent, kept, trickle):
        conn.close()


async def test_a_body_that_trickles_is_408_and_the_connection_closes(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon(api__body_timeout_s=0.5)
    for path, content_type in (
        ("/ns/slow/document", b"application/json"),
        ("/ns/slow/document/file", b"multipart/form-data; boundary=XyZ"),
    ):
        conn = await tcp(running)
        await conn.send(
            b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: %s\r\nContent-Length: 1000"
            b"\r\n\r\n--XyZ" % (path.encode(), content_type)
        )
        started = time.monotonic()
        answered = asyncio.create_task(conn.reply())
        for _ in range(50):  # a byte every 0.1 s: 5 s if nobody stopped it
            if answered.done():
                break
            try:
                await conn.send(b"x")
            except ConnectionError:
                break
            await asyncio.sleep(0.1)
        reply = await asyncio.wait_for(answered, 2)
        assert reply.status == 408, reply
        assert reply.closes and b"body-timeout-s" in reply.body
        assert time.monotonic() - started < scaled(1.5)
        conn.close()
    status, listed, _ = await call(running.unix, "GET", "http://smemd/ns")
    assert status == 200 and listed["namespaces"] == []


async def test_each_listener_holds_its_cap_and_answers_503_past_it(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon(api__max_connections=4)
    held = [await tcp(running) for _ in range(4)]
    for conn in held[:2]:  # busy or idle, each holds its place
        await conn.send(HEALTH)
        assert (await conn.reply()).status == 200
    past = await tcp(running)
    await past.send(HEALTH)
    reply = await asyncio.wait_for(past.reply(), 2)
    assert reply.status == 503 and reply.closes
    assert b"max-connections" in reply.body and reply.headers["retry-after"] == "1"
    # The socket is a listener of its own: the administrator is not locked out.
    status, _, _ = await call(running.unix, "GET", "http://smemd/v1/status")
    assert status == 200
    samples, _ = await scrape(running)
    assert value(samples, "smem_connections_refused_total", listener="tcp") == 1
    assert value(samples, "smem_connections_open", listener="tcp") == 4
    held.pop().close()
    await asyncio.sleep(0.2)  # smemd sees it go
    again = await tcp(running)
    await again.send(HEALTH)
    assert (await asyncio.wait_for(again.reply(), 2)).status == 200
    for conn in [*held, again, past]:
        conn.close()


async def test_a_client_that_leaves_mid_body_is_a_499_not_an_error(
    start_daemon: StartDaemon, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="smemd")
    running = await start_daemon()
    for path, content_type in (
        (b"/ns/gone/document", b"application/json"),
        (b"/ns/gone/document/file", b"multipart/form-data; boundary=XyZ"),
    ):
        conn = await tcp(running)
        await conn.send(
            b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: %s\r\n"
            b"Content-Length: 100000\r\n\r\n--XyZ\r\n" % (path, content_type)
        )
        await asyncio.sleep(0.2)  # the handler is reading the body
        conn.writer.transport.abort()
    for _ in range(50):
        if caplog.text.count('" 499 ') == 2:
            break
        await asyncio.sleep(0.05)
    gone = [r for r in caplog.records if '" 499 ' in r.getMessage()]
    assert len(gone) == 2 and all(r.levelno == logging.INFO for r in gone), caplog.text
    assert "unhandled error" not in caplog.text and "Traceback" not in caplog.text
    samples, _ = await scrape(running)
    assert value(samples, "smem_http_requests_total", route="/ns/{ns}/document", method="POST",
                 status=499) >= 1  # fmt: skip


async def test_out_of_descriptors_pauses_accepting_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """EMFILE, for real: the descriptors this process may open are cut to those it holds."""
    caplog.set_level(logging.WARNING, logger="smemd")
    served: list[bytes] = []

    class Echo(asyncio.Protocol):
        def __init__(self, release: Callable[[], None]) -> None:
            self.release = release

        def connection_lost(self, exc: Exception | None) -> None:
            self.release()

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            served.append(data)
            self.transport.write(data)

    listening = socket.create_server(("127.0.0.1", 0))
    listener = connections.Listener(listening, Echo, cap=100)
    clients = [socket.create_connection(listening.getsockname()[:2]) for _ in range(20)]
    for client in clients:
        client.sendall(b"hello")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fillers, limit = fill_descriptor_gaps()
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))  # every number below it is taken
    try:
        listener.start()
        await asyncio.sleep(1.5)  # the pause doubles up to a second while nothing can open
        assert served == []
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        for fd in fillers:
            os.close(fd)
    for _ in range(100):
        if len(served) == 20:
            break
        await asyncio.sleep(0.05)
    assert len(served) == 20  # every client waited, and is served once descriptors are free
    warnings = [r.getMessage() for r in caplog.records if "cannot accept" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "Too many open files" in warnings[0]
    assert "Traceback" not in caplog.text and "out of system resource" not in caplog.text
    listener.close()
    for client in clients:
        client.close()


def fill_descriptor_gaps() -> tuple[list[int], int]:
    """Descriptors opened into every free number below the highest one in use, and the lowest
    number then free: a limit of it leaves the process nothing to open."""
    top = max(int(name) for name in os.listdir("/proc/self/fd"))
    fillers = []
    while (fd := os.open(os.devnull, os.O_RDONLY)) <= top:
        fillers.append(fd)
    os.close(fd)
    return fillers, fd


def test_smemd_raises_its_descriptor_limit_and_fits_its_caps_to_it(short_dir: Path) -> None:
    """Under `ulimit -n 200` (soft and hard), 250 connections: smemd caps each listener to what
    the limit holds, answers the rest 503, and the socket stays usable throughout."""
    toml = short_dir / "smemd.toml"
    toml.write_text("[api]\nidle-timeout-s = 2\n")
    process = DaemonProcess(short_dir, toml)
    process.start(open_files=200)
    try:
        assert "holds 50 connections per listener" in process.log()
        host, port = process.tcp.rsplit(":", 1)
        conns = []
        for _ in range(250):
            try:
                conns.append(socket.create_connection((host, int(port)), timeout=5))
            except OSError:
                break
        replies = []
        for conn in conns[-20:]:
            conn.sendall(HEALTH)
            replies.append(conn.recv(4096))
        assert all(r.startswith(b"HTTP/1.1 503") for r in replies), replies[:2]
        assert can_connect(process.socket)
        with socket.socket(socket.AF_UNIX) as admin:
            admin.connect(str(process.socket))
            admin.sendall(HEALTH)
            assert admin.recv(4096).startswith(b"HTTP/1.1 200")
        for conn in conns:
            conn.close()
        time.sleep(2.5)  # the idle ones are closed by now
        with socket.create_connection((host, int(port)), timeout=5) as conn:
            conn.sendall(HEALTH)
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        assert process.stop() == 0
        log = process.log()
        assert "Traceback" not in log and "Errno 24" not in log, log[-2000:]
    finally:
        process.kill()


async def test_a_request_aiohttp_cannot_read_is_refused_in_json(running: Running) -> None:
    """A request line past aiohttp's 8190 bytes, or a malformed header, never reaches a route:
    it is refused as any error is, `{"error", "details"}`, and the connection closes."""
    for raw in (
        b"GET /ns/n/entities/suggestions?limit=" + b"9" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    ):
        conn = await tcp(running)
        await conn.send(raw)
        reply = await asyncio.wait_for(conn.reader.read(), 10)  # then the connection closes
        conn.writer.close()
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.split(b"\r\n")[0].endswith(b" 400 Bad Request"), reply[:300]
        assert b"Content-Type: application/json" in head, head
        error = json.loads(body)
        assert error["error"] == "bad request" and error["details"], error
    # The daemon serves on.
    conn = await tcp(running)
    await conn.send(HEALTH)
    assert (await asyncio.wait_for(conn.reader.readline(), 10)).startswith(b"HTTP/1.1 200")
    conn.writer.close()
