"""The LoCoMo format as the converters write it and `tests.bench.retrieval` reads it: a
conversation is numbered sessions, each dated and a list of turns whose ids (`D<session>:<turn>`)
a question's evidence names."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

LOCOMO_DATE = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
CHAT_ROLES = {"user": "User", "assistant": "Assistant"}  # a chat's roles, as turns name them
FIRST_DAY = datetime(2024, 1, 1, 10, 0)  # of a set whose sessions carry no dates


def day_of(number: int) -> datetime:
    """The date of session `number` of a set without dates: a day apart from FIRST_DAY."""
    return FIRST_DAY + timedelta(days=number - 1)


def put_session(
    conversation: dict[str, Any], number: int, date: datetime, turns: Sequence[tuple[str, str]]
) -> None:
    """Session `number` of `conversation`: its date, and its (speaker, text) turns as D<n>:<i>."""
    conversation[f"session_{number}_date_time"] = date.strftime(LOCOMO_DATE)
    conversation[f"session_{number}"] = [
        {"speaker": speaker, "dia_id": f"D{number}:{i}", "text": text}
        for i, (speaker, text) in enumerate(turns, start=1)
    ]
