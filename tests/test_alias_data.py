"""The labelled alias set (tests/data/aliases.jsonl) against the finder: every name the finder sees
in a world is labelled in exactly one group, every labelled name is seen, and the set is big enough
to bench alias suggestions on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smemd.engine.entities.mentions import mentions

DATA = Path(__file__).parent / "data" / "aliases.jsonl"


def worlds() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]


def pairs(world: dict[str, Any]) -> int:
    return sum(len(group) * (len(group) - 1) // 2 for group in world["entities"])


@pytest.mark.parametrize("world", worlds(), ids=lambda world: world["world"])
def test_a_world_labels_exactly_the_names_the_finder_sees(world: dict[str, Any]) -> None:
    assert 8 <= len(world["sentences"]) <= 25
    labelled = [name.lower() for group in world["entities"] for name in group]
    assert len(labelled) == len(set(labelled)), "a name is in more than one group"
    found = {m.name.lower() for text in world["sentences"] for m in mentions(text, [])}
    assert sorted(found - set(labelled)) == [], "found but not labelled"
    assert sorted(set(labelled) - found) == [], "labelled but never found"


def test_the_set_is_big_enough() -> None:
    all_worlds = worlds()
    assert len(all_worlds) >= 14
    assert len({world["world"] for world in all_worlds}) == len(all_worlds)
    assert sum(pairs(world) for world in all_worlds) >= 40
