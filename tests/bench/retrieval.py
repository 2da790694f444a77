"""Retrieval quality on LoCoMo: LLM-free evidence recall through the real daemon's search route.

Follows ../shared/bench/README.md. Each conversation becomes one namespace; every turn is a
document ("<speaker>: <text>" plus " [image: <caption>]") dated by its session (with
`--turn-seconds`, by message), with its dia_id in metadata. Each question with evidence (category 5 left out) is one hybrid search (limit 20,
threshold 0, or `--threshold`'s). A result maps to the dia_id in its metadata; the top k are the
first k results, and a turn counts at its first occurrence (that rank is the one MRR uses, 0 when
not in the 20).

Prints one line per set: any@5/10/20, all@10, MRR, any@10 per category, queries per second of
the search phase (one keep-alive connection, one query at a time), the mean context tokens of
the top 10 results (approximated as characters / 4, no tokenizer), the share of questions whose
every evidence turn is inside what `compress` keeps for them (limit 10) and its median tokens,
and the ingest wall time (first batch to the last job done). `--state-dir` keeps the daemon's state so a later run can skip the ingest.
`--with-directives` asks each question followed by a directive on the answer's form, as a user's
whole message (tests/bench/directives.py).
`--store postgres` runs it twice in one go, on SQLite and then on a PostgreSQL database
(tests/postgres.py), and prints both lines.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

from smemctl.client import UnixConnection
from tests import postgres
from tests.bench.directives import directed
from tests.bench.locomo_format import LOCOMO_DATE
from tests.daemon_process import DaemonProcess

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PATH = REPO / ".." / "shared" / "bench" / "locomo-dev.json"
RETRIES = 10
BATCH = 600
LIMIT = 20
KS = (5, 10, 20)
CATEGORIES = (1, 2, 3, 4)  # 5 (adversarial) has no evidence to recall
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass
class Question:
    text: str
    category: int | str  # LoCoMo's number, or another set's kind of question
    evidence: frozenset[str]


@dataclass
class Conversation:
    name: str
    documents: list[dict[str, Any]]
    questions: list[Question]


@dataclass
class Scores:
    n: int = 0
    hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    all10: int = 0
    reciprocal: float = 0.0
    by_category: dict[int | str, list[int]] = field(default_factory=dict)  # -> [hits@10, n]
    context_tokens: float = 0.0
    compressed_whole: int = 0  # questions whose every evidence turn `compress` kept
    compressed_tokens: list[int] = field(default_factory=list)

    def add_compressed(self, question: Question, kept: set[str | None], tokens: int) -> None:
        self.compressed_whole += question.evidence <= kept
        self.compressed_tokens.append(tokens)

    def add(self, question: Question, ranked: list[str | None], texts: list[str]) -> int:
        """Score one question's ranked dia_ids (one per result); return the rank found, or 0."""
        first = _first_ranks(ranked)
        found = [first[d] for d in question.evidence if d in first]
        best = min(found, default=0)
        self.n += 1
        for k in KS:
            self.hits[k] += any(rank <= k for rank in found)
        self.all10 += len(found) == len(question.evidence) and max(found) <= 10
        self.reciprocal += 1 / best if best else 0.0
        category = self.by_category.setdefault(question.category, [0, 0])
        category[0] += 0 < best <= 10
        category[1] += 1
        self.context_tokens += sum(len(t) for t in texts[:10]) / 4
        return best

    def line(self, name: str, qps: float, ingest_s: float) -> str:
        n = max(self.n, 1)
        parts = [f"retrieval {name} n={self.n}"]
        parts += [f"any@{k}={self.hits[k] / n:.3f}" for k in KS]
        parts += [f"all@10={self.all10 / n:.3f}", f"mrr={self.reciprocal / n:.3f}"]
        # LoCoMo's four numbered categories always (in their order), another set's kinds by name.
        named = sorted(str(c) for c in self.by_category if isinstance(c, str))
        shown: list[int | str] = [*named] if named else [*CATEGORIES]
        for c in shown:
            hits, count = self.by_category.get(c, [0, 0])
            label = f"cat{c}" if isinstance(c, int) else c
            parts.append(f"{label}={hits / count:.3f}" if count else f"{label}=-")
        parts += [f"qps={qps:.1f}", f"ctx10_tokens={self.context_tokens / n:.0f}"]
        if self.compressed_tokens:
            parts.append(f"compress_all={self.compressed_whole / n:.3f}")
            parts.append(f"compress_tokens_p50={statistics.median(self.compressed_tokens):.0f}")
        parts.append(f"ingest_s={ingest_s:.1f}")
        return " ".join(parts)


