"""`/v1/ready`: 200 while the store takes a write, the disk has room and the embedder answers,
503 naming the check that fails; each check bounded in time, and answered to a load balancer
whatever its Host, without a token."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from smemd.api.control.readiness import CHECK_TIMEOUT_S
from smemd.config import ConfigError
from tests import postgres
from tests.conftest import Running, StartDaemon, make_config
from tests.fakes.fleet import start_hosts
from tests.fakes.llama_server import FakeLlamaServer
from tests.pace import scaled
from tests.raw_sqlite import connect, database_path, rows
from tests.test_api import TOKEN, call

READY = "http://smemd/v1/ready"
NAMES = ["store", "disk", "embedder", "indexes"]


async def ready(session: aiohttp.ClientSession, url: str = READY, **headers: str) -> Answer:
    status, body, response = await call(session, "GET", url, headers=headers)
    assert response.headers["Cache-Control"] == "no-store"
    if isinstance(body, str):
        assert response.content_type == "text/plain"
        return Answer(status, body.splitlines())
    return Answer(status, [f"{'ok' if c['ok'] else 'fail'} {c['name']}" for c in body["checks"]])


class Answer:
    def __init__(self, status: int, lines: list[str]) -> None:
        self.status = status
        self.lines = lines

    def line(self, name: str) -> str:
        found = [line for line in self.lines if line.split(":")[0].split()[1] == name]
        assert len(found) == 1, self.lines
        return found[0]

    @property
    def failing(self) -> list[str]:
        return [line.split(":")[0].split()[1] for line in self.lines if line.startswith("fail ")]

    def __repr__(self) -> str:
        return f"{self.status} {self.lines}"


async def until(
    running: Running, wanted: Callable[[Answer], bool], within_s: float = 20.0
) -> Answer:
    """Ask again until the answer is the one wanted."""
    deadline = time.monotonic() + within_s
    while True:
        answer = await ready(running.unix)
        if wanted(answer):
            return answer
        assert time.monotonic() < deadline, answer
        await asyncio.sleep(0.2)


async def test_a_daemon_that_can_serve_is_ready_line_by_line_or_as_json(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon(engine__dreaming=False)
    engine = running.daemon.state.engine
    assert engine is not None
    path = database_path(engine)
    with connect(path) as db:
        # data_version moves when another connection commits: the probe's write is a real one.
        before = db.execute("PRAGMA data_version").fetchone()
        answer = await ready(running.unix)
        after = db.execute("PRAGMA data_version").fetchone()
    assert answer.status == 200 and not answer.failing, answer
    assert [line.split(":")[0] for line in answer.lines] == [f"ok {name}" for name in NAMES]
    assert answer.line("store").startswith("ok store: writable (")
    assert answer.line("embedder").startswith(f"ok embedder: {engine.embedder.name}")
    assert answer.line("disk").endswith("at least 256 wanted")
    assert answer.line("indexes") == "ok indexes: none loading"
    assert before != after
    assert not [key for (key,) in rows(path, "SELECT key FROM settings") if "readiness" in key]

    status, body, response = await call(
        running.unix, "GET", READY, headers={"Accept": "text/html, application/json;q=0.9"}
    )
    assert status == 200 and response.content_type == "application/json"
    assert body["ready"] is True
    assert [(c["name"], c["ok"]) for c in body["checks"]] == [(n, True) for n in NAMES]
    assert body["checks"][0]["detail"].startswith("writable")
    refused_json = await ready(running.unix, Accept="text/plain, application/json;q=0")
    assert refused_json.lines[0].startswith("ok store: writable")
    async with running.unix.head(READY) as head:  # what some balancers send
        assert head.status == 200
    over_tcp = await ready(running.tcp, running.url("/v1/ready"))  # no token configured
    assert over_tcp.status == 200 and over_tcp.line("store").startswith("ok store: writable")


async def test_a_balancer_gets_it_by_any_host_without_a_token_but_not_the_details(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon(api__token=TOKEN)
    foreign = {"Host": "lb.internal:8900", "Origin": "http://elsewhere.example"}
    answer = await ready(running.tcp, running.url("/v1/ready"), **foreign)
    assert answer.status == 200
    assert answer.lines == [f"ok {name}" for name in NAMES]  # no free space, no model names
    with_token = await ready(
        running.tcp, running.url("/v1/ready"), Authorization=f"Bearer {TOKEN}", **foreign
    )
    assert with_token.status == 200 and with_token.line("store").startswith("ok store: writable")
    status, _, _ = await call(
        running.tcp, "GET", running.url("/v1/status"), headers={"Host": "lb.internal:8900"}
    )
    assert status in (401, 421)  # other routes keep their rules


async def test_a_store_that_cannot_take_a_write_is_not_ready_within_the_bound(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon(engine__dreaming=False)
    engine = running.daemon.state.engine
    assert engine is not None
    with connect(database_path(engine)) as db:
        db.execute("BEGIN IMMEDIATE")  # another process holds the write lock: no write gets in
        started = time.monotonic()
        answer = await ready(running.unix)
        took = time.monotonic() - started
    assert answer.status == 503, answer
    assert answer.failing == ["store"], answer
    assert answer.line("store") == f"fail store: timed out after {CHECK_TIMEOUT_S:g} s"
    assert answer.line("embedder").startswith("ok embedder:")
    assert took < CHECK_TIMEOUT_S + scaled(1.5)
    # The lock gone, the probe left behind finishes and the next one passes.
    await until(running, lambda a: a.status == 200)


@pytest.fixture
def database(postgres_server: postgres.Server) -> Iterator[str]:
    """A database of the test's own, dropped once its daemons have stopped (a fixture asked
    for before `start_daemon` is torn down after it)."""
    dsn = postgres_server.database()
    yield dsn
    postgres_server.drop(dsn)


async def test_a_read_only_postgresql_store_is_not_ready(
    database: str, start_daemon: StartDaemon
) -> None:
    running = await start_daemon(
        store__kind="postgres", store__dsn=database, engine__dreaming=False
    )
    assert (await ready(running.unix)).status == 200
    with postgres.connect(database) as db:
        set_read_only(db, "on")  # as a standby is: every session's transactions read-only
    answer = await until(running, lambda a: "read-only" in a.line("store"))
    assert answer.status == 503 and answer.failing == ["store"], answer
    assert answer.line("store") == (
        "fail store: storage unavailable: the database is read-only (a standby?)"
    )
    with postgres.connect(database) as db:
        set_read_only(db, "off")
    await until(running, lambda a: a.status == 200)


def set_read_only(db: Any, value: str) -> None:
    """Sessions of the database read-only, or not; the daemon's pool reconnects to see it."""
    db.execute("SET default_transaction_read_only = off")  # this session may say so again
    db.execute(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = "
        + value
        + "', current_database()); END $$"
    )
    db.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )


