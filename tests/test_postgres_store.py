"""What only the PostgreSQL store has: its configuration, its migrations under a lock, its claim
on a database, and its faults (a refusal at start, a connection lost under a request, text it
cannot hold). Everything else it shares with SQLite runs in the suites run on both backends."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from smemd.config import ConfigError
from smemd.daemon import Daemon
from smemd.errors import TimedOut
from smemd.main import render_config
from smemd.store import deadline
from smemd.store.opening import StoreRefused
from smemd.store.postgres.db import POOL_WAIT_S, Database
from smemd.store.postgres.schema import MIGRATIONS
from smemd.store.postgres.store import PostgresStore
from tests import postgres
from tests.conftest import StartDaemon, make_config
from tests.pace import scaled
from tests.test_api import assert_error, call
from tests.test_memory_api import NS, add, search, settle


@pytest.fixture
def dsn(postgres_server: postgres.Server) -> Iterator[str]:
    dsn = postgres_server.database()
    yield dsn
    postgres_server.drop(dsn)


async def test_migrations_are_recorded_and_daemons_starting_together_apply_them_once(
    dsn: str,
) -> None:
    stores = [PostgresStore(dsn), PostgresStore(dsn)]
    # Both migrate at once; the second to take the lock finds the work done, and both serve.
    outcomes = await asyncio.gather(*(s.open() for s in stores), return_exceptions=True)
    try:
        applied = sorted((o for o in outcomes if isinstance(o, list)), key=len)
        assert applied == [[], [name for name, _ in MIGRATIONS]], outcomes
        # A store copy has the database alone: refused while a daemon has it open.
        alone = PostgresStore(dsn, exclusive=True)
        with pytest.raises(StoreRefused, match="stop every daemon"):
            await alone.open()
    finally:
        for store in stores:
            await store.close()
    alone = PostgresStore(dsn, exclusive=True)  # the daemons' claims went with them
    assert await alone.open() == []
    with pytest.raises(StoreRefused, match="store copy"):  # and a daemon waits for the copy
        await PostgresStore(dsn).open()
    await alone.close()
    with postgres.connect(dsn) as db:
        assert postgres.count(db, "SELECT count(*) FROM migrations", []) == len(MIGRATIONS)


# The tables of no namespace: a schema distributed by namespace keeps them whole on every node.
GLOBAL_TABLES = {"settings", "namespaces", "labels", "daemons", "migrations"}


async def test_every_key_starts_with_the_namespace_so_the_schema_can_be_distributed(
    dsn: str,
) -> None:
    store = PostgresStore(dsn)
    await store.open()
    await store.close()
    with postgres.connect(dsn) as db:
        tables = {
            r[0] for r in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
        keys = db.execute(
            "SELECT t.relname, i.indisprimary, array(SELECT a.attname FROM unnest(i.indkey)"
            "  WITH ORDINALITY AS k(attnum, n) JOIN pg_attribute a ON a.attrelid = t.oid"
            "  AND a.attnum = k.attnum ORDER BY k.n)"
            " FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
            " JOIN pg_namespace s ON s.oid = t.relnamespace"
            " WHERE s.nspname = 'public' AND i.indisunique"
        ).fetchall()
    keyed = {table for table, primary, _ in keys if primary}
    assert tables - GLOBAL_TABLES <= keyed and len(tables - GLOBAL_TABLES) >= 13, tables
    for table, primary, columns in keys:
        if table in GLOBAL_TABLES:
            continue
        # Citus's rule: every unique key holds the distribution column; ours leads with it.
        assert "namespace" in columns, (table, columns)
        if primary:
            assert columns[0] == "namespace", (table, columns)


def test_the_dsn_comes_from_exactly_one_place_and_is_never_shown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret_dsn = "postgresql://smem:s3cret-pw@127.0.0.1:1/smem"
    dsn_file = tmp_path / "dsn"
    dsn_file.write_text(secret_dsn + "\n")
    config = make_config(tmp_path, store__kind="postgres", store__dsn_file=str(dsn_file))
    assert config.store.dsn == secret_dsn
    assert "s3cret" not in render_config(config) and "s3cret" not in repr(config.store)
    assert PostgresStore(secret_dsn).location == "postgresql://smem@127.0.0.1:1/smem"
    for settings, message in (
        ({"store__kind": "postgres"}, "exactly one of dsn and dsn-file"),
        (
            {"store__kind": "postgres", "store__dsn": secret_dsn, "store__dsn_file": str(dsn_file)},
            "exactly one of dsn and dsn-file",
        ),
        ({"store__dsn": secret_dsn}, "only a postgres store has one"),
    ):
        with pytest.raises(ConfigError, match=message):
            make_config(tmp_path, **settings)


async def serve(state_dir: Path, dsn: str) -> int:
    daemon = Daemon(make_config(state_dir, store__kind="postgres", store__dsn=dsn))
    return await daemon.serve(handle_signals=False)


async def test_a_database_that_cannot_be_used_ends_the_start_with_2_and_says_which(
    short_dir: Path, postgres_server: postgres.Server, caplog: pytest.LogCaptureFixture
) -> None:
    missing = postgres.with_settings(
        postgres_server.dsn, dbname="no_such_db", password="pw-never-shown"
    )
    with caplog.at_level(logging.ERROR):
        assert await serve(short_dir, missing) == 2
    assert "database does not exist" in caplog.text
    assert "pw-never-shown" not in caplog.text


async def test_a_server_not_reached_at_start_is_waited_for_then_served(
    start_daemon: StartDaemon, dsn: str
) -> None:
    forwarder = postgres.Forwarder(dsn)
    via = forwarder.dsn(dsn)
    running = await start_daemon(store__kind="postgres", store__dsn=via)
    try:
        status, body, response = await call(running.unix, "GET", "http://smemd/v1/health")
        assert status == 503 and body["store"] == "unavailable", body
        assert response.headers.get("Retry-After")
        status, body, response = await call(running.unix, "POST", f"{NS}/list/memories", json={})
        assert_error(status, body, 503)
        assert body["error"] == "storage unavailable" and response.headers.get("Retry-After")
        await forwarder.start()  # the server comes within reach: the daemon opens it itself
        reached_by = time.monotonic() + scaled(10)
        while time.monotonic() < reached_by:
            status, body, _ = await call(running.unix, "GET", "http://smemd/v1/health")
            if status == 200:
                break
            await asyncio.sleep(0.1)
        assert status == 200 and body["store"] == "ok", body
        await add(running, "Alex lives in Seattle.")
        await settle(running)
        found = await search(running, "where does Alex live?")
        assert found and "Seattle" in msgspec.json.encode(found[0]).decode()
    finally:
        await forwarder.stop()


REQUEST_S = 5.0  # the daemon's request timeout in the outage test, which bounds the writer's wait


async def test_a_server_gone_under_load_then_back_loses_nothing_acknowledged(
    start_daemon: StartDaemon, dsn: str
) -> None:
    forwarder = postgres.Forwarder(dsn)
    await forwarder.start()
    running = await start_daemon(
        store__kind="postgres", store__dsn=forwarder.dsn(dsn), api__request_timeout_s=REQUEST_S
    )
    acknowledged: list[str] = []
    statuses: list[int] = []
    slowest = [0.0]  # the longest a request took, for the failure's message

    async def load(until: asyncio.Event) -> None:
        i = 0
        while not until.is_set():
            began = time.monotonic()
            status, body, response = await call(
                running.unix, "POST", f"{NS}/document",
                json={"content": f"Worker {i} repairs bridge number {i}."},
            )  # fmt: skip
            statuses.append(status)
            slowest[0] = max(slowest[0], time.monotonic() - began)
            if status == 200:
                acknowledged.append(body["id"])
            else:  # the outage: a clear 503 saying to come back, never a 500
                assert_error(status, body, 503)
                assert response.headers.get("Retry-After")
            i += 1
            await asyncio.sleep(0.02)

    done = asyncio.Event()
    try:
        writing = asyncio.create_task(load(done))
        await asyncio.sleep(1.0)
        await forwarder.stop()  # every connection cut, new ones refused
        # Longer than a request can wait, so that one begun as the server went cannot outlast it:
        # for the daemon's one writer (until its deadline, its holder maybe waiting out a
        # connection), then for a connection of its own (the pool's wait; the deadline does not
        # cut a transaction's). Shorter, a request could span the outage and get a 200.
        await asyncio.sleep(REQUEST_S + POOL_WAIT_S + 3)
        await forwarder.start()  # and the server is back
        back_by = time.monotonic() + scaled(15)  # the pool's new connections, on a busy machine
        while time.monotonic() < back_by:
            await asyncio.sleep(0.1)
            if statuses[-3:] == [200, 200, 200]:
                break
        done.set()
        await writing
        assert 503 in statuses and statuses[-1] == 200, (statuses, slowest)
        await settle(running)
        with postgres.connect(dsn) as db:  # every acknowledged document, worked to the end
            rows = db.execute(
                "SELECT status FROM documents WHERE id = ANY(%s)", [acknowledged]
            ).fetchall()
        assert len(rows) == len(acknowledged) and {r[0] for r in rows} == {"done"}, rows
    finally:
        done.set()
        await forwarder.stop()


async def test_connections_the_server_drops_are_replaced_and_nothing_is_lost(
    start_daemon: StartDaemon, dsn: str
) -> None:
    running = await start_daemon(store__kind="postgres", store__dsn=dsn)
    await add(running, "Alex lives in Seattle.")
    await settle(running)
    with postgres.connect(dsn) as db:  # every connection of the daemon's pool, gone at once
        db.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND application_name = 'smemd'"
        )
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/status")
    assert body["store"]["kind"] == "postgres" and body["store"]["serverVersion"].startswith("1")
    assert body["store"]["location"].startswith("postgresql://")
    statuses: list[Any] = []
    for _ in range(20):  # the first requests may meet dead connections; then it recovers
        status, body, response = await call(running.unix, "POST", f"{NS}/list/memories", json={})
        statuses.append(status)
        if status == 200:
            break
        assert_error(status, body, 503)
        assert body["error"] == "storage unavailable"
        assert response.headers.get("Retry-After")
    assert statuses[-1] == 200 and set(statuses) <= {200, 503}, statuses
    assert "Seattle" in str(await search(running, "where does Alex live"))
    # Nothing acknowledged was lost, and the store still takes writes.
    await add(running, "Sam lives in Lisbon.")
    await settle(running)
    assert "Lisbon" in str(await search(running, "Lisbon"))


@pytest.mark.parametrize("kind", ["read", "scan"])
async def test_a_deadline_passing_between_two_statements_stops_the_second(
    dsn: str, kind: str
) -> None:
    db = Database(dsn, pool_size=4, statement_timeout_s=60)
    await db.open()
    try:
        with pytest.raises(TimedOut), deadline.within(0.2):
            async with db.read() if kind == "read" else db.scan("ns") as connection:
                await connection.execute("SELECT 1")
                await asyncio.sleep(0.3)  # the deadline passes while no statement runs
                started = time.monotonic()
                await connection.execute("SELECT pg_sleep(30)")
        assert time.monotonic() - started < scaled(2)
    finally:
        await db.close()


async def test_text_postgresql_cannot_hold_is_a_400(start_daemon: StartDaemon, dsn: str) -> None:
    running = await start_daemon(store__kind="postgres", store__dsn=dsn)
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document", json={"content": "a\u0000b"}
    )
    assert_error(status, body, 400)
    assert "NUL" in body["details"]
    await add(running, "Alex lives in Seattle.")  # the store is as it was
    await settle(running)
    assert "Seattle" in str(await search(running, "Seattle"))
