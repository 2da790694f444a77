"""The chat-reactions form of a LoCoMo-format set (tests/bench/reactions.py): where the speaker
changes, the next speaker may first react, in a turn no question has for evidence."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.reactions import REACTIONS, reactions
from tests.bench.retrieval import load
from tests.test_bench_messages import _sample


def test_reactions_come_where_the_speaker_changes_from_the_next_speaker(tmp_path: Path) -> None:
    source = [_sample()]
    turns = source[0]["conversation"]["session_1"]
    assert reactions(source, 0.0) == source  # none at share 0
    every = reactions(source, 1.0)[0]["conversation"]["session_1"]
    assert [t["dia_id"] for t in every] == ["D1:1", "R1:0", "D1:2", "R1:1", "D1:3"]
    assert [t["speaker"] for t in every] == ["Ana", "Ben", "Ben", "Ana", "Ana"]
    assert every[1]["text"] in REACTIONS and every[3]["text"] in REACTIONS
    assert reactions(source, 1.0) == reactions(source, 1.0)  # drawn by a seeded hash
    assert source[0]["conversation"]["session_1"] == turns  # untouched

    path = tmp_path / "reactions.json"
    path.write_text(json.dumps(reactions(source, 1.0)))
    [conversation] = load(path)
    assert len(conversation.documents) == 5
    assert conversation.questions[0].evidence == {"D1:2"}
