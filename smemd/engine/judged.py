"""Reconciliation decided by the LLM judge, with the heuristic where the judge is not needed.

A near-identical fact (cosine at the duplicate bar) is a duplicate without a model call. Other
facts go to the judge with their top three neighbours: duplicate, updates or extends one of
them, or distinct. An undecided judgement (no option probable enough) falls back to the
heuristic, so a weak model never makes the store worse than no model.
"""

from __future__ import annotations

from collections.abc import Sequence

from smemd.engine.judge import Judge, reconcile_options
from smemd.engine.reconcile import Decision, Neighbour, decide

DUPLICATE_AT = 0.97


async def judged_decision(judge: Judge, new_text: str, neighbours: Sequence[Neighbour]) -> Decision:
    fallback = decide(new_text, neighbours, duplicate_at=DUPLICATE_AT)
    if not neighbours or fallback.kind == "duplicate":
        return fallback
    ranked = sorted(neighbours, key=lambda n: n.cosine, reverse=True)
    question = reconcile_options(new_text, [n.text for n in ranked])
    judgement = await judge.decide(question.question)
    outcome = question.outcome(judgement)
    if outcome is None:
        return Decision(
            kind=fallback.kind, target=fallback.target, score=fallback.score,
            reason=f"judge undecided ({_probabilities(judgement.probabilities)}); {fallback.reason}",
        )  # fmt: skip
    best = max(judgement.probabilities.values(), default=0.0)
    if outcome.kind == "distinct" or outcome.neighbour is None:
        return Decision(kind="distinct", target=None, score=best, reason="judge: distinct")
    target = ranked[outcome.neighbour]
    return Decision(
        kind=outcome.kind, target=target.id, score=best,
        reason=f"judge: {outcome.kind} {target.id} ({_probabilities(judgement.probabilities)})",
    )  # fmt: skip


def _probabilities(probabilities: dict[str, float]) -> str:
    return " ".join(f"{letter}={p:.2f}" for letter, p in probabilities.items())
