"""A set in the LoCoMo format with the reactions people send in a chat: where one speaker's
messages end and the other's begin, the other sometimes first reacts ("omg", "haha yes",
"love that") with a message that says nothing of its own.

LoCoMo's generated turns never do; real chats are full of them. Each reaction is a turn of its
own (dia_id `R<session>:<n>`) that no question has for evidence, so the set measures how much
such messages crowd a search's results. Where and which is drawn by a seeded hash: the same
source gives the same set.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

REACTIONS = (
    "lol", "omg", "haha", "nice!", "wow", "ok", "yeah", "aww", "so cool!", "same", "haha yes",
    "really?", "oh no", "love that", "yay!", "hmm",
)  # fmt: skip
_SESSION = re.compile(r"session_(\d+)")


def reactions(
    samples: list[dict[str, Any]], share: float, seed: str = "smem"
) -> list[dict[str, Any]]:
    """`samples` (LoCoMo's format) with a reaction before about `share` of the changes of speaker."""
    out = copy.deepcopy(samples)
    for sample in out:
        talk = sample["conversation"]
        for key in [k for k in talk if _SESSION.fullmatch(k)]:
            drawn_by = f"{seed}/{sample['sample_id']}/{key}"
            talk[key] = _reacted(talk[key], key.removeprefix("session_"), drawn_by, share)
    return out


def _reacted(
    turns: list[dict[str, Any]], session: str, seed: str, share: float
) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    for i, turn in enumerate(turns):
        kept.append(turn)
        after = turns[i + 1] if i + 1 < len(turns) else None
        if after is None or after["speaker"] == turn["speaker"] or _draw(f"{seed}/{i}") >= share:
            continue
        reaction = REACTIONS[int(_draw(f"{seed}/{i}/which") * len(REACTIONS))]
        kept.append({"speaker": after["speaker"], "dia_id": f"R{session}:{i}", "text": reaction})
    return kept


def _draw(key: str) -> float:
    """A number in [0, 1) drawn by `key`."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") / 2**64
