"""The history bench (tests/bench/history.py) sends a conversation as one chat log and reads each
result's chunk as a turn by its position: the turns it expects must be the chunks smem makes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from smemd.engine.ingest.chat_logs import cut
from tests.bench.history import history
from tests.bench.retrieval import load

LONG = "I kept a diary of the whole trip, every stop and every meal. " * 40  # several chunks


def test_each_chunk_of_a_history_is_the_turn_the_bench_counts_it_for(tmp_path: Path) -> None:
    turns = [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "We got a puppy!"},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "", "blip_caption": "a small dog"},
        {"speaker": "Ben", "dia_id": "D1:3", "text": ""},  # says nothing: no message
        {"speaker": "Ana", "dia_id": "D1:4", "text": LONG},
    ]
    later = [{"speaker": "Ben", "dia_id": "D2:1", "text": "How is Toby?"}]
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1": turns, "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_2": later, "session_2_date_time": "9:00 am on 20 May, 2023",
        },
        "qa": [{"question": "What is the puppy called?", "evidence": ["D2:1"], "category": 1}],
    }  # fmt: skip
    path = tmp_path / "set.json"
    path.write_text(json.dumps([sample]))
    (conv,) = load(path, 40.0)
    content, expected = history(conv)
    parts = cut(content).chunks
    assert expected == ["D1:1", "D1:2", *["D1:4"] * (len(parts) - 3), "D2:1"]
    assert len(parts) == len(expected) and len(parts) > 4
    assert parts[1].chunk.text == "Ben: [image: a small dog]"
    # Each message is sent when the set says: its session's date, 40 s a turn.
    sent = [datetime.fromtimestamp(p.said_at or 0, UTC).isoformat() for p in parts]
    assert sent[0] == "2023-05-08T13:56:00+00:00" and sent[1] == "2023-05-08T13:56:40+00:00"
    assert sent[-1] == "2023-05-20T09:00:00+00:00"
