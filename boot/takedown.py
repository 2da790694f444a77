"""The steps that take a node down: power off (ssh, then the agent, then the button), close the image."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from boot.bringup import OS_STATES, wait_state
from boot.context import DEVICE, Context
from boot.steps import Step, Unmet
from boot.target import Target
from smemd.devices.sshlink import NodeUnreachable
from smemd.errors import SmemError

log = logging.getLogger("smemd.boot")


async def is_off(target: Target, ctx: Context) -> bool:
    return await ctx.state(target) == "power_off"


async def by_ssh(target: Target, ctx: Context, state: str) -> bool:
    """`systemctl poweroff` on the node: the graceful way, needing no agent (hardware.md §A.6)."""
    if state != "booting" and state not in OS_STATES:
        return False
    link = await ctx.link(target)
    if not await link.wait_reachable(ctx.timeouts.ssh):
        raise Unmet(f"ssh: {link.last_error or 'unreachable'}")
    link.suppress(True)  # its going away is what we asked for
    try:
        done = await link.run("systemctl poweroff", timeout=ctx.timeouts.ssh)
    except NodeUnreachable as err:
        log.info("node %s: ssh went away during poweroff (%s)", target.node, err)
        return True  # it may have gone down before answering; the wait tells
    if done.exit_status != 0:
        raise Unmet(f"exit {done.exit_status}: {done.stderr.strip()}")
    return True


async def by_agent(target: Target, ctx: Context, state: str) -> bool:
    """`vcactl os-shutdown`: the node's agent runs `halt -p`."""
    if state not in OS_STATES:
        return False
    await ctx.vcactl.os_shutdown(target.card, target.cpu)
    return True


async def by_button(target: Target, ctx: Context, state: str) -> bool:
    """`vcactl pwrbtn-long`: the 5 s override, a hard power_off in any state."""
    await ctx.vcactl.pwrbtn_long(target.card, target.cpu)
    return True


WAYS: list[tuple[str, Callable[[Target, Context, str], Awaitable[bool]]]] = [
    ("ssh systemctl poweroff", by_ssh),
    ("vcactl os-shutdown", by_agent),
    ("vcactl pwrbtn-long", by_button),
]


async def power_off(target: Target, ctx: Context) -> None:
    """Each way in turn until the node reaches power_off."""
    limit = ctx.timeouts.poweroff
    state = await ctx.state(target)
    tried: list[str] = []
    if state == "powering_down":
        try:
            return await wait_state(target, ctx, lambda s: s == "power_off", "power_off", limit)
        except Unmet as err:
            tried.append(f"already powering down: {err}")
    for name, way in WAYS:
        try:
            if not await way(target, ctx, state):
                continue  # not possible in this state
            await wait_state(target, ctx, lambda s: s == "power_off", "power_off", limit)
            return
        except (Unmet, SmemError) as err:
            log.warning("node %s: %s did not power it off: %s", target.node, name, err)
            tried.append(f"{name}: {err}")
        state = await ctx.state(target)
    raise Unmet("; ".join(tried))


async def image_closed(target: Target, ctx: Context) -> bool:
    device = await ctx.image_device(target)
    return device is None or device.state == "disabled"


async def close_image(target: Target, ctx: Context) -> None:
    # After power_off an RW image still counts as active: closing it needs --force (§A.5).
    await ctx.vcactl.blockio_close(target.card, target.cpu, DEVICE, force=True)


STEPS = [
    Step(
        "poweroff",
        power_off,
        lambda t: 3 * (t.poweroff + 2 * t.vcactl) + 2 * t.ssh,
        satisfied=is_off,
    ),
    Step("blockio-close", close_image, lambda t: t.vcactl * 2 + t.poll, satisfied=image_closed),
]
