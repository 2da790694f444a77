"""Retrieval quality on a conversation's whole history sent as one document: a chat's export.

Each conversation of a LoCoMo-format set is one document, a JSON chat log of every turn in order,
each message with its speaker and the time it was sent (`timestamp`: its session's date, each
turn `--turn-seconds` after the one before), added through v3 without a date, as a client that
exports a chat does. Each question with evidence is one v4 hybrid search (limit 20, threshold 0,
`include.chunks`), as memorybench's Supermemory provider searches; a result counts for the
message its chunk is, a memory's through the chunk it was read from. Prints the retrieval
bench's line (tests/bench/retrieval.py), without `compress`'s figures.

    python3 -m tests.bench.history SET.json [--state-dir DIR] [--turn-seconds 40]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from smemd.engine.ingest.chunking import chunk_text
from tests.bench.retrieval import Conversation, Http, Scores, daemon_at, load, settle

LIMIT = 20


def history(conv: Conversation) -> tuple[str, list[str]]:
    """The conversation as one chat log, and the turn (dia_id) of each chunk smem makes of it,
    by position: a message a chunk, or several for a long one (chat_logs.cut)."""
    messages, turns = [], []
    for document in conv.documents:
        speaker, _, text = document["content"].partition(": ")
        if not text.strip():
            continue  # a message that says nothing is no turn of a chat log
        messages.append({"speaker": speaker, "content": text, "timestamp": document["date"]})
        turns += [document["metadata"]["dia_id"]] * len(chunk_text(document["content"]))
    return json.dumps(messages), turns


def ingest(http: Http, conversations: list[Conversation]) -> float:
    """Add each conversation not yet in the state; the seconds until no job is open."""
    started = time.perf_counter()
    for conv in conversations:
        listed = http.call("POST", f"/ns/{quote(conv.name)}/list/documents?limit=1", {})
        if not listed["pagination"]["totalItems"]:
            http.call("POST", "/v3/documents",
                      {"content": history(conv)[0], "containerTag": conv.name})  # fmt: skip
    settle(http)
    return time.perf_counter() - started


def positions(http: Http, namespace: str) -> dict[str, int]:
    """Each chunk's position in the namespace's one document, by its id."""
    listing = http.call("POST", f"/ns/{quote(namespace)}/list/documents?limit=1", {})
    (document,) = listing["documents"]
    path = f"/ns/{quote(namespace)}/document/{document['id']}?include=chunks"
    return {c["id"]: c["position"] for c in http.call("GET", path)["chunks"]}


def search(http: Http, conversations: list[Conversation]) -> tuple[Scores, float]:
    scores = Scores()
    elapsed = 0.0
    for conv in conversations:
        turns = history(conv)[1]
        at = positions(http, conv.name)
        for question in conv.questions:
            body = {"q": question.text, "containerTag": conv.name, "limit": LIMIT,
                    "threshold": 0, "searchMode": "hybrid", "include": {"chunks": True}}  # fmt: skip
            started = time.perf_counter()
            results = http.call("POST", "/v4/search", body)["results"]
            elapsed += time.perf_counter() - started
            ranked = [_turn(r, at, turns) for r in results]
            scores.add(question, ranked, [r.get("memory") or r.get("chunk") or "" for r in results])
    return scores, scores.n / elapsed if elapsed else 0.0


def _turn(result: dict[str, Any], at: dict[str, int], turns: list[str]) -> str | None:
    if result.get("memory") is not None:
        chunks = result.get("chunks") or []
        return turns[chunks[0]["position"]] if chunks else None
    return turns[at[result["id"]]] if result["id"] in at else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a set in the LoCoMo format")
    parser.add_argument("--state-dir", type=Path, help="keep the daemon's state here")
    parser.add_argument(
        "--turn-seconds", type=float, default=40.0, metavar="S",
        help="each message sent S seconds after the one before it in its session (default 40)",
    )  # fmt: skip
    args = parser.parse_args()
    conversations = load(args.path, args.turn_seconds)
    with daemon_at(args.state_dir) as http:
        ingest_s = ingest(http, conversations)
        scores, qps = search(http, conversations)
    name = f"{args.path.name.removesuffix('.json')} history turn_seconds={args.turn_seconds:g}"
    print(scores.line(name, qps, ingest_s))


if __name__ == "__main__":
    main()
