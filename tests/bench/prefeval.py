"""PrefEval (Zhao et al., ICLR 2025; CC BY-NC 4.0) as a development set in the LoCoMo format: a
user's preferences, told outright or shown by a choice, among long chats with an assistant about
code and other things, and each preference later wanted by a request that does not name it ("I
strictly avoid restaurants that serve gluten" wanted by "I'll be visiting Rome soon. What
restaurants would you recommend?").

SRC is the repository's `benchmark_dataset` directory. Its `implicit_preference/choice-based`
files (one a topic: restaurants, hotels, fitness…) give each preference, its request, and a
four-turn exchange that shows it by a choice; `filtered_inter_turns.json` gives the chats the
benchmark puts between a preference and its request (LMSYS-Chat conversations: code, trivia,
writing). Conversation n holds, of every topic, the preferences n·P to n·P + P - 1 (P of
each topic, so preferences of one topic compete for their requests), every other one told (one
user turn) and the others chosen (the exchange), and every filler chat; each is a session, in
an order drawn by a seeded hash, dated a day apart. A preference's request is a question whose
evidence is the turn that tells it, or the user's choice and the assistant's acknowledgement of
it; its category says which (`told`, `chosen`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tests.bench.locomo_format import CHAT_ROLES, day_of, put_session

# The choice-based exchange, in its order: the user's question, the options, the choice, the
# acknowledgement; the last two are the evidence of what the user prefers.
EXCHANGE = ("query", "assistant_options", "user_selection", "assistant_acknowledgment")
CHOICE_EVIDENCE = (3, 4)


def prefeval(
    source: Path, conversations: int, per_topic: int, seed: str = "smem"
) -> list[dict[str, Any]]:
    topics = [
        json.loads(path.read_text())
        for path in sorted((source / "implicit_preference" / "choice-based").glob("*.json"))
    ]
    fillers = json.loads((source / "filtered_inter_turns.json").read_text())
    samples = []
    for n in range(conversations):
        taken = [
            record for records in topics for record in records[n * per_topic : (n + 1) * per_topic]
        ]
        samples.append(_sample(f"pref-{n + 1}", taken, fillers, seed))
    return samples


def _sample(
    name: str, records: list[dict[str, Any]], fillers: list[dict[str, Any]], seed: str
) -> dict[str, Any]:
    # A session: its turns (speaker, text), and for a preference, its request and evidence.
    sessions: list[tuple[str, list[tuple[str, str]], dict[str, Any] | None]] = []
    for index, record in enumerate(records):
        if index % 2 == 0:
            turns = [("User", record["preference"])]
            asked = {"question": record["question"], "evidence": (1,), "category": "told"}
        else:
            exchange = record["conversation"]
            turns = [
                (("User", "Assistant")[i % 2], exchange[key]) for i, key in enumerate(EXCHANGE)
            ]
            asked = {"question": record["question"], "evidence": CHOICE_EVIDENCE,
                     "category": "chosen"}  # fmt: skip
        sessions.append((record["preference"], turns, {**asked, "answer": record["preference"]}))
    for chat in fillers:
        turns = [(CHAT_ROLES[turn["role"]], turn["content"]) for turn in chat["conversation"]]
        sessions.append((chat["conversation_id"], turns, None))

    def drawn(session: tuple[str, Any, Any]) -> str:
        return hashlib.blake2b(f"{seed}/{name}/{session[0]}".encode()).hexdigest()

    conversation: dict[str, Any] = {"speaker_a": "User", "speaker_b": "Assistant"}
    qa: list[dict[str, Any]] = []
    for number, (_, turns, request) in enumerate(sorted(sessions, key=drawn), start=1):
        put_session(conversation, number, day_of(number), turns)
        if request is not None:
            evidence = [f"D{number}:{i}" for i in request["evidence"]]
            qa.append({**request, "evidence": evidence})
    return {"sample_id": name, "conversation": conversation, "qa": qa}
