"""up, down and status of nodes: steps in order per node, nodes side by side."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import msgspec

from boot import bringup, takedown
from boot.bringup import OS_STATES
from boot.context import DEVICE, Context
from boot.steps import StepDone, StepFailed, run_steps
from boot.target import Target


class Outcome(msgspec.Struct, frozen=True):
    """How one node's sequence went: the steps done, or the step that failed and why."""

    node: str
    steps: list[StepDone] = []
    failed_step: str = ""
    reason: str = ""

    @property
    def ok(self) -> bool:
        return not self.failed_step

    @property
    def ran(self) -> list[str]:
        return [done.step for done in self.steps if not done.skipped]


class NodeReport(msgspec.Struct, frozen=True):
    node: str
    state: str  # as `vcactl status` shows it; "absent" when it lists no such node
    image: str  # vcablk0: active | inactive | enabled | disabled | none
    image_path: str | None
    ssh: bool | None  # None: not tried, no OS runs there
    health: dict[str, bool] = {}  # by role; empty when not tried


async def up(target: Target, ctx: Context) -> list[StepDone]:
    """Bring the node to serving; steps already satisfied are skipped, so a serving node is left be."""
    return await run_steps(bringup.STEPS, target, ctx)


async def down(target: Target, ctx: Context) -> list[StepDone]:
    """Power the node off and close its image; harmless on a node that is off and closed."""
    return await run_steps(takedown.STEPS, target, ctx)


async def run_all(
    action: Callable[[Target, Context], Awaitable[list[StepDone]]], targets: Sequence[Target],
    ctx: Context,
) -> list[Outcome]:  # fmt: skip
    """`action` on every target at once; one node's failure does not stop the others."""

    async def one(target: Target) -> Outcome:
        try:
            return Outcome(target.node, await action(target, ctx))
        except StepFailed as err:
            return Outcome(target.node, failed_step=err.step, reason=err.reason)

    return list(await asyncio.gather(*(one(t) for t in targets)))


async def status(targets: Sequence[Target], ctx: Context) -> list[NodeReport]:
    """Each node's state, image, ssh reachability and model health (the last two where an OS runs)."""
    states = {(s.card, s.cpu): s.state for s in await ctx.vcactl.status()}
    devices = {(d.card, d.cpu): d for d in await ctx.vcactl.blockio_list(device=DEVICE)}

    async def report(target: Target) -> NodeReport:
        state = states.get((target.card, target.cpu), "absent")
        device = devices.get((target.card, target.cpu))
        ssh: bool | None = None
        health: dict[str, bool] = {}
        if state == "booting" or state in OS_STATES:
            ssh = await ctx.reachable(target, ctx.timeouts.ssh)
            answers = await asyncio.gather(*(ctx.healthy(target, p) for p in target.roles.values()))
            health = dict(zip(target.roles, answers, strict=True))
        return NodeReport(
            target.node, state, device.state if device else "none",
            device.path if device else None, ssh, health,
        )  # fmt: skip

    return list(await asyncio.gather(*(report(t) for t in targets)))