def _first_ranks(ranked: list[str | None]) -> dict[str, int]:
    first: dict[str, int] = {}
    for rank, dia_id in enumerate(ranked, start=1):
        if dia_id is not None:
            first.setdefault(dia_id, rank)
    return first


def session_date(text: str) -> str:
    """ "1:56 pm on 8 May, 2023" -> "2023-05-08T13:56:00" (the daemon reads no offset as UTC)."""
    return datetime.strptime(text.strip(), LOCOMO_DATE).isoformat()


def evidence_ids(raw: list[str], turns: set[str]) -> frozenset[str]:
    """Split joined ids, repair "D:11:26" and "D30:05", drop ids that name no turn."""
    ids = {f"D{int(s)}:{int(t)}" for item in raw for s, t in _EVIDENCE.findall(item)}
    return frozenset(ids & turns)


def load(path: Path, turn_seconds: float = 0.0, *, undated: bool = False) -> list[Conversation]:
    """The set's conversations, each turn dated by its session, or with `turn_seconds` by
    message: that many seconds after the turn before it, from its session's date; `undated`:
    none dated, as an agent adding turns as they happen may send them."""
    conversations = []
    for sample in json.loads(path.read_text()):
        talk = sample["conversation"]
        documents: list[dict[str, Any]] = []
        sessions = sorted(int(m.group(1)) for k in talk if (m := _SESSION.fullmatch(k)))
        for session in sessions:
            start = datetime.fromisoformat(session_date(talk[f"session_{session}_date_time"]))
            for i, turn in enumerate(talk[f"session_{session}"]):
                date = (start + timedelta(seconds=i * turn_seconds)).isoformat()
                content = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    content += f" [image: {turn['blip_caption']}]"
                document = {
                    "content": content,
                    "date": date,
                    "metadata": {"dia_id": turn["dia_id"], "session": session},
                }
                if undated:
                    del document["date"]
                documents.append(document)
        turns = {d["metadata"]["dia_id"] for d in documents}
        questions = []
        for qa in sample["qa"]:
            evidence = evidence_ids(qa.get("evidence", []), turns)
            if qa["category"] != 5 and evidence:
                questions.append(Question(str(qa["question"]), qa["category"], evidence))
        sample_id = str(sample["sample_id"])
        name = f"locomo-{sample_id}" if sample_id.startswith("conv-") else sample_id
        conversations.append(Conversation(name, documents, questions))
    return conversations


