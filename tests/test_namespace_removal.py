"""Removing a namespace is one commit: killed with SIGKILL while the removal runs, the daemon comes
back with the namespace whole or gone, never part of it; other namespaces are untouched."""

from __future__ import annotations

import asyncio
import http.client
import signal
import threading
from pathlib import Path

from tests.bench.search_latency import fill
from tests.daemon_process import DaemonProcess
from tests.raw_sqlite import connect, database_path

BIG = 40_000


def counts(state_dir: Path, namespace: str) -> tuple[int, int]:
    with connect(database_path(state_dir)) as db:
        memories = db.execute("SELECT count(*) FROM memories WHERE namespace = ?", [namespace])
        names = db.execute("SELECT count(*) FROM namespaces WHERE name = ?", [namespace])
        return memories.fetchone()[0], names.fetchone()[0]


def start(state_dir: Path) -> DaemonProcess:
    daemon = DaemonProcess(state_dir)
    daemon.addr_file.unlink(missing_ok=True)  # a killed daemon's: ready means a new one
    return daemon.start(["--log-level", "warning"])


def send_delete(address: str, namespace: str, answers: list[int]) -> None:
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("DELETE", f"/ns/{namespace}")
        answers.append(conn.getresponse().status)
    except OSError:  # killed before it answered
        answers.append(0)
    finally:
        conn.close()


def test_a_removal_killed_part_way_leaves_the_namespace_whole_or_gone(short_dir: Path) -> None:
    asyncio.run(fill(short_dir, BIG, seed=3, namespace="big"))
    asyncio.run(fill(short_dir, 50, seed=4, namespace="kept"))
    outcomes = []
    # A removal of BIG memories takes over a second here: the kills land across it.
    for delay in (0.1, 0.5, 1.0):
        daemon = start(short_dir)
        try:
            answers: list[int] = []
            sender = threading.Thread(target=send_delete, args=(daemon.tcp, "big", answers))
            sender.start()
            threading.Event().wait(delay)
            daemon.stop(signal.SIGKILL)
            sender.join(30)
        finally:
            daemon.kill()
        memories, named = counts(short_dir, "big")
        assert (memories, named) in ((BIG, 1), (0, 0)), (delay, memories, named)
        assert counts(short_dir, "kept") == (50, 1)
        outcomes.append((answers, memories))
        if memories == 0:
            break
    # Whatever the kills interrupted, a removal that runs to its end leaves nothing.
    daemon = start(short_dir)
    try:
        answers = []
        send_delete(daemon.tcp, "big", answers)
        assert answers in ([200], [404]), outcomes
    finally:
        daemon.stop()
    assert counts(short_dir, "big") == (0, 0)
    assert counts(short_dir, "kept") == (50, 1)
