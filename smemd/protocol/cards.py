"""Wire types of the node routes: `/v1/nodes`, `/v1/cards`, `/v1/telemetry` and node actions."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from smemd.protocol import Query, Reply

NodeAction = Literal["boot", "reboot", "poweroff", "reset"]


class NodeInfo(Reply):
    """A node of the fleet; the card fields are set for the `vca2` fleet only."""

    id: str
    lanes: list[str]
    roles: list[str]
    # vca2: off, booting, up, degraded, down, lent, failed. Other fleets: up, down, resting, lent.
    state: str
    healthy: bool  # the pool sends it calls
    lendable: bool
    in_flight: dict[str, int]
    last_error: str = ""
    address: str | None = None
    card: int | None = None
    cpu: int | None = None
    since: str | None = None  # when it entered its state
    uptime_s: float | None = None  # serving without a break
    model_health: dict[str, bool] = msgspec.field(
        default_factory=dict
    )  # by role, from the card manager's last check
    restarts: int = 0  # model servers restarted over ssh
    reboots: int = 0
    temperature_c: float | None = None  # the package's, from the last sample; None: no reading
    mem_total_kb: int | None = None
    mem_available_kb: int | None = None
    sampled_at: str | None = None


class Nodes(Reply):
    fleet_kind: str
    nodes: list[NodeInfo]


class Card(Reply):
    card: int
    nodes: dict[str, str]  # node id -> state


class Cards(Reply):
    cards: list[Card]


class Sample(Reply):
    at: str
    temperature_c: float | None  # None with `error`: the node did not answer, never a zero
    mem_total_kb: int | None
    mem_available_kb: int | None
    error: str = ""


class Telemetry(Reply):
    node: str
    samples: list[Sample]


class TelemetryQuery(Query):
    node: Annotated[str, msgspec.Meta(max_length=32)] = ""
    since: Annotated[str, msgspec.Meta(max_length=64)] = "0"  # epoch seconds, or ISO-8601


class ActionReply(Reply):
    """An admin action was started; the nodes' states tell how it goes."""

    action: str
    nodes: list[str]
