"""Molweni's IRC dialogues as a retrieval development set (tests/bench/molweni.py): dialogues
that repeat a stretch of the channel are one session, each question's evidence the messages its
answers lie in (a speaker's name, each of their messages), and questions the corpus marks
unanswerable left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bench.molweni import category, molweni
from tests.bench.retrieval import load


def _dialogue(messages: list[tuple[str, str]], qas: list[dict[str, Any]]) -> dict[str, Any]:
    edus = [{"speaker": speaker, "text": text} for speaker, text in messages]
    context = " ".join(f"{speaker.lower()}: {text.lower()}" for speaker, text in messages)
    return {"edus": edus, "context": context, "qas": qas}


def _question(question: str, messages: list[tuple[str, str]], *answers: str) -> dict[str, Any]:
    """A question whose answers are these texts, placed in the dialogue's context as the corpus
    places them; no answer makes it one the corpus marks unanswerable."""
    context = " ".join(f"{speaker.lower()}: {text.lower()}" for speaker, text in messages)
    spans = [{"text": a, "answer_start": context.index(a.lower())} for a in answers]
    return {"question": question, "answers": spans, "is_impossible": not answers}


MOUNT = [
    ("JuJuBee_", "that i use between linux and windows"),
    ("nit-wit", "did you mount it with fstab ? give us a pastebin"),
    ("ikonia", "it 's treated as a mount mask"),
]
# The same stretch of the channel asked of again, with one message more.
MOUNT_AGAIN = [*MOUNT[1:], ("zykotick9", "umask are subtracted")]
GAMES = [
    ("sugi", "i ca n't play witcher"),
    ("Sa[i]nT", "plenty of gamers , just not fans ?"),
    ("sugi", "it 's old"),
    ("Sa[i]nT", "wan na try something interesting , try spore"),
]


def test_a_repeated_dialogue_is_one_session_and_its_questions_point_there(tmp_path: Path) -> None:
    source = tmp_path / "test.json"
    dialogues = [
        _dialogue(MOUNT, [
            _question("Where does JuJuBee_ use ?", MOUNT, "between linux and windows"),
            _question("What command to mount ?", MOUNT, "fstab"),
            _question("What is the newest version ?", MOUNT),  # unanswerable
        ]),
        _dialogue(MOUNT_AGAIN, [
            _question("What is it treated as ?", MOUNT_AGAIN, "a mount mask"),
            _question("What command to mount ?", MOUNT_AGAIN, "fstab"),  # asked already
            _question("What are subtracted ?", MOUNT_AGAIN, "umask"),  # not said before
        ]),
        _dialogue(GAMES, [
            _question("why sugi does not play ?", GAMES, "i ca n't play witcher"),
            _question("Sugi can't play what?", GAMES, "witcher", "plenty of gamers"),
            # A name is the answer: the corpus places it at the speaker's first message.
            _question("Who will try spore ?", GAMES, "sa[i]nt"),
        ]),
    ]  # fmt: skip
    source.write_text(json.dumps({"data": {"title": "", "dialogues": dialogues}}))
    one, two = molweni(source, 2)
    conversation = one["conversation"]
    assert conversation["session_1"] == [
        {"speaker": "JuJuBee_", "dia_id": "D1:1", "text": "that i use between linux and windows"},
        {"speaker": "nit-wit", "dia_id": "D1:2",
         "text": "did you mount it with fstab? give us a pastebin"},
        {"speaker": "ikonia", "dia_id": "D1:3", "text": "it's treated as a mount mask"},
    ]  # fmt: skip
    assert "session_2" not in conversation  # the repeat is no session of its own
    assert [(q["question"], q["evidence"], q["category"]) for q in one["qa"]] == [
        ("Where does JuJuBee_ use?", ["D1:1"], "where"),
        ("What command to mount?", ["D1:2"], "what"),
        ("What is it treated as?", ["D1:3"], "what"),
    ]
    assert two["conversation"]["session_1"][0]["text"] == "i can't play witcher"
    assert [(q["evidence"], q["category"]) for q in two["qa"]] == [
        (["D1:1"], "why"), (["D1:1", "D1:2"], "other"), (["D1:2", "D1:4"], "who"),
    ]  # fmt: skip
    path = tmp_path / "mw.json"
    path.write_text(json.dumps([one, two]))
    read = load(path)
    assert [len(c.documents) for c in read] == [3, 4]
    assert read[1].questions[1].evidence == frozenset({"D1:1", "D1:2"})


def test_a_questions_category_is_its_opening_wh_word() -> None:
    assert category("What's the game they talk about?") == "what"
    assert category("how many gamers can share?") == "how"
    assert category("Whats up?") == "other"
    assert category("Does it mount?") == "other"
