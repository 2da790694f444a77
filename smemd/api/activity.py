"""Recent activity for the console and smemctl: requests per minute and per-route p50/p95, and
the last requests themselves.

Each minute keeps, per route, a histogram with buckets 10 % apart, so memory stays fixed however
busy the hour was and the percentiles are within 10 % of the truth. The last requests are a ring
of fixed size, for the same reason.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from datetime import UTC, datetime
from typing import NamedTuple

from smemd.instants import iso
from smemd.protocol import Activity as ActivityReply
from smemd.protocol import MinuteCount, RouteActivity
from smemd.protocol.recent import RECENT_KEPT, RecentRequest

WINDOW_MINUTES = 60
_SMALLEST_MS = 0.01
_GROWTH = math.log(1.1)


def _bucket(ms: float) -> int:
    return max(0, math.ceil(math.log(max(ms, _SMALLEST_MS) / _SMALLEST_MS) / _GROWTH))


def _bucket_upper_ms(index: int) -> float:
    return _SMALLEST_MS * math.exp(index * _GROWTH)


class _Minute:
    __slots__ = ("requests", "routes", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.requests = 0
        self.routes: dict[str, Counter[int]] = {}


class Seen(NamedTuple):
    """What the ring of recent requests keeps of one, beside its route and duration."""

    method: str
    status: int
    request_id: str


class _Recent(NamedTuple):
    at: float
    route: str
    seconds: float
    seen: Seen


class Activity:
    def __init__(self) -> None:
        self._minutes: deque[_Minute] = deque(maxlen=WINDOW_MINUTES)
        self._recent: deque[_Recent] = deque(maxlen=RECENT_KEPT)

    def observe(
        self, route: str, seconds: float, now: float | None = None, *, seen: Seen | None = None
    ) -> None:
        """Count a finished request; with `seen`, keep it among the recent ones too."""
        at = time.time() if now is None else now
        minute = self._minute(int(at // 60))
        minute.requests += 1
        minute.routes.setdefault(route, Counter())[_bucket(seconds * 1000)] += 1
        if seen is not None:
            self._recent.append(_Recent(at, route, seconds, seen))

    def recent(self, limit: int) -> list[RecentRequest]:
        """The last `limit` requests kept, newest first."""
        newest = [self._recent[-n] for n in range(1, min(limit, len(self._recent)) + 1)]
        return [
            RecentRequest(
                at=iso(r.at) or "", method=r.seen.method, route=r.route, status=r.seen.status,
                duration_ms=round(r.seconds * 1000, 3), request_id=r.seen.request_id,
            )
            for r in newest
        ]  # fmt: skip

    def snapshot(self, now: float | None = None) -> ActivityReply:
        current = int((time.time() if now is None else now) // 60)
        first = current - WINDOW_MINUTES + 1
        by_start = {m.start: m for m in self._minutes if m.start >= first}
        per_minute = [
            MinuteCount(minute=_iso_minute(start), requests=by_start[start].requests)
            if start in by_start
            else MinuteCount(minute=_iso_minute(start), requests=0)
            for start in range(first, current + 1)
        ]
        merged: dict[str, Counter[int]] = {}
        for minute in by_start.values():
            for route, buckets in minute.routes.items():
                merged.setdefault(route, Counter()).update(buckets)
        routes = [
            RouteActivity(
                route=route,
                requests=buckets.total(),
                p50_ms=_percentile(buckets, 0.50),
                p95_ms=_percentile(buckets, 0.95),
            )
            for route, buckets in sorted(merged.items())
        ]
        return ActivityReply(
            window_minutes=WINDOW_MINUTES,
            requests=sum(m.requests for m in per_minute),
            per_minute=per_minute,
            routes=routes,
        )

    def _minute(self, start: int) -> _Minute:
        if not self._minutes or self._minutes[-1].start != start:
            self._minutes.append(_Minute(start))
        return self._minutes[-1]


def _percentile(buckets: Counter[int], q: float) -> float:
    rank = q * buckets.total()
    seen = 0
    for index in sorted(buckets):
        seen += buckets[index]
        if seen >= rank:
            return round(_bucket_upper_ms(index), 3)
    return 0.0


def _iso_minute(start: int) -> str:
    return datetime.fromtimestamp(start * 60, UTC).strftime("%Y-%m-%dT%H:%M:00Z")
