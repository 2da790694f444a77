"""Issue-level behaviour of lanes on six fake nodes: three interactive, three background."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import Running, StartDaemon
from tests.fakes.fleet import start_hosts, started
from tests.fakes.llama_server import FakeLlamaServer
from tests.pace import scaled
from tests.settling import until_idle
from tests.test_api import call

NS = "http://smemd/ns/six"
INTERACTIVE = ["node0", "node1", "node2"]
BACKGROUND = ["node3", "node4", "node5"]
LATENCY = 0.05


@pytest.fixture
async def fakes() -> AsyncIterator[dict[str, FakeLlamaServer]]:
    servers = {
        f"node{k}": FakeLlamaServer(host=f"127.0.31.{k + 1}", latency=LATENCY) for k in range(6)
    }
    async with started(servers):
        yield servers


@pytest.fixture
async def running(
    short_dir: Path, start_daemon: StartDaemon, fakes: dict[str, FakeLlamaServer]
) -> Running:
    lanes = {name: ["interactive"] if name in INTERACTIVE else ["background"] for name in fakes}
    return await start_hosts(
        start_daemon,
        short_dir,
        [(name, fake, lanes[name], "embed") for name, fake in fakes.items()],
    )


def embeddings(fakes: dict[str, FakeLlamaServer], names: list[str]) -> dict[str, int]:
    return {name: fakes[name].calls["embeddings"] for name in names}


async def ingest(running: Running, count: int, tag: str) -> None:
    documents = [
        {"content": f"{tag} fact number {i}: Person{i} likes colour {i}."} for i in range(count)
    ]
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document/batch", json={"documents": documents}
    )
    assert status == 200 and body["count"] == count


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


async def timed_search(running: Running) -> float:
    started = time.monotonic()
    status, _, _ = await call(
        running.unix, "POST", f"{NS}/search", json={"query": "who likes colour 3"}
    )
    assert status == 200
    return time.monotonic() - started


async def test_searches_use_interactive_nodes_and_ingest_background_ones(
    running: Running, fakes: dict[str, FakeLlamaServer]
) -> None:
    start_i, start_b = embeddings(fakes, INTERACTIVE), embeddings(fakes, BACKGROUND)
    await ingest(running, 12, "first")
    await settle(running)
    assert embeddings(fakes, INTERACTIVE) == start_i
    grown = {n: embeddings(fakes, BACKGROUND)[n] - start_b[n] for n in BACKGROUND}
    assert all(v > 0 for v in grown.values()), grown  # spread over all three
    before_b = embeddings(fakes, BACKGROUND)
    await asyncio.gather(*(timed_search(running) for _ in range(9)))
    grown_i = {n: embeddings(fakes, INTERACTIVE)[n] - start_i[n] for n in INTERACTIVE}
    assert all(v > 0 for v in grown_i.values()) and sum(grown_i.values()) == 9, grown_i
    assert embeddings(fakes, BACKGROUND) == before_b


async def test_lending_every_background_node_moves_ingest_to_interactive_and_back(
    running: Running, fakes: dict[str, FakeLlamaServer], short_dir: Path
) -> None:
    baseline = sorted([await timed_search(running) for _ in range(5)])[2]
    until = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    (short_dir / "paused.json").write_text(json.dumps({"nodes": BACKGROUND, "until": until}))
    fleet = running.daemon.state.fleet
    assert fleet is not None and fleet.pauses is not None and fleet.pool is not None
    await fleet.pauses.refresh()
    before_b = embeddings(fakes, BACKGROUND)
    pool = fleet.pool
    peak = 0

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max([peak, *(pool.nodes[n].in_flight["background"] for n in INTERACTIVE)])
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    await ingest(running, 15, "lent")
    during = sorted([await timed_search(running) for _ in range(5)])
    await settle(running)
    watcher.cancel()
    assert embeddings(fakes, BACKGROUND) == before_b  # lent nodes got nothing new
    assert peak <= 1
    assert during[2] < baseline + 3 * LATENCY  # searches do not queue behind ingest

    (short_dir / "paused.json").unlink()
    await fleet.pauses.refresh()
    await ingest(running, 3, "back")
    await settle(running)
    assert sum(embeddings(fakes, BACKGROUND).values()) > sum(before_b.values())


async def test_a_node_killed_mid_ingest_loses_nothing_and_comes_back(
    running: Running, fakes: dict[str, FakeLlamaServer]
) -> None:
    await ingest(running, 30, "kill")
    fleet = running.daemon.state.fleet
    assert fleet is not None and fleet.pool is not None
    while sum(embeddings(fakes, BACKGROUND).values()) < 6:
        await asyncio.sleep(0.01)
    await fakes["node4"].stop()  # killed: in-flight calls are cut, new ones refused
    await settle(running)
    _, jobs, _ = await call(running.unix, "GET", "http://smemd/v1/jobs?namespace=six")
    assert jobs["counts"] == {"done": 30}
    _, lanes, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
    node4 = next(n for n in lanes["nodes"] if n["id"] == "node4")
    assert node4["lastError"] and (not node4["healthy"] or node4["resting"])
    await fakes["node4"].start()
    deadline = time.monotonic() + scaled(10)
    while True:  # the health watch (every 2 s) brings it back
        _, lanes, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
        node4 = next(n for n in lanes["nodes"] if n["id"] == "node4")
        if node4["healthy"] and not node4["resting"]:
            break
        assert time.monotonic() < deadline, node4
        await asyncio.sleep(0.2)
