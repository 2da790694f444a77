"""Wire types of smem's own /v1 API: what smemd sends and smemctl decodes.

Request bodies forbid unknown fields (decoding is validation); replies use camelCase like the
Supermemory API. New fields get defaults and a field's type never changes.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

LogLevel = Literal["debug", "info", "warning", "error", "critical"]


class Request(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """Base of request bodies."""


class Query(msgspec.Struct, kw_only=True, rename="camel"):
    """Base of a route's query parameters: values arrive as text, unknown names are ignored."""


class Reply(msgspec.Struct, kw_only=True, rename="camel"):
    """Base of reply bodies; lenient so an older smemctl can read a newer daemon."""


class ErrorBody(Reply):
    error: str
    details: str = ""


class Health(Reply):
    status: str  # "ok", or "unavailable" while the store is not open (with a 503)
    version: str
    store: str = "ok"  # "unavailable": a shared store not reached yet


class Listeners(Reply):
    tcp: str
    socket: str


class Dreaming(Reply):
    enabled: bool
    state: Literal["off", "waiting", "dreaming", "rested"]
    quiet_after_s: float
    quiet_for_s: float
    untyped: int  # memories waiting to be typed
    unlinked: int  # memories waiting to be looked at for links
    typing_asked: int
    typed: int
    links_looked: int
    linked: int
    last_step_at: str | None
    errors: int
    last_error: str
    heuristics: list[str]
    # "on", or "off: no model": without a chat model nothing is inferred.
    inference: str = "off: no model"
    uninferred: int = 0  # memories waiting to be looked at for inferences (0 when off)
    inference_looked: int = 0
    inference_asked: int = 0  # groups of memories the model was asked to infer from
    inferred: int = 0  # inferences stored (`isInference`, with `derives` links to their sources)
    aliases_asked: int = 0  # pairs of entity names put to the judge
    aliases_merged: int = 0  # of those, merged as one entity


class PeerStatus(Reply):
    id: str  # host:state-dir hash, as in job leases
    host: str
    pid: int
    version: str
    started_at: str  # ISO 8601, UTC
    seen_at: str


class StoreStatus(Reply):
    kind: str  # `[store] kind`
    location: str  # the file, or role@host:port/database (never a password)
    server_version: str  # SQLite's library, or the PostgreSQL server
    daemon: str = ""  # this daemon's name among those on the store
    peers: list[PeerStatus] = msgspec.field(default_factory=list)  # the others heard from lately


class Status(Reply):
    version: str
    pid: int
    uptime_s: float
    started_at: str
    state_dir: str
    listeners: Listeners
    fleet_kind: str
    log_level: str
    embedder: str = ""
    warnings: list[str] = msgspec.field(default_factory=list)
    # What runs on the engine's heuristics because no node serves the llm role.
    heuristics: list[str] = msgspec.field(default_factory=list)
    dreaming: Dreaming | None = None  # None before the engine is up
    store: StoreStatus | None = None  # None before the engine is up


class LogLevelChange(Request):
    level: LogLevel
    logger: str = "smemd"


class LogLevelReply(Reply):
    logger: str
    level: str
    previous: str


class MinuteCount(Reply):
    minute: str
    requests: int


class RouteActivity(Reply):
    route: str
    requests: int
    p50_ms: float
    p95_ms: float


class Activity(Reply):
    window_minutes: int
    requests: int
    per_minute: list[MinuteCount]
    routes: list[RouteActivity]


class NodeStatus(Reply):
    id: str
    lanes: list[str]
    roles: list[str]
    healthy: bool
    resting: bool  # its circuit is open after straight failures
    paused: bool
    lendable: bool
    in_flight: dict[str, int]
    last_error: str = ""


class ActivePause(Reply):
    nodes: list[str]
    until: str
    by: str = ""
    reason: str = ""


class Lanes(Reply):
    fleet_kind: str
    interactive: list[str]
    background: list[str]
    nodes: list[NodeStatus]
    pause: ActivePause | None = None
    pause_error: str | None = None


# A pause's bounds, shared by `POST /v1/pause` and the pause file (smemd.fleet.pause.rules says why).
MAX_PAUSE_NODES = 128  # above the 110 ids config's NodeId allows (node0-node99, node00-node09)
MAX_NODE_ID_CHARS = 32  # config's ids have at most 6; longer is room to name a typo as unknown
MAX_PAUSE_BY_CHARS = 200
MAX_PAUSE_REASON_CHARS = 1000
MAX_PAUSE_TIME_CHARS = 64  # `until` and `for`; smemd writes `until` in 32 characters

PauseNodes = Annotated[
    list[Annotated[str, msgspec.Meta(max_length=MAX_NODE_ID_CHARS)]],
    msgspec.Meta(max_length=MAX_PAUSE_NODES),
]
PauseTime = Annotated[str, msgspec.Meta(max_length=MAX_PAUSE_TIME_CHARS)]
PauseBy = Annotated[str, msgspec.Meta(max_length=MAX_PAUSE_BY_CHARS)]
PauseReason = Annotated[str, msgspec.Meta(max_length=MAX_PAUSE_REASON_CHARS)]


class PauseRequest(Request):
    """Lend nodes: until an instant, or for a while ("2h", "90m", "1h30m", "45s")."""

    nodes: PauseNodes
    until: PauseTime | None = None
    for_: PauseTime | None = msgspec.field(default=None, name="for")
    by: PauseBy = ""
    reason: PauseReason = ""
    wait: bool = False  # answer once the nodes have no call in flight
    timeout_s: Annotated[float, msgspec.Meta(ge=0, le=3600)] = 300.0


class ResumeRequest(Request):
    nodes: list[str] | None = None  # None: every node


class PauseReply(Reply):
    pause: ActivePause | None
    drained: bool | None = None  # with `wait`: whether the nodes drained before the timeout


class TokenInfo(Reply):
    """A configured token as `GET /v1/tokens` shows it: never its secret."""

    name: str
    role: str
    namespaces: list[str]  # names or globs; ["*"]: every namespace
    source: str  # where it is configured


class Caller(Reply):
    """Who a request is from, as `GET /v1/whoami` tells it: what a client may show and offer."""

    name: str  # "socket", "anonymous" (no token configured), "public" (none given), or the token's
    role: Literal["read", "write", "admin"] | None  # None: no token, and one is required
    namespaces: list[str]  # names or globs; ["*"]: every namespace
    token_required: bool  # TCP callers must present a token


class TokenList(Reply):
    tokens: list[TokenInfo]
