"""MemoryCode (Rakotonirina et al., 2025; Apache-2.0) as a development set in the LoCoMo format:
a mentor and a mentee over many sessions, the mentor's coding instructions scattered among talk
of other things, and each instruction later wanted by a coding task that never names it ("Write a
function that implements merge sort." wants "from now on, end all your function names with
'_b'").

SRC is the repository's `dataset` directory (one `dialogue_N.json` a conversation). The first C
dialogues of S sessions (in their number's order) are taken; a session's text is cut into turns
at each line that opens with the mentor's or the mentee's name. The dialogues carry no dates:
session n is dated n - 1 days after 1 January 2024, at 10:00. Each instruction a session adds or
updates makes a question, `Write a <its session's evaluation query>.`, whose evidence is the
mentor's turn of that session that shares the most words with the instruction (its category is
the session's kind: `instruction-add` or `instruction-update`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from smemd.engine.index.words import query_terms
from tests.bench.locomo_format import day_of, put_session


def memorycode(source: Path, conversations: int, sessions: int) -> list[dict[str, Any]]:
    numbered = sorted(source.glob("dialogue_*.json"), key=lambda p: int(p.stem.split("_")[1]))
    chosen: list[dict[str, Any]] = []
    for path in numbered:
        dialogue = json.loads(path.read_text())
        if len(dialogue["sessions"]) == sessions:
            chosen.append(_sample(f"mc-{path.stem.split('_')[1]}", dialogue))
            if len(chosen) == conversations:
                break
    return chosen


def _sample(name: str, dialogue: dict[str, Any]) -> dict[str, Any]:
    mentor, mentee = dialogue["context"]["mentor"], dialogue["context"]["mentee"]
    opens_turn = re.compile(rf"^({re.escape(mentor)}|{re.escape(mentee)}):\s*(.*)$")
    conversation: dict[str, Any] = {"speaker_a": mentor, "speaker_b": mentee}
    qa: list[dict[str, Any]] = []
    for number, session in enumerate(dialogue["sessions"], start=1):
        turns = _turns(session["text"], opens_turn)
        put_session(conversation, number, day_of(number), turns)
        instructions = [
            (kind, topic)
            for kind, topic in zip(session["type"], session["topic"], strict=True)
            if kind.startswith("instruction")
        ]
        for (kind, topic), task in zip(instructions, session["session_eval_query"], strict=False):
            evidence = _stated_in(topic, turns, mentor)
            if evidence is not None:
                qa.append({
                    "question": f"Write a {task}.", "answer": topic,
                    "evidence": [f"D{number}:{evidence}"], "category": kind,
                })  # fmt: skip
    return {"sample_id": name, "conversation": conversation, "qa": qa}


def _turns(text: str, opens_turn: re.Pattern[str]) -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []
    for line in text.splitlines():
        if opened := opens_turn.match(line):
            turns.append((opened.group(1), opened.group(2)))
        elif turns and line.strip():
            speaker, said = turns[-1]
            turns[-1] = (speaker, f"{said}\n{line}")
    return [(speaker, said.strip()) for speaker, said in turns if said.strip()]


def _stated_in(instruction: str, turns: list[tuple[str, str]], mentor: str) -> int | None:
    """The 1-based index of the mentor's turn sharing the most words with the instruction."""
    wanted = set(query_terms(instruction))
    best, found = 0, None
    for index, (speaker, text) in enumerate(turns, start=1):
        shared = len(wanted & set(query_terms(text)))
        if speaker == mentor and shared > best:
            best, found = shared, index
    return found
