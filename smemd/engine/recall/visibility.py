"""What a query may see, as SQL: the latest live versions, or those that held at `as_of`
(valid time) or were believed at `as_of_recorded` (record time), within its filter and naming
its entity. Recall scans only these rows when a query restricts them."""

from __future__ import annotations

from typing import Any

from smemd.engine.recall.query import Query
from smemd.store.entities import NAMES_ENTITY
from smemd.store.retractions import CHUNK_RETRACTED

# The chunks a memory naming the entity was read from (NAMES_ENTITY twice, over `m`).
_CHUNK_NAMES_ENTITY = (
    "c.id IN (SELECT s.chunk_id FROM memory_sources s JOIN memories m ON m.id = s.memory_id"
    f" WHERE {NAMES_ENTITY} UNION SELECT m.chunk_id FROM memories m"
    f" WHERE m.chunk_id IS NOT NULL AND {NAMES_ENTITY})"
)


def memory_conditions(namespace: str, query: Query, now: float) -> tuple[str, list[Any]]:
    """SQL over alias `m` for what this query may see among the namespace's memories."""
    parts: list[str] = []
    params: list[Any] = []
    at = next((t for t in (query.as_of, query.as_of_recorded) if t is not None), now)
    if query.as_of_recorded is not None:
        # What smem held as latest at that instant: stored by then, not yet superseded.
        recorded = query.as_of_recorded
        parts.append("m.created_at <= ? AND (m.superseded_at IS NULL OR m.superseded_at > ?)")
        params += [recorded, recorded]
        if not query.include_forgotten:
            parts.append("m.forgotten_at IS NULL OR m.forgotten_at > ?")
            params.append(recorded)
    elif query.as_of is None:
        parts.append("m.is_latest = 1")
        if not query.include_forgotten:
            parts.append("m.forgotten_at IS NULL")
    if query.as_of is not None:
        # The version whose valid time holds that instant, as smem knows the history now.
        parts.append("m.valid_from <= ? AND (m.valid_until IS NULL OR m.valid_until > ?)")
        params += [query.as_of, query.as_of]
        if not query.include_forgotten and query.as_of_recorded is None:
            parts.append("m.forgotten_at IS NULL")
    if not query.include_forgotten:
        parts.append("m.expires_at IS NULL OR m.expires_at > ?")
        params.append(at)
    if query.filter is not None:
        sql, filter_params = query.filter.to_sql("m.metadata")
        parts.append(sql)
        params += filter_params
    if query.entity is not None:
        parts.append(NAMES_ENTITY)
        params += [namespace, query.entity, query.entity]
    return " AND ".join(f"({p})" for p in parts), params


def chunk_conditions(namespace: str, query: Query) -> tuple[str, list[Any]]:
    """SQL over aliases `c` (chunk) and `d` (its document). A retracted document's chunks are
    never seen (the indexes' live mask leaves them out on the fast path)."""
    parts: list[str] = [f"NOT {CHUNK_RETRACTED}"]
    params: list[Any] = []
    if query.as_of is not None:  # said by then: the document's date, else when it came
        parts.append("coalesce(d.content_date, c.created_at) <= ?")
        params.append(query.as_of)
    if query.as_of_recorded is not None:
        parts.append("c.created_at <= ?")
        params.append(query.as_of_recorded)
    if query.filter is not None:
        sql, filter_params = query.filter.to_sql("d.metadata")
        parts.append(sql)
        params += filter_params
    if query.entity is not None:
        parts.append(_CHUNK_NAMES_ENTITY)
        params += [namespace, query.entity, query.entity] * 2
    return " AND ".join(f"({p})" for p in parts), params
