"""Reconciliation without an LLM: is a new fact a duplicate, an update of a memory, or new?

This is the heuristic judge; an LLM judge can replace `decide` with the same signature. It only
trusts values it can see change (numbers, dates, proper names), so "Alex likes tea." against
"Alex likes coffee." is distinct: both can be true, and keeping both loses nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, Protocol

import msgspec


class Neighbour(Protocol):
    """An existing memory near the new fact, as the vector search returns it."""

    @property
    def id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def cosine(self) -> float: ...


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """What to do with a new fact; `target` is the memory it duplicates, updates or extends."""

    kind: Literal["duplicate", "updates", "extends", "contradicts", "distinct"]
    target: str | None
    score: float
    reason: str


_TOKEN = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|\d[\d,]*(?:\.\d+)?|[^\W\d_][\w'-]*")
_ARTICLES = frozenset({"the", "a", "an"})
_PRONOUNS = frozenset({"i", "we", "you", "he", "she", "they"})
# Capitalised at a sentence start but not names: they never open a subject or count as values.
_FUNCTION_WORDS = frozenset(
    {"my", "our", "your", "his", "her", "their", "its", "this", "that", "these", "those"}
    | {"i", "i'm", "i've", "i'd", "i'll"}
    | {"in", "on", "at", "since", "after", "before", "yesterday", "today", "last", "and", "but"}
)


def decide(
    new_text: str,
    neighbours: Sequence[Neighbour],
    *,
    duplicate_at: float = 0.97,
    update_at: float = 0.75,
) -> Decision:
    """Judge a new fact against its nearest existing memories (best first or not)."""
    if not neighbours:
        return Decision(kind="distinct", target=None, score=0.0, reason="no neighbours")
    ranked = sorted(neighbours, key=lambda n: n.cosine, reverse=True)
    best = ranked[0]
    if best.cosine >= duplicate_at:
        reason = f"cosine {best.cosine:.3f} >= {duplicate_at}"
        return Decision(kind="duplicate", target=best.id, score=best.cosine, reason=reason)
    # The same words are the same fact, whatever the embedder made of them.
    if same := next((n for n in ranked if _same_words(new_text, n.text)), None):
        return Decision(kind="duplicate", target=same.id, score=same.cosine, reason="same words")

    new_subject, new_values = _subject(new_text), _values(new_text)
    for near in ranked:
        if near.cosine < update_at:
            break
        if not new_subject or _subject(near.text) != new_subject:
            continue
        old_values = _values(near.text)
        gone, came = old_values - new_values, new_values - old_values
        # Both sides must hold a value the other lacks: a fact that only adds a value is new
        # information ("Alex lives in Seattle." -> "Alex lives in Seattle with Sam."), not a change.
        if gone and came:
            change = f"{', '.join(sorted(gone))} -> {', '.join(sorted(came))}"
            return Decision(
                kind="updates",
                target=near.id,
                score=near.cosine,
                reason=f"same subject '{' '.join(new_subject)}', changed value: {change}",
            )
    return Decision(
        kind="distinct",
        target=None,
        score=best.cosine,
        reason=f"no neighbour at cosine >= {update_at} with the same subject and a changed value",
    )


def _words(text: str) -> list[str]:
    """Dates, numbers and words, in order; punctuation dropped."""
    return _TOKEN.findall(text)


def _same_words(a: str, b: str) -> bool:
    """Equal but for case, spacing and punctuation: a duplicate whatever the embedder says."""
    return [w.casefold() for w in _words(a)] == [w.casefold() for w in _words(b)]


def _subject(text: str) -> tuple[str, ...]:
    """The fact's subject, lowercased.

    Articles are skipped. A leading pronoun is the subject ("I", "she"). A leading run of
    capitalised words is a name ("Alex", "New York"), and a possessive name takes the next word
    too ("Alex's sister"). Otherwise the subject is the words up to and including the first that
    is not a possessive or demonstrative ("my sister", "meeting" in "The meeting is at 3pm").
    """
    words = _words(text)
    while words and words[0].lower() in _ARTICLES:
        words = words[1:]
    if not words:
        return ()
    if words[0].lower() in _PRONOUNS:
        return (words[0].lower(),)
    if _is_name(words[0]):
        name = [w.lower() for w in _takewhile_names(words)]
        if name[-1].endswith("'s") and len(words) > len(name):
            name.append(words[len(name)].lower())
        return tuple(name)
    subject: list[str] = []
    for word in words:
        subject.append(word.lower())
        if word.lower() not in _FUNCTION_WORDS:
            break
    return tuple(subject)


def _values(text: str) -> set[str]:
    """Numbers, dates and proper names (capitalised runs not opening the sentence)."""
    words = _words(text)
    values: set[str] = set()
    run: list[str] = []
    for i, word in enumerate(words):
        if i > 0 and _is_name(word):
            run.append(word)
            continue
        if run:
            values.add(" ".join(run))
            run = []
        if word[0].isdigit():
            values.add(word.replace(",", ""))  # "1,000" and "1000" are one value
    if run:
        values.add(" ".join(run))
    return values


def _is_name(word: str) -> bool:
    """Capitalised and not a capitalised function word ("My", "In", "I")."""
    return word[:1].isupper() and word.lower() not in _FUNCTION_WORDS


def _takewhile_names(words: list[str]) -> list[str]:
    """The leading run of name words."""
    run: list[str] = []
    for word in words:
        if not _is_name(word):
            break
        run.append(word)
    return run
