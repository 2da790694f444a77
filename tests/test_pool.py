"""The node pool against fake llama-servers on loopback: spreading, lanes, retries, circuits, drain."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import numpy as np
import pytest

from smemd.cards.nodestate import pool_feeder
from smemd.fleet.llama import LlamaClient
from smemd.fleet.pool import Lane, Node, NoNode, Pool
from tests.fakes.llama_server import FakeLlamaServer
from tests.pace import scaled


@dataclass
class Fleet:
    pool: Pool
    fakes: dict[str, FakeLlamaServer]
    paused: set[str]


@pytest.fixture
async def fleet() -> AsyncIterator[Fleet]:
    """node0-2 interactive, node3-5 background, each one fake embedding server on 127.0.31.k."""
    paused: set[str] = set()
    fakes = {f"node{k}": FakeLlamaServer(host=f"127.0.31.{k + 1}", latency=0.05) for k in range(6)}
    async with aiohttp.ClientSession() as session:
        for fake in fakes.values():
            await fake.start()
        nodes = [
            Node(
                name,
                {"embed": LlamaClient(session, fake.url, node=name, timeout=2.0)},
                ["interactive"] if int(name[-1]) < 3 else ["background"],
            )
            for name, fake in fakes.items()
        ]
        pool = Pool(nodes, paused=lambda: frozenset(paused), failures_to_open=2, open_seconds=60)
        yield Fleet(pool, fakes, paused)
        for fake in fakes.values():
            await fake.stop()


async def embed(pool: Pool, lane: Lane, text: str = "hello") -> np.ndarray:
    return await pool.call("embed", lane, lambda client: client.embed([text]))


def calls(fleet: Fleet) -> dict[str, int]:
    return {name: fake.calls["embeddings"] for name, fake in fleet.fakes.items()}


async def test_each_lane_spreads_over_its_own_nodes(fleet: Fleet) -> None:
    await asyncio.gather(*(embed(fleet.pool, "interactive") for _ in range(9)))
    await asyncio.gather(*(embed(fleet.pool, "background") for _ in range(9)))
    assert calls(fleet) == {f"node{k}": 3 for k in range(6)}


async def test_idle_nodes_take_turns(fleet: Fleet) -> None:
    for _ in range(6):
        await embed(fleet.pool, "interactive")  # one at a time: every node is idle, a tie
    assert [calls(fleet)[f"node{k}"] for k in range(3)] == [2, 2, 2]


async def test_background_borrows_interactive_nodes_one_call_each_when_its_own_are_lent(
    fleet: Fleet,
) -> None:
    fleet.paused.update({"node3", "node4", "node5"})
    peak: dict[str, int] = {}

    async def watch() -> None:
        while True:
            for node in fleet.pool.nodes.values():
                peak[node.name] = max(peak.get(node.name, 0), node.in_flight["background"])
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    background = [asyncio.create_task(embed(fleet.pool, "background")) for _ in range(3)]
    await asyncio.sleep(0.01)
    # Searches still find an interactive node with room while ingest borrows them all.
    started = asyncio.get_running_loop().time()
    await embed(fleet.pool, "interactive")
    assert asyncio.get_running_loop().time() - started < scaled(0.5)
    await asyncio.gather(*background)
    watcher.cancel()
    assert all(peak.get(f"node{k}", 0) <= 1 for k in range(3))
    assert sum(calls(fleet)[f"node{k}"] for k in range(3, 6)) == 0
    fleet.paused.clear()
    await embed(fleet.pool, "background")
    assert sum(calls(fleet)[f"node{k}"] for k in range(3, 6)) == 1


async def test_a_fourth_background_call_waits_for_nothing_it_cannot_have(fleet: Fleet) -> None:
    fleet.paused.update({"node3", "node4", "node5"})
    for fake in fleet.fakes.values():
        fake.hang()
    held = [asyncio.create_task(embed(fleet.pool, "background")) for _ in range(3)]
    await asyncio.sleep(0.05)
    with pytest.raises(NoNode) as caught:
        await embed(fleet.pool, "background")
    assert "paused" in caught.value.details
    for fake in fleet.fakes.values():
        fake.release()
    await asyncio.gather(*held)


async def test_a_failing_node_is_retried_elsewhere_then_rested(fleet: Fleet) -> None:
    fleet.paused.add("node2")  # node0 and node1 serve the lane
    fleet.fakes["node0"].fail_next(10, 500)
    for _ in range(4):
        await embed(fleet.pool, "interactive")  # every call succeeds, on node1 when node0 fails
    node0 = fleet.pool.nodes["node0"]
    assert node0.failures == 2 and node0.is_open(time.monotonic())
    assert "500" in node0.last_error or "node0" in node0.last_error
    assert fleet.fakes["node0"].calls["embeddings"] == 2  # rested after two straight failures
    assert fleet.fakes["node1"].calls["embeddings"] == 4


async def test_a_killed_node_is_skipped_then_comes_back(fleet: Fleet) -> None:
    pool, fake = fleet.pool, fleet.fakes["node1"]
    fleet.paused.add("node2")
    await fake.stop()
    for _ in range(6):
        await embed(pool, "interactive")  # every call succeeds: refused connections retry elsewhere
    await pool.probe(pool.nodes["node1"])
    assert not pool.nodes["node1"].healthy and pool.nodes["node1"].last_error
    await fake.start()
    await pool.probe(pool.nodes["node1"])
    assert pool.nodes["node1"].healthy and not pool.nodes["node1"].is_open(0.0)
    before = fake.calls["embeddings"]
    await asyncio.gather(*(embed(pool, "interactive") for _ in range(4)))
    assert fake.calls["embeddings"] > before


async def test_a_probe_answered_after_a_newer_word_leaves_the_node_as_that_word_said(
    fleet: Fleet,
) -> None:
    """The cards mark a node up while a probe sent while it was loading still waits: the probe's
    late "loading" does not mark it down again; a probe sent after the word still counts."""
    pool, fake = fleet.pool, fleet.fakes["node1"]
    node = pool.nodes["node1"]
    fake.loading_for = math.inf
    await fake.stop()
    await fake.start()
    await pool.probe(node)
    assert not node.healthy
    late = asyncio.create_task(pool.probe(node))
    await asyncio.sleep(0)  # sent, not answered
    pool_feeder(pool)("node1", "up", "")  # as the cards say it
    await late
    assert node.healthy
    await pool.probe(node)
    assert not node.healthy and "loading" in node.last_error


async def test_wait_drained_returns_when_in_flight_reaches_zero(fleet: Fleet) -> None:
    fleet.fakes["node3"].latency = 0.3
    fleet.paused.update({"node4", "node5"})
    work = asyncio.create_task(embed(fleet.pool, "background"))
    await asyncio.sleep(0.05)
    assert fleet.pool.nodes["node3"].busy == 1
    assert await fleet.pool.wait_drained(["node3"], within=0.05) is False
    assert await fleet.pool.wait_drained(["node3"], within=2.0) is True
    assert work.done() and fleet.pool.nodes["node3"].busy == 0


async def test_no_node_says_why(fleet: Fleet) -> None:
    fleet.paused.update({"node0", "node1", "node2"})
    with pytest.raises(NoNode) as caught:
        await embed(fleet.pool, "interactive")
    assert caught.value.status == 503
    assert "node0: paused" in caught.value.details
    with pytest.raises(NoNode, match="rerank"):
        await fleet.pool.call("rerank", "interactive", lambda c: c.rerank("q", ["d"]))
