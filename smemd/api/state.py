"""What the handlers share, stored on the application under a typed key."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field

from aiohttp import web

from smemd.api.access import Tokens
from smemd.api.activity import Activity
from smemd.api.metrics import Metrics
from smemd.config import Config
from smemd.connections import Listener
from smemd.engine.core import Engine
from smemd.fleet.assembly import Fleet
from smemd.http.route import Route
from smemd.protocol import Listeners


@dataclass
class ApiState:
    config: Config
    started_at: float = field(default_factory=time.time)
    started_monotonic: float = field(default_factory=time.monotonic)
    pid: int = field(default_factory=os.getpid)
    listeners: Listeners = field(default_factory=lambda: Listeners(tcp="", socket=""))
    activity: Activity = field(default_factory=Activity)
    # Handler tasks still running, so shutdown can cut them at its deadline and say how many.
    in_flight: set[asyncio.Task[object]] = field(default_factory=set)
    # Set when the stop begins: requests that arrive later are refused, never joining in_flight.
    is_stopping: bool = False
    # The connection tasks of requests refused during the stop, until each ends: aiohttp still
    # reads and drops the rest of a refused body, and would wait for it in vain on a connection
    # closed under it.
    refused: set[asyncio.Task[None]] = field(default_factory=set)
    # What each registered route is (role, namespace, types): authorize and OpenAPI read it.
    routes: dict[web.AbstractRoute, Route] = field(default_factory=dict)
    openapi: bytes | None = None  # the OpenAPI document, made on first request
    engine: Engine | None = None  # set once the store is open
    fleet: Fleet | None = None
    # The accept loops by name (`tcp`, `socket`), for their connection counts in the metrics.
    connections: dict[str, Listener] = field(default_factory=dict)

    tokens: Tokens = field(init=False)
    metrics: Metrics = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = Tokens(self.config.api)
        self.metrics = Metrics(self.connections)

    @property
    def max_body_bytes(self) -> int:
        return self.config.api.max_body_mb * 1024 * 1024

    @property
    def uptime_s(self) -> float:
        return time.monotonic() - self.started_monotonic


STATE = web.AppKey("state", ApiState)
