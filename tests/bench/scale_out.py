"""Ingest throughput of 1, 2 and 3 smemd on one PostgreSQL database (tests/postgres.py).

Each daemon (in-process, `hosts` fleet) has one fake llama-server of its own that takes
`LATENCY` per call, as a daemon on its own hardware would: the nodes' time, not this machine's
two cores, bounds one daemon, so what the ratios measure is how well the daemons share one
queue (leased jobs, reconciliation serial per namespace). Every run ingests the same documents
into 8 namespaces at once, all sent through the first daemon; the others find the jobs in the
shared queue. One line:

  scale_out docs=… namespaces=8 latency_ms=… d1=…/s d2=…/s d3=…/s ratio2=…x ratio3=…x

The aim: ratio3 >= 2.4.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import tempfile
import time
from pathlib import Path

import aiohttp

from smemd.config import load
from smemd.daemon import Daemon
from tests import postgres
from tests.fakes.fleet import hosts_config
from tests.fakes.llama_server import FakeLlamaServer

LATENCY = 0.25
NAMESPACES = 8
CONCURRENCY = 4


async def throughput(count: int, documents: int, dsn: str) -> float:
    root = Path(tempfile.mkdtemp(prefix="smem-out-"))
    fakes = [FakeLlamaServer(host=f"127.0.32.{k + 1}", latency=LATENCY) for k in range(count)]
    daemons: list[Daemon] = []
    try:
        for k, fake in enumerate(fakes):
            await fake.start()
            state_dir = root / f"d{k}"
            state_dir.mkdir()
            extra = (
                f'[daemon]\nlog-level = "warning"\n[engine]\ningest-concurrency = {CONCURRENCY}\n'
                f'[store]\nkind = "postgres"\ndsn = "{dsn}"\n'
            )
            fleet = [(f"node{k}", fake, ["background", "interactive"], "embed")]
            (state_dir / "smemd.toml").write_text(hosts_config(state_dir, fleet, extra))
            daemon = Daemon(load(state_dir / "smemd.toml", env={}))
            await daemon.startup()
            daemons.append(daemon)
        by_namespace: dict[str, list[dict[str, str]]] = {}
        for i in range(documents):
            by_namespace.setdefault(f"team{i % NAMESPACES}", []).append(
                {"content": f"Person{i} lives in Town{i}. Person{i} keeps {i} bees."}
            )
        connector = aiohttp.UnixConnector(path=str(daemons[0].config.socket))
        async with aiohttp.ClientSession(connector=connector) as session:
            started = time.perf_counter()
            for namespace, docs in by_namespace.items():
                async with session.post(
                    f"http://smemd/ns/{namespace}/document/batch", json={"documents": docs}
                ) as r:
                    assert r.status == 200, await r.text()
            with postgres.connect(dsn) as db:
                while postgres.count(
                    db, "SELECT count(*) FROM jobs WHERE phase NOT IN ('done', 'failed')", []
                ):  # fmt: skip
                    await asyncio.sleep(0.05)
                elapsed = time.perf_counter() - started
                done = postgres.count(db, "SELECT count(*) FROM jobs WHERE phase = 'done'", [])
        assert done == documents, f"{done} of {documents} jobs done"
    finally:
        for daemon in daemons:
            await daemon.shutdown()
        for fake in fakes:
            await fake.stop()
        shutil.rmtree(root, ignore_errors=True)
    return documents / elapsed


async def main_async(documents: int, server: postgres.Server) -> str:
    rates: dict[int, float] = {}
    for count in (1, 2, 3):
        dsn = server.database()
        try:
            rates[count] = await throughput(count, documents, dsn)
        finally:
            server.drop(dsn)
    return (
        f"scale_out docs={documents} namespaces={NAMESPACES} latency_ms={LATENCY * 1000:.0f}"
        f" d1={rates[1]:.1f}/s d2={rates[2]:.1f}/s d3={rates[3]:.1f}/s"
        f" ratio2={rates[2] / rates[1]:.2f}x ratio3={rates[3] / rates[1]:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=144)
    documents = parser.parse_args().documents
    with contextlib.contextmanager(postgres.start)() as server:
        print(asyncio.run(main_async(documents, server)))


if __name__ == "__main__":
    main()
