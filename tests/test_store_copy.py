"""`smemctl store copy`: a stopped daemon's store into a new one, SQLite to PostgreSQL and back,
with the same answers from the API afterwards; a copy refused or failed leaves the target empty."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from smemctl.cli import main as smemctl
from smemd.daemon import Daemon
from smemd.store.sql.copying import TABLES
from tests import postgres
from tests.conftest import Running
from tests.raw_sqlite import connect
from tests.test_api import call
from tests.test_memory_api import NS, add, search, settle


def config_file(state_dir: Path, store: str = "") -> Path:
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "smemd.toml"
    path.write_text(
        f'[paths]\nstate-dir = "{state_dir}"\nsocket = "{state_dir / "s.sock"}"\n'
        f'[api]\nlisten = "127.0.0.1:0"\n{store}'
    )
    return path


def postgres_table(dsn: str) -> str:
    return f'[store]\nkind = "postgres"\ndsn = "{dsn}"\n'


@contextlib.asynccontextmanager
async def daemon(config: Path) -> AsyncIterator[Running]:
    """A daemon on `config`, stopped when the block ends."""
    from smemd.config import load

    running = Daemon(load(config, env={}))
    await running.startup()
    async with (
        aiohttp.ClientSession(
            connector=aiohttp.UnixConnector(path=str(running.config.socket))
        ) as unix,
        aiohttp.ClientSession() as tcp,
    ):
        try:
            yield Running(running, unix, tcp)
        finally:
            await running.shutdown()


async def answers(running: Running) -> dict[str, Any]:
    """What the API says of the namespace: its memories with their history, documents,
    entities, a search and one version chain."""
    said: dict[str, Any] = {}
    for name, path, body in (
        (
            "memories",
            "list/memories",
            {"history": True, "include": {"content": True, "forgotten": True}},
        ),
        ("documents", "list/documents", {"include": {"content": True, "memoryCount": True}}),
        ("chunks", "list/chunks", {}),
    ):
        status, reply, _ = await call(running.unix, "POST", f"{NS}/{path}", json=body)
        assert status == 200, reply
        said[name] = reply
    status, said["entities"], _ = await call(running.unix, "GET", f"{NS}/entities")
    assert status == 200, said["entities"]
    hits = await search(running, "Where does Alex live?", searchMode="memories", threshold=0)
    said["search"] = hits
    status, said["history"], _ = await call(
        running.unix, "GET", f"{NS}/memories/{hits[0]['id']}/history"
    )
    assert status == 200
    return said


def copy(config: Path, target: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = smemctl(["store", "copy", "--to", target, "--config", str(config)])
    return code, out.getvalue() + err.getvalue()


def rows_in(dsn: str) -> dict[str, int]:
    with postgres.connect(dsn) as db:
        return {t: postgres.count(db, f"SELECT count(*) FROM {t}", []) for t in TABLES}


async def test_a_copy_to_postgres_and_back_answers_the_same(
    tmp_path: Path, postgres_server: postgres.Server
) -> None:
    first = config_file(tmp_path / "sqlite")
    async with daemon(first) as running:
        await add(running, "Alex lives in Seattle.", id="alex-1", metadata={"team": "core"})
        await settle(running)
        await add(running, "Alex moved to Portland. Alex works with Sam.", id="alex-2")
        await add(running, "Sam prefers green tea.")
        await settle(running)
        before = await answers(running)
    versions = [(m["memory"], m["isLatest"]) for m in before["memories"]["memories"]]
    assert ("Alex lives in Seattle.", False) in versions and len(versions) >= 4, versions
    assert before["entities"]["entities"] and before["documents"]["documents"]
    dsn = postgres_server.database()
    try:
        code, said = await asyncio.to_thread(copy, first, dsn)
        assert code == 0, said
        assert "copied" in said and "memories" in said
        second = config_file(tmp_path / "postgres", postgres_table(dsn))
        async with daemon(second) as running:
            assert await answers(running) == before
        # Back again, into a SQLite file of a third daemon's state dir.
        third_dir = tmp_path / "back"
        third = config_file(third_dir)
        code, said = await asyncio.to_thread(copy, second, str(third_dir / "smem.sqlite3"))
        assert code == 0, said
        async with daemon(third) as running:
            assert await answers(running) == before
        # Into a store that has rows: refused, and the target is as it was.
        counts = rows_in(dsn)
        code, said = await asyncio.to_thread(copy, first, dsn)
        assert code == 1 and "not empty" in said, said
        assert rows_in(dsn) == counts
        # A SQLite target that exists is refused too.
        code, said = await asyncio.to_thread(copy, second, str(third_dir / "smem.sqlite3"))
        assert code == 1 and "exists" in said, said
    finally:
        postgres_server.drop(dsn)


async def test_a_copy_that_fails_leaves_the_target_empty(
    tmp_path: Path, postgres_server: postgres.Server
) -> None:
    first = config_file(tmp_path / "sqlite")
    async with daemon(first) as running:
        await add(running, "Alex lives in Seattle.")
        await add(running, "Sam prefers green tea.")
        await settle(running)
    with connect(tmp_path / "sqlite" / "smem.sqlite3") as db:  # text PostgreSQL cannot hold
        db.execute("UPDATE documents SET title = 'a' || char(0) || 'b'")
    dsn = postgres_server.database()
    try:
        code, said = await asyncio.to_thread(copy, first, dsn)
        assert code == 1 and "cannot hold" in said, said
        assert set(rows_in(dsn).values()) == {0}
    finally:
        postgres_server.drop(dsn)


async def test_a_copy_of_a_running_daemons_store_is_refused(tmp_path: Path) -> None:
    first = config_file(tmp_path / "sqlite")
    async with daemon(first):
        code, said = await asyncio.to_thread(copy, first, str(tmp_path / "copy.sqlite3"))
    assert code == 1 and "another smemd" in said, said
    assert not (tmp_path / "copy.sqlite3").exists()
