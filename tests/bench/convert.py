"""Public conversation sets in the LoCoMo format `tests.bench.retrieval` reads, as development data
of other kinds than LoCoMo's chit-chat. The data is not ours to commit: fetch it, convert it here,
and give the output to the bench (README: Benchmarks, which names each source and its licence).

    python3 -m tests.bench.convert longmemeval SRC OUT [--conversations C] [--questions Q]
        [--distractors D] [--types T,...]
    python3 -m tests.bench.convert memorycode SRC OUT [--conversations C] [--sessions S]
    python3 -m tests.bench.convert prefeval SRC OUT [--conversations C] [--per-topic P]
    python3 -m tests.bench.convert messages SRC OUT
    python3 -m tests.bench.convert reactions SRC OUT [--share S]
    python3 -m tests.bench.convert texting SRC OUT [--share S]
    python3 -m tests.bench.convert qmsum SRC... OUT [--max-evidence E]
    python3 -m tests.bench.convert friendsqa SRC... OUT
    python3 -m tests.bench.convert molweni SRC OUT [--conversations C]

`longmemeval`: LongMemEval (Wu et al., ICLR 2025; MIT), user-assistant chats whose evidence turns
are marked `has_answer`. SRC is its `longmemeval_s.json` (a list of records) or a directory of
one record per file. Each question comes with a haystack of its own (about 40 sessions, half a
million characters); here Q questions share one conversation, LoCoMo-like: their evidence
sessions and D other sessions of each one's haystack (drawn by a seeded hash of the question),
in date order — about as long as one haystack, each question's evidence among the others'. The
questions (only those of the `--types` named, when given) are dealt out by type in their file
order (abstention questions, with no evidence, are left out), C conversations. A turn is
`User:` or `Assistant:` and its text; a question's category is its type.

`memorycode`: MemoryCode's mentoring dialogues, whose questions are coding tasks that want an
instruction given sessions before (tests/bench/memorycode.py).

`prefeval`: PrefEval's preferences, told or shown by a choice among long chats with an
assistant, and the requests that want them (tests/bench/prefeval.py).

`messages`: a set already in the LoCoMo format (SRC) with each turn cut into one message per
sentence, as people write in a messaging app; evidence stays the turn (tests/bench/messages.py).

`reactions`: a set already in the LoCoMo format (SRC) with the reactions of a chat ("omg", "haha
yes") before about S of its changes of speaker, turns no question has for evidence
(tests/bench/reactions.py).

`texting`: a set already in the LoCoMo format (SRC) with about S of its turns typed as people
text: lower-case, without the apostrophes of contractions or a closing period, and shortened
("u", "bc", "bday", "idk"); evidence and questions stay (tests/bench/texting.py).

`qmsum`: QMSum's meetings as they were spoken, a series' meetings a conversation, and the
questions about what was said in them (tests/bench/qmsum.py); SRC is one or more of its
directories of meetings.

`friendsqa`: FriendsQA's scenes of a sitcom, an episode a conversation, and the questions on
what was said in them (tests/bench/friendsqa.py); SRC is one or more of its `dat/*.json` files.

`molweni`: Molweni's dialogues of people helping one another on Ubuntu's IRC channel, C
conversations of them, and the questions on what was said in them (tests/bench/molweni.py); SRC
is its `MRC(withDiscourse)/test.json`.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.bench.friendsqa import friendsqa
from tests.bench.locomo_format import CHAT_ROLES, put_session
from tests.bench.memorycode import memorycode
from tests.bench.messages import messages
from tests.bench.molweni import molweni
from tests.bench.prefeval import prefeval
from tests.bench.qmsum import qmsum
from tests.bench.reactions import reactions
from tests.bench.texting import texting


def longmemeval_records(source: Path) -> Iterator[dict[str, Any]]:
    if source.is_dir():
        for path in sorted(source.glob("*.json")):
            yield json.loads(path.read_text())
    else:
        yield from json.loads(source.read_text())


def longmemeval(
    source: Path,
    conversations: int,
    questions: int,
    distractors: int,
    types: frozenset[str] = frozenset(),
    seed: str = "smem",
) -> list[dict[str, Any]]:
    by_type: dict[str, list[dict[str, Any]]] = {}
    for record in longmemeval_records(source):
        has_evidence = any(t.get("has_answer") for s in record["haystack_sessions"] for t in s)
        wanted_type = not types or record["question_type"] in types
        if not record["question_id"].endswith("_abs") and has_evidence and wanted_type:
            by_type.setdefault(record["question_type"], []).append(record)
    dealt = [r for group in zip(*by_type.values(), strict=False) for r in group]
    wanted = conversations * questions
    if len(dealt) < wanted:
        dealt = [r for rs in itertools.zip_longest(*by_type.values()) for r in rs if r]
    return [
        _longmemeval_sample(f"lme-{n + 1}", dealt[n * questions : (n + 1) * questions],
                            distractors, seed)
        for n in range(min(conversations, len(dealt) // questions))
    ]  # fmt: skip


def _longmemeval_sample(
    name: str, records: list[dict[str, Any]], distractors: int, seed: str
) -> dict[str, Any]:
    sessions: dict[str, tuple[datetime, list[dict[str, Any]]]] = {}
    for record in records:
        evidence_sessions = set(record["answer_session_ids"])
        held = list(zip(record["haystack_session_ids"], record["haystack_dates"],
                        record["haystack_sessions"], strict=True))  # fmt: skip

        def drawn(session_id: str, question: str = record["question_id"]) -> str:
            return hashlib.blake2b(f"{seed}/{question}/{session_id}".encode()).hexdigest()

        others = sorted((s for s, _, _ in held if s not in evidence_sessions), key=drawn)
        for session_id, date, turns in held:
            if session_id in evidence_sessions or session_id in others[:distractors]:
                sessions.setdefault(session_id, (_lme_date(date), turns))
    conversation: dict[str, Any] = {"speaker_a": "User", "speaker_b": "Assistant"}
    where: dict[tuple[str, int], str] = {}  # (session id, turn index) -> dia_id
    for number, (session_id, (date, turns)) in enumerate(
        sorted(sessions.items(), key=lambda item: item[1][0]), start=1
    ):
        put_session(conversation, number, date,
                    [(CHAT_ROLES[turn["role"]], turn["content"]) for turn in turns])  # fmt: skip
        where.update(((session_id, i), f"D{number}:{i}") for i in range(1, len(turns) + 1))
    qa = []
    for record in records:
        evidence = [
            where[session_id, index]
            for session_id, turns in zip(record["haystack_session_ids"], record["haystack_sessions"],
                                         strict=True)
            for index, turn in enumerate(turns, start=1)
            if turn.get("has_answer") and (session_id, index) in where
        ]  # fmt: skip
        qa.append({"question": record["question"], "answer": str(record["answer"]),
                   "evidence": evidence, "category": record["question_type"]})  # fmt: skip
    return {"sample_id": name, "conversation": conversation, "qa": qa}


def _lme_date(text: str) -> datetime:
    """ "2023/05/20 (Sat) 02:21" """
    day, _, clock = text.partition(" (")
    return datetime.strptime(f"{day} {clock.partition(') ')[2]}", "%Y/%m/%d %H:%M")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    kinds = parser.add_subparsers(dest="kind", required=True)
    lme = kinds.add_parser("longmemeval", help="LongMemEval (longmemeval_s.json or a directory)")
    lme.add_argument("source", type=Path)
    lme.add_argument("out", type=Path)
    lme.add_argument("--conversations", type=int, default=6, help="how many (6)")
    lme.add_argument("--questions", type=int, default=12, help="questions in each (12)")
    lme.add_argument(
        "--distractors", type=int, default=3, help="other sessions of each question's haystack (3)"
    )
    lme.add_argument(
        "--types", default="", help="only questions of these types, comma-separated (all)"
    )
    code = kinds.add_parser("memorycode", help="MemoryCode (its dataset directory)")
    code.add_argument("source", type=Path)
    code.add_argument("out", type=Path)
    code.add_argument("--conversations", type=int, default=4, help="how many (4)")
    code.add_argument("--sessions", type=int, default=100, help="sessions in each (100)")
    pref = kinds.add_parser("prefeval", help="PrefEval (its benchmark_dataset directory)")
    pref.add_argument("source", type=Path)
    pref.add_argument("out", type=Path)
    pref.add_argument("--conversations", type=int, default=5, help="how many (5)")
    pref.add_argument("--per-topic", type=int, default=2, help="preferences of a topic in each (2)")
    chat = kinds.add_parser("messages", help="a LoCoMo-format set, each turn cut into messages")
    chat.add_argument("source", type=Path)
    chat.add_argument("out", type=Path)
    react = kinds.add_parser("reactions", help="a LoCoMo-format set with chat reactions")
    react.add_argument("source", type=Path)
    react.add_argument("out", type=Path)
    react.add_argument(
        "--share", type=float, default=0.5, help="changes of speaker with a reaction (0.5)"
    )
    text = kinds.add_parser("texting", help="a LoCoMo-format set typed as people text")
    text.add_argument("source", type=Path)
    text.add_argument("out", type=Path)
    text.add_argument("--share", type=float, default=0.5, help="turns typed as texts (0.5)")
    meet = kinds.add_parser("qmsum", help="QMSum (directories of its meetings' files)")
    meet.add_argument("sources", type=Path, nargs="+")
    meet.add_argument("out", type=Path)
    meet.add_argument(
        "--max-evidence", type=int, default=30, help="a question's evidence turns at most (30)"
    )
    friends = kinds.add_parser("friendsqa", help="FriendsQA (its dat/*.json files)")
    friends.add_argument("sources", type=Path, nargs="+")
    friends.add_argument("out", type=Path)
    irc = kinds.add_parser("molweni", help="Molweni (its MRC(withDiscourse)/test.json)")
    irc.add_argument("source", type=Path)
    irc.add_argument("out", type=Path)
    irc.add_argument("--conversations", type=int, default=2, help="how many (2)")
    args = parser.parse_args()
    if args.kind == "messages":
        samples = messages(json.loads(args.source.read_text()))
    elif args.kind == "reactions":
        samples = reactions(json.loads(args.source.read_text()), args.share)
    elif args.kind == "texting":
        samples = texting(json.loads(args.source.read_text()), args.share)
    elif args.kind == "memorycode":
        samples = memorycode(args.source, args.conversations, args.sessions)
    elif args.kind == "friendsqa":
        samples = friendsqa(args.sources)
    elif args.kind == "molweni":
        samples = molweni(args.source, args.conversations)
    elif args.kind == "qmsum":
        samples = qmsum(args.sources, args.max_evidence)
    elif args.kind == "prefeval":
        samples = prefeval(args.source, args.conversations, args.per_topic)
    else:
        types = frozenset(t.strip() for t in args.types.split(",") if t.strip())
        samples = longmemeval(
            args.source, args.conversations, args.questions, args.distractors, types
        )
    args.out.write_text(json.dumps(samples))
    turns = sum(
        len(v) for s in samples for k, v in s["conversation"].items() if k.startswith("session_")
        and not k.endswith("date_time")
    )  # fmt: skip
    print(f"{args.out}: {len(samples)} conversations, {turns} turns")


if __name__ == "__main__":
    main()
