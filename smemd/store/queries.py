"""What the engine asks a store for, as values: which memories or chunks a query may see, which
a listing or a profile takes, and in what order. The engine builds and validates them; each
store compiles them to its own query language (SQL, for both backends: smemd.store.sql.
conditions)."""

from __future__ import annotations

from typing import Literal

import msgspec

from smemd.store.filter_tree import Filter
from smemd.store.records import MemoryStatus, MemoryType


class Visibility(msgspec.Struct, frozen=True):
    """What a query may see of a namespace: the latest live versions, or those that held at
    `as_of` (valid time) or were believed at `as_of_recorded` (record time), within `filter`
    (over a memory's metadata, or a chunk's document's) and naming `entity`. A retracted
    document's chunks are never seen."""

    now: float  # for expiry, when neither instant is given
    as_of: float | None = None
    as_of_recorded: float | None = None
    include_forgotten: bool = False
    filter: Filter | None = None
    entity: str | None = None  # an entity's id or name


class MemorySelection(msgspec.Struct, frozen=True):
    """The memories a listing takes. `status`, when given, stands in for `history` (every
    version, not only the latest) and `include_forgotten`; `document` keeps those it is a
    source of (smem's id or the caller's), `entity` those naming it (id or name)."""

    now: float
    status: MemoryStatus | None = None
    history: bool = False
    include_forgotten: bool = False
    document: str | None = None
    entity: str | None = None
    type: MemoryType | None = None
    filter: Filter | None = None


class DocumentSelection(msgspec.Struct, frozen=True):
    filter: Filter | None = None  # over the document's metadata


class ChunkSelection(msgspec.Struct, frozen=True):
    filter: Filter | None = None  # over the chunk's document's metadata


Selection = MemorySelection | DocumentSelection | ChunkSelection
# `position` orders chunks within their documents; on memories and documents it is `created`.
Sort = Literal["created", "updated", "position"]


class Listing(msgspec.Struct, frozen=True):
    """A page: ties in `sort` are broken by the order rows were stored, in the same direction."""

    sort: Sort
    descending: bool
    limit: int
    offset: int


# `connections`: stated by more documents and linked to more memories first, then the newest;
# `stored`: the newest stored; `valid`: the newest by valid time.
ProfileOrder = Literal["connections", "stored", "valid"]


class ProfilePick(msgspec.Struct, frozen=True):
    """The first `limit` memories of a profile section, without counting the rest: live now,
    or valid at `as_of`, within `filter`; of `type` if given; with `changed_since`, only
    episodes and updated memories stored since then (with `as_of`: valid from then to it)."""

    now: float
    limit: int
    order: ProfileOrder
    as_of: float | None = None
    filter: Filter | None = None
    type: MemoryType | None = None
    changed_since: float | None = None


# What an imported row does to a key the namespace holds (smemd.store.sql.importing): `insert`
# (none is held: the engine made sure), `skip` the row, or `replace` the held row with it.
OnKey = Literal["insert", "skip", "replace"]
