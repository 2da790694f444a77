"""The daemon on a `hosts` fleet: fake llama-servers on loopback serve search and ingest by lane."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import Running, StartDaemon
from tests.fakes.fleet import node_pair, start_hosts, start_two_lanes, started
from tests.fakes.llama_server import FakeLlamaServer
from tests.pace import scaled
from tests.settling import until_idle
from tests.test_api import call

NS = "http://smemd/ns/lanes"


@pytest.fixture
async def fakes() -> AsyncIterator[dict[str, FakeLlamaServer]]:
    async with started(node_pair("127.0.31.1")) as servers:
        yield servers


@pytest.fixture
async def running(
    short_dir: Path, start_daemon: StartDaemon, fakes: dict[str, FakeLlamaServer]
) -> Running:
    return await start_two_lanes(start_daemon, short_dir, fakes)


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


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
    assert time.monotonic() - started < scaled(20)
    _, doc, _ = await call(running.unix, "POST", f"{NS}/list/documents", json={})
    assert [d["system"]["status"] for d in doc["documents"]] == ["done"]
    _, lanes, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
    node1 = next(n for n in lanes["nodes"] if n["id"] == "node1")
    assert node1["lastError"]


async def test_pause_and_resume_over_the_admin_routes(running: Running, short_dir: Path) -> None:
    status, body, _ = await call(
        running.tcp, "POST", running.url("/v1/pause"), json={"nodes": ["node1"], "for": "2h"}
    )
    assert status == 403  # admin: the socket, or the admin token
    status, body, _ = await call(
        running.unix,
        "POST",
        "http://smemd/v1/pause",
        json={"nodes": ["node1"], "for": "2h", "reason": "render"},
    )
    assert (
        status == 200
        and body["pause"]["nodes"] == ["node1"]
        and body["pause"]["reason"] == "render"
    )
    written = json.loads((short_dir / "paused.json").read_text())
    until = datetime.fromisoformat(written["until"])
    assert timedelta(hours=1, minutes=59) < until - datetime.now(UTC) <= timedelta(hours=2)
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/pause", json={"nodes": ["node0"], "for": "1h"}
    )
    assert body["pause"]["nodes"] == ["node0", "node1"]  # joins the pause in force
    status, body, _ = await call(
        running.unix, "DELETE", "http://smemd/v1/pause", json={"nodes": ["node0"]}
    )
    assert body["pause"]["nodes"] == ["node1"]
    status, body, _ = await call(running.unix, "DELETE", "http://smemd/v1/pause")
    assert status == 200 and body["pause"] is None and not (short_dir / "paused.json").exists()


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"nodes": ["node9"], "for": "1h"}, "node9"),
        ({"nodes": ["node1"]}, "until and for"),
        ({"nodes": ["node1"], "for": "1h", "until": "2099-01-01T00:00:00Z"}, "until and for"),
        ({"nodes": ["node1"], "for": "soon"}, "$.for"),
        ({"nodes": ["node1"], "until": "2001-01-01T00:00:00Z"}, "until"),
        ({"nodes": ["node1"], "for": "1h", "colour": 1}, "$.colour"),
    ],
)
async def test_bad_pauses_are_400_and_change_nothing(
    running: Running, short_dir: Path, body: dict[str, object], names: str
) -> None:
    status, reply, _ = await call(running.unix, "POST", "http://smemd/v1/pause", json=body)
    assert status == 400 and names in reply["details"] + reply["error"], reply
    assert not (short_dir / "paused.json").exists()


async def test_pause_wait_returns_once_the_node_is_drained(
    running: Running, fakes: dict[str, FakeLlamaServer]
) -> None:
    fakes["node0"].latency = 0.6
    search = asyncio.create_task(
        call(running.unix, "POST", f"{NS}/search", json={"query": "anything at all"})
    )
    fleet = running.daemon.state.fleet
    assert fleet is not None and fleet.pool is not None
    while fleet.pool.nodes["node0"].busy == 0:
        await asyncio.sleep(0.01)
    started = time.monotonic()
    status, body, _ = await call(
        running.unix,
        "POST",
        "http://smemd/v1/pause",
        json={"nodes": ["node0"], "for": "1h", "wait": True},
    )
    assert status == 200 and body["drained"] is True
    assert fleet.pool.nodes["node0"].busy == 0 and time.monotonic() - started > 0.2
    assert (await search)[0] == 200  # the call in flight finished; it was not cut


async def test_the_builtin_fleet_has_nothing_to_lend(start_daemon: StartDaemon) -> None:
    builtin = await start_daemon()
    status, body, _ = await call(
        builtin.unix, "POST", "http://smemd/v1/pause", json={"nodes": ["node0"], "for": "1h"}
    )
    assert status == 409 and "builtin" in body["details"]
    status, lanes, _ = await call(builtin.unix, "GET", "http://smemd/v1/lanes")
    assert status == 200 and lanes["nodes"] == [] and lanes["fleetKind"] == "builtin"


class StripeBlind:
    """A cross-encoder's stand-in that scores texts about zebras lowest, whatever the query."""

    name = "stripe-blind"
    dimension = 2
    is_fallback = False

    async def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        return np.array(
            [[1.0, 0.0] if "zebra" in t.lower() else [0.0, 1.0] for t in texts], np.float32
        )


