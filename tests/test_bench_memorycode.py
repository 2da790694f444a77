"""MemoryCode's dialogues as a retrieval development set (tests/bench/memorycode.py): turns cut at
each speaker, sessions dated a day apart, and each instruction's question finding the mentor's
turn that gives it, not the mentee's echo of it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.memorycode import memorycode
from tests.bench.retrieval import load

SESSIONS = [
    {
        "type": ["filler-add"], "topic": ["Team lunches"], "session_eval_query": [],
        "text": "Luis: Hi Kiyo, welcome!\n\nKiyo: Thanks, Luis.\nGlad to be here.",
    },
    {
        "type": ["filler-add", "instruction-add"],
        "topic": ["Remote work", "always end function names with '_b'"],
        "session_eval_query": ["function that implements merge sort"],
        "text": (
            "Luis: How is remote work going?\n\nKiyo: Well, thanks.\n\n"
            "Luis: From now on, end all your function names with '_b'.\n\n"
            "Kiyo: Understood: I will always end function names with '_b'."
        ),
    },
]  # fmt: skip


def test_a_dialogue_becomes_dated_turns_and_an_instruction_a_question(tmp_path: Path) -> None:
    dialogue = {"context": {"mentor": "Luis", "mentee": "Kiyo"}, "sessions": SESSIONS}
    (tmp_path / "dialogue_7.json").write_text(json.dumps(dialogue))
    (tmp_path / "dialogue_8.json").write_text(json.dumps({**dialogue, "sessions": SESSIONS[:1]}))
    samples = memorycode(tmp_path, conversations=4, sessions=2)
    assert [s["sample_id"] for s in samples] == ["mc-7"]  # only dialogues of 2 sessions
    conversation = samples[0]["conversation"]
    assert conversation["session_1"][1] == {
        "speaker": "Kiyo", "dia_id": "D1:2", "text": "Thanks, Luis.\nGlad to be here.",
    }  # fmt: skip
    assert conversation["session_2_date_time"] == "10:00 AM on 02 January, 2024"
    assert samples[0]["qa"] == [{
        "question": "Write a function that implements merge sort.",
        "answer": "always end function names with '_b'",
        "evidence": ["D2:3"], "category": "instruction-add",
    }]  # fmt: skip
    # The retrieval benchmark reads it: every turn a document, the question with its evidence.
    path = tmp_path / "mc.json"
    path.write_text(json.dumps(samples))
    [read] = load(path)
    assert len(read.documents) == 6
    assert read.questions[0].evidence == frozenset({"D2:3"})
