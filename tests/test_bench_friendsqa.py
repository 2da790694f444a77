"""FriendsQA's scenes as a retrieval development set (tests/bench/friendsqa.py): an episode's
scenes one conversation, lines as written without the script's notes, and each question's
evidence the lines its answers lie in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bench.friendsqa import friendsqa, line
from tests.bench.retrieval import load


def _scene(title: str, lines: list[tuple[list[str], str]], qas: list[dict[str, Any]]) -> dict:
    utterances = [
        {"uid": uid, "speakers": speakers, "utterance": text}
        for uid, (speakers, text) in enumerate(lines)
    ]
    return {"title": title, "paragraphs": [{"utterances:": utterances, "qas": qas}]}


def _question(question_id: str, question: str, *uids: int) -> dict[str, Any]:
    answers = [
        {"answer_text": "…", "utterance_id": uid, "inner_start": 0, "inner_end": 0} for uid in uids
    ]
    return {"id": question_id, "question": question, "answers": answers}


def test_an_episode_becomes_one_conversation_of_its_scenes(tmp_path: Path) -> None:
    second = _scene(
        "s01_e23_c02",
        [(["#NOTE#"], "[Scene: Central Perk, everyone is there.]"),
         (["Ross Geller"], "We all agreed , my son 's name is Jamie ."),
         (["#ALL#"], "Whoa !"),
         (["Joey Tribbiani", "Chandler Bing"], "We 're gon na be late .")],
        [_question("s01_e23_c02_What", "What is Ross 's son 's name ?", 1),
         _question("s01_e23_c02_Where_Paraphrased", "Where is everyone ?", 0),
         _question("s01_e23_c02_Who", "Who will be late ?", 3, 0, 2)],
    )  # fmt: skip
    first = _scene(
        "s01_e23_c01",
        [(["Carol Willick"], "Count faster ."), (["Susan Bunch"], "It 's gon na be ok .")],
        [_question("s01_e23_c01_How_Paraphrased", "In what way did Susan comfort Carol ?", 1)],
    )  # fmt: skip
    other = _scene("s02_e01_c01", [(["Rachel Green"], "Hi .")], [])
    (tmp_path / "dev.json").write_text(json.dumps({"data": [second, other]}))
    (tmp_path / "tst.json").write_text(json.dumps({"data": [first]}))
    samples = friendsqa([tmp_path / "dev.json", tmp_path / "tst.json"])
    assert [s["sample_id"] for s in samples] == ["fq-s01_e23", "fq-s02_e01"]
    conversation = samples[0]["conversation"]
    # The scenes in their order, whichever file holds them, a day apart.
    assert conversation["session_1"] == [
        {"speaker": "Carol Willick", "dia_id": "D1:1", "text": "Count faster."},
        {"speaker": "Susan Bunch", "dia_id": "D1:2", "text": "It's gonna be ok."},
    ]
    assert conversation["session_2_date_time"] == "10:00 AM on 02 January, 2024"
    # The note is no turn; a line of several speakers is theirs.
    assert conversation["session_2"] == [
        {"speaker": "Ross Geller", "dia_id": "D2:1",
         "text": "We all agreed, my son's name is Jamie."},
        {"speaker": "All", "dia_id": "D2:2", "text": "Whoa!"},
        {"speaker": "Joey Tribbiani and Chandler Bing", "dia_id": "D2:3",
         "text": "We're gonna be late."},
    ]  # fmt: skip
    # A question answered only in a note is left out; the others name the turns kept.
    assert [(q["question"], q["category"], q["evidence"]) for q in samples[0]["qa"]] == [
        ("In what way did Susan comfort Carol?", "paraphrased", ["D1:2"]),
        ("What is Ross's son's name?", "what", ["D2:1"]),
        ("Who will be late?", "who", ["D2:2", "D2:3"]),
    ]  # fmt: skip
    path = tmp_path / "fq.json"
    path.write_text(json.dumps(samples))
    read = load(path)
    assert [len(c.documents) for c in read] == [5, 1]
    assert read[0].questions[2].evidence == frozenset({"D2:2", "D2:3"})


def test_a_scripts_tokens_are_closed_up_as_written() -> None:
    assert line("I do n't wan na , I got ta go !") == "I don't wanna, I gotta go!"
    assert line("Gon na do it .") == "Gonna do it."
    assert line("Who says `` What ? '' ?") == 'Who says "What?"?'
