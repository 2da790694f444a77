"""A memorybench-shaped run: LoCoMo through the legacy routes, and v4 search against v5 search.

memorybench's Supermemory provider (TS SDK 4) adds one document per session through
`POST /v3/documents` with `containerTag` and `metadata: {sessionId, date}`, its content a date
preamble and the session's messages as JSON; it polls `GET /v3/documents/{id}` until done and
searches through `POST /v4/search`. This does the same over HTTP for the first two conversations
of ../shared/bench/locomo-dev.json, and asks each question (retrieval.py's: evidence normalised,
category 5 left out) twice on the same data: with memorybench's v4 body and with the equivalent
v5 `/ns/{ns}/search` body.

A result counts for the turns its text overlaps in its session's content, or, when it is no span
of it, for the message whose text holds what it says (smem reads the JSON as turns: a chunk is a
message, "Caroline: …", or a piece of one, a memory a fact of one); recall@10 is retrieval.py's any@10: at least one evidence turn in
the first ten results. Prints one line; `diff` is v4 minus v5, and should be 0 (v4 is a
translation of v5, not a second engine). `v4_with_chunks@10` counts under each v4 result the
chunks `include.chunks` puts there too (what memorybench's answering model reads; v5 has no such
thing). `unmapped` is the share of results whose text was found in no session (no turn).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from smemd.engine.ingest.sentence_facts import EMPHASIS
from smemd.engine.transcripts import said_text
from tests.bench.retrieval import (
    DEFAULT_PATH,
    Conversation,
    Http,
    Question,
    Scores,
    load,
    session_date,
)
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
    # What each turn says, as smem reads it (smemd.engine.ingest.chat_logs: a turn a message).
    said: dict[str, str]


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
        # The text of each message as the JSON carries it, the provider's escaping and all.
        said = {
            t["dia_id"]: json.loads(_js_json(m["content"]))
            for t, m in zip(turns, messages, strict=True)
        }
        session_id = f"{sample['sample_id']}-session_{n}"
        found.append(Session(session_id, content, when + ".000Z", spans, said))
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


def turns_of(text: str, session_id: str, sessions: dict[str, Session]) -> list[str] | None:
    """The turns `text` overlaps, in order, in its session (any, when unnamed); None when it is
    in none."""
    named = sessions.get(session_id)
    for session in [named] if named else sessions.values():
        at = session.content.find(text) if text else -1
        if at >= 0:
            end = at + len(text)
            return [d for d, (s, e) in session.turns.items() if s < end and at < e]
        # A message read as a turn ("Caroline: …", or a piece of a long one), or a fact of it
        # (cleaned as facts are: "church  friends", "We`ve" -> "church friends", "Weve").
        said = _plain(said_text(text))
        for turn, message in session.said.items():
            if said and said in _plain(message):
                return [turn]
    return None


def _plain(text: str) -> str:
    """Text as a fact is cleaned of emphasis and spaces (smemd.engine.ingest.sentence_facts)."""
    return " ".join(EMPHASIS.sub("", text).split())


def rank(
    results: list[dict[str, Any]],
    sessions: dict[str, Session],
    evidence: frozenset[str],
    nested: bool = False,
) -> tuple[list[str | None], int]:
    """One turn per result for `Scores.add` (an evidence turn when it covers one), and how many
    results were found in no session. A result covers what its memory or chunk text overlaps,
    and with `nested` what the chunks v4 puts under it overlap too."""
    ranked: list[str | None] = []
    unmapped = 0
    for result in results:
        session_id = (result.get("metadata") or {}).get("sessionId", "")
        turns = turns_of(result.get("memory") or result.get("chunk") or "", session_id, sessions)
        unmapped += turns is None
        if nested:
            for chunk in result.get("chunks") or []:
                turns = (turns or []) + (turns_of(chunk["content"], session_id, sessions) or [])
        hits = [t for t in turns or [] if t in evidence]
        ranked.append(hits[0] if hits else turns[0] if turns else None)
    return ranked, unmapped


@dataclass
class RouteScores:
    scores: Scores = field(default_factory=Scores)
    results: int = 0
    unmapped: int = 0

    def add(
        self, question: Question, results: list[dict[str, Any]], ranked: list[str | None]
    ) -> None:
        self.scores.add(
            question, ranked, [r.get("memory") or r.get("chunk") or "" for r in results]
        )
        self.results += len(results)

    def recall(self) -> float:
        return self.scores.hits[10] / max(self.scores.n, 1)


@dataclass
class Comparison:
    v4: RouteScores = field(default_factory=RouteScores)
    v5: RouteScores = field(default_factory=RouteScores)
    # v4's results again, each covering also the chunks under it: what memorybench's reader gets
    v4_nested: RouteScores = field(default_factory=RouteScores)

    def line(self, conversations: int) -> str:
        v4, v5 = self.v4.recall(), self.v5.recall()
        unmapped = [r.unmapped / max(r.results, 1) for r in (self.v4, self.v5)]
        return (
            f"memorybench conversations={conversations} questions={self.v4.scores.n} "
            f"v4_recall@10={v4:.3f} v5_recall@10={v5:.3f} diff={v4 - v5:+.3f} "
            f"v4_with_chunks@10={self.v4_nested.recall():.3f} "
            f"unmapped_v4={unmapped[0]:.3f} unmapped_v5={unmapped[1]:.3f}"
        )


def compare(
    http: Http, conv: Conversation, sessions: list[Session], into: Comparison, questions: int = 0
) -> None:
    """Ask the conversation's questions whose evidence is in `sessions` (the first `questions` of
    them, or all) through v4, then the same through v5."""
    by_id = {s.id: s for s in sessions}
    held = {turn for s in sessions for turn in s.turns}
    asked = [q for q in conv.questions if q.evidence <= held][: questions or None]
    for question in asked:
        v4 = http.call("POST", "/v4/search", v4_body(question.text, conv.name))["results"]
        v5 = http.call("POST", f"/ns/{quote(conv.name)}/search", v5_body(question.text))["results"]
        for route, results, nested in (
            (into.v4, v4, False),
            (into.v5, v5, False),
            (into.v4_nested, v4, True),
        ):
            ranked, unmapped = rank(results, by_id, question.evidence, nested)
            route.add(question, results, ranked)
            route.unmapped += unmapped


def run(
    http: Http, path: Path, conversations: int, sessions: int = 0, questions: int = 0
) -> Comparison:
    """Ingest the first `conversations` (their first `sessions`, or all) and compare the two
    routes on their questions (the first `questions` of each, or all)."""
    samples = json.loads(path.read_text())[:conversations]
    comparison = Comparison()
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
