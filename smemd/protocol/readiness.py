"""Wire types of `GET /v1/ready` as JSON: whether this daemon can serve now, check by check."""

from __future__ import annotations

from smemd.protocol import Reply


class ReadinessCheck(Reply):
    name: str  # "store", "disk", "embedder", "indexes"
    ok: bool
    detail: str  # what was found, or why it failed ("timed out after 2 s")


class Readiness(Reply):
    ready: bool  # every check ok: answered 200, else 503
    checks: list[ReadinessCheck]
