"""Bounded query cost: filters within their limits, a deadline that stops SQLite itself, and
reads that walk one namespace never holding up anyone else's."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from smemd.errors import TimedOut
from smemd.store import deadline
from smemd.store.records import NewMemory
from smemd.store.sqlite.db import Database
from tests import leftover_threads
from tests.conftest import Running, StartDaemon
from tests.pace import scaled
from tests.test_api import assert_error, call

# Counts to a billion: many seconds of SQLite's own work, with no data to set up.
ENDLESS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000)"
    " SELECT count(*) FROM c"
)


@pytest.fixture
async def database(tmp_path: Path) -> Any:
    db = Database(tmp_path / "s.sqlite3", readers=1, scanners=1)
    await db.open()
    yield db
    await db.close()


async def quick_query_on(db: Database, kind: str) -> float:
    """Seconds a trivial query takes on the (single) connection of that kind."""
    started = time.monotonic()
    async with db.read() if kind == "read" else db.scan("ns") as reader:
        await reader.execute_fetchall("SELECT 1")
    return time.monotonic() - started


@pytest.mark.parametrize("kind", ["read", "scan"])
async def test_a_query_past_the_deadline_is_interrupted(database: Database, kind: str) -> None:
    started = time.monotonic()
    with pytest.raises(TimedOut) as raised, deadline.within(0.2):
        async with database.read() if kind == "read" else database.scan("ns") as reader:
            await reader.execute_fetchall(ENDLESS)
    assert time.monotonic() - started < scaled(1.5)
    assert "0.2 s" in raised.value.details
    # The one connection of that kind is free again: the query stopped, it did not run on.
    assert await quick_query_on(database, kind) < 0.5


@pytest.mark.parametrize("kind", ["read", "scan"])
async def test_a_deadline_passing_between_two_queries_stops_the_second(
    database: Database, kind: str
) -> None:
    with pytest.raises(TimedOut), deadline.within(0.2):
        async with database.read() if kind == "read" else database.scan("ns") as reader:
            await reader.execute_fetchall("SELECT 1")
            await asyncio.sleep(0.3)  # the deadline passes while no statement runs
            started = time.monotonic()
            await reader.execute_fetchall(ENDLESS)
    assert time.monotonic() - started < scaled(1.5)
    assert await quick_query_on(database, kind) < 0.5


async def test_a_cancelled_read_gives_its_connection_back_stopped(database: Database) -> None:
    async def endless() -> None:
        async with database.scan("ns") as reader:
            await reader.execute_fetchall(ENDLESS)

    task = asyncio.create_task(endless())
    await asyncio.sleep(0.2)  # the query is running in the connection's thread
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.wait_for(quick_query_on(database, "scan"), 2) < 2


async def test_a_read_cut_off_with_a_statement_open_leaves_no_spoiled_connection(
    database: Database,
) -> None:
    """A read cut off while a statement of its connection is open (a cursor with rows left, as
    aiosqlite keeps that of a call it finished for a caller that had gone) and an interrupt
    in force: every later query on that connection would answer `interrupted`. Reads after it
    must work, and see what was written since."""
    left_open: list[Any] = []

    async def cut_off() -> None:
        async with database.read() as reader:
            left_open.append(await reader.execute("SELECT 1 UNION ALL SELECT 2"))
            await reader.interrupt()
            await asyncio.sleep(60)

    task = asyncio.create_task(cut_off())
    while not left_open:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with database.write() as writer:
        await writer.execute("CREATE TABLE since (x)")
    for _ in range(3):
        async with asyncio.timeout(2), database.read() as reader:
            assert await reader.execute_fetchall("SELECT count(*) FROM since") == [(0,)]


async def test_waiting_for_a_connection_ends_at_the_deadline(database: Database) -> None:
    async with database.read():  # the only reader is taken
        started = time.monotonic()
        with pytest.raises(TimedOut), deadline.within(0.1):
            async with database.read():
                pass
        assert time.monotonic() - started < scaled(1)


async def test_one_namespace_scans_one_at_a_time_and_others_pass(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3", readers=1, scanners=2)
    await db.open()
    try:

        async def slow_scan() -> None:
            with deadline.within(3), pytest.raises(TimedOut):
                async with db.scan("busy") as reader:
                    await reader.execute_fetchall(ENDLESS)

        hog = asyncio.create_task(slow_scan())
        await asyncio.sleep(0.1)
        started = time.monotonic()
        async with db.scan("other") as reader:  # the second scan connection is free
            await reader.execute_fetchall("SELECT 1")
        assert time.monotonic() - started < scaled(0.5)
        with deadline.within(0.3), pytest.raises(TimedOut):
            async with db.scan("busy"):  # its namespace's turn is taken
                pass
        await hog
    finally:
        await db.close()


# --- over HTTP --------------------------------------------------------------------------------


def predicates(n: int, value: str = "zz") -> list[dict[str, Any]]:
    return [{"field": f"k{i % 4}", "operator": "contains", "value": value} for i in range(n)]


@pytest.mark.parametrize(
    ("filter", "limit"),
    [
        ({"operator": "or", "operands": predicates(201)}, "more than 200 predicates"),
        (
            {"operator": "or", "operands": [{"operator": "and", "operands": predicates(70)}] * 3},
            "more than 200 predicates",
        ),
        (predicates(1, "z" * 1001)[0], "longer than 1000 characters"),
    ],
)
async def test_filters_past_the_limits_are_400_naming_the_limit(
    running: Running, filter: dict[str, Any], limit: str
) -> None:
    for route, body in (
        ("search", {"query": "q", "filter": filter}),
        ("list/memories", {"filter": filter}),
        ("profile", {"filter": filter}),
    ):
        status, reply, _ = await call(running.unix, "POST", f"http://smemd/ns/x/{route}", json=body)
        assert_error(status, reply, 400)
        assert limit in reply["details"], reply


async def fill(running: Running, namespace: str, count: int) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta"]
    vectors = np.random.default_rng(1).standard_normal((count, 384)).astype(np.float32)
    async with engine.store.write() as writer:
        await writer.ensure_namespace(namespace, time.time())
        await writer.insert_memories(
            [
                (
                    NewMemory(
                        id=f"mem_{namespace}_{i}", namespace=namespace, text=f"memory {i}",
                        type="fact", root_id=f"mem_{namespace}_{i}",
                        metadata={f"k{j}": " ".join(rng.choices(words, k=20)) for j in range(4)},
                    ),
                    vectors[i] / np.linalg.norm(vectors[i]),
                )
                for i in range(count)
            ],
            time.time(),
        )  # fmt: skip


async def test_a_search_past_its_deadline_answers_503_and_others_go_on(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await fill(running, "heavy", 6000)
    heaviest = {"operator": "or", "operands": predicates(200, "q" * 1000)}
    started = time.monotonic()
    status, body, response = await call(
        running.unix, "POST", "http://smemd/ns/heavy/list/memories", json={"filter": heaviest}
    )
    assert status == 200, body
    # The deadline from what the work takes on this machine, not from a guess about its speed.
    running.daemon.state.config.api.request_timeout_s = (time.monotonic() - started) / 4
    started = time.monotonic()
    status, body, response = await call(
        running.unix, "POST", "http://smemd/ns/heavy/list/memories", json={"filter": heaviest}
    )
    assert_error(status, body, 503)
    assert "request-timeout-s" in body["details"]
    assert response.headers["Retry-After"] == "1"
    assert time.monotonic() - started < scaled(3)
    # The daemon is not left busy: the same namespace answers a cheap filter at once.
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/ns/heavy/list/memories",
        json={"filter": predicates(1, "alpha")[0]},
    )  # fmt: skip
    assert status == 200 and body["pagination"]["totalItems"] > 0


async def test_a_lease_cut_while_the_store_closes_leaves_no_connection_open(
    tmp_path: Path,
) -> None:
    """Every connection has a thread the process waits for at its exit: a reader whose lease is
    cut while the store closes must not be replaced by a new one that nothing closes."""
    before = leftover_threads.running()
    db = Database(tmp_path / "s.sqlite3", readers=1, scanners=1)
    await db.open()
    held = asyncio.Event()

    async def hold() -> None:
        async with db.scan("ns"):
            held.set()
            await asyncio.sleep(60)

    holder = asyncio.create_task(hold())
    await held.wait()
    closing = asyncio.create_task(db.close())
    await asyncio.sleep(0)  # the close has begun: it is closing the first connection
    holder.cancel()  # the lease is cut, so its reader is not given back
    with contextlib.suppress(asyncio.CancelledError):
        await holder
    await closing
    assert leftover_threads.left_since(before) is None
