"""A judge call as the store keeps it: each letter's outcome and probability, the judge's pick,
what was applied and what the heuristic said, so a label can grade it and calibration can
re-weigh it under another threshold."""

from __future__ import annotations

from collections.abc import Sequence

from smemd.engine.ids import new_id, now
from smemd.engine.judgement.letter_judge import LETTERS, Judgement
from smemd.store.records import Judged, JudgeKind

NONE = "none"  # the outcome key of "no link"
DISTINCT = "distinct"


def outcome_key(kind: str, target: str | None) -> str:
    """ "updates:mem_…" for an outcome about a memory, the bare kind otherwise."""
    return kind if target is None else f"{kind}:{target}"


def target_of(key: str) -> str | None:
    """The memory an outcome key names, if any."""
    return key.partition(":")[2] or None


def judged(
    judgement: Judgement, outcomes: Sequence[str], *, kind: JudgeKind, namespace: str,
    subject_id: str, text: str, applied: str, fallback: str,
) -> Judged:  # fmt: skip
    """`outcomes[i]` is the outcome key of letter i."""
    letters = LETTERS[: len(outcomes)]
    return Judged(
        id=new_id("jdg"), namespace=namespace, kind=kind, subject_id=subject_id, text=text,
        options=list(outcomes),
        probabilities=[round(judgement.probabilities.get(letter, 0.0), 6) for letter in letters],
        proposal=outcomes[LETTERS.index(judgement.pick)] if judgement.pick else None,
        applied=applied, fallback=fallback, created_at=now(),
    )  # fmt: skip
