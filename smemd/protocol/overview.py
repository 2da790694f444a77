"""Wire types of a namespace's overview (`GET /ns/{ns}/overview`): what the console's Home draws."""

from __future__ import annotations

from smemd.protocol import Reply


class StatusCounts(Reply):
    """Every version of every memory is in exactly one of these, so they add up to the total."""

    live: int  # the latest version, neither forgotten nor expired (what the list shows)
    superseded: int  # an older version that a later one replaced, not forgotten
    forgotten: int  # forgotten or expired, whichever version it is


class HourCount(Reply):
    hour: str  # the hour's start, ISO-8601 UTC
    count: int  # memories stored in that hour (every version, whatever became of it since)


class FactsBin(Reply):
    facts: int  # live memories that cite a document; the last bin is `FACTS_CAP` or more
    documents: int  # documents that many cite


class Overview(Reply):
    namespace: str
    documents: int
    jobs_open: int  # ingest jobs queued or under way
    memories: StatusCounts
    types: dict[str, int]  # live memories by type
    per_hour: list[HourCount]  # the last 48 hours, oldest first, the current hour last
    facts_per_document: list[FactsBin]  # by number of facts, ascending; empty bins left out
    facts_cap: int  # `facts` of the last bin counts documents with this many or more
