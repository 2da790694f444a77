"""The messaging-app form of a LoCoMo-format set (tests/bench/messages.py): a turn's sentences
become messages of their own that keep its dia_id, its image with the last."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bench.messages import messages
from tests.bench.retrieval import load


def _sample() -> dict[str, Any]:
    return {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! How was your week?"},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Great. We adopted a puppy! His name is Toby, he is 3 months old.",
                    "blip_caption": "a photo of a puppy",
                    "img_url": ["http://example.invalid/toby.jpg"],
                },
                {"speaker": "Ana", "dia_id": "D1:3", "text": "so cute... what breed is he?"},
            ],
        },
        "qa": [{"question": "What is Ben's puppy called?", "evidence": ["D1:2"], "category": 1}],
    }


def test_each_sentence_is_a_message_of_its_turn(tmp_path: Path) -> None:
    source = [_sample()]
    cut = messages(source)
    session = cut[0]["conversation"]["session_1"]
    assert [(m["dia_id"], m["text"]) for m in session] == [
        ("D1:1", "Hi Ben!"),
        ("D1:1", "How was your week?"),
        ("D1:2", "Great."),
        ("D1:2", "We adopted a puppy!"),
        ("D1:2", "His name is Toby, he is 3 months old."),
        ("D1:3", "so cute... what breed is he?"),  # no capital after the ellipsis: one message
    ]
    assert [m.get("blip_caption") for m in session[2:5]] == [None, None, "a photo of a puppy"]
    assert all(m["speaker"] == "Ben" for m in session[2:5])
    assert source[0]["conversation"]["session_1"][1]["text"].startswith("Great. We")  # untouched

    path = tmp_path / "messages.json"
    path.write_text(json.dumps(cut))
    [conversation] = load(path)
    assert len(conversation.documents) == 6
    assert conversation.documents[4]["content"] == (
        "Ben: His name is Toby, he is 3 months old. [image: a photo of a puppy]"
    )
    assert conversation.questions[0].evidence == {"D1:2"}
