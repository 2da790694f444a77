"""Wire types of the judge's log, labels, calibration and dreaming (`/v1/judgements`,
`/v1/labels`, `/v1/calibration`, `/v1/dreaming`)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from smemd.protocol import Query, Reply, Request

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
MemoryType = Literal["fact", "preference", "episode"]
JudgeKind = Literal["reconcile", "type", "link", "derives", "alias"]


class JudgementsQuery(Query):
    kind: JudgeKind | None = None
    namespace: str | None = None
    after: Annotated[int, msgspec.Meta(ge=0, le=2**53)] = 0  # the last `seq` seen: pages on
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100


class LinkRef(Request):
    from_id: Id
    to_id: Id


class LabelRequest(Request):
    """One of: `memoryId` + `type`; `judgementId` + `correct`; `link` + `correct`."""

    memory_id: Id | None = None
    type: MemoryType | None = None
    judgement_id: Id | None = None
    link: LinkRef | None = None
    correct: bool | None = None


class LabelReply(Reply):
    kind: Literal["type", "judgement"]
    subject_id: str
    value: str
    created_at: str | None


class Judgement(Reply):
    """One judge call: letter i stood for `options[i]` with `probabilities[i]`."""

    id: str
    seq: int
    namespace: str
    kind: JudgeKind
    subject_id: str
    text: str
    options: list[str]
    probabilities: list[float]
    proposal: str | None
    applied: str
    fallback: str
    decided: bool  # whether the pick stands at the judge's threshold now
    created_at: str | None
    label: str | None = None


class Judgements(Reply):
    judgements: list[Judgement]
    next_after: int | None  # pass as ?after= for the next page


class Fitted(Reply):
    threshold: float
    intercept: float
    slope: float
    labels: int
    fitted_at: str | None


class JudgeCalibration(Reply):
    kind: JudgeKind
    threshold: float
    default_threshold: float
    fitted: Fitted | None
    judgements: int
    labels: int
    decided: int  # labelled calls the threshold lets stand
    correct: int
    accuracy: float | None  # correct / decided
    coverage: float | None  # decided / labels


class Calibration(Reply):
    judges: list[JudgeCalibration]
    heuristics: bool  # no model: nothing is judged, labels still set types


class FitResult(Reply):
    kind: JudgeKind
    before: float
    after: float
    labels: int
    outcome: Literal["fitted", "too few labels"]
    reapplied: int
    review: int


class FitReply(Reply):
    results: list[FitResult]


class DreamingChange(Request):
    enabled: bool
