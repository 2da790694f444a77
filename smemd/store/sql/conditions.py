"""smemd.store.queries compiled to SQLite: WHERE and ORDER BY text with its parameters, over
alias `m` (memories), `c` (chunks) and `d` (their documents)."""

from __future__ import annotations

from typing import Any

from smemd.store.queries import (
    ChunkSelection,
    DocumentSelection,
    Listing,
    MemorySelection,
    ProfilePick,
    Visibility,
)
from smemd.store.records import MemoryStatus
from smemd.store.sql.connection import Dialect
from smemd.store.sql.entities import NAMES_ENTITY
from smemd.store.sql.retractions import CHUNK_RETRACTED

Where = tuple[str, list[Any]]

# A version's status, which every version has exactly one of; each `?` is now (for expiry).
FORGOTTEN_NOW = "(m.forgotten_at IS NOT NULL OR (m.expires_at IS NOT NULL AND m.expires_at <= ?))"
STATUS_WHERE: dict[MemoryStatus, str] = {
    "live": f"m.is_latest = 1 AND NOT {FORGOTTEN_NOW}",
    "superseded": f"m.is_latest = 0 AND NOT {FORGOTTEN_NOW}",
    "forgotten": FORGOTTEN_NOW,
}
# The memories a document is a source of; params: namespace, then smem's id or the caller's twice.
# Not correlated with `m`: the planner looks the few memory ids up instead of testing every row.
CITES_DOCUMENT = (
    "m.id IN (SELECT s.memory_id FROM memory_sources s JOIN documents d ON d.id = s.document_id"
    " WHERE d.namespace = ? AND (d.id = ? OR d.caller_id = ?))"
)

LIVE_NOW = (
    "m.is_latest = 1 AND m.forgotten_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > ?)"
)
# The chunks a memory naming the entity was read from (NAMES_ENTITY twice, over `m`).
_CHUNK_NAMES_ENTITY = (
    "c.id IN (SELECT s.chunk_id FROM memory_sources s JOIN memories m ON m.id = s.memory_id"
    f" WHERE {NAMES_ENTITY} UNION SELECT m.chunk_id FROM memories m"
    f" WHERE m.chunk_id IS NOT NULL AND {NAMES_ENTITY})"
)
# The order of the store's profile index: how connected (`connections`: the documents that
# state it plus its links to other memories), then the newest.
_PROFILE_ORDERS = {
    "connections": "m.is_static DESC, m.connections DESC, m.created_at DESC",
    "stored": "m.created_at DESC",
    "valid": "m.valid_from DESC",
}
_SORT_COLUMNS = {"created": "created_at", "updated": "updated_at", "position": "position"}


def _all(parts: list[str]) -> str:
    return " AND ".join(f"({p})" for p in parts)


def memory_visible(dialect: Dialect, namespace: str, v: Visibility) -> Where:
    """Over `m`: the namespace's memories the query may see."""
    parts: list[str] = []
    params: list[Any] = []
    at = next((t for t in (v.as_of, v.as_of_recorded) if t is not None), v.now)
    if v.as_of_recorded is not None:
        # What smem held as latest at that instant: stored by then, not yet superseded.
        recorded = v.as_of_recorded
        parts.append("m.created_at <= ? AND (m.superseded_at IS NULL OR m.superseded_at > ?)")
        params += [recorded, recorded]
        if not v.include_forgotten:
            parts.append("m.forgotten_at IS NULL OR m.forgotten_at > ?")
            params.append(recorded)
    elif v.as_of is None:
        parts.append("m.is_latest = 1")
        if not v.include_forgotten:
            parts.append("m.forgotten_at IS NULL")
    if v.as_of is not None:
        # The version whose valid time holds that instant, as smem knows the history now.
        parts.append("m.valid_from <= ? AND (m.valid_until IS NULL OR m.valid_until > ?)")
        params += [v.as_of, v.as_of]
        if not v.include_forgotten and v.as_of_recorded is None:
            parts.append("m.forgotten_at IS NULL")
    if not v.include_forgotten:
        parts.append("m.expires_at IS NULL OR m.expires_at > ?")
        params.append(at)
    if v.filter is not None:
        sql, filter_params = dialect.metadata_filter(v.filter, "m.metadata")
        parts.append(sql)
        params += filter_params
    if v.entity is not None:
        parts.append(NAMES_ENTITY)
        params += [namespace, v.entity, v.entity]
    return _all(parts), params


