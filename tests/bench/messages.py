"""A set in the LoCoMo format cut into the short messages people send in a messaging app: each
turn's sentences become messages of their own, one after another by the same speaker.

Real chats between people come in bursts of short messages ("omg", "we adopted a puppy!!",
"his name is Toby"), where LoCoMo's generated turns say it all in one. Cutting a turn at its
sentence ends gives the same conversations and questions in that shape: every message keeps its
turn's dia_id, so a question's evidence is still the turn, found when any of its messages is. A
turn's image (its caption and the like) goes with its last message.
"""

from __future__ import annotations

import copy
import re
from typing import Any

# A sentence ends at . ! or ? before a space and what may open the next: a capital, a digit, a
# quote or bracket, or an emoji.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\u2018\u201c\U0001F300-\U0001FAFF])")
_SESSION = re.compile(r"session_\d+")


def messages(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`samples` (LoCoMo's format) with every turn cut into one message per sentence."""
    cut = copy.deepcopy(samples)
    for sample in cut:
        talk = sample["conversation"]
        for key in [k for k in talk if _SESSION.fullmatch(k)]:
            talk[key] = [message for turn in talk[key] for message in _messages_of(turn)]
    return cut


def _messages_of(turn: dict[str, Any]) -> list[dict[str, Any]]:
    sentences = [s.strip() for s in _SENTENCE_END.split(turn["text"]) if s.strip()]
    *first, last = sentences or [turn["text"]]
    said = [{"speaker": turn["speaker"], "dia_id": turn["dia_id"], "text": text} for text in first]
    return [*said, {**turn, "text": last}]
