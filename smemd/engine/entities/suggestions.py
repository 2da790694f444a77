"""Alias suggestions: which of a namespace's entities may be one, from their names and from what
the memories say of each.

Names decide first: the same words, a nickname ("Bob" / "Robert Smith"), an initial, an acronym
("NYC" / "New York City"), a part of a longer name ("Smith" / "Bob Smith"), a spelling slip
("Caitlin" / "Caitlyn"). A close name is suggested on its own; a looser one only when the
embedding of what is said about each (the centroid of its memories' vectors) agrees. Two names
in one memory are rarely one entity, and a short name that fits several longer ones fits none
for sure: both weigh a pair down; so do titles that clash ("Mr" / "Mrs"). Kinds are not
compared: the finder's guess of one is too often wrong. A suggestion is only that: the judge
or a person decides. Measured by tests/bench/aliases.py.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import combinations

import numpy as np

from smemd.engine.entities.nicknames import full_forms, same_given_name

NAME_ALONE = 0.85  # a name at least this close is suggested whatever the contexts say
NAME_WITH_CONTEXT = 0.7  # a looser one needs contexts at least CONTEXT_AT alike
CONTEXT_AT = 0.5
# A name that is part of one other ("Raj" / "Raj Patel") is the commonest alias of all; a part
# of several, or one behind a title, is weighed down (_AMBIGUOUS) and left out.
_PART = NAME_ALONE
_AMBIGUOUS = 0.65  # a part of several different longer names, or a title against a given name
_NICKNAMES = 0.75  # two short forms of what may be one given name
_BUCKET_CAP = 200  # a blocking key this common says nothing about a pair
_TITLES = set(
    "mr mrs ms miss mx dr doctor prof professor sir dame lady lord aunt auntie uncle coach"
    " officer captain capt rev reverend judge grandma grandpa nana".split()
)
# Titles that cannot name one person: a man's against a woman's, an aunt's against an uncle's.
_HIS, _HERS = (
    {"mr", "sir", "lord", "uncle", "grandpa"},
    {"mrs", "ms", "miss", "dame", "lady", "aunt", "auntie", "grandma", "nana"},
)
# The last word of a name that makes it a thing of its own beside the place it names.
_HEADS = set(
    "city state college university school tech station airport park street road square hall"
    " bridge minster cathedral museum river lake county bay beach island centre center".split()
)
_POSSESSIVE = re.compile(r"['\u2019]s?$")
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Named:
    """An entity as suggestions see it: its names (its own first), and its memories."""

    id: str
    namespace: str
    names: tuple[str, ...]
    kind: str
    memories: int
    memory_ids: frozenset[str] = frozenset()
    context: np.ndarray | None = None  # unit centroid of its memories' vectors
    facts: tuple[str, ...] = ()  # a few of its memories, newest first, for a judge to read


@dataclass(frozen=True)
class Suggestion:
    keep: Named  # the one more often named (its name stays)
    alias: Named
    name_score: float
    context_score: float | None
    score: float


def words(name: str) -> tuple[str, list[str]]:
    """(the title that opens it, or ""; its lower-case words without the title and articles)."""
    found = [w for w in _WORD.findall(_POSSESSIVE.sub("", name.strip()).lower()) if w != "the"]
    if len(found) > 1 and found[0] in _TITLES:
        return found[0], found[1:]
    return "", found


def _titles_clash(a: str, b: str) -> bool:
    return (a in _HIS and b in _HERS) or (a in _HERS and b in _HIS)


def _word_match(a: str, b: str) -> bool:
    if len(a) == 1 or len(b) == 1:  # an initial
        return a[0] == b[0]
    return same_given_name(a, b)


def _part_of(short: list[str], long: list[str]) -> bool:
    """Every word of `short` matches a word of `long`, in order."""
    at = 0
    for word in short:
        while at < len(long) and not _word_match(word, long[at]):
            at += 1
        if at == len(long):
            return False
        at += 1
    return True


def _is_part(a: str, b: str) -> bool:
    """One name is plainly a part of the other ("Raj" of "Raj Patel"): not behind a title, and
    not a place's name before what makes another thing of it ("Boston" of "Boston College")."""
    (title_a, wa), (title_b, wb) = words(a), words(b)
    if not wa or not wb or len(wa) == len(wb):
        return False
    (short, title), long = ((wa, title_a), wb) if len(wa) < len(wb) else ((wb, title_b), wa)
    head = len(short) == 1 and long[-1] in _HEADS and long[0] == short[0]
    return not title and not head and _part_of(short, long)


def _acronym(one: list[str], many: list[str]) -> bool:
    letters = "".join(w[0] for w in many if w not in ("of", "and", "for", "&"))
    return len(one) == 1 and len(many) > 1 and len(letters) > 1 and one[0] == letters


