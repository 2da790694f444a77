"""The texting form of a LoCoMo-format set (tests/bench/texting.py): a drawn share of the turns
typed as people text, lower-case and shortened, with the same speakers, images and evidence."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from tests.bench.retrieval import load
from tests.bench.texting import SHORTENINGS, texting
from tests.test_bench_messages import _sample


def _texted_sample() -> dict[str, Any]:
    sample = _sample()
    sample["conversation"]["session_1"].append(
        {
            "speaker": "Ben",
            "dia_id": "D1:4",
            "text": "Sorry, I'm really late: your birthday is tonight and I don't know what to "
            "get you.",
        }
    )
    return sample


def test_a_drawn_share_of_the_turns_is_typed_as_people_text(tmp_path: Path) -> None:
    source = [_texted_sample()]
    before = copy.deepcopy(source)
    assert texting(source, 0.0) == source  # none at share 0

    every = texting(source, 1.0, each=1.0)[0]["conversation"]["session_1"]
    assert [t["text"] for t in every] == [
        "hi ben! how was ur wk?",
        "great. we adopted a puppy! his name is toby, he is 3 months old",  # only the last period
        "so cute... what breed is he?",  # an ellipsis stays
        "sry, im rly late: ur bday is tonite and idk what to get u",
    ]
    assert SHORTENINGS["i dont know"] == ("idk",)  # the phrase, not "i" and "dunno"
    assert [t["dia_id"] for t in every] == ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert [t["speaker"] for t in every] == ["Ana", "Ben", "Ana", "Ben"]
    assert every[1]["blip_caption"] == "a photo of a puppy"  # the image is not the text
    assert every[1]["img_url"] == ["http://example.invalid/toby.jpg"]

    drawn = texting(source, 1.0)  # each listed word shortened or not by a draw of its own
    assert all(t["text"] == t["text"].lower() for t in drawn[0]["conversation"]["session_1"])
    assert drawn == texting(source, 1.0)  # drawn by a seeded hash
    assert drawn[0]["qa"] == source[0]["qa"]
    assert source == before  # untouched

    path = tmp_path / "texting.json"
    path.write_text(json.dumps(drawn))
    [conversation] = load(path)
    assert len(conversation.documents) == 4
    assert conversation.documents[1]["content"].endswith("[image: a photo of a puppy]")
    assert conversation.questions[0].evidence == {"D1:2"}
