"""Tokens of `compress` for the top 10 on LoCoMo, and the evidence it keeps, against plain search.

Through the real daemon (builtin models): the conversations are ingested as in
`tests/bench/retrieval.py`, then each question is asked of `POST /v1/compress` (limit 10) and of
the plain search (limit 10). One line:

  context_tokens locomo-dev n=… compress_tokens=… compress_any=… plain_tokens=… plain_any=…

`*_tokens` is the mean estimated tokens (characters / 4) of the context, `*_any` the share of
questions with at least one evidence turn in it. Target: compress_tokens <= 720 with compress_any
no lower than plain_any.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote

from tests.bench.retrieval import (
    DEFAULT_PATH,
    Conversation,
    Http,
    ingest,
    load,
    turns_by_document,
)
from tests.daemon_process import DaemonProcess

LIMIT = 10


def measure(http: Http, conversations: list[Conversation]) -> str:
    n = compress_tokens = plain_tokens = compress_hits = plain_hits = 0
    for conv in conversations:
        turns = turns_by_document(http, conv.name)
        for question in conv.questions:
            body = {"q": question.text, "namespace": conv.name, "limit": LIMIT, "threshold": 0}
            packed = http.call("POST", "/v1/compress", body)
            kept = {turns.get(item["documentId"]) for item in packed["items"]}
            search = {"query": question.text, "limit": LIMIT, "threshold": 0}
            results = http.call("POST", f"/ns/{quote(conv.name)}/search", search)["results"]
            shown = {r.get("metadata", {}).get("dia_id") for r in results}
            texts = [r.get("memory") or r.get("chunk") or "" for r in results]
            n += 1
            compress_tokens += packed["tokens"]
            plain_tokens += sum(len(t) for t in texts) // 4
            compress_hits += bool(kept & question.evidence)
            plain_hits += bool(shown & question.evidence)
    return (
        f"n={n} compress_tokens={compress_tokens / n:.0f} compress_any={compress_hits / n:.3f}"
        f" plain_tokens={plain_tokens / n:.0f} plain_any={plain_hits / n:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--state-dir", type=Path, help="keep the daemon's state here and reuse it")
    args = parser.parse_args()
    conversations = load(args.path)
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="smem-ctx-"))
    state_dir.mkdir(parents=True, exist_ok=True)
    daemon = DaemonProcess(state_dir).start(["--log-level", "warning"])
    try:
        http = Http(daemon.socket)
        ingest(http, conversations)
        line = measure(http, conversations)
    finally:
        daemon.stop()
        if args.state_dir is None:
            shutil.rmtree(state_dir, ignore_errors=True)
    print(f"context_tokens {args.path.name.removesuffix('.json')} {line}")


if __name__ == "__main__":
    main()
