"""LongMemEval's records as a retrieval development set (tests/bench/convert.py): questions
sharing one conversation, each with its evidence sessions and a few others of its haystack, in
date order; evidence the turns marked `has_answer`; abstentions and other types left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bench.convert import longmemeval
from tests.bench.retrieval import load


def _record(qid: str, kind: str, day: int) -> dict[str, Any]:
    said = {"role": "assistant", "content": f"The answer to {qid} is 7.", "has_answer": True}
    return {
        "question_id": qid, "question_type": kind, "question": f"What of {qid}?", "answer": 7,
        "answer_session_ids": [f"{qid}-e"],
        "haystack_session_ids": [f"{qid}-e", f"{qid}-x", f"{qid}-y"],
        "haystack_dates": [f"2023/05/{day:02} (Sat) 10:00", "2023/04/01 (Sat) 09:00",
                           "2023/04/02 (Sun) 09:00"],
        "haystack_sessions": [
            [{"role": "user", "content": f"Tell me about {qid}."}, said],
            [{"role": "user", "content": "Something else."}],
            [{"role": "user", "content": "Another thing."}],
        ],
    }  # fmt: skip


def test_questions_of_the_types_named_share_a_conversation(tmp_path: Path) -> None:
    records = [
        _record("a1", "single-session-assistant", 20),
        _record("u1", "single-session-user", 21),
        _record("a2", "single-session-assistant", 10),
        _record("a3_abs", "single-session-assistant", 22),  # an abstention: no evidence asked
    ]
    for n, record in enumerate(records):
        (tmp_path / f"{n}.json").write_text(json.dumps(record))
    types = frozenset({"single-session-assistant"})
    [sample] = longmemeval(tmp_path, conversations=1, questions=2, distractors=1, types=types)
    assert [q["question"] for q in sample["qa"]] == ["What of a1?", "What of a2?"]
    conversation = sample["conversation"]
    dates = [v for k, v in conversation.items() if k.endswith("_date_time")]
    # Each question's evidence session and one other of its haystack, the earliest first.
    assert len(dates) == 4
    assert dates[-1] == "10:00 AM on 20 May, 2023"
    said = {
        t["dia_id"]: t["text"]
        for k, turns in conversation.items()
        if k.startswith("session_") and not k.endswith("date_time")
        for t in turns
    }
    for question, qid in zip(sample["qa"], ("a1", "a2"), strict=True):
        assert [said[e] for e in question["evidence"]] == [f"The answer to {qid} is 7."]
        assert question["category"] == "single-session-assistant"
    # Without types, every kind is dealt out.
    [every] = longmemeval(tmp_path, conversations=1, questions=3, distractors=1)
    assert {q["category"] for q in every["qa"]} == {
        "single-session-assistant",
        "single-session-user",
    }
    path = tmp_path / "out.json"
    path.write_text(json.dumps([sample]))
    [read] = load(path)
    assert len(read.questions) == 2
