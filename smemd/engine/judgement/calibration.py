"""Calibration: people's labels grade the judge's logged calls; a logistic fit per judge moves
its threshold to where its calls become more likely right than wrong, and the new threshold is
re-applied to the past calls that can be redone.

A sample is one labelled call: x = the probability of the judge's pick, y = whether the pick was
right (a ✓/✗ on the call, or the memory's labelled type). Types and links are re-applied (a
memory's type, an `extends` relation: both reversible). Reconcile calls made versions, and
derives calls inferred memories (or not), which history keeps: those whose outcome the new
threshold would change are counted for review.
"""

from __future__ import annotations

import logging
from typing import Literal

import msgspec

from smemd.engine.ids import now
from smemd.engine.judgement import logistic
from smemd.engine.judgement.letter_judge import DEFAULT_THRESHOLD, Judge
from smemd.engine.judgement.questions import ALIAS_THRESHOLD, DERIVES_THRESHOLD, LINK_THRESHOLD
from smemd.engine.judgement.reapplication import reapply
from smemd.store.protocol import EVERY_NAMESPACE, Reader, Store
from smemd.store.records import Judged, JudgeKind

log = logging.getLogger("smemd.calibration")

KINDS: tuple[JudgeKind, ...] = ("reconcile", "type", "link", "derives", "alias")
DEFAULT_THRESHOLDS: dict[str, float] = {
    "link": LINK_THRESHOLD,
    "derives": DERIVES_THRESHOLD,
    "alias": ALIAS_THRESHOLD,
}
MIN_LABELS = 5  # fewer says more about the labeller than about the judge
SETTING = "calibration"


class Fitted(msgspec.Struct, kw_only=True):
    threshold: float
    intercept: float
    slope: float
    labels: int
    fitted_at: float


class JudgeReport(msgspec.Struct, kw_only=True):
    kind: JudgeKind
    threshold: float
    default_threshold: float
    fitted: Fitted | None
    judgements: int
    labels: int
    decided: int  # labelled calls the threshold lets stand
    correct: int  # of those, right


class FitResult(msgspec.Struct, kw_only=True):
    kind: JudgeKind
    before: float
    after: float
    labels: int
    outcome: Literal["fitted", "too few labels"]
    reapplied: int = 0  # past calls whose effect changed
    review: int = 0  # past reconcile calls the new threshold would decide otherwise


def default_threshold(kind: str) -> float:
    return DEFAULT_THRESHOLDS.get(kind, DEFAULT_THRESHOLD)


class Calibration:
    def __init__(self, store: Store, judge: Judge | None) -> None:
        self.store = store
        self.judge = judge
        self.fitted: dict[str, Fitted] = {}

    def threshold(self, kind: str) -> float:
        return self.fitted[kind].threshold if kind in self.fitted else default_threshold(kind)

    async def load(self) -> None:
        async with self.store.read() as reader:
            saved = await reader.setting(SETTING)
        if saved:
            self.fitted = msgspec.json.decode(saved, type=dict[str, Fitted])
        self._apply()

    def _apply(self) -> None:
        if self.judge is not None:
            self.judge.thresholds = {k: self.threshold(k) for k in KINDS}

    async def report(self) -> list[JudgeReport]:
        async with self.store.scan(EVERY_NAMESPACE) as reader:
            samples = await _samples(reader)
            counts = await reader.judgement_counts()
        reports = []
        for kind in KINDS:
            mine = [(call, right) for call, right in samples if call.kind == kind]
            decided = [right for call, right in mine if call.decided_at(self.threshold(kind))]
            reports.append(
                JudgeReport(
                    kind=kind,
                    threshold=self.threshold(kind),
                    default_threshold=default_threshold(kind),
                    fitted=self.fitted.get(kind),
                    judgements=counts.get(kind, 0),
                    labels=len(mine),
                    decided=len(decided),
                    correct=sum(decided),
                )
            )
        return reports

    async def fit(self) -> list[FitResult]:
        results = []
        async with self.store.write() as writer:
            samples = await _samples(writer)
            for kind in KINDS:
                mine = [(call.best, right) for call, right in samples if call.kind == kind]
                before = self.threshold(kind)
                if len(mine) < MIN_LABELS:
                    results.append(
                        FitResult(
                            kind=kind,
                            before=before,
                            after=before,
                            labels=len(mine),
                            outcome="too few labels",
                        )
                    )
                    continue
                intercept, slope = logistic.fit([x for x, _ in mine], [y for _, y in mine])
                after = round(logistic.threshold(intercept, slope), 4)
                self.fitted[kind] = Fitted(
                    threshold=after, intercept=intercept, slope=slope, labels=len(mine),
                    fitted_at=now(),
                )  # fmt: skip
                reapplied, review = await reapply(writer, kind, after)
                log.info(
                    "calibrated %s: threshold %.3f -> %.3f on %d labels; %d calls re-applied,"
                    " %d for review", kind, before, after, len(mine), reapplied, review,
                )  # fmt: skip
                results.append(
                    FitResult(
                        kind=kind,
                        before=before,
                        after=after,
                        labels=len(mine),
                        outcome="fitted",
                        reapplied=reapplied,
                        review=review,
                    )
                )
            await writer.set_setting(SETTING, msgspec.json.encode(self.fitted).decode())
        self._apply()
        return results


async def _samples(reader: Reader) -> list[tuple[Judged, bool]]:
    """Every labelled call with a pick, and whether the pick was right."""
    samples = []
    for label in await reader.labels():
        if label.kind == "judgement":
            call = await reader.judgement(label.subject_id)
            right = label.value == "correct"
        else:
            call = await reader.type_judgement(label.subject_id)
            right = call is not None and call.proposal == label.value
        if call is not None and call.proposal is not None:
            samples.append((call, right))
    return samples
