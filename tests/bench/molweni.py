"""Molweni (Li et al., COLING 2020; Apache-2.0) as a development set in the LoCoMo format: people
helping one another on Ubuntu's IRC channel, in their own wording (lower case, typos, nicknames
such as "nit-wit" and "Sa[i]nT", commands and versions), and questions on what was said in it
("What command to mount?", "Why does the other group have no permission?").

SRC is its machine reading version's file (`MRC(withDiscourse)/test.json`: 100 dialogues of 8 to
14 messages, 2,560 answerable questions). The corpus asks of some stretches of the channel more
than once, each time as a dialogue (46 of its 100 mostly repeat an earlier one): such a dialogue
goes with the one it repeats, is no session of its own, and its questions point to the earlier
turns (a question whose answer lies in a message not said before is left out). The stretches
are dealt in their file order into C conversations, each dialogue a session, dated a day apart,
so that a question's dialogue lies among others of the same channel (by default two
conversations of 27 sessions and about 230 turns).

A turn is its speaker's nickname and message, its tokens' spaces closed ("ca n't" is "can't");
the corpus's placeholders (`URL`, `FILEPATH`, `EMOJI`) stay. Each answerable question makes one
(the same wording with the same evidence, once), whose evidence is the messages its answers'
spans lie in (an answer that names a speaker, each of the speaker's messages in its
dialogue); its category is its first word when that is a wh-word (`what`, `why`, `how`,
`who`, `where`, `when`, `which`), else `other`. Questions the corpus marks unanswerable are left
out.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from tests.bench.friendsqa import line
from tests.bench.locomo_format import day_of, put_session

WH_WORDS = ("what", "why", "how", "who", "where", "when", "which")
_FIRST_WORD = re.compile(r"[^\W\d_]+")  # "what's" opens with "what"


def molweni(source: Path, conversations: int) -> list[dict[str, Any]]:
    stretches = _stretches(json.loads(source.read_text())["data"]["dialogues"])
    size = -(-len(stretches) // conversations)  # the last may be shorter
    dealt = [stretches[n * size : (n + 1) * size] for n in range(conversations)]
    return [_sample(f"mw-{n + 1}", block) for n, block in enumerate(dealt) if block]


def _stretches(dialogues: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The dialogues by the stretch of the channel they are of: one whose messages were mostly
    in an earlier dialogue goes with it (after it), else it opens a stretch of its own."""
    stretches: list[list[dict[str, Any]]] = []
    where: dict[tuple[str, str], int] = {}  # a message -> the stretch it was first in
    for dialogue in dialogues:
        messages = [(edu["speaker"], edu["text"]) for edu in dialogue["edus"]]
        earlier = Counter(where[m] for m in messages if m in where).most_common(1)
        if earlier and earlier[0][1] * 2 > len(messages):
            stretches[earlier[0][0]].append(dialogue)
            continue
        for message in messages:
            where.setdefault(message, len(stretches))
        stretches.append([dialogue])
    return stretches


def category(question: str) -> str:
    """A question's category: the wh-word it opens with, else "other"."""
    first = _FIRST_WORD.match(question.strip().casefold())
    return first.group(0) if first and first.group(0) in WH_WORDS else "other"


def _spans(dialogue: dict[str, Any]) -> list[tuple[int, int]]:
    """Where each message lies in the dialogue's `context`, against which answers are placed:
    its speaker and text, lower-cased, "speaker: text", one space apart."""
    spans, start = [], 0
    for edu in dialogue["edus"]:
        piece = f"{edu['speaker'].lower()}: {edu['text'].lower()}"
        spans.append((start, start + len(piece)))
        start += len(piece) + 1
    return spans


def _lying(
    edus: list[dict[str, str]], spans: list[tuple[int, int]], ids: list[str | None], at: int
) -> list[str | None]:
    """The turns an answer lies in (None for a message of a repeat not said before): the message
    its span starts in, or, for a span on the name of a message's speaker ("Who will test
    again?" "abedo"), each message of that speaker said before."""
    for i, (start, end) in enumerate(spans):
        speaker = edus[i]["speaker"]
        if start <= at < start + len(speaker) + 2:
            return [ids[j] for j, e in enumerate(edus) if e["speaker"] == speaker and ids[j]]
        if start <= at < end:
            return [ids[i]]
    return [None]


def _sample(name: str, stretches: list[list[dict[str, Any]]]) -> dict[str, Any]:
    conversation: dict[str, Any] = {}
    qa: list[dict[str, Any]] = []
    speakers: list[str] = []
    asked: set[tuple[str, tuple[str, ...]]] = set()
    for number, (first, *repeats) in enumerate(stretches, start=1):
        turns = [(edu["speaker"], line(edu["text"])) for edu in first["edus"]]
        put_session(conversation, number, day_of(number), turns)
        speakers += [speaker for speaker, _ in turns]
        said: dict[tuple[str, str], str] = {}  # a message -> the dia_id of its turn
        for i, turn in enumerate(turns, start=1):
            said.setdefault(turn, f"D{number}:{i}")
        for dialogue in (first, *repeats):
            edus, spans = dialogue["edus"], _spans(dialogue)
            ids = [said.get((edu["speaker"], line(edu["text"]))) for edu in edus]
            for question in dialogue["qas"]:
                if question["is_impossible"]:
                    continue
                found = {
                    turn
                    for answer in question["answers"]
                    for turn in _lying(edus, spans, ids, answer["answer_start"])
                }
                if not found or None in found:
                    continue
                text = line(question["question"])
                evidence = tuple(sorted(turn for turn in found if turn is not None))
                if (text.casefold(), evidence) in asked:
                    continue
                asked.add((text.casefold(), evidence))
                qa.append({
                    "question": text, "answer": line(question["answers"][0]["text"]),
                    "evidence": list(evidence), "category": category(text),
                })  # fmt: skip
    # The format names two speakers; the bench reads each turn's own.
    conversation["speaker_a"], conversation["speaker_b"] = speakers[0], speakers[-1]
    return {"sample_id": name, "conversation": conversation, "qa": qa}
