"""The systemd watchdog is fed only while the event loop answers: pings on a real notify socket
stop while the loop is blocked, and come back once it runs again."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smemd.notify import keep_watchdog, watchdog_interval

WATCHDOG_USEC = 100_000  # a ping every 50 ms


@pytest.fixture
def notify_socket(short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """What systemd listens on, with a short WATCHDOG_USEC for this process."""
    path = short_dir / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(path))
        listener.setblocking(False)
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))
        monkeypatch.setenv("WATCHDOG_USEC", str(WATCHDOG_USEC))
        monkeypatch.delenv("WATCHDOG_PID", raising=False)
        yield listener


def pings(listener: socket.socket) -> int:
    """The WATCHDOG=1 messages that have arrived since the last look."""
    count = 0
    while True:
        try:
            message = listener.recv(4096).decode()
        except BlockingIOError:
            return count
        count += message == "WATCHDOG=1"


async def test_pings_stop_while_the_loop_is_blocked_and_resume_after(
    notify_socket: socket.socket,
) -> None:
    interval = watchdog_interval()
    assert interval == WATCHDOG_USEC / 2 / 1_000_000
    feeding = asyncio.create_task(keep_watchdog(interval))
    try:
        await asyncio.sleep(0.5)
        assert pings(notify_socket) >= 3  # about 10 while the loop runs

        # Blocked for 20 intervals, by a call that never yields. Read before the loop runs
        # again: what has arrived was sent while it was blocked, at most one ping for the
        # probe it answered just before.
        time.sleep(20 * interval)  # noqa: ASYNC251 (the block is the point)
        assert pings(notify_socket) <= 1

        await asyncio.sleep(0.5)
        assert pings(notify_socket) >= 3  # answering again, fed again
    finally:
        feeding.cancel()
        await asyncio.gather(feeding, return_exceptions=True)
    await asyncio.sleep(0.3)  # the feeding thread has stopped with its task: no more pings
    pings(notify_socket)
    await asyncio.sleep(0.3)
    assert pings(notify_socket) == 0