async def test_too_little_free_disk_is_not_ready(
    start_daemon: StartDaemon, short_dir: Path
) -> None:
    free_mb = shutil.disk_usage(str(short_dir)).free // 2**20
    floor = free_mb * 2 + 1024  # whatever others write meanwhile
    running = await start_daemon(daemon__min_free_mb=floor)
    answer = await ready(running.unix)
    assert answer.status == 503 and answer.failing == ["disk"], answer
    assert answer.line("disk").startswith("fail disk: ")
    assert answer.line("disk").endswith(f"MB free, below [daemon] min-free-mb = {floor}")
    status, body, _ = await call(running.unix, "GET", READY, headers={"Accept": "application/json"})
    assert status == 503 and body["ready"] is False
    assert [c["name"] for c in body["checks"] if not c["ok"]] == ["disk"]


def test_min_free_mb_cannot_be_negative(short_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"\$\.daemon\.min-free-mb"):
        make_config(short_dir, daemon__min_free_mb=-1)


@pytest.fixture
async def embedder() -> AsyncIterator[FakeLlamaServer]:
    async with FakeLlamaServer(host="127.0.33.1") as fake:
        yield fake


async def on_hosts(start_daemon: StartDaemon, short_dir: Path, fake: FakeLlamaServer) -> Running:
    nodes = [("node0", fake, ["interactive", "background"], "embed")]
    return await start_hosts(start_daemon, short_dir, nodes, extra="[engine]\ndreaming = false")


async def test_an_embedder_that_fails_is_not_ready(
    start_daemon: StartDaemon, short_dir: Path, embedder: FakeLlamaServer
) -> None:
    running = await on_hosts(start_daemon, short_dir, embedder)
    assert (await ready(running.unix)).status == 200
    embedder.fail_next(1_000_000, 500, routes=("embeddings",))
    answer = await ready(running.unix)
    assert answer.status == 503 and answer.failing == ["embedder"], answer
    assert answer.line("embedder").startswith("fail embedder: ")
    embedder.fail_next(0)
    await until(running, lambda a: a.status == 200, within_s=30)


async def test_an_embedder_that_hangs_fails_within_the_bound(
    start_daemon: StartDaemon, short_dir: Path, embedder: FakeLlamaServer
) -> None:
    running = await on_hosts(start_daemon, short_dir, embedder)
    embedder.hang()
    try:
        started = time.monotonic()
        answer = await ready(running.unix)
        took = time.monotonic() - started
    finally:
        embedder.release()
    assert answer.status == 503 and answer.failing == ["embedder"], answer
    assert answer.line("embedder") == f"fail embedder: timed out after {CHECK_TIMEOUT_S:g} s"
    assert took < CHECK_TIMEOUT_S + scaled(1.5)
