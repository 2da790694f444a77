"""The vca2 fleet end to end: the real daemon drives the simulated cards and nodes.

The simulator (fake vcactl, fake nodes with ssh and llama-servers) runs in this test's event
loop, so the daemon's blocking helpers run in threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import signal
import socket
import time
from pathlib import Path
from typing import Any

import msgspec

from smemctl.cli import main as smemctl
from smemctl.client import UnixConnection
from smemd.tomlwriter import dumps
from tests.daemon_process import DaemonProcess
from tests.fakes.vca_sim import Simulator
from tests.fakes.vcactl import Timings
from tests.pace import scaled

TIMEOUTS = {"vcactl": 3, "reset": 3, "boot": 3, "ready": 3, "health": 3, "poweroff": 3,
            "ssh": 2, "http": 1, "poll": 0.05}  # fmt: skip
INTERVALS = {"health": 0.2, "backoff": 0.2, "backoff-cap": 1.0, "telemetry": 0.2, "extend": 0.2}
BOOTING = {"reset", "boot", "pwrbtn-short"}


def simulator(tmp_path: Path, faults: dict[str, Any] | None = None) -> Simulator:
    timings = Timings(
        reset=0.15, boot=0.15, net=0.1, power_down=0.1, power_on=0.1, agent_timeout=0.2
    )
    return Simulator(tmp_path / "sim", timings=timings, faults=faults)


def write_config(sim: Simulator, tmp_path: Path, **cards: Any) -> Path:
    config = tmp_path / "smemd.toml"
    raw = {
        "fleet": {"kind": "vca2", "nodes": sim.node_configs()},
        "cards": {**sim.cards_config(), "timeouts": TIMEOUTS, "intervals": INTERVALS, **cards},
    }
    config.write_text(dumps(raw))
    return config


def call(daemon: DaemonProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = UnixConnection(daemon.socket, timeout=30)
    try:
        payload = None if body is None else msgspec.json.encode(body)
        conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


async def acall(daemon: DaemonProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    return await asyncio.to_thread(call, daemon, method, path, body)


async def until(check: Any, within: float, what: str) -> Any:
    deadline = time.monotonic() + scaled(within)
    while time.monotonic() < deadline:
        if result := await check():
            return result
        await asyncio.sleep(0.1)
    raise AssertionError(f"not within {within} s: {what}")


async def nodes_by_id(daemon: DaemonProcess) -> dict[str, Any]:
    status, body = await acall(daemon, "GET", "/v1/nodes")
    assert status == 200, body
    return {n["id"]: n for n in body["nodes"]}


def booted(sim: Simulator) -> list[tuple[str, str]]:
    """(command, node) of every vcactl call that resets, boots or powers a node on."""
    calls = []
    for call_ in sim.calls():
        words = [w for w in call_["argv"] if not w.startswith("-")]
        if words and words[0] in BOOTING and len(words) >= 3:
            calls.append((words[0], f"node{int(words[1]) * 3 + int(words[2])}"))
    return calls


async def test_boots_serves_both_lanes_and_powers_everything_off(
    tmp_path: Path, short_dir: Path
) -> None:
    notices = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notices.bind(str(short_dir / "notify.sock"))
    notices.setblocking(False)
    env = {"NOTIFY_SOCKET": str(short_dir / "notify.sock")}
    async with simulator(tmp_path, faults={"node3": {"dead": True}}) as sim:
        daemon = DaemonProcess(tmp_path / "state", write_config(sim, tmp_path))
        (tmp_path / "state").mkdir()
        await asyncio.to_thread(daemon.start, ["--log-level", "info"], env, True)
        try:

            async def five_up() -> dict[str, Any] | None:
                nodes = await nodes_by_id(daemon)
                up = [n for n in nodes.values() if n["state"] == "up" and n["healthy"]]
                return nodes if len(up) == 5 and nodes["node3"]["state"] == "failed" else None

            nodes = await until(five_up, 30, "five nodes up, node3 failed")
            assert "link_down" in nodes["node3"]["lastError"]
            assert nodes["node0"]["lanes"] == ["interactive"]
            assert nodes["node4"]["lanes"] == ["background"]

            # Ingest runs on the background lane (card 1), search on the interactive one (card 0).
            status, doc = await acall(
                daemon, "POST", "/ns/cards/document", {"content": "Alex lives in Seattle."}
            )
            assert status == 200, doc

            async def done() -> bool:
                _, body = await acall(daemon, "GET", f"/ns/cards/document/{doc['id']}")
                return bool(body["system"]["status"] == "done")

            await until(done, 20, "the document is done")
            status, found = await acall(daemon, "POST", "/ns/cards/search", {"query": "Seattle"})
            assert status == 200 and found["results"], found
            background = sum(sim.node(k).servers["embed"].calls["embeddings"] for k in (4, 5))
            interactive = sum(sim.node(k).servers["embed"].calls["embeddings"] for k in (0, 1, 2))
            assert background >= 1 and interactive >= 1

            async def sampled() -> dict[str, Any] | None:
                nodes = await nodes_by_id(daemon)
                return nodes if nodes["node0"]["temperatureC"] is not None else None

            nodes = await until(sampled, 10, "a temperature for node0")
            assert 20 < nodes["node0"]["temperatureC"] < 90
            assert nodes["node3"]["temperatureC"] is None  # dead: no reading, never a zero
            table = await asyncio.to_thread(_smemctl, daemon, ["nodes"])
            assert "node0" in table and "°C" in table

            status, series = await acall(daemon, "GET", "/v1/telemetry?node=node0")
            assert status == 200 and series["samples"], series
            status, error = await acall(daemon, "GET", "/v1/telemetry?node=node9")
            assert status == 400 and "node" in error["details"]
        finally:
            code = await asyncio.to_thread(daemon.stop, signal.SIGTERM, 30.0)
        assert code == 0, daemon.log()
        for k in range(6):
            assert sim.raw(k)["state"] in ("power_off", "link_down"), (k, sim.raw(k))
        images = [sim.raw(k)["blk"]["vcablk0"] for k in range(6)]
        assert all(d["open"] is None and d["enabled"] != "1" for d in images), images
    messages = []
    with contextlib.suppress(BlockingIOError), notices:
        while True:
            messages.append(notices.recv(4096).decode())
    # While powering off, systemd is asked for the time the worst case still needs.
    assert any("EXTEND_TIMEOUT_USEC=" in m for m in messages), messages


async def _sampled(daemon: DaemonProcess, node: str) -> bool:
    _, body = await acall(daemon, "GET", f"/v1/telemetry?node={node}")
    return any(s["temperatureC"] is not None for s in body["samples"])


async def _state(daemon: DaemonProcess, node: str, state: str) -> bool:
    return bool((await nodes_by_id(daemon))[node]["state"] == state)


def _smemctl(daemon: DaemonProcess, argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = smemctl(["--socket", str(daemon.socket), *argv])
    assert code == 0, out.getvalue()
    return out.getvalue()


async def test_a_restarted_daemon_adopts_the_nodes_it_finds_up(tmp_path: Path) -> None:
    async with simulator(tmp_path) as sim:
        config = write_config(sim, tmp_path)
        (tmp_path / "state").mkdir()
        daemon = DaemonProcess(tmp_path / "state", config)
        await asyncio.to_thread(daemon.start, ["--log-level", "info"], None, True)

        async def all_up() -> bool:
            nodes = await nodes_by_id(daemon)
            return all(n["state"] == "up" for n in nodes.values())

        await until(all_up, 30, "six nodes up")
        await asyncio.to_thread(daemon.kill)  # a crash: the nodes keep running
        daemon.addr_file.unlink()  # so that waiting for the next one waits for its own
        before = booted(sim)
        started = time.monotonic()
        daemon = DaemonProcess(tmp_path / "state", config)
        await asyncio.to_thread(daemon.start, ["--log-level", "info"], None, True)
        try:
            await until(all_up, 5, "six nodes adopted")
            status, found = await acall(daemon, "POST", "/ns/x/search", {"query": "anything"})
            assert status == 200, found
            assert time.monotonic() - started < scaled(5)
            assert booted(sim) == before  # no reset, no boot
            cards = await asyncio.to_thread(_smemctl, daemon, ["cards"])
            assert cards.splitlines() == [
                "card 0: node0:up node1:up node2:up",
                "card 1: node3:up node4:up node5:up",
            ]
            await until(lambda: _sampled(daemon, "node0"), 10, "a sample of node0")
            series = await asyncio.to_thread(_smemctl, daemon, ["telemetry", "node0"])
            assert "°C" in series.splitlines()[1]
            said = await asyncio.to_thread(_smemctl, daemon, ["poweroff", "node5"])
            assert said.strip() == "poweroff started: node5"
            await until(lambda: _state(daemon, "node5", "off"), 10, "node5 off")
            assert sim.raw(5)["state"] == "power_off"
        finally:
            await asyncio.to_thread(daemon.stop, signal.SIGTERM, 30.0)


async def test_with_the_embedder_remembered_smemd_serves_while_the_nodes_boot(
    tmp_path: Path,
) -> None:
    async with simulator(tmp_path) as sim:
        config = write_config(sim, tmp_path)
        (tmp_path / "state").mkdir()
        daemon = DaemonProcess(tmp_path / "state", config)
        await asyncio.to_thread(daemon.start, ["--log-level", "info"], None, True)
        await asyncio.to_thread(daemon.stop, signal.SIGTERM, 30.0)  # learnt; nodes powered off
        remembered = json.loads((tmp_path / "state" / "fleet-embedder.json").read_text())
        for k in range(6):
            sim.set_node(k, delay=0.3)  # every vcactl call takes a while: a slow boot
        daemon = DaemonProcess(tmp_path / "state", config)
        await asyncio.to_thread(daemon.start, ["--log-level", "info"], None, True)
        try:
            first = await nodes_by_id(daemon)
            assert any(n["state"] != "up" for n in first.values()), first
            status, health = await acall(daemon, "GET", "/v1/health")
            assert status == 200 and health["status"] == "ok"

            async def all_up() -> bool:
                nodes = await nodes_by_id(daemon)
                return all(n["state"] == "up" and "embed" in n["roles"] for n in nodes.values())

            await until(all_up, 30, "six nodes up, each still embedding")
            _, status_body = await acall(daemon, "GET", "/v1/status")
            assert status_body["embedder"] == remembered["name"]
        finally:
            await asyncio.to_thread(daemon.stop, signal.SIGTERM, 30.0)


async def test_a_node_serving_another_embedder_gets_no_embedding_calls(tmp_path: Path) -> None:
    async with simulator(tmp_path) as sim:
        (tmp_path / "state").mkdir()
        (tmp_path / "state" / "fleet-embedder.json").write_text(
            json.dumps({"name": "another-model", "dimension": 384})
        )
        daemon = DaemonProcess(tmp_path / "state", write_config(sim, tmp_path))
        await asyncio.to_thread(daemon.start, ["--log-level", "info"], None, True)
        try:

            async def refused() -> dict[str, Any] | None:
                nodes = await nodes_by_id(daemon)
                done = all("embed" not in n["roles"] for n in nodes.values())
                return nodes if done else None

            nodes = await until(refused, 30, "every node loses its embed role")
            assert "serves embedder" in nodes["node0"]["lastError"]
            status, error = await acall(daemon, "POST", "/ns/x/search", {"query": "anything"})
            assert status == 503, error
        finally:
            await asyncio.to_thread(daemon.stop, signal.SIGTERM, 30.0)
