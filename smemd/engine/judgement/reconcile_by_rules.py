"""Reconciliation without an LLM: is a new fact a duplicate, an update, an extension, or new?

This is the heuristic judge; an LLM judge can replace `decide` with the same signature. It reads
each fact's parts (`fact_parts`) and trusts the embedder only where they agree:

- another subject is never the same fact ("Alex's sister" is not "Alex's brother");
- a value (number, date, name, code) that one says and the other does not vetoes a duplicate
  however close the vectors ("Person232 owns 235 kites." / "Person233 owns 236 kites.");
- a changed value, a negation, or a word that states a change ("moved to", "now", "no longer")
  about the same attribute is an update, unless the value names which thing it is ("Room 101");
- all the old fact says and more is an extension; the same values in other words, a duplicate.

Lowercase words are not values: "Alex likes tea." against "Alex likes coffee." is distinct, as
both can be true, and keeping both loses nothing. tests/bench/updates.py measures it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from smemd.engine.index.words import tokens
from smemd.engine.judgement.fact_parts import FactParts, meets
from smemd.engine.judgement.vocabulary import PEOPLE, REPLACEMENT_CUES, attributes_of


class Neighbour(msgspec.Struct, frozen=True):
    """An existing memory near the new fact, as the vector search returns it."""

    id: str
    text: str
    cosine: float


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """What to do with a new fact; `target` is the memory it duplicates, updates or extends."""

    kind: Literal["duplicate", "updates", "extends", "contradicts", "distinct"]
    target: str | None
    score: float
    reason: str


# Two facts with the same subject and values are one when they share two thirds of their words
# past SAME_FACT_AT, half past PARAPHRASE_AT, and whatever their words past REWORDED_AT: the
# nearest pairs that differ ("starts" / "ends at 8:15") measure about 0.9.
SAME_FACT_AT = 0.80
PARAPHRASE_AT = 0.88
REWORDED_AT = 0.93
# A changed value is a change of the same attribute past this, without a word that says so.
CHANGED_AT = 0.75
NEGATED_AT = 0.60
# A change stated by a word that says one value replaced another ("moved to", "now", "no
# longer") of an attribute both name may be worded far from the old fact: "I work at Google." /
# "I joined Microsoft last month." is 0.23 apart. Sharing only a word, the facts must be nearer.
# A word that only says something happened ("started", "bought", "new") states no change.
STATED_CHANGE_AT = 0.20
SAID_CHANGE_AT = 0.50


def decide(
    new_text: str,
    neighbours: Sequence[Neighbour],
    *,
    duplicate_at: float = 0.97,
    update_at: float = CHANGED_AT,
) -> Decision:
    """Judge a new fact against its nearest existing memories (best first or not).

    A duplicate of any neighbour wins (the fact is known); else an update of the nearest it
    changes; else an extension; else the fact is distinct. `duplicate_at` is the cosine past
    which two facts with the same subject and values need no more evidence to be one.
    """
    if not neighbours:
        return Decision(kind="distinct", target=None, score=0.0, reason="no neighbours")
    ranked = sorted(neighbours, key=lambda n: n.cosine, reverse=True)
    new = FactParts(new_text)
    found: dict[str, Decision] = {}
    for near in ranked:
        kind, reason = relate(new, FactParts(near.text), near.cosine, duplicate_at, update_at)
        if kind != "distinct" and kind not in found:
            found[kind] = Decision(kind=kind, target=near.id, score=near.cosine, reason=reason)
    for kind in ("duplicate", "updates", "extends"):
        if kind in found:
            return found[kind]
    return Decision(
        kind="distinct", target=None, score=ranked[0].cosine,
        reason="no neighbour with the same subject that it restates, changes or extends",
    )  # fmt: skip


Kind = Literal["duplicate", "updates", "extends", "distinct"]


def relate(
    new: FactParts, old: FactParts, cosine: float, duplicate_at: float, update_at: float
) -> tuple[Kind, str]:
    """How a new fact stands to one old fact, and why."""
    if new.folded == old.folded:
        return "duplicate", "same words"
    if not new.subject or not old.subject or not _same_subject(new, old):
        return "distinct", "another subject"
    # A value is gone when the new fact does not say it anywhere, and came when the old did not.
    gone = {v for v in old.values if not new.mentions(v)}
    came = {v for v in new.values if not old.mentions(v)}
    # What each says beyond the two subjects: "Mr. Patel is our landlord." says no more than
    # "Our landlord is called Mr. Patel."
    subjects = {
        stem
        for word in (*new.subject, *old.subject)
        if new.says(word) and old.says(word)
        for stem in tokens(word)
    }
    new_says, old_says = _beyond(new.said, subjects), _beyond(old.said, subjects)
    overlap = _overlap(new_says, old_says, by_attribute=True)
    literal = _overlap(new_says, old_says, by_attribute=False)
    # A change the new fact states ("moved", "now", "no longer") where the old stated none;
    # without a new value, it must also say something the old fact does not.
    cue_change = (
        bool(new.cues & REPLACEMENT_CUES)
        and not old.cues
        and cosine >= (STATED_CHANGE_AT if new.attributes & old.attributes else SAID_CHANGE_AT)
    )
    cue_change = cue_change and _same_attribute(new, old)
    stated = cue_change and not literal.new_covered
    if gone and came:
        change = f"{', '.join(sorted(gone))} -> {', '.join(sorted(came))}"
        if gone & old.naming or came & new.naming:
            # "Room 101 is booked" and "Room 102 is booked": two rooms, not one that changed.
            return "distinct", f"the values name other things ({change})"
        if cosine >= update_at or stated:
            return "updates", f"changed value: {change}"
        return "distinct", f"other values ({change}) and no sign of the same attribute"
    if new.negated != old.negated and not (gone and overlap.new_covered and old.negated):
        # The old statement itself, negated: not another statement that happens to negate.
        if overlap.share >= 0.5 and cosine >= NEGATED_AT:
            return "updates", "the same statement negated"
        return "distinct", "a negation of something else"
    if gone:
        if overlap.new_covered:
            return "duplicate", "says less than the old fact, nothing else"
        return ("updates", "a stated change") if stated else ("distinct", "other values")
    if came and cue_change and new.cues & REPLACEMENT_CUES:
        return "updates", f"a stated change to {', '.join(sorted(came))}"
    if overlap.old_covered and not overlap.new_covered and (literal.old_covered or not stated):
        return "extends", "says what the old fact says, and more"
    if stated:
        return "updates", "a stated change of the same attribute"
    if came:
        if cosine >= SAME_FACT_AT:
            return "extends", f"adds {', '.join(sorted(came))}"
        return "distinct", "other values about something else"
    # The same values: the same fact in other words, or another fact about the subject.
    if cosine >= duplicate_at:
        return "duplicate", f"cosine {cosine:.3f} >= {duplicate_at} with the same values"
    if (cosine >= SAME_FACT_AT and overlap.share >= 2 / 3) or (
        cosine >= PARAPHRASE_AT and overlap.share >= 0.5
    ):
        return "duplicate", f"the same values and words (overlap {overlap.share:.2f})"
    if overlap.new_covered and cosine >= SAME_FACT_AT:
        return "duplicate", "says nothing the old fact does not"
    if cosine >= REWORDED_AT:
        return "duplicate", f"the same subject and values, reworded (cosine {cosine:.3f})"
    return "distinct", f"other words (overlap {overlap.share:.2f}, cosine {cosine:.3f})"


class Overlap(msgspec.Struct, frozen=True):
    """How two facts' content words meet."""

    share: float  # words met, over the words of both
    new_covered: bool  # every word of the new fact meets one of the old
    old_covered: bool