class Http:
    """JSON over one keep-alive connection to the daemon's Unix socket."""

    def __init__(self, socket: Path) -> None:
        self.conn = UnixConnection(socket, timeout=600)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        payload = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        self.conn.request(method, path, body=payload, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise SystemExit(f"{method} {path} answered {response.status}: {data[:300]!r}")
        return json.loads(data)


def ingest(http: Http, conversations: list[Conversation], late: float = 0.0) -> float:
    """Add every conversation not yet in the state; return seconds until no job is open. With
    `late`, about that share of the turns (drawn by a hash of each) is held back and added once
    the others are ingested: a session's turns sent out of order."""
    started = time.perf_counter()
    for wave in (False, True) if late else (False,):
        for conv in conversations:
            ns = quote(conv.name)
            listed = http.call("POST", f"/ns/{ns}/list/documents?limit=1", {})
            if listed["pagination"]["totalItems"] >= len(conv.documents):
                continue  # a kept state dir already holds it
            documents = [d for d in conv.documents if held_back(d, late) == wave]
            for i in range(0, len(documents), BATCH):
                add_batch(http, conv.name, documents[i : i + BATCH])
        settle(http)
    return time.perf_counter() - started


def settle(http: Http) -> None:
    """Wait until no ingest job is open; stop if any failed."""
    while True:
        counts: dict[str, int] = http.call("GET", "/v1/jobs?limit=1")["counts"]
        if not set(counts) - {"done", "failed"}:
            break
        time.sleep(0.2)
    if counts.get("failed"):
        raise SystemExit(f"{counts['failed']} ingest jobs failed")


@contextlib.contextmanager
def daemon_at(state_dir: Path | None) -> Iterator[Http]:
    """A daemon on `state_dir` (None: a temporary one, removed after), and a client of it."""
    kept = state_dir is not None
    state_dir = state_dir or Path(tempfile.mkdtemp(prefix="smem-bench-"))
    state_dir.mkdir(parents=True, exist_ok=True)
    daemon = DaemonProcess(state_dir, None).start(["--log-level", "warning"])
    try:
        yield Http(daemon.socket)
    finally:
        daemon.stop()
        if not kept:
            shutil.rmtree(state_dir, ignore_errors=True)


def held_back(document: dict[str, Any], late: float) -> bool:
    drawn = hashlib.sha256(str(document["metadata"]["dia_id"]).encode()).digest()
    return int.from_bytes(drawn[:4]) / 2**32 < late


def add_batch(http: Http, name: str, batch: list[dict[str, Any]]) -> None:
    for _ in range(RETRIES):
        added = http.call("POST", f"/ns/{quote(name)}/document/batch", {"documents": batch})
        if not added["failed"]:
            return
        # What a client does with a 503 `timed_out` (a busy writer on a slow machine): the
        # documents not stored, which end the batch, again after a pause.
        errors = {r.get("error") for r in added["results"] if r["status"] == "error"}
        if errors != {"request took too long"}:
            raise SystemExit(f"{name}: {added['failed']} refused: {errors}")
        batch = batch[added["count"] :]
        time.sleep(1)
    raise SystemExit(f"{name}: documents still refused after {RETRIES} tries")


def search(
    http: Http,
    conversations: list[Conversation],
    dump: list[dict[str, Any]] | None,
    threshold: float = 0.0,
) -> tuple[Scores, float]:
    """Each question searched (timed: the qps), then compressed (`POST /v1/compress`, limit 10):
    whether every evidence turn is inside what it keeps, in how many tokens."""
    scores = Scores()
    elapsed = 0.0
    for conv in conversations:
        path = f"/ns/{quote(conv.name)}/search"
        turns = turns_by_document(http, conv.name)
        for question in conv.questions:
            body = {"query": question.text, "limit": LIMIT, "threshold": threshold}
            started = time.perf_counter()
            results = http.call("POST", path, body)["results"]
            elapsed += time.perf_counter() - started
            ranked = [r.get("metadata", {}).get("dia_id") for r in results]
            texts = [r.get("memory") or r.get("chunk") or "" for r in results]
            rank = scores.add(question, ranked, texts)
            packed = http.call("POST", "/v1/compress", {
                "q": question.text, "namespace": conv.name, "limit": 10, "threshold": 0,
            })  # fmt: skip
            kept = {turns.get(item["documentId"]) for item in packed["items"]}
            scores.add_compressed(question, kept, packed["tokens"])
            if dump is not None:
                dump.append(
                    {
                        "ns": conv.name,
                        "question": question.text,
                        "category": question.category,
                        "evidence": sorted(question.evidence),
                        "rank": rank,
                        "results": [[d, t] for d, t in zip(ranked, texts, strict=True)],
                    }
                )
    return scores, scores.n / elapsed if elapsed else 0.0


def turns_by_document(http: Http, namespace: str) -> dict[str, str]:
    """Each stored document's turn id (its `dia_id`)."""
    found: dict[str, str] = {}
    page = 1
    while True:
        path = f"/ns/{quote(namespace)}/list/documents?limit=100&page={page}"
        listing = http.call("POST", path, {})
        found.update({d["id"]: d["metadata"]["dia_id"] for d in listing["documents"]})
        if page >= listing["pagination"]["totalPages"]:
            return found
        page += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "paths", nargs="*", type=Path, default=[DEFAULT_PATH], metavar="PATH",
        help="sets in the LoCoMo format (default: LoCoMo's development split); a line each",
    )  # fmt: skip
    parser.add_argument(
        "--state-dir", type=Path, help="keep the daemon's state here and reuse what it holds"
    )
    parser.add_argument("--dump", type=Path, help="write every question's ranked results as JSON")
    parser.add_argument(
        "--exact-scan-up-to", type=int, metavar="N",
        help="[engine] exact-scan-up-to for the daemon (0: every search takes the reduced first pass)",
    )  # fmt: skip
    parser.add_argument(
        "--ann-from", type=int, metavar="N",
        help="[engine] ann-from for the daemon (0: every namespace's vectors are an HNSW graph)",
    )  # fmt: skip
    parser.add_argument(
        "--threshold", type=float, default=0.0,
        help="each search's threshold (default 0: every result; a v5 client's default is 0.3)",
    )  # fmt: skip
    parser.add_argument(
        "--turn-seconds", type=float, default=0.0, metavar="S",
        help="date each turn S seconds after the turn before it in its session, as a client"
        " dating each message does (default 0: every turn at its session's date)",
    )  # fmt: skip
    parser.add_argument(
        "--late", type=float, default=0.0, metavar="SHARE",
        help="hold back about this share of the turns and add them once the rest is ingested,"
        " as a client sending a session's turns out of order (with --turn-seconds: dated by"
        " message, where their order is known)",
    )  # fmt: skip
    parser.add_argument(
        "--undated", action="store_true",
        help="send every turn without a date, as an agent adding turns as they happen may",
    )  # fmt: skip
    parser.add_argument(
        "--with-directives", action="store_true",
        help="each question followed by a directive on the answer's form, as a user's whole"
        " message (tests/bench/directives.py)",
    )  # fmt: skip
    parser.add_argument(
        "--store", choices=["sqlite", "postgres"], default="sqlite",
        help="postgres: the daemon on a PostgreSQL database (tests/postgres.py), after the same"
        " run on SQLite, both lines printed",
    )  # fmt: skip
    args = parser.parse_args()
    sets = {
        path.name.removesuffix(".json"): load(path, args.turn_seconds, undated=args.undated)
        for path in args.paths
    }
    if args.with_directives:
        asked = [q for conversations in sets.values() for c in conversations for q in c.questions]
        for at, question in enumerate(asked):
            question.text = directed(question.text, at)
    settings = {"exact-scan-up-to": args.exact_scan_up_to, "ann-from": args.ann_from}
    engine = "".join(f"{key} = {value}\n" for key, value in settings.items() if value is not None)
    config = f"[engine]\n{engine}" if engine else ""
    cut = f" threshold={args.threshold:g}" if args.threshold else ""
    cut += f" turn_seconds={args.turn_seconds:g}" if args.turn_seconds else ""
    cut += " with_directives" if args.with_directives else ""
    cut += " undated" if args.undated else ""
    cut += f" late={args.late:g}" if args.late else ""
    if args.store == "sqlite":
        for name, done in run(
            sets, config, args.state_dir, args.dump, args.threshold, args.late
        ).items():
            print(done.line(name + cut))
        return
    with contextlib.contextmanager(postgres.start)() as server:
        for name, done in run(sets, config, None, None, args.threshold, args.late).items():
            print(done.line(f"{name}{cut} store=sqlite"))
        dsn = server.database()
        try:
            table = f'[store]\nkind = "postgres"\ndsn = "{dsn}"\n'
            for name, done in run(
                sets, config + table, None, args.dump, args.threshold, args.late
            ).items():
                print(done.line(f"{name}{cut} store=postgres"))
        finally:
            server.drop(dsn)


