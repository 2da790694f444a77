"""Reconciliation through the real ingest path: what smem makes of a new fact beside an old one.

Each pair of tests/data/updates.jsonl (an old and a new one-sentence document, a label from
`updates`, `duplicate`, `extends`, `distinct`) gets a namespace of its own on the real daemon
(builtin fleet, dreaming off so only ingest acts). The batch route takes one namespace, so the
ingest runs in two phases of one add per pair: every old document (dated `old_date` when given),
a wait until no job is open, then every new document likewise; each pair thus sees old then new.

What happened is then read through the API: the namespace's memories with their history, the
new document's memories (sources included), the new memory's version chain and its relations.
The outcome is `duplicate` when the new document made no memory and the old memory has it as a
source; `updates` when the two memories are versions of one chain; `extends` or `contradicts`
when a relation of that kind joins them (`contradicts` is wrong for every label); `distinct`
otherwise. A pair whose documents did not give one memory each is `unextracted`, and wrong.

One line: accuracy over the pairs, each label's recall, the count of unextracted pairs and the
wall time. `--llama-url URL` gives the daemon a `hosts` fleet whose chat model (which then both
extracts and judges) is the llama-server at URL; its embeddings come from the builtin MiniLM,
served here on loopback, so both runs compare the same vectors. `--judge-url URL` leaves
extraction out (a small model may not extract well and still judge): each pair goes straight to
the reconcile decision smem makes with a judge (`judged_decision`: the model's letters, the
heuristic where it is undecided or not needed), the old fact its one neighbour at the builtin
embedder's cosine; the line then counts `undecided` calls instead of unextracted pairs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from smemd.engine.ingest.reconciling import Neighbour
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.judgement.reconcile_by_model import judged_decision
from smemd.fleet.builtin import load_embedder
from smemd.fleet.llama import LlamaClient
from tests.bench.retrieval import Http
from tests.daemon_process import DaemonProcess
from tests.fakes.llama_server import FakeLlamaServer

DATA = Path(__file__).resolve().parents[1] / "data" / "updates.jsonl"
LABELS = ("updates", "duplicate", "extends", "distinct")
WAIT_S = 900.0  # one phase's jobs; a chat model on a slow node takes seconds per document


@dataclass(frozen=True)
class Pair:
    old: str
    new: str
    label: str
    old_date: str | None = None
    new_date: str | None = None
    note: str = ""


def load(path: Path = DATA) -> list[Pair]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Pair(**json.loads(line)) for line in lines if line.strip()]


def run(pairs: Sequence[Pair], llama_url: str | None = None) -> list[str]:
    """Each pair's outcome, in order, from a daemon started for them and stopped after."""
    state_dir = Path(tempfile.mkdtemp(prefix="smem-upd-"))
    try:
        with _fleet(state_dir, llama_url) as config:
            daemon = DaemonProcess(state_dir, config).start(["--log-level", "warning"])
            http = Http(daemon.socket)
            try:
                return _outcomes(http, pairs)
            finally:
                http.conn.close()
                daemon.stop()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def _outcomes(http: Http, pairs: Sequence[Pair]) -> list[str]:
    spaces = [f"pair-{i:04d}" for i in range(len(pairs))]
    olds = [_add(http, ns, p.old, p.old_date) for ns, p in zip(spaces, pairs, strict=True)]
    _wait(http)
    news = [_add(http, ns, p.new, p.new_date) for ns, p in zip(spaces, pairs, strict=True)]
    _wait(http)
    return [outcome(http, *ids) for ids in zip(spaces, olds, news, strict=True)]


def _add(http: Http, ns: str, content: str, date: str | None) -> str:
    body: dict[str, Any] = {"content": content}
    if date is not None:
        body["date"] = date
    added: str = http.call("POST", f"/ns/{ns}/document", body)["id"]
    return added


def _wait(http: Http) -> None:
    deadline = time.monotonic() + WAIT_S
    while set(http.call("GET", "/v1/jobs?limit=1")["counts"]) - {"done", "failed"}:
        if time.monotonic() > deadline:
            raise SystemExit(f"ingest jobs still open after {WAIT_S:.0f} s")
        time.sleep(0.05)


def outcome(http: Http, ns: str, old_doc: str, new_doc: str) -> str:
    """What the new document did to the old one's memory, read back through the API."""
    listing = {"history": True, "include": {"forgotten": True}}
    memories = http.call("POST", f"/ns/{ns}/list/memories?limit=100", listing)["memories"]
    olds = [m for m in memories if m.get("documentId") == old_doc]
    news = [m for m in memories if m.get("documentId") == new_doc]
    if len(olds) != 1 or len(news) > 1:
        return "unextracted"
    old = olds[0]["id"]
    if not news:
        # No memory of its own: a duplicate names the old memory among the document's memories.
        sourced = http.call("GET", f"/ns/{ns}/document/{new_doc}?include=memories")
        is_source = old in {m["id"] for m in sourced.get("memories") or []}
        return "duplicate" if is_source else "unextracted"
    new = news[0]["id"]
    chain = http.call("GET", f"/ns/{ns}/memories/{new}/history")["memories"]
    if old in {m["id"] for m in chain}:
        return "updates"
    related = http.call("GET", f"/ns/{ns}/memories/{new}?include=related&relatedLimit=100")
    siblings = related.get("included", {}).get("related", {}).get("siblings", [])
    kinds = {s["relation"] for s in siblings if s["id"] == old}
    for kind in ("contradicts", "extends"):
        if kind in kinds:
            return kind
    return "distinct"


