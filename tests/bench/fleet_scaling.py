"""Ingest throughput over 1, 3 and 5 fake llama-servers that each add 50 ms per call.

The real daemon (in-process, `hosts` fleet, every node on both lanes) ingests the same 100
documents (two embedding calls each) for each fleet size; the line gives documents per second, the speedup over one
node (the aim is >= 0.95 x N), and the pool's own cost per call, measured apart with a no-op
call so the fakes do not blur it. One line:

  fleet_scaling docs=100 latency_ms=50 n1=…/s n3=…/s n5=…/s speedup3=…x speedup5=…x pool_overhead_us=…
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from smemd.config import load
from smemd.daemon import Daemon
from smemd.fleet.pool import Node, Pool
from tests.fakes.fleet import hosts_config
from tests.fakes.llama_server import FakeLlamaServer

LATENCY = 0.05


async def throughput(nodes: int, documents: int) -> float:
    state_dir = Path(tempfile.mkdtemp(prefix="smem-scale-"))
    fakes = [FakeLlamaServer(host=f"127.0.31.{k + 1}", latency=LATENCY) for k in range(nodes)]
    try:
        for fake in fakes:
            await fake.start()
        both = ["background", "interactive"]
        fleet = [(f"node{k}", fake, both, "embed") for k, fake in enumerate(fakes)]
        extra = '[daemon]\nlog-level = "warning"\n[engine]\ningest-concurrency = 10'
        (state_dir / "smemd.toml").write_text(hosts_config(state_dir, fleet, extra))
        daemon = Daemon(load(state_dir / "smemd.toml", env={}))
        await daemon.startup()
        try:
            engine = daemon.state.engine
            assert engine is not None
            docs = [
                {"content": f"Person{i} lives in Town{i}. Person{i} keeps {i} bees."}
                for i in range(documents)
            ]
            connector = aiohttp.UnixConnector(path=str(daemon.config.socket))
            async with aiohttp.ClientSession(connector=connector) as session:
                started = time.perf_counter()
                async with session.post(
                    "http://smemd/ns/scale/document/batch", json={"documents": docs}
                ) as r:
                    assert r.status == 200, await r.text()
                await engine.wait_idle()
                elapsed = time.perf_counter() - started
        finally:
            await daemon.shutdown()
    finally:
        for fake in fakes:
            await fake.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
    return documents / elapsed


class NoClient:
    """Stands in for a LlamaClient: the overhead figure is the pool's alone."""

    async def embed(self, texts: Any) -> None:
        return None


async def pool_overhead_us(calls: int = 20_000) -> float:
    nodes = [Node(f"node{k}", {"embed": NoClient()}, ["interactive"]) for k in range(5)]  # type: ignore[dict-item]
    pool = Pool(nodes)
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            await pool.call("embed", "interactive", lambda c: c.embed([]))
        runs.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(runs)


async def main_async(documents: int) -> str:
    rates = {n: await throughput(n, documents) for n in (1, 3, 5)}
    overhead = await pool_overhead_us()
    return (
        f"fleet_scaling docs={documents} latency_ms={LATENCY * 1000:.0f}"
        f" n1={rates[1]:.1f}/s n3={rates[3]:.1f}/s n5={rates[5]:.1f}/s"
        f" speedup3={rates[3] / rates[1]:.2f}x speedup5={rates[5] / rates[1]:.2f}x"
        f" pool_overhead_us={overhead:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100)
    print(asyncio.run(main_async(parser.parse_args().documents)))


if __name__ == "__main__":
    main()
