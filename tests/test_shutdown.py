"""Shutdown: requests finish before the deadline, are cut after it, or at once when forced."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from smemd.daemon import Daemon
from tests.conftest import make_config


def slow_daemon(state_dir: Path, seconds: float, deadline: float) -> Daemon:
    """The real daemon with one extra route that takes `seconds`, standing in for a long request."""
    daemon = Daemon(make_config(state_dir, daemon__shutdown_timeout_s=deadline))

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(seconds)
        return web.json_response({"slept": seconds})

    daemon.app.router.add_get("/test/slow", slow)
    return daemon


async def serving(daemon: Daemon) -> asyncio.Task[int]:
    """Run `serve()` as smemd's main does, returning once the listeners are up."""
    serve = asyncio.create_task(daemon.serve(handle_signals=False))
    while not daemon.addr_file.exists():
        await asyncio.sleep(0.01)
    return serve


async def start_slow_request(daemon: Daemon) -> asyncio.Task[int | str]:
    async def fetch() -> int | str:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://{daemon.state.listeners.tcp}/test/slow") as response,
        ):
            await response.read()
            return response.status

    task = asyncio.create_task(fetch())
    while not daemon.state.in_flight:
        await asyncio.sleep(0.01)
    return task


async def test_request_that_finishes_before_the_deadline_gets_its_answer(short_dir: Path) -> None:
    daemon = slow_daemon(short_dir, seconds=0.3, deadline=5)
    serve = await serving(daemon)
    request = await start_slow_request(daemon)
    daemon.handle_signal(signal.SIGTERM)
    assert await serve == 0
    assert await request == 200


async def test_request_still_running_at_the_deadline_is_cancelled_and_counted(
    short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="smemd")
    daemon = slow_daemon(short_dir, seconds=30, deadline=0.5)
    serve = await serving(daemon)
    request = await start_slow_request(daemon)
    started = time.monotonic()
    daemon.handle_signal(signal.SIGTERM)
    assert await serve == 0
    assert time.monotonic() - started < 2.5
    with pytest.raises(aiohttp.ClientError):
        await request
    assert "cancelled 1 request(s)" in caplog.text
    assert not daemon.config.socket.exists()


async def test_second_interrupt_forces_the_stop(short_dir: Path) -> None:
    daemon = slow_daemon(short_dir, seconds=30, deadline=30)
    serve = await serving(daemon)
    request = await start_slow_request(daemon)
    daemon.handle_signal(signal.SIGINT)
    await asyncio.sleep(0.2)
    assert not serve.done()  # the first interrupt waits for the request
    started = time.monotonic()
    daemon.handle_signal(signal.SIGINT)
    assert await serve == 0
    assert time.monotonic() - started < 2.0
    with pytest.raises(aiohttp.ClientError):
        await request
