"""The questions the judge is asked: how a new fact relates to stored memories, what kind of memory
one is, whether a memory extends its near neighbours, and whether an inference follows from its
sources. Each is a `Question` and the outcome each letter stands for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from smemd.engine.judgement.letter_judge import Batch, Judgement, Question, one_line
from smemd.store.records import MemoryType

OutcomeKind = Literal["duplicate", "updates", "extends", "distinct"]
RECONCILE_NEIGHBOURS = 3
LINK_CANDIDATES = 3
# A link is only worth having when it is right: the link judge must be surer than the others.
LINK_THRESHOLD = 0.8
# An inference is stored as a memory of its own, so it too must be surer than the others.
DERIVES_THRESHOLD = 0.8
_OUTCOME_TEXT = {
    "duplicate": "The new fact says the same as memory [{n}]; it adds nothing.",
    "updates": "The new fact replaces memory [{n}]: [{n}] was true, and is no longer.",
    "extends": "The new fact adds detail to memory [{n}], which stays true.",
}


class Outcome(msgspec.Struct, frozen=True):
    """A reconciliation outcome; `neighbour` indexes the neighbours given, None for distinct."""

    kind: OutcomeKind
    neighbour: int | None = None


class ReconcileQuestion(msgspec.Struct, frozen=True):
    question: Question
    outcomes: list[Outcome]  # one per option, in letter order

    def outcome(self, judgement: Judgement) -> Outcome | None:
        """The chosen letter as (kind, neighbour index); None when undecided."""
        return None if judgement.index is None else self.outcomes[judgement.index]


def reconcile_options(
    candidate_text: str, neighbours: Sequence[str], *, k: int = RECONCILE_NEIGHBOURS
) -> ReconcileQuestion:
    """Duplicate of, updates or extends each of the top-k neighbours, or distinct from them all."""
    if not neighbours:
        raise ValueError("no neighbours: a candidate without any is distinct, nothing to ask")
    shown = [one_line(text) for text in neighbours[:k]]
    outcomes = [
        Outcome(kind, i) for kind in ("duplicate", "updates", "extends") for i in range(len(shown))
    ]
    outcomes.append(Outcome("distinct"))
    options = [
        _OUTCOME_TEXT[o.kind].format(n=o.neighbour + 1) if o.neighbour is not None
        else "The new fact is about something else: none of the above."
        for o in outcomes
    ]  # fmt: skip
    memories = "\n".join(f"[{i + 1}] {text}" for i, text in enumerate(shown))
    text = (
        f"Stored memories:\n{memories}\n\nNew fact: {one_line(candidate_text)}\n\n"
        "How does the new fact relate to the stored memories?"
    )
    return ReconcileQuestion(Question(kind="reconcile", text=text, options=options), outcomes)


_TYPE_TEXT: dict[MemoryType, str] = {
    "fact": "a fact: something true about the world or a person, not tied to one moment",
    "preference": "a preference: what someone likes, dislikes, wants or prefers",
    "episode": "an episode: something that happened at a particular time",
}


TYPES: list[MemoryType] = ["fact", "preference", "episode"]


def type_options(memory_text: str) -> Question:
    """Is a memory a fact, a preference or an episode? Letter i means `TYPES[i]`."""
    text = f"Memory: {one_line(memory_text)}\n\nWhat kind of memory is it?"
    return Question(kind="type", text=text, options=[f"It is {_TYPE_TEXT[t]}." for t in TYPES])


def type_batch(memory_texts: Sequence[str]) -> Batch:
    """The type question for several memories in one call; letter i means `TYPES[i]`."""
    return Batch(
        kind="type", text="What kind of memory is each numbered memory?",
        items=[one_line(text) for text in memory_texts],
        options=[f"It is {_TYPE_TEXT[t]}." for t in TYPES],
    )  # fmt: skip


def chosen_type(judgement: Judgement) -> MemoryType | None:
    """A type judgement's chosen type; None when undecided."""
    return None if judgement.index is None else TYPES[judgement.index]


class LinkQuestion(msgspec.Struct, frozen=True):
    question: Question
    targets: list[int | None]  # the candidate each option names, in letter order; None for none

    def target(self, judgement: Judgement) -> int | None:
        """The candidate the memory extends (None: undecided, or it extends none)."""
        return None if judgement.index is None else self.targets[judgement.index]


def link_options(memory_text: str, candidates: Sequence[str]) -> LinkQuestion:
    """Does a memory add detail to one of its near neighbours (which stays true)?"""
    if not candidates:
        raise ValueError("no candidates: nothing to link to")
    shown = [one_line(text) for text in candidates[:LINK_CANDIDATES]]
    options = [
        f"It adds detail to memory [{i + 1}], and [{i + 1}] stays true." for i in range(len(shown))
    ]
    options.append("Neither: it is about something else, says the same, or contradicts them.")
    memories = "\n".join(f"[{i + 1}] {text}" for i, text in enumerate(shown))
    text = (
        f"Stored memories:\n{memories}\n\nMemory: {one_line(memory_text)}\n\n"
        "Does the memory add detail to one of the stored memories?"
    )
    targets: list[int | None] = [*range(len(shown)), None]
    return LinkQuestion(Question(kind="link", text=text, options=options), targets)


DERIVES_OUTCOMES = ["derives", "none"]  # letter A: it follows; B: it does not


def derives_options(inference_text: str, sources: Sequence[str]) -> Question:
    """Does an inference follow from its sources taken together? Letter i means
    `DERIVES_OUTCOMES[i]`."""
    if len(sources) < 2:
        raise ValueError("an inference draws on two memories at least")
    memories = "\n".join(f"[{i + 1}] {one_line(text)}" for i, text in enumerate(sources))
    text = (
        f"Stored memories:\n{memories}\n\nInference: {one_line(inference_text)}\n\n"
        "Does the inference follow from the stored memories taken together?"
    )
    options = [
        "It follows: the memories together make it true.",
        "It does not follow: it adds, changes or guesses what they do not say.",
    ]
    return Question(kind="derives", text=text, options=options)


# A merge changes what every profile and filter of both names shows: as sure as a link.
ALIAS_THRESHOLD = 0.8


def alias_options(
    kind: str, first: tuple[str, Sequence[str]], second: tuple[str, Sequence[str]]
) -> Question:
    """Do two names, each with a few memories that use it, name one entity? Letter A: the
    same; B: two, or not shown to be one."""
    what = "person" if kind == "person" else "place" if kind == "place" else "thing or group"
    shown = []
    for n, (name, facts) in enumerate((first, second), start=1):
        lines = "\n".join(f"- {one_line(text)}" for text in facts)
        shown.append(f'Name {n}: "{one_line(name)}". Memories that use it:\n{lines}')
    text = "\n\n".join([*shown, f"Do the two names refer to the same {what}?"])
    options = [
        f"The same {what}, named two ways.",
        "Two different ones, or the memories do not show that they are the same.",
    ]
    return Question(kind="alias", text=text, options=options)