def _overlap(new: frozenset[str], old: frozenset[str], *, by_attribute: bool) -> Overlap:
    """Words meet as stems; `by_attribute`, also when they name one attribute ("husband" and
    "married")."""

    def met(word: str, others: frozenset[str]) -> bool:
        kinds = attributes_of(word) if by_attribute else set()
        return any(meets(word, other) or bool(kinds & attributes_of(other)) for other in others)

    new_met = sum(met(w, old) for w in new)
    old_met = sum(met(w, new) for w in old)
    union = len(new) + len(old) - min(new_met, old_met)
    return Overlap(
        share=min(new_met, old_met) / union if union else 1.0,
        new_covered=new_met == len(new), old_covered=old_met == len(old),
    )  # fmt: skip


def _beyond(content: frozenset[str], subjects: set[str]) -> frozenset[str]:
    return frozenset(w for w in content if not any(meets(w, s) for s in subjects))


def _same_subject(new: FactParts, old: FactParts) -> bool:
    """The same subject word for word, or each fact names the other's subject ("Mr. Patel is
    our landlord." / "Our landlord is called Mr. Patel."), or one is the other's with a thing
    of it that the other fact is about ("I drive a Subaru." / "My car is a Subaru."); never
    another person of it ("I live in Oslo." / "My sister lives in Bergen.")."""
    if new.subject == old.subject:
        return True
    if new.says_subject_of(old) and old.says_subject_of(new):
        return True
    short, long = sorted((new.subject, old.subject), key=len)
    if long[: len(short)] != short:
        return False
    # The thing must be what the other fact is about: "My car" for "I drive", not "My dogs".
    longer = new if new.subject == long else old
    other = old if longer is new else new
    things = {a for w in long[len(short) :] for stem in tokens(w) for a in attributes_of(stem)}
    return not any(w in PEOPLE for w in long[len(short) :]) and bool(things & other.attributes)


def _same_attribute(new: FactParts, old: FactParts) -> bool:
    """Both name one attribute, say one word of it, or share part of a value ("I drive a
    Honda Civic." / "I sold my Honda …")."""
    if new.attributes & old.attributes or new.content & old.content:
        return True
    return any(new.mentions(word) for value in old.values if " " in value for word in value.split())
