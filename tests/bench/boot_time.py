"""Cold boot of the simulated cards to serving: parallel and one node at a time, through smemd.

The simulator's clock is the hardware's (hardware.md §A.7, VCAC-A figures): reset to bios_up
10 s, boot to os_ready 30 s, then 2 s to net_device_ready. smemd starts with its embedder
remembered, so it serves while the nodes boot; a thread asks `/v1/health` meanwhile. One line:

  boot_time nodes=6 hardware_s=… parallel_s=… sequential_s=… speedup=… vcactl_s=… smemd_s=…
    overhead_pct=… health_p50_ms=… health_p95_ms=…

`hardware_s` is what one node needs by the simulated clock; `parallel_s` runs from smemd's first
vcactl call to all six nodes serving. `vcactl_s` is the time vcactl processes took on the
slowest node's path (the fake is a Python program: ~50 ms a call, more when six run at once);
`smemd_s` is what is left, smemd's own share, and `overhead_pct` is that over `hardware_s`
(target <= 1 %). `sequential_s` boots them one after another through
`POST /v1/nodes/{id}/boot`. `--scale` shrinks the simulated clock for a quick look.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

from smemd.fleet.identity import FILE_NAME, Identity, learn
from smemd.fleet.llama import LlamaClient
from smemd.fleet.pool import Node
from tests.daemon_process import DaemonProcess
from tests.fakes.llama_server import FakeLlamaServer
from tests.fakes.vca_sim import Simulator
from tests.fakes.vcactl import Timings, addressed
from tests.test_cards_daemon import acall, call, nodes_by_id, until, write_config

NODES = 6
POLL = 0.05  # how often the bench looks at /v1/nodes


async def fake_identity() -> Identity:
    """What the fake nodes' embedder says it is, so smemd can start with it remembered."""
    import aiohttp

    async with FakeLlamaServer(roles=("embed",)) as server, aiohttp.ClientSession() as session:
        found = await learn(
            Node(
                "probe", {"embed": LlamaClient(session, server.url, node="probe")}, ["interactive"]
            )
        )
    assert found is not None
    return found


def hammer(daemon: DaemonProcess, stop: threading.Event, samples: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        status, _ = call(daemon, "GET", "/v1/health")
        samples.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise SystemExit(f"/v1/health answered {status}")
        time.sleep(0.01)


async def all_up(daemon: DaemonProcess, names: list[str]) -> bool:
    nodes = await nodes_by_id(daemon)
    return all(nodes[name]["state"] == "up" for name in names)


def vcactl_seconds(calls: list[dict[str, Any]], names: list[str]) -> float:
    """The most time vcactl processes took on one node's path: calls naming it, or every node."""
    per_node = dict.fromkeys(names, 0.0)
    for run in calls:
        took = run["ended"] - (run["spawned"] or run["at"])
        _, address = addressed(run["argv"])
        for name in names:
            card, cpu = divmod(int(name[4:]), 3)
            if address == [str(card), str(cpu)][: len(address)]:
                per_node[name] += took
    return max(per_node.values())


async def cold_boot(
    root: Path, timings: Timings, identity: Identity, *, sequential: bool
) -> tuple[float, list[float], float]:
    """Seconds from the first vcactl call to all nodes serving, /v1/health latencies (ms), and
    the seconds vcactl itself took on the slowest node's path."""
    async with Simulator(root / "sim", timings=timings) as sim:
        state = root / "state"
        state.mkdir()
        (state / FILE_NAME).write_bytes(msgspec.json.encode(identity))
        config = write_config(
            sim, root, boot="none" if sequential else "all",
            timeouts={"vcactl": 60, "reset": 300, "boot": 60, "ready": 300, "health": 300,
                      "poweroff": 90, "ssh": 10, "http": 5, "poll": 0.25},
            intervals={"health": 2.0, "telemetry": 15.0},
        )  # fmt: skip
        daemon = DaemonProcess(state, config)
        await asyncio.to_thread(daemon.start, ["--log-level", "warning"], None, True)
        names = [f"node{k}" for k in range(NODES)]
        samples: list[float] = []
        stop = threading.Event()
        hammering = asyncio.create_task(asyncio.to_thread(hammer, daemon, stop, samples))
        try:
            if sequential:
                for name in names:
                    status, body = await acall(daemon, "POST", f"/v1/nodes/{name}/boot")
                    if status != 202:
                        raise SystemExit(f"boot {name}: {status} {body}")
                    await until(lambda n=name: all_up(daemon, [n]), 600, f"{name} up")
            else:
                await until(lambda: all_up(daemon, names), 600, "all nodes up")
            ended = time.time()
        finally:
            stop.set()
            await hammering
            await asyncio.to_thread(daemon.stop)
        calls = sim.calls()
        first = min(c["spawned"] or c["at"] for c in calls)
        return ended - first, samples, vcactl_seconds(calls, names)


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def measure(scale: float) -> str:
    timings = Timings(reset=10 * scale, boot=30 * scale, net=2 * scale, poll=0.05)
    hardware = timings.reset + timings.boot + timings.net
    identity = await fake_identity()
    results: dict[bool, tuple[float, list[float], float]] = {}
    for sequential in (False, True):
        root = Path(tempfile.mkdtemp(prefix="smem-boot-"))
        try:
            results[sequential] = await cold_boot(root, timings, identity, sequential=sequential)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    parallel, health, vcactl_s = results[False]
    sequential_s, _, _ = results[True]
    smemd_s = parallel - hardware - vcactl_s
    return (
        f"boot_time nodes={NODES} hardware_s={hardware:.1f} parallel_s={parallel:.2f}"
        f" sequential_s={sequential_s:.2f} speedup={sequential_s / parallel:.2f}x"
        f" vcactl_s={vcactl_s:.2f} smemd_s={smemd_s:.2f}"
        f" overhead_pct={smemd_s / hardware * 100:.2f}"
        f" health_p50_ms={statistics.median(health):.2f} health_p95_ms={p95(health):.2f}"
        f" health_n={len(health)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="of the simulated clock")
    args = parser.parse_args()
    print(asyncio.run(measure(args.scale)))


if __name__ == "__main__":
    main()
