"""A node as the card manager tracks it: state, ladder counters, public view, and its ssh checks."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Literal, Protocol

import msgspec

from boot.context import Context
from boot.target import Target
from smemd.config import CardIntervals, CardThresholds, Lane
from smemd.devices.sshlink import NodeUnreachable
from smemd.errors import SmemError

log = logging.getLogger("smemd.cards")

State = Literal["off", "booting", "up", "degraded", "down", "lent", "failed"]
# States whose node the supervisor checks; the others are off, in an operation, or given up on.
WATCHED: frozenset[State] = frozenset({"up", "degraded", "down"})
UNITS = {"embed": "sm-emb", "rerank": "sm-rrk", "llm": "sm-llm"}  # systemd units on the image


# Both are config (`[cards.thresholds]`, `[cards.intervals]`).
Thresholds = CardThresholds
Intervals = CardIntervals


class NodeView(msgspec.Struct, kw_only=True, frozen=True):
    """One node as the API shows it."""

    id: str
    state: State
    lane: Lane
    address: str
    card: int
    cpu: int
    last_error: str = ""
    since: float  # wall-clock time the node entered this state
    uptime_s: float | None = None  # seconds serving (up or degraded) without a break
    health: dict[str, bool] = {}  # by role, from the last check
    restarts: int = 0  # model servers restarted over ssh
    reboots: int = 0  # by the ladder or the admin
    boots: int = 0  # bring-ups begun (each attempt)


class NodeRecord:
    """The manager's mutable record of one node."""

    def __init__(self, target: Target, lane: Lane, backoff: float) -> None:
        self.target = target
        self.lane = lane
        self.state: State = "off"
        self.since = time.time()
        self.serving_since: float | None = None  # monotonic
        self.last_error = ""
        self.health: dict[str, bool] = {}
        self.strikes = 0  # checks failed in a row
        self.restarts = 0
        self.reboots = 0
        self.boots = 0
        self.initial_backoff = backoff
        self.backoff = backoff
        self.next_action = 0.0  # monotonic: no ladder action before then
        self.operation: asyncio.Task[None] | None = None  # a boot, reboot, poweroff or reset

    @property
    def busy(self) -> bool:
        return self.operation is not None and not self.operation.done()

    def enter(self, state: State, reason: str = "") -> bool:
        """Move to `state`; True if that is a change."""
        self.last_error = reason
        if state == self.state:
            return False
        serving = state in ("up", "degraded")
        if serving and self.serving_since is None:
            self.serving_since = time.monotonic()
        elif not serving and state != "lent":
            self.serving_since = None
        self.state, self.since = state, time.time()
        return True

    def healthy(self) -> None:
        """A check passed: the ladder starts again from the bottom."""
        self.strikes = 0
        self.backoff = self.initial_backoff
        self.next_action = 0.0

    def defer(self, cap: float) -> None:
        """After a ladder action: wait the backoff before the next, and double it."""
        self.next_action = time.monotonic() + self.backoff
        self.backoff = min(self.backoff * 2, cap)

    def view(self) -> NodeView:
        t = self.target
        up = None if self.serving_since is None else time.monotonic() - self.serving_since
        return NodeView(
            id=t.node, state=self.state, lane=self.lane, address=t.address, card=t.card,
            cpu=t.cpu, last_error=self.last_error, since=self.since, uptime_s=up,
            health=dict(self.health), restarts=self.restarts, reboots=self.reboots,
            boots=self.boots,
        )  # fmt: skip


async def ssh_error(rec: NodeRecord, ctx: Context) -> str:
    """Why ssh fails ("" when it works): connected, and the model units answer is-active."""
    link = await ctx.link(rec.target)
    timeout = ctx.timeouts.ssh
    if not await link.wait_reachable(timeout):
        return f"ssh: {link.last_error or 'unreachable'}"
    units = " ".join(UNITS[role] for role in rec.target.roles)
    command = f"systemctl is-active {units}".strip()
    try:
        await link.run(command, timeout=timeout)
    except NodeUnreachable as err:
        # The connection dropped under the command: a node that takes a new one is well, and
        # one dropped connection is no failed check.
        await link.reconnect()
        if not await link.wait_reachable(timeout):
            return f"ssh: {err}"
        try:
            await link.run(command, timeout=timeout)
        except SmemError as again:
            return f"ssh: {again}"
    except SmemError as err:
        return f"ssh: {err}"
    return ""


async def restart(rec: NodeRecord, ctx: Context, roles: list[str]) -> None:
    """`systemctl restart` each role's unit over ssh."""
    link = await ctx.link(rec.target)
    for role in roles:
        command = f"systemctl restart {UNITS[role]}"
        log.warning("node %s: %s is unhealthy: %s", rec.target.node, role, command)
        try:
            done = await link.run(command, timeout=ctx.timeouts.ssh)
        except SmemError as err:
            log.warning("node %s: %s failed: %s", rec.target.node, command, err)
            continue
        rec.restarts += 1
        if done.exit_status != 0:
            log.warning(
                "node %s: %s: exit %d: %s", rec.target.node, command, done.exit_status,
                done.stderr.strip(),
            )  # fmt: skip


class FedNode(Protocol):
    """What pool_feeder sets on a node of the fleet's pool."""

    healthy: bool
    last_error: str


class FedPool(Protocol):
    """The fleet's Pool as pool_feeder sees it; the cards sit below the fleet and never import it."""

    @property
    def nodes(self) -> Mapping[str, FedNode]: ...


def pool_feeder(pool: FedPool) -> Callable[[str, State, str], None]:
    """An on_change that marks the pool's node healthy only while it serves (up or degraded)."""

    def feed(node: str, state: State, reason: str) -> None:
        if (member := pool.nodes.get(node)) is not None:
            member.healthy = state in ("up", "degraded")
            member.last_error = reason

    return feed


def default_lane(target: Target) -> Lane:
    """Card 0 answers searches; card 1 does ingest."""
    return "interactive" if target.card == 0 else "background"


def why(rec: NodeRecord) -> str:
    failing = [role for role, ok in rec.health.items() if not ok]
    return f"/health failing: {', '.join(failing)}" if failing else ""
