"""FriendsQA (Yang and Choi, SIGDIAL 2019; Apache-2.0) as a development set in the LoCoMo format:
a sitcom's scenes as its people talk in them, five or six friends at once, lines of a word ("Out!")
among lines of a paragraph, and questions on what was said ("What does Ross want to name his
son?", "Why is Chandler upset?").

SRC is one or more of the repository's files (`dat/friendsqa_dev.json`, `friendsqa_tst.json`),
one scene a dialogue, named by its season, episode and scene (`s01_e23_c06`). An episode's scenes
make one conversation, each scene a session, in their order and dated a day apart. A turn is its
speakers ("Ross Geller", "Ross Geller and Joey Tribbiani"; `#ALL#` is "All") and their line, with
its tokens' spaces closed ("do n't" is "don't", "gon na" is "gonna", `` Hi '' is "Hi"). The
script's notes ("[Scene: Central Perk, …]") are left out: a chat has no narrator. Each question
makes one, whose evidence is the turns its answers' spans lie in (its annotators' answers may lie in
different lines, so that all@10 is stricter than the set means), unless every one lies in a note.
Its category is the word it was asked for (`what`, `who`, `when`, `where`, `why`, `how`), or
`paraphrased` for the set's second wording of a question, in other words than the lines'
("Who is the person that spent almost $70 on a Wonder Mop?").
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from tests.bench.locomo_format import day_of, put_session
from tests.bench.qmsum import said

NOTE, EVERYONE = "#NOTE#", "#ALL#"
_SPLIT_WORD = re.compile(r"\b(gon|wan|got) (na|ta)\b", re.IGNORECASE)  # "gon na": "gonna"
_QUOTED = re.compile(r"``\s*(.*?)\s*''")  # the treebank's quotes: `` Hi '' is "Hi"


def friendsqa(sources: list[Path]) -> list[dict[str, Any]]:
    episodes: dict[str, list[dict[str, Any]]] = {}
    scenes = [scene for source in sources for scene in json.loads(source.read_text())["data"]]
    for scene in sorted(scenes, key=lambda s: s["title"]):
        episodes.setdefault(scene["title"].rsplit("_", 1)[0], []).append(scene)
    return [_sample(f"fq-{episode}", scenes) for episode, scenes in episodes.items()]


def line(text: str) -> str:
    """A script's tokenised line as written."""
    return said(_QUOTED.sub(r'"\1"', _SPLIT_WORD.sub(r"\1\2", text)))


def _category(question_id: str) -> str:
    """`s01_e23_c06_Why` is `why`, `s01_e23_c06_Why_Paraphrased` is `paraphrased`."""
    asked = question_id.split("_")[3:]
    return "paraphrased" if "Paraphrased" in asked else asked[0].lower()


def _speaker(names: list[str]) -> str:
    return " and ".join("All" if name == EVERYONE else name for name in names)


def _sample(name: str, scenes: list[dict[str, Any]]) -> dict[str, Any]:
    conversation: dict[str, Any] = {}
    qa: list[dict[str, Any]] = []
    for number, scene in enumerate(scenes, start=1):
        turns: list[tuple[str, str]] = []
        qas: list[dict[str, Any]] = []
        where: dict[int, str] = {}  # an utterance's uid -> the dia_id of its turn
        for paragraph in scene["paragraphs"]:
            for utterance in paragraph["utterances:"]:
                speakers = utterance["speakers"]
                if speakers and NOTE not in speakers and (text := line(utterance["utterance"])):
                    turns.append((_speaker(speakers), text))
                    where[utterance["uid"]] = f"D{number}:{len(turns)}"
            qas.extend(paragraph["qas"])
        put_session(conversation, number, day_of(number), turns)
        for question in qas:
            uids = sorted({answer["utterance_id"] for answer in question["answers"]})
            if evidence := [where[uid] for uid in uids if uid in where]:
                qa.append({
                    "question": line(question["question"]),
                    "answer": line(question["answers"][0]["answer_text"]),
                    "evidence": evidence, "category": _category(question["id"]),
                })  # fmt: skip
    said_by = Counter(
        turn["speaker"] for turns in conversation.values() if isinstance(turns, list)
        for turn in turns
    )  # fmt: skip
    # The format names two speakers; the bench reads each turn's own.
    most = [speaker for speaker, _ in said_by.most_common(2)]
    conversation["speaker_a"], conversation["speaker_b"] = most[0], most[-1]
    return {"sample_id": name, "conversation": conversation, "qa": qa}
