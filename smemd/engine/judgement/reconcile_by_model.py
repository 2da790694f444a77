"""Reconciliation decided by the LLM judge, with the heuristic where the judge is not needed.

A near-identical fact (cosine at the duplicate bar) is a duplicate without a model call. Other
facts go to the judge with their top three neighbours: duplicate, updates or extends one of
them, or distinct. An undecided judgement (no option probable enough) falls back to the
heuristic, so a weak model never makes the store worse than no model; but one that leans to
an update the heuristic does not see is recorded as a contradiction, for a person to settle. Each call's judgement is
returned with the decision, to be logged with the memory it made.
"""

from __future__ import annotations

from collections.abc import Sequence

from smemd.engine.judgement.letter_judge import LETTERS, Judge
from smemd.engine.judgement.questions import reconcile_options
from smemd.engine.judgement.reconcile_by_rules import Decision, Neighbour, decide
from smemd.engine.judgement.verdicts import DISTINCT, judged, outcome_key
from smemd.store.records import Judged

DUPLICATE_AT = 0.97


async def judged_decision(
    judge: Judge, namespace: str, new_text: str, neighbours: Sequence[Neighbour]
) -> tuple[Decision, Judged | None]:
    """The decision, and the judgement behind it (None when the judge was not asked); the
    judgement's subject is filled in once the memory exists."""
    fallback = decide(new_text, neighbours, duplicate_at=DUPLICATE_AT)
    if not neighbours or (fallback.kind == "duplicate" and fallback.score >= DUPLICATE_AT):
        return fallback, None
    ranked = sorted(neighbours, key=lambda n: n.cosine, reverse=True)
    question = reconcile_options(new_text, [n.text for n in ranked])
    judgement = await judge.decide(question.question)
    outcome = question.outcome(judgement)
    pick = judgement.pick
    leaning = None if pick is None else question.outcomes[LETTERS.index(pick)]
    if outcome is None and pick is not None and leaning is not None and leaning.kind == "updates":
        # The judge leans to a change but is not sure: unless the rules see the same change,
        # neither fact supersedes the other, and a person is asked.
        assert leaning.neighbour is not None
        target = ranked[leaning.neighbour]
        if (fallback.kind, fallback.target) == ("updates", target.id):
            decision = fallback
        else:
            decision = Decision(
                kind="contradicts", target=target.id, score=judgement.probabilities[pick],
                reason=f"judge unsure of a change ({_probabilities(judgement.probabilities)})",
            )  # fmt: skip
    elif outcome is None:
        decision = Decision(
            kind=fallback.kind, target=fallback.target, score=fallback.score,
            reason=f"judge undecided ({_probabilities(judgement.probabilities)}); {fallback.reason}",
        )  # fmt: skip
    elif outcome.kind == "distinct" or outcome.neighbour is None:
        best = max(judgement.probabilities.values(), default=0.0)
        decision = Decision(kind="distinct", target=None, score=best, reason="judge: distinct")
    else:
        target = ranked[outcome.neighbour]
        decision = Decision(
            kind=outcome.kind, target=target.id, score=max(judgement.probabilities.values()),
            reason=f"judge: {outcome.kind} {target.id} ({_probabilities(judgement.probabilities)})",
        )  # fmt: skip
    keys = [
        DISTINCT if o.neighbour is None else outcome_key(o.kind, ranked[o.neighbour].id)
        for o in question.outcomes
    ]
    record = judged(
        judgement, keys, kind="reconcile", namespace=namespace, subject_id="", text=new_text,
        applied=outcome_key(decision.kind, decision.target),
        fallback=outcome_key(fallback.kind, fallback.target),
    )  # fmt: skip
    return decision, record


def _probabilities(probabilities: dict[str, float]) -> str:
    return " ".join(f"{letter}={p:.2f}" for letter, p in probabilities.items())