def chunk_visible(dialect: Dialect, namespace: str, v: Visibility) -> Where:
    """Over `c` and `d`: the chunks the query may see; never a retracted document's."""
    parts: list[str] = [f"NOT {CHUNK_RETRACTED}"]
    params: list[Any] = []
    if v.as_of is not None:  # said by then: the document's date, else when it came
        parts.append("coalesce(d.content_date, c.created_at) <= ?")
        params.append(v.as_of)
    if v.as_of_recorded is not None:
        parts.append("c.created_at <= ?")
        params.append(v.as_of_recorded)
    if v.filter is not None:
        sql, filter_params = dialect.metadata_filter(v.filter, "d.metadata")
        parts.append(sql)
        params += filter_params
    if v.entity is not None:
        parts.append(_CHUNK_NAMES_ENTITY)
        params += [namespace, v.entity, v.entity] * 2
    return _all(parts), params


def memory_selected(dialect: Dialect, namespace: str, s: MemorySelection) -> Where:
    """Over `m`: the memories a listing takes."""
    parts: list[str] = []
    params: list[Any] = []
    if s.status is not None:
        parts.append(STATUS_WHERE[s.status])
        params.append(s.now)
    else:
        if not s.history:
            parts.append("m.is_latest = 1")
        if not s.include_forgotten:
            parts.append("m.forgotten_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > ?)")
            params.append(s.now)
    if s.document is not None:
        parts.append(CITES_DOCUMENT)
        params += [namespace, s.document, s.document]
    if s.entity is not None:
        parts.append(NAMES_ENTITY)
        params += [namespace, s.entity, s.entity]
    if s.type is not None:
        parts.append("m.type = ?")
        params.append(s.type)
    if s.filter is not None:
        sql, filter_params = dialect.metadata_filter(s.filter, "m.metadata")
        parts.append(sql)
        params += filter_params
    return _all(parts) or "TRUE", params


def document_selected(dialect: Dialect, s: DocumentSelection) -> Where:
    """Over the documents table, unaliased."""
    return dialect.metadata_filter(s.filter, "metadata") if s.filter else ("TRUE", [])


def chunk_selected(dialect: Dialect, s: ChunkSelection) -> Where:
    """Over `c`: the chunks of the documents the filter admits."""
    if s.filter is None:
        return "TRUE", []
    sql, params = dialect.metadata_filter(s.filter, "d.metadata")
    return f"c.document_id IN (SELECT d.id FROM documents d WHERE {sql})", params


def listing_order(listing: Listing, alias: str = "") -> str:
    """ORDER BY text: the sort, then the order rows were stored (`seq`), one direction."""
    column = _SORT_COLUMNS[listing.sort]
    direction = "desc" if listing.descending else "asc"
    prefix = f"{alias}." if alias else ""
    return f"{prefix}{column} {direction}, {prefix}seq {direction}"


def profile_picked(dialect: Dialect, namespace: str, p: ProfilePick) -> tuple[str, list[Any], str]:
    """Over `m`: WHERE, its params and ORDER BY for one section of a profile."""
    if p.as_of is not None:
        where, params = memory_visible(
            dialect, namespace, Visibility(now=p.now, as_of=p.as_of, filter=p.filter)
        )
    elif p.filter is None:
        where, params = LIVE_NOW, [p.now]
    else:
        sql, filter_params = dialect.metadata_filter(p.filter, "m.metadata")
        where, params = f"{LIVE_NOW} AND ({sql})", [p.now, *filter_params]
    if p.type is not None:
        where += f" AND m.type = '{p.type}'"
    if p.changed_since is not None:
        if p.as_of is None:
            recent, params = "m.created_at >= ?", [*params, p.changed_since]
        else:
            recent, params = "m.valid_from BETWEEN ? AND ?", [*params, p.changed_since, p.as_of]
        where += f" AND (m.type = 'episode' OR m.version > 1) AND {recent}"
    return where, params, _PROFILE_ORDERS[p.order]
