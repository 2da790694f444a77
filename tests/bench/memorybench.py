"""A memorybench-shaped run: LoCoMo through the legacy routes, and v4 search against v5 search.

memorybench's Supermemory provider (TS SDK 4) adds one document per session through
`POST /v3/documents` with `containerTag` and `metadata: {sessionId, date}`, its content a date
preamble and the session's messages as JSON; it polls `GET /v3/documents/{id}` until done and
searches through `POST /v4/search`. This does the same over HTTP for the first two conversations
of ../shared/bench/locomo-dev.json, and asks each question (retrieval.py's: evidence normalised,
category 5 left out) twice on the same data: with memorybench's v4 body and with the equivalent
v5 `/ns/{ns}/search` body.

A result counts for the turns its text overlaps in its session's content (a memory or a chunk is
a span of that content here); recall@10 is retrieval.py's any@10: at least one evidence turn in
the first ten results. Prints one line; `diff` is v4 minus v5, and should be 0 (v4 is a
translation of v5, not a second engine). `unmapped` is the share of results whose text was not
found in any session (counted as no turn).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.bench.retrieval import DEFAULT_PATH, Conversation, Http, Scores, load, session_date
from tests.daemon_process import DaemonProcess

CONVERSATIONS = 2
LIMIT = 10  # memorybench's search limit (Dec 2025)
THRESHOLD = 0.3  # memorybench's, and v5's default


@dataclass
class Session:
    id: str  # memorybench's sessionId: "<sample_id>-session_<n>"
    content: str
    date: str
    turns: dict[str, tuple[int, int]]  # dia_id -> where its text is in `content`


def sessions_of(sample: dict[str, Any]) -> list[Session]:
    """A LoCoMo sample's sessions as memorybench's LoCoMo loader and provider write them."""
    talk = sample["conversation"]
    found = []
    n = 1
    while isinstance(talk.get(f"session_{n}"), list):
        turns = talk[f"session_{n}"]
        messages = [
            {
                "role": "user" if t["speaker"] == talk["speaker_a"] else "assistant",
                "content": t["text"],
                "speaker": t["speaker"],
            }
            for t in turns
        ]
        when = session_date(talk[f"session_{n}_date_time"])
        content = provider_content(messages, talk[f"session_{n}_date_time"])
        spans: dict[str, tuple[int, int]] = {}
        at = 0
        for turn, message in zip(turns, messages, strict=True):
            needle = '"content":' + _js_json(message["content"])
            at = content.index(needle, at)
            spans[turn["dia_id"]] = (at, at + len(needle))
            at += len(needle)
        found.append(Session(f"{sample['sample_id']}-session_{n}", content, when + ".000Z", spans))
        n += 1
    return found


def _js_json(value: Any) -> str:
    """`JSON.stringify(value)` with the provider's `<`/`>` escaping."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "&lt;").replace(">", "&gt;")


def provider_content(messages: list[dict[str, str]], when: str) -> str:
    """memorybench's document text: the session's date (LoCoMo's own wording), then its messages."""
    return (
        f"Here is the date the following session took place: {when}\n\n"
        f"Here is the session as a stringified JSON:\n{_js_json(messages)}"
    )


def ingest(http: Http, tag: str, sessions: list[Session]) -> None:
    """Add each session through v3, then poll it as memorybench does, then wait for every job."""
    ids = []
    for session in sessions:
        body = {
            "content": session.content,
            "containerTag": tag,
            "metadata": {"sessionId": session.id, "date": session.date},
        }
        ids.append(http.call("POST", "/v3/documents", body)["id"])
    for doc_id in ids:
        while (status := http.call("GET", f"/v3/documents/{quote(doc_id)}")["status"]) != "done":
            if status == "failed":
                raise SystemExit(f"{tag}: document {doc_id} failed")
            time.sleep(0.1)
    while set(http.call("GET", "/v1/jobs?limit=1")["counts"]) - {"done", "failed"}:
        time.sleep(0.1)  # what dreaming a session starts, so both routes search the same state


def v4_body(question: str, tag: str) -> dict[str, Any]:
    """memorybench's `client.search.memories` body."""
    return {
        "q": question,
        "containerTag": tag,
        "limit": LIMIT,
        "threshold": THRESHOLD,
        "searchMode": "hybrid",
        "include": {"chunks": True, "summaries": True},
    }


