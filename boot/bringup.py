"""The steps that bring a node up: stack, auto-boot off, reset, image, boot, ready, link, health."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable

from boot.context import DEVICE, Context
from boot.steps import Step, Unmet, poll_until
from boot.target import Target
from smemd.devices.vcactl import NoCards

log = logging.getLogger("smemd.boot")
# States the node agent writes once the OS runs (hardware.md §A.3).
OS_STATES = frozenset({"os_ready", "net_device_ready", "net_device_up", "net_device_down",
                       "net_device_no_ip", "dhcp_in_progress", "dhcp_done", "dhcp_error"})  # fmt: skip
BIOS_STATES = frozenset({"bios_up", "bios_ready"})
ERROR_STATES = frozenset({"drv_probe_error", "nfs_mount_error"})  # vcactl wait gives up at once
HOST_MTU = 65535  # vca_eth_ifup.sh sets it on the host side of each node's link


async def stack(target: Target, ctx: Context) -> None:
    """vcactl answers and lists the node (once per run, for every node)."""

    async def look() -> None:
        try:
            ctx.nodes_seen = {(s.card, s.cpu) for s in await ctx.vcactl.status()}
        except NoCards as err:
            raise Unmet(f"{err}: are the VCA modules loaded (modprobe plx87xx)?") from err

    await ctx.once("stack", look)
    if (target.card, target.cpu) not in ctx.nodes_seen:
        raise Unmet(f"vcactl status lists no card {target.card} cpu {target.cpu}")


async def auto_boot_off(target: Target, ctx: Context) -> None:
    """vcactld boots nodes itself when auto-boot is 1, and would fight us (hardware.md §A.7)."""

    async def turn_off() -> None:
        if await ctx.vcactl.config_value("auto-boot") != "0":
            await ctx.vcactl.set_config("auto-boot", "0")
            log.info("vcactl: auto-boot set to 0")

    await ctx.once("auto-boot", turn_off)


async def serving(target: Target, ctx: Context) -> bool:
    """The node's OS runs: its agent says so, or (no agent) it is still `booting` but ssh answers."""
    state = await ctx.state(target)
    if state in OS_STATES:
        return True
    return state == "booting" and await ctx.reachable(target, ctx.timeouts.poll * 2)


async def reset(target: Target, ctx: Context) -> None:
    if await ctx.state(target) == "power_off":
        # The documented way back from power_off is the power button (hardware.md §A.3); with
        # auto-boot 0 the node then waits in bios_up. vcactl itself waits 7 s before pressing.
        await ctx.vcactl.pwrbtn_short(target.card, target.cpu)
        await wait_state(target, ctx, lambda s: s in BIOS_STATES, "bios_up", ctx.timeouts.reset)
    device = await ctx.image_device(target)
    # vcactl refuses to reset a node with an active RW image; nothing runs on it if we got here.
    force = device is not None and device.state == "active" and device.mode == "RW"
    await ctx.vcactl.reset(target.card, target.cpu, force=force)
    await wait_state(target, ctx, lambda s: s in BIOS_STATES, "bios_up", ctx.timeouts.reset)


async def image_open(target: Target, ctx: Context) -> bool:
    device = await ctx.image_device(target)
    wanted = await asyncio.to_thread(os.path.realpath, target.image)  # vcactl stores it so
    return device is not None and device.state != "disabled" and device.path == wanted


async def open_image(target: Target, ctx: Context) -> None:
    if not await asyncio.to_thread(os.path.isfile, target.image):
        raise Unmet(f"image {target.image} does not exist")
    device = await ctx.image_device(target)
    if device is not None and device.state != "disabled":
        log.warning("node %s: %s holds %s; closing it first", target.node, DEVICE, device.path)
        await ctx.vcactl.blockio_close(target.card, target.cpu, DEVICE, force=True)
    await ctx.vcactl.blockio_open(target.card, target.cpu, target.image)


