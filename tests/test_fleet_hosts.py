"""The daemon on a `hosts` fleet: fake llama-servers on loopback serve search and ingest by lane."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from smemd.config import load
from tests.conftest import Running, StartDaemon
from tests.fakes.llama_server import FakeLlamaServer
from tests.test_api import call

NS = "http://smemd/ns/lanes"


@pytest.fixture
async def fakes() -> AsyncIterator[dict[str, FakeLlamaServer]]:
    servers = {
        "node0": FakeLlamaServer(host="127.0.31.1"),
        "node1": FakeLlamaServer(host="127.0.31.2"),
    }
    for server in servers.values():
        await server.start()
    yield servers
    for server in servers.values():
        await server.stop()


@pytest.fixture
async def running(
    short_dir: Path, start_daemon: StartDaemon, fakes: dict[str, FakeLlamaServer]
) -> Running:
    toml = short_dir / "smemd.toml"
    toml.write_text(
        f"""
[paths]
state-dir = "{short_dir}"
socket = "{short_dir / "smemd.sock"}"
pause-file = "{short_dir / "paused.json"}"
[api]
listen = "127.0.0.1:0"
[fleet]
kind = "hosts"
[[fleet.nodes]]
id = "node0"
address = "127.0.31.1"
embed = {fakes["node0"].port}
lanes = ["interactive"]
[[fleet.nodes]]
id = "node1"
address = "127.0.31.2"
embed = {fakes["node1"].port}
lanes = ["background"]
"""
    )
    return await start_daemon(load(toml, env={}))


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await asyncio.wait_for(engine.wait_idle(), 30)


def embeddings(fake: FakeLlamaServer) -> int:
    return fake.calls["embeddings"]


async def test_ingest_on_background_and_search_on_interactive(
    running: Running, fakes: dict[str, FakeLlamaServer]
) -> None:
    learnt = {name: embeddings(fake) for name, fake in fakes.items()}  # the start-up probe
    status, _, _ = await call(
        running.unix, "POST", f"{NS}/document", json={"content": "Alex lives in Seattle."}
    )
    assert status == 200
    await settle(running)
    assert (
        embeddings(fakes["node1"]) > learnt["node1"]
        and embeddings(fakes["node0"]) == learnt["node0"]
    )
    before = embeddings(fakes["node1"])
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/search", json={"query": "Where does Alex live?"}
    )
    assert status == 200 and body["results"][0].get("memory") == "Alex lives in Seattle."
    assert (
        embeddings(fakes["node0"]) == learnt["node0"] + 1 and embeddings(fakes["node1"]) == before
    )

    status, lanes, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
    assert status == 200 and lanes["fleetKind"] == "hosts"
    assert (lanes["interactive"], lanes["background"]) == (["node0"], ["node1"])
    assert all(n["healthy"] and not n["paused"] for n in lanes["nodes"])


async def test_lending_the_background_node_moves_ingest_to_interactive(
    running: Running, fakes: dict[str, FakeLlamaServer], short_dir: Path
) -> None:
    until = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    (short_dir / "paused.json").write_text(
        json.dumps({"nodes": ["node1"], "until": until, "by": "farm"})
    )
    fleet = running.daemon.state.fleet
    assert fleet is not None and fleet.pauses is not None
    await fleet.pauses.refresh()
    before = {name: embeddings(fake) for name, fake in fakes.items()}
    await call(running.unix, "POST", f"{NS}/document", json={"content": "Kim plays the cello."})
    await settle(running)
    assert embeddings(fakes["node1"]) == before["node1"]
    assert embeddings(fakes["node0"]) > before["node0"]
    _, lanes, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
    assert lanes["pause"]["nodes"] == ["node1"] and lanes["pause"]["by"] == "farm"
    assert [n["paused"] for n in lanes["nodes"]] == [False, True]

    (short_dir / "paused.json").write_text("{not json")
    await fleet.pauses.refresh()
    _, lanes, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
    # The last valid pause holds while the broken file is reported.
    assert lanes["pauseError"] and lanes["pause"]["nodes"] == ["node1"]


async def test_a_failed_node_is_skipped_and_reported(
    running: Running, fakes: dict[str, FakeLlamaServer]
) -> None:
    await fakes["node1"].stop()
    started = time.monotonic()
    status, _, _ = await call(
        running.unix, "POST", f"{NS}/document", json={"content": "Ravi bakes bread."}
    )
    assert status == 200
    await settle(running)  # the job finishes on node0: background borrows the interactive node
    assert time.monotonic() - started < 20
    _, doc, _ = await call(running.unix, "POST", f"{NS}/list/documents", json={})
    assert [d["system"]["status"] for d in doc["documents"]] == ["done"]
    _, lanes, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
    node1 = next(n for n in lanes["nodes"] if n["id"] == "node1")
    assert node1["lastError"]
