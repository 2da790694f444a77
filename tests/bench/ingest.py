"""Ingest throughput through the real daemon (builtin fleet), beside the embedder's own on the
same texts, for two kinds of input: (a) short conversation turns, (b) long documents with code
and lists. One line per kind:

  ingest turns docs=… docs_s=… chars_s=… embed_only_docs_s=… vs_embedder=… ack_p95_ms=…
    phase_s={queued:…,chunking:…,…}

Documents go in as batches of 100 (`POST /ns/{ns}/document/batch`), all of them before the
first is done, so the queue is full while the later batches are acknowledged: `ack_p95_ms` is
the 95th percentile of those acknowledgements (target <= 500 ms whatever the queue holds).
`docs_s` is the documents done per second of wall time from the first batch to the last job
done; `phase_s` each phase's seconds summed over the jobs (from `/v1/metrics`: phases of
different jobs overlap, so they may add up to more than the wall time). `embed_only_docs_s` is
what the embedder alone does with the texts ingest embeds for the same documents (their chunks,
each with the short turn before it as ingest reads it, and the facts cut from them, all at
once: batches of like length, its best), in this process;
`vs_embedder` is the ratio (target >= 0.6).

Turns are LoCoMo's (the development file, `--turns N` of them, each with its speaker; or another
set's in that format, `--turns-from PATH`, such as a user's chats with an assistant); the long
documents are made here, the same every run (`--long N` of them, about 6,000 characters each:
headings, paragraphs, lists and code blocks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from smemd import limit_blas_threads

limit_blas_threads()  # as smemd itself runs, before numpy loads

from msgspec.structs import replace  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from smemctl.client import UnixConnection  # noqa: E402
from smemd.engine.ingest.chunking import (  # noqa: E402
    CONTEXT_MAX_TURNS,
    chunk_text,
    context_of,
)
from smemd.engine.ingest.sentence_facts import candidate_facts  # noqa: E402
from smemd.engine.transcripts import speaker_of  # noqa: E402
from smemd.fleet.builtin import MiniLM  # noqa: E402
from tests.bench.retrieval import DEFAULT_PATH, load  # noqa: E402
from tests.daemon_process import DaemonProcess  # noqa: E402

BATCH = 100
WORDS = ("cache", "request", "token", "queue", "index", "vector", "backup", "session", "model",
         "schema", "latency", "memory", "worker", "socket", "config", "export", "version")  # fmt: skip


def turns(count: int, path: Path = DEFAULT_PATH) -> list[dict[str, Any]]:
    documents = [d for conv in load(path) for d in conv.documents]
    return [{"content": d["content"], "date": d["date"]} for d in documents[:count]]


def long_documents(count: int) -> list[dict[str, Any]]:
    rng = random.Random(7)

    def sentence() -> str:
        words = rng.choices(WORDS, k=rng.randint(8, 16))
        return " ".join(words).capitalize() + "."

    documents = []
    for i in range(count):
        parts = [f"# Notes on the {rng.choice(WORDS)} service, part {i}"]
        for section in range(4):
            parts.append(f"## Step {section + 1}: the {rng.choice(WORDS)}")
            parts.append(" ".join(sentence() for _ in range(rng.randint(4, 8))))
            parts.append("\n".join(f"- {sentence()}" for _ in range(rng.randint(3, 6))))
            code = "\n".join(
                f"    {rng.choice(WORDS)}_{n} = load_{rng.choice(WORDS)}({n}, retries={n % 4})"
                for n in range(rng.randint(4, 10))
            )
            parts.append(f"```python\ndef step_{section}():\n{code}\n```")
        documents.append({"content": "\n\n".join(parts)})
    return documents


def call(daemon: DaemonProcess, method: str, path: str, body: Any = None) -> Any:
    conn = UnixConnection(daemon.socket, timeout=600)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        raw = response.read()
        if response.status != 200:
            raise SystemExit(f"{method} {path} answered {response.status}: {raw[:300]!r}")
        return raw
    finally:
        conn.close()


def phase_seconds(daemon: DaemonProcess) -> dict[str, float]:
    text = call(daemon, "GET", "/v1/metrics").decode()
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "smem_ingest_phase_seconds":
            for sample in family.samples:
                if sample.name.endswith("_sum"):
                    found[sample.labels["phase"]] = sample.value
    return found


def ingest(
    documents: list[dict[str, Any]], namespace: str, concurrency: int | None
) -> tuple[float, list[float], dict[str, float]]:
    """Seconds from the first batch to the last job done, each batch's acknowledgement in ms,
    and each phase's seconds summed over the jobs; `concurrency`: [engine] ingest-concurrency
    (None: its default)."""
    state = Path(tempfile.mkdtemp(prefix="smem-ingest-"))
    config = None
    if concurrency is not None:
        config = state / "smemd.toml"
        config.write_text(f"[engine]\ningest-concurrency = {concurrency}\n")
    daemon = DaemonProcess(state, config).start(
        ["--log-level", "warning"], env={"SMEM_DREAMING": "0"}
    )
    try:
        acks = []
        started = time.perf_counter()
        for i in range(0, len(documents), BATCH):
            sent = time.perf_counter()
            call(daemon, "POST", f"/ns/{namespace}/document/batch",
                 {"documents": documents[i : i + BATCH]})  # fmt: skip
            acks.append((time.perf_counter() - sent) * 1000)
        while True:
            counts = json.loads(call(daemon, "GET", "/v1/jobs?limit=1"))["counts"]
            if not set(counts) - {"done", "failed"}:
                break
            time.sleep(0.2)
        wall = time.perf_counter() - started
        if counts.get("failed"):
            raise SystemExit(f"{counts['failed']} jobs failed")
        return wall, acks, phase_seconds(daemon)
    finally:
        daemon.stop()
        shutil.rmtree(state, ignore_errors=True)


async def embed_only(documents: list[dict[str, Any]]) -> float:
    """Seconds the embedder alone takes for what ingest embeds of these documents (their chunks,
    each with the short turns before it of the same date, and the facts cut from them) at its
    best: every text at once, which it embeds in batches of like length."""
    model = await asyncio.to_thread(MiniLM)
    texts: list[str] = []
    of_date: dict[str, list[str]] = {}  # the documents of each date so far, as ingest finds them
    for document in documents:
        date = document.get("date")
        before = of_date.setdefault(date, []) if date is not None else []
        said = speaker_of(document["content"])  # its speaker, as the sets here write turns
        goes_on = bool(before and said) and speaker_of(before[-1]) == said
        context = context_of(document["content"], before[: -CONTEXT_MAX_TURNS - 1 : -1], goes_on)
        before.append(document["content"])
        chunks = [replace(c, context=context) for c in chunk_text(document["content"])]
        texts += [c.embedding_text() for c in chunks]
        texts += [fact for c in chunks for fact in candidate_facts(c.text)]
    await model.embed(texts[:BATCH])
    started = time.perf_counter()
    await model.embed(texts)
    return time.perf_counter() - started


def measure(kind: str, documents: list[dict[str, Any]], concurrency: int | None) -> str:
    wall, acks, phases = ingest(documents, kind, concurrency)
    alone = asyncio.run(embed_only(documents))
    chars = sum(len(d["content"]) for d in documents)
    docs_s, alone_docs_s = len(documents) / wall, len(documents) / alone
    later = acks[1:] or acks  # the first batch meets an empty queue
    shown = ",".join(f"{phase}:{seconds:.1f}" for phase, seconds in phases.items())
    return (
        f"ingest {kind} docs={len(documents)} docs_s={docs_s:.1f} chars_s={chars / wall:.0f}"
        f" embed_only_docs_s={alone_docs_s:.1f} vs_embedder={docs_s / alone_docs_s:.2f}"
        f" ack_p95_ms={sorted(later)[int(0.95 * (len(later) - 1))]:.0f}"
        f" ack_p50_ms={statistics.median(later):.0f} phase_s={{{shown}}}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000, help="conversation turns (2000)")
    parser.add_argument("--long", type=int, default=150, help="long documents (150)")
    parser.add_argument(
        "--turns-from",
        type=Path,
        default=DEFAULT_PATH,
        metavar="PATH",
        help="a conversation set in LoCoMo's format (the retrieval bench's) to take turns from",
    )
    parser.add_argument(
        "--concurrency", type=int, help="[engine] ingest-concurrency (default: the daemon's)"
    )
    args = parser.parse_args()
    if args.turns:
        print(measure("turns", turns(args.turns, args.turns_from), args.concurrency))
    if args.long:
        print(measure("long", long_documents(args.long), args.concurrency))


if __name__ == "__main__":
    main()