@contextmanager
def _fleet(state_dir: Path, llama_url: str | None) -> Iterator[Path | None]:
    """The daemon's config: none for the builtin fleet, else `hosts` with the chat model at URL."""
    if llama_url is None:
        config = state_dir / "smemd.toml"
        config.write_text("[engine]\ndreaming = false\n")
        yield config
        return
    url = urlsplit(llama_url)
    if url.hostname is None or url.port is None:
        raise SystemExit(f"--llama-url {llama_url}: give host and port")
    with _embedding_server() as embed_port:
        config = state_dir / "smemd.toml"
        config.write_text(
            "[engine]\ndreaming = false\n"
            '[fleet]\nkind = "hosts"\n'
            f'[[fleet.nodes]]\nid = "node0"\naddress = "127.0.0.1"\nembed = {embed_port}\n'
            'lanes = ["interactive", "background"]\n'
            f'[[fleet.nodes]]\nid = "node1"\naddress = "{url.hostname}"\nllm = {url.port}\n'
            'lanes = ["interactive", "background"]\n'
        )
        yield config


@contextmanager
def _embedding_server() -> Iterator[int]:
    """The builtin MiniLM behind llama-server's embeddings routes, on its own loop and thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="embedder", daemon=True)
    thread.start()
    server = FakeLlamaServer(
        embedder=load_embedder(), roles=("embed",), model="all-MiniLM-L6-v2", slots=4
    )
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=30)
        yield server.port
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


async def judged(pairs: Sequence[Pair], url: str) -> tuple[list[str], int]:
    """Each pair's outcome by smem's judged decision against the llama-server at `url`, and how
    many calls the judge left undecided."""
    embedder = load_embedder()
    outcomes: list[str] = []
    undecided = 0
    async with aiohttp.ClientSession() as session:
        judge = Judge(LlamaClient(session, url, node="bench", timeout=60.0))
        for pair in pairs:
            old, new = await embedder.embed([pair.old, pair.new], kind="document")
            near = Neighbour("old", pair.old, float(old @ new))
            decision, record = await judged_decision(judge, "bench", pair.new, [near])
            outcomes.append(decision.kind)
            undecided += record is not None and "undecided" in decision.reason
    return outcomes, undecided


def line(pairs: Sequence[Pair], outcomes: Sequence[str], judge: str, seconds: float) -> str:
    right = sum(p.label == o for p, o in zip(pairs, outcomes, strict=True))
    parts = [f"updates judge={judge} n={len(pairs)} accuracy={right / max(len(pairs), 1):.3f}"]
    for label in LABELS:
        got = [o for p, o in zip(pairs, outcomes, strict=True) if p.label == label]
        parts.append(f"{label}={got.count(label) / len(got):.3f}" if got else f"{label}=-")
    parts += [f"unextracted={outcomes.count('unextracted')}", f"s={seconds:.1f}"]
    return " ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-url", help="a llama-server base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument(
        "--judge-url", help="a llama-server that only judges, each pair asked directly"
    )
    parser.add_argument("--limit", type=int, metavar="N", help="the first N pairs only")
    parser.add_argument("--verbose", action="store_true", help="print each wrong pair")
    args = parser.parse_args()
    pairs = load()[: args.limit]
    started = time.perf_counter()
    undecided = None
    if args.judge_url:
        outcomes, undecided = asyncio.run(judged(pairs, args.judge_url))
    else:
        outcomes = run(pairs, args.llama_url)
    seconds = time.perf_counter() - started
    if args.verbose:
        wrong = [(p, o) for p, o in zip(pairs, outcomes, strict=True) if p.label != o]
        for pair, got in sorted(wrong, key=lambda w: (w[0].label, w[1])):
            print(f"{pair.label} -> {got}: {pair.old!r} / {pair.new!r}")
        print(dict(Counter(f"{p.label}->{o}" for p, o in wrong)))
    judge = "llm-questions" if args.judge_url else "llm" if args.llama_url else "heuristic"
    summary = line(pairs, outcomes, judge, seconds)
    if undecided is not None:
        summary = summary.replace(" unextracted=0 ", f" undecided={undecided} ")
    print(summary)


if __name__ == "__main__":
    main()
