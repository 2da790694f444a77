"""How scored passages become the list a search answers: a conversation's evidence gathers in
its sessions, so a passage is lifted by the best other passage of its session; and one
document's many results follow other documents' best instead of filling the top.

A session is a run of a conversation's turns close in date (smemd.engine.sessions), each turn a
document dated by its session or by its own time. Both steps were measured on evidence recall
over chit-chat and assistant chats (README: Benchmarks).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol, TypeVar

from smemd.engine.recall.scoring import Passage
from smemd.engine.sessions import session_starts
from smemd.store.records import Document


class Scored(Protocol):
    score: float


T = TypeVar("T", bound=Scored)


def sessions_of(passages: Sequence[Passage], documents: dict[str, Document]) -> list[float | None]:
    """Each passage's session among them (smemd.engine.sessions), by its message's time (a chat
    log's) or its document's date, when the search read its document; no date, no session."""
    dates = [_date_of(passage, documents) for passage in passages]
    starts = session_starts(date for date in dates if date is not None)
    return [starts[date] if date is not None else None for date in dates]


def _date_of(passage: Passage, documents: dict[str, Document]) -> float | None:
    if passage.chunk is not None:
        if passage.chunk.said_at is not None:  # a chat log's message: its sitting, not the log's
            return passage.chunk.said_at
        document_id: str | None = passage.chunk.document_id
    else:
        document_id = passage.memories[0].document_id if passage.memories else None
    document = documents.get(document_id) if document_id else None
    return document.content_date if document is not None else None


def lift_sessions(
    scores: Sequence[float], sessions: Sequence[Hashable | None], weight: float
) -> list[float]:
    """Each score plus `weight` times the best other score of its session."""
    best: dict[Hashable, tuple[float, float]] = {}  # session -> its two best scores
    for score, session in zip(scores, sessions, strict=True):
        if session is None:
            continue
        first, second = best.get(session, (0.0, 0.0))
        best[session] = (score, first) if score >= first else (first, max(second, score))
    lifted = []
    for score, session in zip(scores, sessions, strict=True):
        if session is None or not weight:
            lifted.append(score)
            continue
        first, second = best[session]
        lifted.append(score + weight * (second if score >= first else first))
    return lifted


def spread(items: list[T], repeat: float, source: Callable[[T], Hashable]) -> list[T]:
    """Best first by `.score`, each further item of one source at `repeat` times the one before
    it (its score set to that). Equal scores keep their order: a passage's members come in its
    own (smemd.engine.recall.scoring.Scorer.members)."""
    queue = [(-item.score, i) for i, item in enumerate(items)]
    heapq.heapify(queue)
    shown: Counter[Hashable] = Counter()
    ranked: list[T] = []
    while queue:
        negative, i = heapq.heappop(queue)
        item = items[i]
        origin = source(item)
        due = item.score * repeat ** shown[origin]
        if -negative > due:  # its source was listed meanwhile: it waits its turn at `due`
            heapq.heappush(queue, (-due, i))
            continue
        item.score = due
        shown[origin] += 1
        ranked.append(item)
    return ranked
