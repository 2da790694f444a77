"""Moving memory: backup, export and import of one namespace of N memories through the real
daemon, and what a backup costs the searches running meanwhile. One line per run:

  portable n=… backup_mb=… backup_mb_s=… backup_s=… backup_rss_mb=… export_mb=… export_mb_s=…
  export_s=… export_rss_mb=… import_mb_s=… import_s=… import_rss_mb=… idle_p95_ms=…
  backup_p95_ms=… ratio=… base_rss_mb=… import_texts_s=… embed_only_texts_s=… …

The store is filled as `search_latency` fills it (synthetic sentences and vectors, bulk
inserted), then one daemon serves it: searches are timed idle, then again while a backup is
written (`ratio` = p95 during the backup / idle p95, target ≤ 1.5). The export is streamed to a
file by the client, and imported into a second, empty daemon (which embeds every text again:
most of an import's time). `*_rss_mb` is the daemon's peak RSS sampled during each step, beside
`base_rss_mb` before any: a step that held the namespace in memory would show it. MB are of
the export (uncompressed JSON Lines) and of the backup's files. `import_vs_embedder` is the
import's texts a second over the model's alone on the same texts, in ingest's batches.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from smemd import limit_blas_threads

limit_blas_threads()  # as smemd itself runs, before numpy loads

import msgspec  # noqa: E402

from smemctl.client import UnixConnection  # noqa: E402
from smemd.fleet.builtin import MiniLM  # noqa: E402
from smemd.fleet.turns import BACKGROUND_BATCH  # noqa: E402
from tests.bench.search_latency import NS, fill, p, rss_mb  # noqa: E402
from tests.daemon_process import DaemonProcess  # noqa: E402

T = TypeVar("T")
MB = 1024 * 1024


class PeakRss:
    """The largest RSS of a process while the block runs, sampled every 20 ms."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0

    @contextmanager
    def watching(self) -> Iterator[None]:
        self.peak = rss_mb(self.pid)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.02):
                self.peak = max(self.peak, rss_mb(self.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            yield
        finally:
            done.set()
            sampler.join()


def request(daemon: DaemonProcess, method: str, path: str, body: bytes | None = None,
            content_type: str = "application/json", timeout: float = 3600) -> tuple[int, bytes]:  # fmt: skip
    conn = UnixConnection(daemon.socket, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": content_type})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def searches_while(
    work: Callable[[], T], daemon: DaemonProcess, texts: list[str]
) -> tuple[T, list[float]]:
    """Run `work` in a thread and time searches, one after another, until it is done (and at
    least 50 of them)."""
    out: list[T] = []
    worker = threading.Thread(target=lambda: out.append(work()))
    worker.start()
    samples: list[float] = []
    conn = UnixConnection(daemon.socket, timeout=60)
    i = 0
    while worker.is_alive() or len(samples) < 50:
        body = msgspec.json.encode({"query": texts[i % len(texts)], "limit": 10})
        started = time.perf_counter()
        conn.request(
            "POST", f"/ns/{NS}/search", body=body, headers={"Content-Type": "application/json"}
        )
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"search answered {response.status}")
        samples.append((time.perf_counter() - started) * 1000)
        i += 1
    worker.join()
    conn.close()
    return out[0], samples


async def embed_only(texts: list[str]) -> float:
    """Texts a second the in-process model embeds alone, in the batches ingest gives it."""
    model = await asyncio.to_thread(MiniLM)
    await model.embed(texts[:BACKGROUND_BATCH])
    started = time.perf_counter()
    for start in range(0, len(texts), BACKGROUND_BATCH):
        await model.embed(texts[start : start + BACKGROUND_BATCH])
    return len(texts) / (time.perf_counter() - started)


def measure(count: int) -> str:
    root = Path(tempfile.mkdtemp(prefix="smem-port-"))
    try:
        source, target = root / "source", root / "target"
        source.mkdir()
        target.mkdir()
        texts = asyncio.run(fill(source, count, seed=count))
        daemon = DaemonProcess(source).start(["--log-level", "warning"])
        try:
            assert daemon.proc is not None
            rss = PeakRss(daemon.proc.pid)
            _, warm = searches_while(lambda: None, daemon, texts)  # loads the namespace
            base = rss_mb(daemon.proc.pid)
            _, idle = searches_while(lambda: time.sleep(3), daemon, texts)

            def backup() -> tuple[float, float]:
                started = time.perf_counter()
                body = msgspec.json.encode({"to": str(root / "backup")})
                status, reply = request(daemon, "POST", "/v1/backup", body)
                if status != 200:
                    raise SystemExit(f"backup answered {status}: {reply[:200]!r}")
                return msgspec.json.decode(reply)["bytes"] / MB, time.perf_counter() - started

            with rss.watching():
                (backup_mb, backup_s), during = searches_while(backup, daemon, texts)
            backup_rss = rss.peak
            with rss.watching():
                started = time.perf_counter()
                status, exported = request(daemon, "GET", f"/ns/{NS}/export")
                export_s = time.perf_counter() - started
            export_rss = rss.peak
            if status != 200:
                raise SystemExit(f"export answered {status}")
        finally:
            daemon.stop()
        other = DaemonProcess(target).start(["--log-level", "warning"])
        try:
            assert other.proc is not None
            rss = PeakRss(other.proc.pid)
            with rss.watching():
                started = time.perf_counter()
                status, reply = request(
                    other, "POST", f"/ns/{NS}/import", exported, "application/x-ndjson"
                )
                import_s = time.perf_counter() - started
            if status != 200:
                raise SystemExit(f"import answered {status}: {reply[:300]!r}")
            import_rss = rss.peak
        finally:
            other.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    export_mb = len(exported) / MB
    texts_in = [
        record["text"] for line in exported.splitlines()
        if (record := msgspec.json.decode(line)).get("record") in ("memory", "chunk")
    ]  # fmt: skip
    alone = asyncio.run(embed_only(texts_in[:512]))
    idle_p95, backup_p95 = p(idle, 0.95), p(during, 0.95)
    del warm
    return (
        f"n={count} backup_mb={backup_mb:.1f} backup_mb_s={backup_mb / backup_s:.1f}"
        f" backup_s={backup_s:.2f} backup_rss_mb={backup_rss:.0f} export_mb={export_mb:.1f}"
        f" export_mb_s={export_mb / export_s:.1f} export_s={export_s:.2f}"
        f" export_rss_mb={export_rss:.0f} import_mb_s={export_mb / import_s:.2f}"
        f" import_s={import_s:.1f} import_rss_mb={import_rss:.0f}"
        f" import_texts_s={len(texts_in) / import_s:.0f} embed_only_texts_s={alone:.0f}"
        f" import_vs_embedder={len(texts_in) / import_s / alone:.2f}"
        f" idle_p95_ms={idle_p95:.2f} backup_p95_ms={backup_p95:.2f}"
        f" ratio={backup_p95 / idle_p95:.2f} base_rss_mb={base:.0f}"
        f" idle_p50_ms={statistics.median(idle):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    args = parser.parse_args()
    print("portable " + measure(args.memories))


if __name__ == "__main__":
    main()