def name_similarity(a: str, b: str) -> float:
    """How surely two names can name one entity, by the names alone (0: they cannot)."""
    (title_a, wa), (title_b, wb) = words(a), words(b)
    if not wa or not wb or _titles_clash(title_a, title_b):
        return 0.0
    if wa == wb:
        return 1.0 if title_a == title_b or not (title_a and title_b) else _AMBIGUOUS
    if _acronym(wa, wb) or _acronym(wb, wa):
        return 0.9
    if len(wa) == len(wb) and all(_word_match(x, y) for x, y in zip(wa, wb, strict=True)):
        # "Bob" / "Robert" is one name; "Bob" / "Rob" are two short forms that may share a
        # full name, as "Alex" and "Sasha" do without being one person.
        shorts = [x != y and not full_forms(x) >= {x} and not full_forms(y) >= {y}
                  for x, y in zip(wa, wb, strict=True)]  # fmt: skip
        return _NICKNAMES if any(shorts) else 0.9
    if len(wa) != len(wb):
        short, long = (wa, wb) if len(wa) < len(wb) else (wb, wa)
        if _part_of(short, long):
            # "Mr Chen" may be Lily Chen's father; "Boston" is not Boston College.
            return _PART if _is_part(a, b) else _AMBIGUOUS
    joined_a, joined_b = " ".join(wa), " ".join(wb)
    if min(len(joined_a), len(joined_b)) >= 5 and joined_a[0] == joined_b[0]:
        ratio = SequenceMatcher(None, joined_a, joined_b).ratio()
        if ratio >= 0.8:
            return round(ratio * 0.9, 3)
    return 0.0


def _keys(name: str) -> Iterator[str]:
    """Blocking keys: two names can only be close if they share one."""
    _, found = words(name)
    for word in found:
        yield word
        yield word[:3]
        yield from full_forms(word)
    if len(found) > 1:
        yield "".join(w[0] for w in found)


def _context(a: Named, b: Named) -> float | None:
    if a.context is None or b.context is None:
        return None
    return round(float(a.context @ b.context), 3)


def suggestions(entities: Sequence[Named], settled: set[frozenset[str]]) -> list[Suggestion]:
    """Pairs that may be one entity, best first; pairs in `settled` are left out."""
    buckets: dict[str, list[int]] = defaultdict(list)
    for i, entity in enumerate(entities):
        for key in {k for name in entity.names for k in _keys(name)}:
            buckets[key].append(i)
    pairs = {
        pair for members in buckets.values() if len(members) <= _BUCKET_CAP
        for pair in combinations(members, 2)
    }  # fmt: skip
    scored: dict[tuple[int, int], float] = {}
    for i, j in pairs:
        a, b = entities[i], entities[j]
        # Kinds are not compared: the finder's guess of a kind is often wrong ("Rob" a place).
        if frozenset((a.id, b.id)) in settled:
            continue
        score = max(name_similarity(x, y) for x in a.names for y in b.names)
        if score >= NAME_WITH_CONTEXT:
            scored[(i, j)] = score
    _weigh_down_ambiguous(entities, scored)
    found = []
    for (i, j), name_score in scored.items():
        a, b = entities[i], entities[j]
        if a.memory_ids & b.memory_ids:  # named side by side: two, as a rule
            name_score = round(name_score * 0.5, 3)
        context = _context(a, b)
        if name_score < NAME_ALONE and (
            name_score < NAME_WITH_CONTEXT or context is None or context < CONTEXT_AT
        ):
            continue
        keep, alias = sorted((a, b), key=lambda e: (-e.memories, -len(e.names[0]), e.id))
        score = round(0.7 * name_score + 0.3 * max(context or 0.0, 0.0), 3)
        found.append(Suggestion(keep, alias, name_score, context, score))
    return sorted(found, key=lambda s: (-s.score, s.keep.names[0].lower(), s.alias.names[0]))


def _weigh_down_ambiguous(entities: Sequence[Named], scored: dict[tuple[int, int], float]) -> None:
    """A name that is a part of several names that are not close to each other ("Bob" of both
    Bob Smith and Bob Jones) is a part of none for sure."""
    parts: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (i, j), score in scored.items():
        a, b = entities[i].names, entities[j].names
        if score <= _PART and any(_is_part(x, y) for x in a for y in b):
            shorter = min((i, j), key=lambda k: len(words(entities[k].names[0])[1]))
            parts[shorter].append((i, j))
    for shorter, pairs in parts.items():
        others = [j if i == shorter else i for i, j in pairs]
        if any(
            max(name_similarity(x, y) for x in entities[p].names for y in entities[q].names)
            < NAME_WITH_CONTEXT
            for p, q in combinations(others, 2)
        ):
            for pair in pairs:
                scored[pair] = _AMBIGUOUS