async def booted(target: Target, ctx: Context) -> bool:
    state = await ctx.state(target)
    return state == "booting" or state in OS_STATES


async def boot(target: Target, ctx: Context) -> None:
    await ctx.vcactl.boot(target.card, target.cpu, DEVICE, timeout=ctx.timeouts.boot)


async def ready(target: Target, ctx: Context) -> None:
    """Until net_device_ready, or ssh answers: an image without vca_agent stays `booting`."""

    seen = ["unknown"]

    async def check() -> bool:
        state = seen[0] = await ctx.state(target)
        if state in ERROR_STATES:
            raise Unmet(f"the node reports {state}")
        if state == "net_device_ready":
            return True
        if state in ("booting", *OS_STATES) and (await ctx.link(target)).reachable:
            log.warning(
                "node %s: ssh answers but the state is %s: no vca_agent?", target.node, state
            )
            return True
        return False

    limit = ctx.timeouts.ready

    def late() -> str:
        return f"still {seen[0]} after {limit:g} s, not net_device_ready, and ssh does not answer"

    await wait_for(check, ctx, late, limit)


async def host_link(target: Target, ctx: Context) -> None:
    """The host-side netdev for the node: MTU 65535. No such netdev (a simulator): nothing to check."""
    try:
        names = sorted(os.listdir(ctx.sys_net))
    except OSError:
        names = []
    for name in names:
        try:
            address = (ctx.sys_net / name / "address").read_text().strip().lower()
            if address != target.mac:
                continue
            mtu = int((ctx.sys_net / name / "mtu").read_text())
        except (OSError, ValueError):
            continue
        if mtu != HOST_MTU:
            log.warning(
                "node %s: host link %s has MTU %d, not %d", target.node, name, mtu, HOST_MTU
            )
        return
    log.debug("node %s: no host netdev with MAC %s", target.node, target.mac)


async def health(target: Target, ctx: Context) -> None:
    """Every model server the node runs answers /health with 200."""
    waiting = dict(target.roles)

    async def check() -> bool:
        answers = await asyncio.gather(*(ctx.healthy(target, p) for p in waiting.values()))
        for role, ok in zip(list(waiting), answers, strict=True):
            if ok:
                del waiting[role]
        return not waiting

    def late() -> str:
        return f"no /health from {', '.join(waiting)} within {ctx.timeouts.health:g} s"

    await wait_for(check, ctx, late, ctx.timeouts.health)


async def wait_state(
    target: Target, ctx: Context, want: Callable[[str], bool], name: str, limit: float
) -> None:
    """Poll status until `want(state)`; on timeout say which state the node was stuck in."""
    seen = ["unknown"]

    async def check() -> bool:
        seen[0] = await ctx.state(target)
        return want(seen[0])

    await wait_for(check, ctx, lambda: f"still {seen[0]}, not {name}, after {limit:g} s", limit)


async def wait_for(
    check: Callable[[], Awaitable[bool]], ctx: Context, why: Callable[[], str], limit: float
) -> None:
    """poll_until under `limit`; a timeout becomes Unmet(why())."""
    try:
        async with asyncio.timeout(limit):
            await poll_until(check, ctx.timeouts.poll)
    except TimeoutError as err:
        raise Unmet(why()) from err


STEPS = [
    Step("stack", stack, lambda t: t.vcactl + t.poll),
    Step("auto-boot-off", auto_boot_off, lambda t: t.vcactl * 2 + t.poll),
    Step("reset", reset, lambda t: t.vcactl * 6 + t.reset * 2 + t.ssh, satisfied=serving),
    Step("blockio-open", open_image, lambda t: t.vcactl * 4 + t.poll, satisfied=image_open),
    Step("boot", boot, lambda t: t.vcactl + t.boot + t.poll, satisfied=booted),
    Step("ready", ready, lambda t: t.ready + t.vcactl + t.poll),
    Step("host-link", host_link, lambda t: t.vcactl),
    Step("health", health, lambda t: t.health + t.http + t.poll),
]
