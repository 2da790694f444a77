"""PrefEval as a retrieval development set (tests/bench/prefeval.py): every topic's preferences
shared out among conversations, told or shown by a choice, among the filler chats, and each
request's evidence the turns that carry its preference."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.prefeval import prefeval
from tests.bench.retrieval import load


def _record(topic: str, n: int) -> dict[str, object]:
    return {
        "preference": f"{topic} preference {n}",
        "question": f"{topic} request {n}?",
        "conversation": {
            "query": f"{topic} options {n}?",
            "assistant_options": "1. one 2. two",
            "user_selection": f"Two, for {topic} {n}.",
            "assistant_acknowledgment": "Two it is.",
        },
    }


def test_preferences_are_shared_out_told_or_chosen_among_the_fillers(tmp_path: Path) -> None:
    choices = tmp_path / "implicit_preference" / "choice-based"
    choices.mkdir(parents=True)
    for topic in ("hotels", "diet"):
        (choices / f"{topic}.json").write_text(json.dumps([_record(topic, n) for n in range(5)]))
    filler = {"conversation_id": "c1", "conversation": [
        {"role": "user", "content": "def f(): pass\n\nexplain"},
        {"role": "assistant", "content": "It does nothing."},
    ]}  # fmt: skip
    (tmp_path / "filtered_inter_turns.json").write_text(json.dumps([filler]))
    samples = prefeval(tmp_path, conversations=2, per_topic=2)
    assert [s["sample_id"] for s in samples] == ["pref-1", "pref-2"]
    # The second conversation takes each topic's next two; sorted by topic, diet comes first.
    answers = [q["answer"] for q in samples[1]["qa"]]
    assert sorted(answers) == sorted(
        ["diet preference 2", "diet preference 3", "hotels preference 2", "hotels preference 3"]
    )
    conversation = samples[1]["conversation"]
    sessions = {
        key: turns
        for key, turns in conversation.items()
        if key.startswith("session_") and not key.endswith("date_time")
    }
    assert len(sessions) == 5  # four preferences and the filler
    said = {t["dia_id"]: (t["speaker"], t["text"]) for turns in sessions.values() for t in turns}
    by_answer = {q["answer"]: q for q in samples[1]["qa"]}
    told, chosen = by_answer["diet preference 2"], by_answer["diet preference 3"]
    assert (told["question"], told["category"]) == ("diet request 2?", "told")
    assert [said[e] for e in told["evidence"]] == [("User", "diet preference 2")]
    assert chosen["category"] == "chosen"
    assert [said[e] for e in chosen["evidence"]] == [
        ("User", "Two, for diet 3."), ("Assistant", "Two it is."),
    ]  # fmt: skip
    assert ("User", "def f(): pass\n\nexplain") in said.values()
    assert conversation["session_2_date_time"] == "10:00 AM on 02 January, 2024"
    # The retrieval benchmark reads it: every turn a document, each request with its evidence.
    path = tmp_path / "pref.json"
    path.write_text(json.dumps(samples))
    first, _ = load(path)
    assert len(first.documents) == 2 + 4 + 4 + 2  # told, chosen, told, chosen, the filler
    assert {len(q.evidence) for q in first.questions} == {1, 2}
