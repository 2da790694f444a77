"""Searches that show the chunks beside their results, among one large document's.

v4 search with `include.chunks` gives each memory the chunk it was read from (read by id); v3
search gives each matching chunk the chunks before and after it (read by position): neither
reads the rest of a document, whatever its size. One namespace holds one document of `--chunks`
sections (a chunk each, two memories each); 60 searches of each kind follow (the first 10 not
counted). Prints p50 and p95 of the HTTP round trip over the daemon's Unix socket.

    python3 -m tests.bench.source_chunks [--chunks 3000] [--state-dir DIR]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path
from typing import Any

from tests.bench.retrieval import Http, daemon_at, settle

WORDS = "alpha beta gamma delta river mountain engine kettle violin orange harbor lantern".split()
SEARCHES, WARMUP = 60, 10


def document(sections: int) -> str:
    rng = random.Random(0)
    parts = []
    for i in range(sections):
        said = " ".join(rng.choice(WORDS) for _ in range(12))
        parts.append(
            f"## Part {i}\n\nRecord {i}: the {said} was logged by station {i % 97}. "
            f"Station {i % 97} reported {said}.\n"
        )
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=3000, help="sections of the one document")
    parser.add_argument("--state-dir", type=Path, help="keep the daemon's state here")
    args = parser.parse_args()
    with daemon_at(args.state_dir) as http:
        if not http.call("POST", "/ns/big/list/documents?limit=1", {})["pagination"]["totalItems"]:
            http.call("POST", "/v3/documents",
                      {"content": document(args.chunks), "containerTag": "big"})  # fmt: skip
        settle(http)
        v4 = timed(http, "/v4/search", {"limit": 10, "threshold": 0, "searchMode": "hybrid",
                                         "include": {"chunks": True}})  # fmt: skip
        v3 = timed(http, "/v3/search", {"limit": 10})
    print(f"source_chunks chunks={args.chunks} v4_include_chunks {v4} v3_neighbours {v3}")


def timed(http: Http, route: str, options: dict[str, Any]) -> str:
    """p50 and p95 of SEARCHES searches on `route`, the first WARMUP left out."""
    took = []
    for i in range(SEARCHES):
        body = {"q": f"What did station {i} report about the river?", "containerTag": "big"}
        started = time.perf_counter()
        http.call("POST", route, {**body, **options})
        took.append(time.perf_counter() - started)
    counted = sorted(took[WARMUP:])
    p95 = counted[round(0.95 * (len(counted) - 1))]
    return f"p50_ms={statistics.median(counted) * 1000:.1f} p95_ms={p95 * 1000:.1f}"


if __name__ == "__main__":
    main()