class Run(NamedTuple):
    scores: Scores
    qps: float
    ingest_s: float

    def line(self, name: str) -> str:
        return self.scores.line(name, self.qps, self.ingest_s)


def run(
    sets: dict[str, list[Conversation]],
    config_text: str,
    state_dir: Path | None,
    dump_to: Path | None,
    threshold: float = 0.0,
    late: float = 0.0,
) -> dict[str, Run]:
    """Ingest each set, then search it, on one daemon (`config_text`: its config file, '' for
    none); each set's figures."""
    kept = state_dir is not None
    state_dir = state_dir or Path(tempfile.mkdtemp(prefix="smem-bench-"))
    state_dir.mkdir(parents=True, exist_ok=True)
    config = None
    if config_text:
        config = state_dir / "smemd.toml"
        config.write_text(config_text)
    daemon = DaemonProcess(state_dir, config).start(["--log-level", "warning"])
    dump: list[dict[str, Any]] | None = [] if dump_to else None
    runs: dict[str, Run] = {}
    try:
        http = Http(daemon.socket)
        status = http.call("GET", "/v1/status")
        if status["warnings"]:
            raise SystemExit(f"smemd: {'; '.join(status['warnings'])}")
        ingested = {name: ingest(http, convs, late) for name, convs in sets.items()}
        for name, conversations in sets.items():
            scores, qps = search(http, conversations, dump, threshold)
            runs[name] = Run(scores, qps, ingested[name])
    finally:
        daemon.stop()
        if not kept:
            shutil.rmtree(state_dir, ignore_errors=True)
    if dump_to and dump is not None:
        dump_to.write_text(json.dumps(dump, indent=1))
    return runs


if __name__ == "__main__":
    main()