async def test_the_fleet_cross_encoder_reorders_the_top(
    short_dir: Path, start_daemon: StartDaemon, fakes: dict[str, FakeLlamaServer]
) -> None:
    async with FakeLlamaServer(
        host="127.0.31.9", embedder=StripeBlind(), roles=("rerank",)
    ) as reranker:
        running = await start_hosts(
            start_daemon,
            short_dir,
            [
                ("node0", fakes["node0"], ["interactive", "background"], "embed"),
                ("node1", reranker, ["interactive"], "rerank"),
            ],
            name="rerank.toml",
        )
        for text in ("The zebra is striped.", "Cats purr when they are content."):
            await call(
                running.unix,
                "POST",
                f"{NS}/document",
                json={"content": text, "taskType": "superrag"},
            )
        await settle(running)
        query = {"query": "Which animal is striped?", "searchMode": "chunks", "threshold": 0}
        _, plain, _ = await call(
            running.unix, "POST", f"{NS}/search", json={**query, "rerank": "none"}
        )
        assert (
            plain["results"][0]["chunk"] == "The zebra is striped."
            and reranker.calls["rerank"] == 0
        )
        _, reranked, _ = await call(running.unix, "POST", f"{NS}/search", json=query)
        assert reranker.calls["rerank"] == 1
        assert [r["chunk"] for r in reranked["results"]] == [
            "Cats purr when they are content.",
            "The zebra is striped.",
        ]


def pause_json(**fields: object) -> bytes:
    until = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    return json.dumps({"nodes": ["node1"], "until": until, **fields}).encode()


BAD_PAUSE_FILES = [
    pause_json()[:15],
    b"",
    b"null",
    b"[]",
    b'"node1"',
    json.dumps({"nodes": ["node1"]}).encode(),
    pause_json(until="2001-01-01T00:00:00Z"),
    pause_json(until="tomorrow"),
    pause_json(until="2099-01-01T00:00:00"),
    pause_json(until=(datetime.now(UTC) + timedelta(days=3650)).isoformat()),
    pause_json(nodes=["node7"]),
    pause_json(nodes=[]),
    pause_json(nodes=["node1", "node1"]),
    pause_json(nodes="node1"),
    pause_json(nodes=[1]),
    pause_json(colour="red"),
    pause_json(by=5),
    pause_json(reason="x" * 70_000),
    bytes(range(256)) * 8,
    pause_json().decode().encode("utf-16"),
    pause_json() + b"}",
    pause_json()[:-1] + b', "by": NaN}',
]


async def test_every_bad_pause_file_is_reported_and_the_last_valid_pause_holds(
    running: Running, short_dir: Path
) -> None:
    fleet = running.daemon.state.fleet
    assert fleet is not None and fleet.pauses is not None
    path = short_dir / "paused.json"
    path.write_bytes(pause_json(by="farm"))
    await fleet.pauses.refresh()
    errors = set()
    for raw in BAD_PAUSE_FILES:
        path.write_bytes(raw)
        await fleet.pauses.refresh()
        status, lanes, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
        assert status == 200 and lanes["pauseError"], raw[:60]
        assert lanes["pause"]["nodes"] == ["node1"] and lanes["pause"]["by"] == "farm"
        errors.add(lanes["pauseError"])
    assert len(errors) >= 15  # each file is refused for its own reason
    assert (await call(running.unix, "GET", "http://smemd/v1/health"))[0] == 200
    path.write_bytes(pause_json(by="farm-again"))
    await fleet.pauses.refresh()
    _, lanes, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
    assert lanes["pauseError"] is None and lanes["pause"]["by"] == "farm-again"


@pytest.mark.parametrize("damage", ["directory", "garbage", "truncated", "wrong types"])
async def test_a_damaged_embedder_record_is_reported_and_never_stops_the_start(
    short_dir: Path,
    start_daemon: StartDaemon,
    fakes: dict[str, FakeLlamaServer],
    caplog: pytest.LogCaptureFixture,
    damage: str,
) -> None:
    record = short_dir / "fleet-embedder.json"
    if damage == "directory":
        record.mkdir()
        (record / "inside").write_text("x")
    else:
        record.write_text(
            {
                "garbage": "\x00not json",
                "truncated": '{"name": "fake-embed',
                "wrong types": '{"name": 1}',
            }[damage]
        )
    running = await start_hosts(
        start_daemon, short_dir, [("node0", fakes["node0"], ["interactive"], "embed")]
    )
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/status")
    assert status == 200 and body["embedder"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("fleet-embedder.json" in w for w in warnings), warnings
    assert [name for name in os.listdir(short_dir) if "tmp" in name] == []
    if damage == "directory":
        assert record.is_dir() and (record / "inside").read_text() == "x"  # nothing of it lost
    else:
        assert json.loads(record.read_text())["name"] == body["embedder"]
