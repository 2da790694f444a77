"""The card manager: a state machine per VCA node, booting, watching and healing it, feeding the fleet.

On start it reads the inventory and adopts nodes that already serve (a daemon restart must not
reset them), boots the others that `boot` selects in the background, and checks each node every
`intervals.health` seconds. A node failing checks climbs a ladder: its failing model servers are
restarted over ssh after N checks, the node rebooted after M, marked failed after K.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Literal

from boot import sequence, takedown
from boot.bringup import OS_STATES
from boot.context import Context
from boot.sequence import Outcome
from boot.steps import StepFailed
from boot.target import Target
from smemd.cards.nodestate import (
    WATCHED,
    Intervals,
    NodeRecord,
    NodeView,
    State,
    Thresholds,
    default_lane,
    pool_feeder,
    restart,
    ssh_error,
    why,
)
from smemd.config import Lane
from smemd.errors import Conflict, NotFound, SmemError
from smemd.tasks import stop

log = logging.getLogger("smemd.cards")
__all__ = ["CardManager", "Intervals", "NodeView", "State", "Thresholds", "pool_feeder"]
OnChange = Callable[[str, State, str], object]
Extend = Callable[[float], object]


class CardManager:
    """`async with CardManager(targets, context) as cards:` leaving it leaves the nodes running."""

    def __init__(
        self, targets: Sequence[Target], context: Context | Callable[[], Context], *,
        boot: Literal["all", "none"] | Sequence[str] = "all",
        thresholds: Thresholds | None = None, intervals: Intervals | None = None,
        on_change: OnChange | None = None, lanes: dict[str, Lane] | None = None,
    ) -> None:  # fmt: skip
        self.ctx = context if isinstance(context, Context) else context()
        self.boot_policy = boot
        self.thresholds = thresholds or Thresholds()
        self.intervals = intervals or Intervals()
        self.on_change = on_change
        lanes = lanes or {}
        self._nodes = {
            t.node: NodeRecord(t, lanes.get(t.node, default_lane(t)), self.intervals.backoff)
            for t in targets
        }  # fmt: skip
        self._supervisors: list[asyncio.Task[None]] = []
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> CardManager:
        await self._stack.enter_async_context(self.ctx)
        try:
            await self.start()
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._cancel_tasks()
        await self._stack.aclose()

    async def start(self) -> None:
        """Read the inventory, adopt serving nodes, boot the selected others in the background."""
        reports = await sequence.status([r.target for r in self._nodes.values()], self.ctx)
        for report in reports:
            rec = self._nodes[report.node]
            serving = report.state == "booting" or report.state in OS_STATES
            if serving and report.ssh:
                rec.health = dict(report.health)
                healthy = all(report.health.values())
                log.info("node %s: adopted (%s)", rec.target.node, report.state)
                self._enter(rec, "up" if healthy else "degraded", "" if healthy else why(rec))
                (await self.ctx.link(rec.target)).suppress(False)
            elif self._selected(rec.target):
                self._run(rec, self._boot(rec), "boot")
            else:  # said even though a record starts off: the fleet must hear it
                self._enter(rec, "off", f"not booted at start (state {report.state})", force=True)
        self._supervisors = [
            asyncio.create_task(self._supervise(rec), name=f"cards supervise {name}")
            for name, rec in self._nodes.items()
        ]

    def nodes(self) -> list[NodeView]:
        return [rec.view() for rec in self._nodes.values()]

    def node(self, node: str) -> NodeView:
        return self._record(node).view()

    def lent_nodes(self) -> frozenset[str]:
        """The nodes lent away: a Pool's `paused`."""
        return frozenset(n for n, rec in self._nodes.items() if rec.state == "lent")

    def boot(self, node: str) -> asyncio.Task[None]:
        """Bring the node up (a no-op on one that serves); await the task to see it done."""
        rec = self._idle(node)
        rec.healthy()
        return self._run(rec, self._boot(rec), "boot")

    def reboot(self, node: str) -> asyncio.Task[None]:
        """Power the node off, close its image, and bring it up again."""
        rec = self._idle(node)
        return self._run(rec, self._reboot(rec), "reboot")

    def poweroff(self, node: str) -> asyncio.Task[None]:
        rec = self._idle(node)
        return self._run(rec, self._poweroff(rec), "poweroff")

    def reset(self, node: str) -> asyncio.Task[None]:
        """A hard reset (`vcactl reset --force`, whatever runs there), then bring it up."""
        rec = self._idle(node)
        return self._run(rec, self._reset(rec), "reset")

    def reset_card(self, card: int) -> list[asyncio.Task[None]]:
        """reset() on each of the card's nodes; none is touched if one of them is busy."""
        names = [n for n, rec in self._nodes.items() if rec.target.card == card]
        if not names:
            raise NotFound(f"no configured node on card {card}")
        for name in names:
            self._idle(name)
        return [self.reset(name) for name in names]

    async def lend(self, node: str, lent: bool) -> NodeView:
        """Lend the node away (the supervisor leaves it be), or take it back and check it now."""
        rec = self._idle(node)
        if lent:
            if rec.state not in WATCHED:
                raise Conflict(f"node {node} is {rec.state}: only a running node can be lent")
            self._enter(rec, "lent", "lent")
        elif rec.state == "lent":
            rec.healthy()
            self._enter(rec, "up", "")  # the check below corrects it at once
            await self._check(rec)
        return rec.view()

    async def shutdown(self, extend: Extend | None = None) -> list[Outcome]:
        """Power every node off and close its image, in parallel; `extend(seconds_needed)` meanwhile."""
        await self._cancel_tasks()
        targets = [rec.target for rec in self._nodes.values()]
        limit = sum(step.timeout(self.ctx.timeouts) for step in takedown.STEPS)
        ticker = asyncio.create_task(self._tick_extend(extend, limit), name="cards extend")
        try:
            outcomes = await sequence.run_all(sequence.down, targets, self.ctx)
        finally:
            await stop(ticker)
        for outcome in outcomes:
            rec = self._nodes[outcome.node]
            self._enter(rec, "off" if outcome.ok else "failed", outcome.reason)
        return outcomes

    async def _tick_extend(self, extend: Extend | None, limit: float) -> None:
        started = time.monotonic()
        while extend is not None:
            try:
                extend(max(limit - (time.monotonic() - started), 0.0))
            except Exception:
                log.exception("cards: the shutdown extend callback failed")
            await asyncio.sleep(self.intervals.extend)

    async def _boot(self, rec: NodeRecord) -> None:
        """up() until it works, `boot_attempts` times with backoff; a dead node is failed at once."""
        for attempt in range(1, self.thresholds.boot_attempts + 1):
            self._enter(rec, "booting", f"boot attempt {attempt}" if attempt > 1 else "")
            if await self._up(rec) or rec.state == "failed":
                return
            if attempt < self.thresholds.boot_attempts:
                delay = rec.backoff
                rec.backoff = min(rec.backoff * 2, self.intervals.backoff_cap)
                await asyncio.sleep(delay)
        reason = f"{rec.last_error} (gave up after {self.thresholds.boot_attempts} attempts)"
        self._enter(rec, "failed", reason)

    async def _up(self, rec: NodeRecord) -> bool:
        """One run of the bring-up sequence; False (with the reason kept) when it failed."""
        rec.boots += 1
        link = await self.ctx.link(rec.target)
        link.suppress(True)
        try:
            await sequence.up(rec.target, self.ctx)
        except (StepFailed, SmemError) as err:
            return await self._failed_op(rec, "up", err)
        link.suppress(False)
        rec.healthy()
        rec.health = dict.fromkeys(rec.target.roles, True)  # its health step saw them all answer
        self._enter(rec, "up", "")
        return True

    async def _failed_op(self, rec: NodeRecord, action: str, err: Exception) -> bool:
        """Keep why an operation failed; a node whose PCIe link is down is dead: failed, no retry."""
        detail = f"{err.step}: {err.reason}" if isinstance(err, StepFailed) else str(err)
        reason = f"{action}: {detail}"
        try:
            state = await self.ctx.state(rec.target)
        except SmemError as status_err:
            state = f"unknown ({status_err})"
        if state == "link_down":
            self._enter(rec, "failed", f"dead: stuck in link_down; {reason}")
        else:
            self._enter(rec, "down", f"{reason} (state {state})")
        return False

    async def _reboot(self, rec: NodeRecord) -> None:
        rec.reboots += 1
        self._enter(rec, "booting", "reboot")
        (await self.ctx.link(rec.target)).suppress(True)
        try:
            await sequence.down(rec.target, self.ctx)
        except (StepFailed, SmemError) as err:
            await self._failed_op(rec, "reboot", err)
            return
        await self._up(rec)

    async def _poweroff(self, rec: NodeRecord) -> None:
        self._enter(rec, "booting", "powering off")  # an operation: the supervisor keeps away
        (await self.ctx.link(rec.target)).suppress(True)
        try:
            await sequence.down(rec.target, self.ctx)
        except (StepFailed, SmemError) as err:
            await self._failed_op(rec, "poweroff", err)
            return
        rec.health = {}
        self._enter(rec, "off", "powered off")

    async def _reset(self, rec: NodeRecord) -> None:
        rec.reboots += 1
        self._enter(rec, "booting", "reset")
        (await self.ctx.link(rec.target)).suppress(True)
        try:
            # --force: a running node holds its RW image active, which vcactl guards (§A.2).
            await self.ctx.vcactl.reset(rec.target.card, rec.target.cpu, force=True)
        except SmemError as err:
            await self._failed_op(rec, "reset", err)
            return
        rec.healthy()
        await self._boot(rec)

    async def _supervise(self, rec: NodeRecord) -> None:
        while True:
            await asyncio.sleep(self.intervals.health)
            if rec.busy or rec.state not in WATCHED:
                continue
            try:
                await self._check(rec)
            except Exception:  # a supervisor that died would leave its node unwatched
                log.exception("node %s: check failed", rec.target.node)

    async def _check(self, rec: NodeRecord) -> None:
        """Ssh and every /health once, then the ladder's next rung if they failed."""
        ssh_failed = await ssh_error(rec, self.ctx)
        roles = rec.target.roles
        answers = await asyncio.gather(*(self.ctx.healthy(rec.target, p) for p in roles.values()))
        rec.health = dict(zip(roles, answers, strict=True))
        if rec.state == "lent" or rec.busy:
            return  # lent or taken over while we looked
        if not ssh_failed and all(answers):
            rec.healthy()
            self._enter(rec, "up", "")
            return
        rec.strikes += 1
        failing = [role for role, ok in rec.health.items() if not ok]
        reason = ssh_failed or why(rec)
        t = self.thresholds
        if rec.strikes >= t.fail_after:
            self._enter(rec, "failed", f"{reason} ({rec.strikes} failed checks in a row)")
            return
        self._enter(rec, "down" if ssh_failed and not any(answers) else "degraded", reason)
        if time.monotonic() < rec.next_action:
            return  # backing off after the last rung
        if rec.strikes >= t.reboot_after:
            log.warning("node %s: rebooting after %d failed checks", rec.target.node, rec.strikes)
            rec.defer(self.intervals.backoff_cap)
            self._run(rec, self._reboot(rec), "reboot")
        elif rec.strikes >= t.restart_after and failing and not ssh_failed:
            rec.defer(self.intervals.backoff_cap)
            await restart(rec, self.ctx, failing)

    def _run(
        self, rec: NodeRecord, work: Coroutine[Any, Any, None], what: str
    ) -> asyncio.Task[None]:
        # At once, not when the task first runs: the supervisor and the views see the operation.
        self._enter(rec, "booting", "" if what == "boot" else what)
        task = asyncio.create_task(
            self._guarded(rec, work, what), name=f"cards {what} {rec.target.node}"
        )
        rec.operation = task
        return task

    async def _guarded(self, rec: NodeRecord, work: Coroutine[Any, Any, None], what: str) -> None:
        """The operation, whose failures are its steps' to say (`_failed_op`); an error none of
        them expected is logged and leaves the node down, for the supervisor's ladder, not
        "booting" and unwatched until a restart."""
        try:
            await work
        except Exception as err:
            log.exception("node %s: %s failed", rec.target.node, what)
            self._enter(rec, "down", f"{what}: {err!r}")

    def _enter(
        self, rec: NodeRecord, state: State, reason: str = "", *, force: bool = False
    ) -> None:
        if not rec.enter(state, reason) and not force:
            return
        level = logging.WARNING if state in ("down", "failed") else logging.INFO
        log.log(level, "node %s: %s%s", rec.target.node, state, f": {reason}" if reason else "")
        if self.on_change is not None:
            try:
                self.on_change(rec.target.node, state, reason)
            except Exception:
                log.exception("node %s: the on_change callback failed", rec.target.node)

    def _record(self, node: str) -> NodeRecord:
        if node not in self._nodes:
            raise NotFound(f"no node {node}")
        return self._nodes[node]

    def _idle(self, node: str) -> NodeRecord:
        rec = self._record(node)
        if rec.busy:
            raise Conflict(f"node {node} is busy ({rec.state}, {rec.last_error or 'working'})")
        return rec

    def _selected(self, target: Target) -> bool:
        if isinstance(self.boot_policy, str):
            return self.boot_policy == "all"
        return target.node in self.boot_policy

    async def _cancel_tasks(self) -> None:
        tasks = [*self._supervisors, *(r.operation for r in self._nodes.values() if r.operation)]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._supervisors = []