def v5_body(question: str) -> dict[str, Any]:
    return {"query": question, "limit": LIMIT, "threshold": THRESHOLD, "searchMode": "hybrid"}


def turns_of(result: dict[str, Any], sessions: dict[str, Session]) -> list[str] | None:
    """The turns a result's text overlaps, in order; None when its text is in no session."""
    text = result.get("memory") or result.get("chunk") or ""
    named = sessions.get((result.get("metadata") or {}).get("sessionId", ""))
    for session in [named] if named else sessions.values():
        at = session.content.find(text) if text else -1
        if at >= 0:
            end = at + len(text)
            return [d for d, (s, e) in session.turns.items() if s < end and at < e]
    return None


def rank(
    results: list[dict[str, Any]], sessions: dict[str, Session], evidence: frozenset[str]
) -> tuple[list[str | None], int]:
    """One turn per result for `Scores.add` (an evidence turn when it covers one), and how many
    results were not found in any session."""
    ranked: list[str | None] = []
    unmapped = 0
    for result in results:
        turns = turns_of(result, sessions)
        unmapped += turns is None
        hits = [t for t in turns or [] if t in evidence]
        ranked.append(hits[0] if hits else turns[0] if turns else None)
    return ranked, unmapped


@dataclass
class Comparison:
    v4: Scores
    v5: Scores
    results: int = 0
    unmapped_v4: int = 0
    unmapped_v5: int = 0

    def line(self, conversations: int) -> str:
        n = max(self.v4.n, 1)
        v4, v5 = self.v4.hits[10] / n, self.v5.hits[10] / n
        share = max(self.results, 1)
        return (
            f"memorybench conversations={conversations} questions={self.v4.n} "
            f"v4_recall@10={v4:.3f} v5_recall@10={v5:.3f} diff={v4 - v5:+.3f} "
            f"unmapped_v4={self.unmapped_v4 / share:.3f} unmapped_v5={self.unmapped_v5 / share:.3f}"
        )


def compare(
    http: Http, conv: Conversation, sessions: list[Session], into: Comparison, questions: int = 0
) -> None:
    """Ask the conversation's questions whose evidence is in `sessions` (the first `questions` of
    them, or all) through v4, then the same through v5."""
    by_id = {s.id: s for s in sessions}
    held = {turn for s in sessions for turn in s.turns}
    asked = [q for q in conv.questions if q.evidence <= held][: questions or None]
    path = f"/ns/{quote(conv.name)}/search"
    for question in asked:
        for scores, route, body in (
            (into.v4, "/v4/search", v4_body(question.text, conv.name)),
            (into.v5, path, v5_body(question.text)),
        ):
            results = http.call("POST", route, body)["results"]
            ranked, unmapped = rank(results, by_id, question.evidence)
            texts = [r.get("memory") or r.get("chunk") or "" for r in results]
            scores.add(question, ranked, texts)
            if scores is into.v4:
                into.unmapped_v4 += unmapped
                into.results += len(results)
            else:
                into.unmapped_v5 += unmapped


def run(
    http: Http, path: Path, conversations: int, sessions: int = 0, questions: int = 0
) -> Comparison:
    """Ingest the first `conversations` (their first `sessions`, or all) and compare the two
    routes on their questions (the first `questions` of each, or all)."""
    samples = json.loads(path.read_text())[:conversations]
    comparison = Comparison(Scores(), Scores())
    for sample, conv in zip(samples, load(path)[:conversations], strict=True):
        kept = sessions_of(sample)[: sessions or None]
        ingest(http, conv.name, kept)
        compare(http, conv, kept, comparison, questions)
    return comparison


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--conversations", type=int, default=CONVERSATIONS)
    args = parser.parse_args()
    state_dir = Path(tempfile.mkdtemp(prefix="smem-bench-"))
    daemon = DaemonProcess(state_dir).start(["--log-level", "warning"])
    http = Http(daemon.socket)
    try:
        comparison = run(http, args.path, args.conversations)
    finally:
        http.conn.close()
        daemon.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
    print(comparison.line(args.conversations))


if __name__ == "__main__":
    main()
