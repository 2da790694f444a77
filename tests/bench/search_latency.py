"""Search latency at 10k and 100k memories in one namespace, in-process and over HTTP, and RSS.

Memories are synthetic: random unit vectors and sentences drawn from a Zipf-distributed
vocabulary of content words (so BM25 sees realistic posting lists), bulk-inserted through the store. The
in-process figure runs the engine's real search path with a stand-in embedder that returns a
random query vector (embedding excluded); the HTTP figure runs the real daemon on the same
store, so it includes MiniLM embedding the query. One line per run:

  search_latency n=10000 engine_p50=… engine_p95=… http_p50=… http_p95=… rss_mb=… cold_ms=…
  scrape_p50_ms=… scrape_p95_ms=… scan1m_ms=… | n=100000 …

`scan1m_ms` is a plain float32 scan of 1M x 384 timed after each size: this machine's speed
varies by 2-3x over an hour, and lines are read against it. `cold_ms` is the daemon's start to
its first search answered (the engine run before it has built and saved a large namespace's
graph, as a daemon does at its first load). `scrape_*` is `GET /v1/metrics` (target <= 20 ms
at 100k). `--state DIR` fills DIR once and reuses it: a 1M
fill takes minutes and its first graph build about a quarter of an hour on 2 cores; later runs
load the saved graph. ANN recall is `ann_recall`'s figure.
`--store postgres` measures each size on SQLite and then on a PostgreSQL database
(tests/postgres.py), the two lines side by side as `store=sqlite … || store=postgres …`.
Targets on 2 cores: engine p95 <= 5 ms and HTTP p95 <= 25 ms at 100k; RSS <= 400 MB at 100k;
at 1M (`--sizes 1000000`, past `[engine] ann-from`): engine p95 <= 10 ms, HTTP p95 <= 30 ms,
cold start <= 10 s, RSS <= 1.2 GB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from smemd import limit_blas_threads

limit_blas_threads()  # as smemd itself runs, before numpy loads

import msgspec  # noqa: E402
import numpy as np  # noqa: E402

from smemctl.client import UnixConnection  # noqa: E402
from smemd.config import EngineConfig  # noqa: E402
from smemd.engine.core import Engine  # noqa: E402
from smemd.engine.recall.query import Query  # noqa: E402
from smemd.store.opening import DATABASE_NAME, configured_store  # noqa: E402
from smemd.store.protocol import Store  # noqa: E402
from smemd.store.records import NewMemory  # noqa: E402
from tests import postgres  # noqa: E402
from tests.daemon_process import DaemonProcess  # noqa: E402

NS = "bench"
DIMENSION = 384
QUERIES = 300


class RandomEmbedder:
    """Synthetic query vectors, so the engine figure measures the engine, not the model."""

    name = "random-bench"
    dimension = DIMENSION
    is_fallback = True

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    async def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        vectors = self.rng.standard_normal((len(texts), DIMENSION)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def vocabulary(rng: random.Random, size: int = 6000) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = list({"".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(size)})
    # Zipf over content words: the top of a real Zipf curve is stopwords, which recall drops,
    # so the curve starts at rank 100 (the commonest word is then in ~3 % of sentences).
    weights = [1.0 / (rank + 100) for rank in range(len(words))]
    return words, weights


def sentence(rng: random.Random, words: list[str], weights: list[float]) -> str:
    return " ".join(rng.choices(words, weights, k=rng.randint(6, 16))).capitalize() + "."


def queries(seed: int) -> list[str]:
    """Query texts drawn from the vocabulary `fill(seed=seed)` writes with."""
    words, weights = vocabulary(random.Random(seed))
    rng = random.Random(seed + 1)
    return [" ".join(rng.choices(words, weights, k=rng.randint(3, 7))) for _ in range(QUERIES)]


async def fill(
    state_dir: Path, count: int, seed: int, namespace: str = NS,
    metadata: Callable[[random.Random], dict[str, Any]] | None = None, dsn: str = "",
) -> list[str]:  # fmt: skip
    """Bulk-insert `count` memories (each with `metadata(rng)` when given); return query texts
    drawn from the same vocabulary."""
    rng = random.Random(seed)
    words, weights = vocabulary(rng)
    vectors = RandomEmbedder(seed)
    engine = Engine(store_in(state_dir, dsn), state_dir, vectors, EngineConfig())
    await engine.store.open()
    try:
        async with engine.store.write() as writer:
            await writer.ensure_namespace(namespace, time.time())
            for start in range(0, count, 10_000):
                n = min(10_000, count - start)
                batch = await vectors.embed([""] * n)
                items = []
                for i in range(n):
                    memory_id = f"mem_{namespace}_{start + i:08x}"
                    new = NewMemory(
                        id=memory_id, namespace=namespace, text=sentence(rng, words, weights),
                        type="fact", root_id=memory_id, metadata=metadata(rng) if metadata else {},
                    )  # fmt: skip
                    items.append((new, batch[i]))
                await writer.insert_memories(items, time.time())
    finally:
        await engine.store.close()
    return queries(seed)


def store_in(state_dir: Path, dsn: str) -> Store:
    """The SQLite store of `state_dir`, or with a `dsn` that PostgreSQL database."""
    if dsn:
        return configured_store("postgres", state_dir, dsn=dsn)
    return configured_store("sqlite", state_dir)


async def engine_latency(state_dir: Path, queries: list[str], dsn: str = "") -> list[float]:
    engine = Engine(store_in(state_dir, dsn), state_dir, RandomEmbedder(7), EngineConfig())
    await engine.store.open()
    try:
        # As a daemon does before its searches are fast: PostgreSQL builds its vector index
        # (minutes at 100k, once), SQLite loads the namespace's indexes on first use.
        await engine.store.prepare_search(DIMENSION)
        await engine.indexes.lookup(NS)
        for text in queries[:20]:
            await engine.recall.search(NS, Query(text=text))
        samples = []
        for text in queries:
            started = time.perf_counter()
            await engine.recall.search(NS, Query(text=text))
            samples.append((time.perf_counter() - started) * 1000)
        return samples
    finally:
        await engine.store.close()


def http_latency(daemon: DaemonProcess, queries: list[str]) -> list[float]:
    conn = UnixConnection(daemon.socket, timeout=60)

    def search(text: str) -> None:
        body = msgspec.json.encode({"query": text, "limit": 10})
        conn.request(
            "POST", f"/ns/{NS}/search", body=body, headers={"Content-Type": "application/json"}
        )
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"search answered {response.status}")

    for text in queries[:20]:
        search(text)
    samples = []
    for text in queries:
        started = time.perf_counter()
        search(text)
        samples.append((time.perf_counter() - started) * 1000)
    conn.close()
    return samples


def scrape_latency(daemon: DaemonProcess, times: int = 30) -> list[float]:
    """Milliseconds of each `GET /v1/metrics`, as a Prometheus scrape of the daemon takes them."""
    conn = UnixConnection(daemon.socket, timeout=60)
    samples = []
    try:
        for _ in range(times + 3):  # the first few warm up
            started = time.perf_counter()
            conn.request("GET", "/v1/metrics")
            response = conn.getresponse()
            response.read()
            samples.append((time.perf_counter() - started) * 1000)
    finally:
        conn.close()
    return samples[3:]


def first_answer(daemon: DaemonProcess, text: str, started: float) -> float:
    """Milliseconds from the daemon's start to its first search answered: while the namespace
    loads a search answers 503 (Retry-After), and is asked again a quarter second later."""
    conn = UnixConnection(daemon.socket, timeout=60)
    body = msgspec.json.encode({"query": text, "limit": 10})
    try:
        while True:
            conn.request(
                "POST", f"/ns/{NS}/search", body=body, headers={"Content-Type": "application/json"}
            )
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                return (time.perf_counter() - started) * 1000
            if response.status != 503:
                raise SystemExit(f"search answered {response.status}")
            time.sleep(0.25)
    finally:
        conn.close()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def scan_1m_ms() -> float:
    """This machine's speed at this moment: a float32 scan of 1M x 384 (as 5 x 200k, the median
    of 10), against which lines measured at different moments can be read."""
    rows = np.random.default_rng(0).random((200_000, DIMENSION), dtype=np.float32)
    query = rows[0]
    samples = []
    for _ in range(10):
        started = time.perf_counter()
        for _ in range(5):
            rows @ query
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(count: int, kept: Path | None, dsn: str = "") -> str:
    """One size's line; in a fresh directory, or in `kept` (filled on first use, then reused
    with the indexes it has saved: a second run starts as a restarted daemon does). With a
    `dsn`, the store is that (empty) PostgreSQL database."""
    state_dir = kept or Path(tempfile.mkdtemp(prefix="smem-lat-"))
    try:
        config = None
        if kept is None or not (kept / DATABASE_NAME).exists():
            state_dir.mkdir(parents=True, exist_ok=True)
            asyncio.run(fill(state_dir, count, seed=count, dsn=dsn))
        if dsn:
            config = state_dir / "smemd.toml"
            config.write_text(f'[store]\nkind = "postgres"\ndsn = "{dsn}"\n')
        texts = queries(seed=count)
        engine = asyncio.run(engine_latency(state_dir, texts, dsn))
        started = time.perf_counter()
        daemon = DaemonProcess(state_dir, config).start(["--log-level", "warning"])
        try:
            cold = first_answer(daemon, texts[0], started)
            web = http_latency(daemon, texts)
            scrapes = scrape_latency(daemon)
            assert daemon.proc is not None
            rss = rss_mb(daemon.proc.pid)
        finally:
            daemon.stop()
    finally:
        if kept is None:
            shutil.rmtree(state_dir, ignore_errors=True)
    return (
        f"n={count} engine_p50={statistics.median(engine):.2f} engine_p95={p(engine, 0.95):.2f}"
        f" http_p50={statistics.median(web):.2f} http_p95={p(web, 0.95):.2f} rss_mb={rss:.0f}"
        f" cold_ms={cold:.0f} scrape_p50_ms={statistics.median(scrapes):.2f}"
        f" scrape_p95_ms={p(scrapes, 0.95):.2f} scan1m_ms={scan_1m_ms():.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--state", type=Path, help="keep the filled store here and reuse it (one size only)"
    )
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    if args.state and len(args.sizes) != 1:
        parser.error("--state takes one size")
    if args.store == "postgres" and args.state:
        parser.error("--state keeps a SQLite store only")
    if args.store == "sqlite":
        print("search_latency " + " | ".join(measure(n, args.state) for n in args.sizes))
        return
    with contextlib.contextmanager(postgres.start)() as server:
        lines = []
        for n in args.sizes:
            dsn = server.database()
            try:
                lines.append(
                    f"store=sqlite {measure(n, None)} || store=postgres {measure(n, None, dsn)}"
                )
            finally:
                server.drop(dsn)
    print("search_latency " + " | ".join(lines))


if __name__ == "__main__":
    main()
