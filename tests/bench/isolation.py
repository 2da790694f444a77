"""Other clients' heavy work against one client's searches: the most expensive filter, and a
large document being embedded.

The real daemon serves `light` (a few thousand memories). First a client searches `light` alone;
then it searches again while:

- `filter`: other clients send, back to back, searches on `heavy` (tens of thousands of
  memories, each with metadata) with the heaviest filter the limits allow (the most predicates
  at the deepest nesting, each a `contains` of the longest value, none matching, so SQLite
  evaluates every predicate on every row);
- `large-doc`: a 9 MB document (about 9,000 chunks) is embedded in namespace `big` by the builtin
  model; the searches' own query embeddings go ahead of its batches.

One line, `|` between the cases:

  isolation n=20000 idle_p95_ms=… loaded_p95_ms=… ratio=… heavy_p50_ms=… heavy_statuses=…
    | large_doc mb=9.0 chunks=… idle_p95_ms=… loaded_p95_ms=… ratio=…

Targets on 2 cores: ratio <= 2 for the filter, <= 3 for the large document.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from smemd import limit_blas_threads

limit_blas_threads()  # as smemd itself runs, before numpy loads

import msgspec  # noqa: E402

from smemctl.client import UnixConnection  # noqa: E402
from smemd.engine.filters import MAX_DEPTH, MAX_PREDICATES, MAX_VALUE_CHARS  # noqa: E402
from tests.bench.search_latency import fill, p  # noqa: E402
from tests.daemon_process import DaemonProcess  # noqa: E402

FIELDS = [f"k{i}" for i in range(8)]


def metadata(rng: random.Random) -> dict[str, Any]:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    return {key: " ".join(rng.choices(words, k=12)) for key in FIELDS}


def heaviest_filter() -> dict[str, Any]:
    """MAX_PREDICATES `contains` tests that never hold, under MAX_DEPTH levels of `or`."""
    needle = "q" * MAX_VALUE_CHARS
    predicates = [
        {"field": FIELDS[i % len(FIELDS)], "operator": "contains", "value": needle}
        for i in range(MAX_PREDICATES)
    ]
    group: dict[str, Any] = {"operator": "or", "operands": predicates[: MAX_DEPTH - 1]}
    rest = predicates[MAX_DEPTH - 1 :]
    for _ in range(MAX_DEPTH - 1):  # each level adds one predicate and wraps the one below
        group = {"operator": "or", "operands": [group, rest.pop()]}
    group["operands"] += rest
    return group


def search(conn: UnixConnection, namespace: str, body: dict[str, Any]) -> int:
    conn.request(
        "POST", f"/ns/{namespace}/search", body=msgspec.json.encode(body),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    response = conn.getresponse()
    response.read()
    return response.status


def victim(daemon: DaemonProcess, queries: list[str]) -> list[float]:
    conn = UnixConnection(daemon.socket, timeout=120)
    samples = []
    for text in queries:
        started = time.perf_counter()
        status = search(conn, "light", {"query": text, "limit": 10})
        samples.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise SystemExit(f"a light search answered {status}")
    conn.close()
    return samples


def attacker(daemon: DaemonProcess, stop: threading.Event, out: list[tuple[int, float]]) -> None:
    conn = UnixConnection(daemon.socket, timeout=120)
    body = {"query": "alpha beta", "limit": 10, "filter": heaviest_filter()}
    while not stop.is_set():
        started = time.perf_counter()
        status = search(conn, "heavy", body)
        out.append((status, (time.perf_counter() - started) * 1000))
    conn.close()


def prose(megabytes: float, seed: int = 5) -> str:
    """Paragraphs of plain sentences, `megabytes` of them."""
    rng = random.Random(seed)
    words = (
        "the river morning lantern harbour seven glass north orchard letter kept quietly".split()
    )
    paragraphs, size = [], 0
    while size < megabytes * 1_000_000:
        paragraph = " ".join(rng.choices(words, k=150)).capitalize() + "."
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def call(daemon: DaemonProcess, method: str, path: str, body: Any = None) -> Any:
    conn = UnixConnection(daemon.socket, timeout=120)
    payload = msgspec.json.encode(body) if body is not None else None
    conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    if response.status != 200:
        raise SystemExit(f"{method} {path} answered {response.status}: {data[:200]!r}")
    return msgspec.json.decode(data)


def phase(daemon: DaemonProcess) -> str:
    return str(call(daemon, "GET", "/ns/big/document/big")["system"]["status"])


def measure_large_document(megabytes: float, searches: int) -> str:
    state_dir = Path(tempfile.mkdtemp(prefix="smem-iso-"))
    try:
        queries = asyncio.run(fill(state_dir, 3000, seed=2, namespace="light"))[:searches]
        toml = state_dir / "smemd.toml"
        toml.write_text("[engine]\ndreaming = false\n")
        daemon = DaemonProcess(state_dir, toml).start(["--log-level", "warning"])
        try:
            victim(daemon, queries[:20])
            idle = victim(daemon, queries)
            call(daemon, "POST", "/ns/big/document", {"content": prose(megabytes), "id": "big"})
            while phase(daemon) != "embedding":
                time.sleep(0.05)
            time.sleep(1.0)  # its batches under way
            loaded = victim(daemon, queries)
            if (now := phase(daemon)) != "embedding":
                raise SystemExit(f"the document left embedding ({now}) before the searches ended")
            listed = call(daemon, "POST", "/ns/big/list/chunks?limit=1", {})
        finally:
            daemon.stop(timeout=60)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    return (
        f"large_doc mb={megabytes:.1f} chunks={listed['pagination']['totalItems']}"
        f" idle_p95_ms={p(idle, 0.95):.2f} loaded_p95_ms={p(loaded, 0.95):.2f}"
        f" ratio={p(loaded, 0.95) / p(idle, 0.95):.2f}"
    )


def measure(count: int, attackers: int, searches: int) -> str:
    state_dir = Path(tempfile.mkdtemp(prefix="smem-iso-"))
    try:
        asyncio.run(fill(state_dir, count, seed=1, namespace="heavy", metadata=metadata))
        queries = asyncio.run(fill(state_dir, 3000, seed=2, namespace="light"))[:searches]
        daemon = DaemonProcess(state_dir).start(["--log-level", "warning"])
        try:
            victim(daemon, queries[:20])  # load both indexes and warm the model
            search(UnixConnection(daemon.socket, timeout=120), "heavy", {"query": "alpha"})
            idle = victim(daemon, queries)
            stop = threading.Event()
            heavy: list[tuple[int, float]] = []
            threads = [
                threading.Thread(target=attacker, args=(daemon, stop, heavy))
                for _ in range(attackers)
            ]
            for thread in threads:
                thread.start()
            time.sleep(1.0)  # the heavy searches are under way
            loaded = victim(daemon, queries)
            stop.set()
            for thread in threads:
                thread.join()
        finally:
            daemon.stop(timeout=60)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    statuses = Counter(status for status, _ in heavy)
    return (
        f"n={count} idle_p95_ms={p(idle, 0.95):.2f} loaded_p95_ms={p(loaded, 0.95):.2f}"
        f" ratio={p(loaded, 0.95) / p(idle, 0.95):.2f}"
        f" heavy_p50_ms={statistics.median(ms for _, ms in heavy):.0f}"
        f" heavy_statuses={','.join(f'{s}:{n}' for s, n in sorted(statuses.items()))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000, help="memories in the heavy namespace")
    parser.add_argument("--attackers", type=int, default=2, help="clients sending heavy searches")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--megabytes", type=float, default=9.0, help="the large document's size")
    parser.add_argument("--case", choices=["filter", "large-doc", "both"], default="both")
    args = parser.parse_args()
    lines = []
    if args.case in ("filter", "both"):
        lines.append(measure(args.size, args.attackers, args.searches))
    if args.case in ("large-doc", "both"):
        lines.append(measure_large_document(args.megabytes, args.searches))
    print("isolation " + " | ".join(lines))


if __name__ == "__main__":
    main()
