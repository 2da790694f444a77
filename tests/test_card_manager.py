"""CardManager against the VCA simulator (fake vcactl + fake nodes), with small timings."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from boot import Context, Target, Timeouts, targets_from_config
from smemd.cards.manager import CardManager, pool_feeder
from smemd.cards.nodestate import Intervals, State, Thresholds
from smemd.config import load
from smemd.devices.vcactl import Vcactl
from smemd.errors import Conflict
from smemd.fleet.pool import Node, Pool
from tests.fakes.vca_sim import Simulator
from tests.fakes.vcactl import Timings, addressed
from tests.pace import scaled

FAST = Timeouts(vcactl=3, reset=3, boot=3, ready=3, health=3, poweroff=3, ssh=1, http=1, poll=0.1)
SHORT_WAITS = msgspec.structs.replace(FAST, ssh=0.3, poweroff=0.5)
EAGER = Thresholds(restart_after=1, reboot_after=2, fail_after=6)
QUICK = Intervals(health=0.1, backoff=0.2, backoff_cap=1.0, extend=0.05)
LADDER = Thresholds(restart_after=2, reboot_after=5, fail_after=8, boot_attempts=2)
CHANGES = ("reset", "boot", "blockio open", "blockio close", "pwrbtn-short", "pwrbtn-long")


def simulate(tmp_path: Path, faults: dict[str, Any] | None = None) -> Simulator:
    timings = Timings(
        reset=0.15, boot=0.15, net=0.1, power_down=0.1, power_on=0.1, agent_timeout=0.2
    )
    return Simulator(tmp_path / "sim", timings=timings, faults=faults)


def targets(sim: Simulator, tmp_path: Path) -> list[Target]:
    raw: dict[str, dict[str, Any]] = {
        "paths": {"state-dir": str(tmp_path / "state")},
        "fleet": {"kind": "vca2", "nodes": sim.node_configs()},
        "cards": sim.cards_config(),
    }
    overrides = {(s, k): v for s, table in raw.items() for k, v in table.items()}
    config = load(Path(os.devnull), env={}, overrides=overrides)
    return targets_from_config(config)


class Changes:
    """on_change's calls, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, State, str]] = []

    def __call__(self, node: str, state: State, reason: str) -> None:
        self.seen.append((node, state, reason))

    def of(self, node: str) -> list[State]:
        return [state for name, state, _ in self.seen if name == node]


@contextlib.asynccontextmanager
async def manager(
    sim: Simulator, tmp_path: Path, *, timeouts: Timeouts = FAST, **options: Any
) -> AsyncIterator[CardManager]:
    def context() -> Context:
        vcactl = Vcactl(str(sim.vcactl), timeout=timeouts.vcactl)
        return Context(
            vcactl, state_dir=tmp_path / "state", timeouts=timeouts, sys_net=tmp_path / "no-net"
        )

    settings: dict[str, Any] = {"thresholds": LADDER, "intervals": QUICK} | options
    async with CardManager(targets(sim, tmp_path), context, **settings) as cards:
        yield cards


def node_calls(sim: Simulator, card: int, cpu: int, since: int = 0) -> list[str]:
    """Every vcactl command run on one node (status included), in order."""
    done = []
    for call in sim.calls()[since:]:
        name, address = addressed(call["argv"])
        if address == [str(card), str(cpu)]:
            done.append(name)
    return done


async def eventually(check: Callable[[], bool], within: float = 8.0) -> None:
    deadline = time.monotonic() + scaled(within)
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def states(cards: CardManager) -> list[str]:
    return [view.state for view in cards.nodes()]


async def test_cold_start_boots_five_and_reports_the_dead_node_once(tmp_path: Path) -> None:
    changes = Changes()
    async with simulate(tmp_path, faults={"node3": {"dead": True}}) as sim:
        started = time.monotonic()
        async with manager(sim, tmp_path, on_change=changes) as cards:
            assert time.monotonic() - started < scaled(2)  # start() does not wait for the boots
            assert "booting" in states(cards)
            await eventually(lambda: states(cards) == ["up"] * 3 + ["failed"] + ["up"] * 2)
            dead = cards.node("node3")
            assert "dead: stuck in link_down" in dead.last_error
            assert "VCA_RESET failed" in dead.last_error
            calls = len(node_calls(sim, 1, 0))
            await asyncio.sleep(0.5)  # five health intervals: nobody retries it
            assert len(node_calls(sim, 1, 0)) == calls
            assert node_calls(sim, 1, 0).count("reset") == 1
            views = cards.nodes()
        assert [v.lane for v in views] == ["interactive"] * 3 + ["background"] * 3
        node0 = views[0]
        assert (node0.id, node0.address, node0.card, node0.cpu) == ("node0", "127.0.31.1", 0, 0)
        assert node0.health == {"embed": True, "rerank": True, "llm": True}
        assert node0.uptime_s is not None and node0.uptime_s > 0
        assert views[3].uptime_s is None
        assert changes.of("node0") == ["booting", "up"]
        assert changes.of("node3") == ["booting", "failed"]
        assert all(sim.state(k) == "net_device_ready" for k in (0, 1, 2, 4, 5))


async def test_a_restarted_manager_adopts_serving_nodes_without_touching_them(
    tmp_path: Path,
) -> None:
    async with simulate(tmp_path) as sim:
        async with manager(sim, tmp_path, boot=["node0", "node4"]) as cards:
            await eventually(lambda: states(cards) == ["up", "off", "off", "off", "up", "off"])
        before = len(sim.calls())  # the manager's exit leaves the nodes running
        changes = Changes()
        started = time.monotonic()
        async with manager(sim, tmp_path, boot=["node0"], on_change=changes) as cards:
            assert [cards.node(n).state for n in ("node0", "node4")] == ["up", "up"]
            assert cards.node("node4").health == {"embed": True, "rerank": True, "llm": True}
            assert time.monotonic() - started < scaled(5)
            assert states(cards) == ["up", "off", "off", "off", "up", "off"]
            await asyncio.sleep(0.3)  # checks pass: nothing to heal
            assert states(cards) == ["up", "off", "off", "off", "up", "off"]
        for k in (0, 4):
            done = node_calls(sim, *divmod(k, 3), since=before)
            assert not set(done) & set(CHANGES), done
        assert changes.of("node0") == changes.of("node4") == ["up"]
        assert changes.of("node1") == ["off"]


async def test_a_dead_model_server_is_restarted_over_ssh(tmp_path: Path) -> None:
    changes = Changes()
    async with (
        simulate(tmp_path) as sim,
        manager(sim, tmp_path, boot=["node0"], on_change=changes) as cards,
    ):
        await eventually(lambda: cards.node("node0").state == "up")
        before = len(sim.calls())
        await sim.node(0).kill_model("llm")
        await eventually(lambda: "systemctl restart sm-llm" in sim.node(0).commands)
        await eventually(lambda: cards.node("node0").state == "up")
        view = cards.node("node0")
        assert (view.restarts, view.reboots, view.health["llm"]) == (1, 0, True)
        assert changes.of("node0") == ["booting", "up", "degraded", "up"]
        degraded = [reason for _, state, reason in changes.seen if state == "degraded"]
        assert degraded == ["/health failing: llm"]
        assert not set(node_calls(sim, 0, 0, since=before)) & set(CHANGES)
        assert sim.node(0).units["llm"] == "active"


async def test_a_node_that_stays_unhealthy_is_rebooted_then_failed(tmp_path: Path) -> None:
    async with (
        simulate(tmp_path) as sim,
        manager(sim, tmp_path, boot=["node1"], timeouts=SHORT_WAITS, thresholds=EAGER) as cards,
    ):
        await eventually(lambda: cards.node("node1").state == "up")
        before = len(sim.calls())
        sim.set_node(1, dead=True)  # the PCIe link goes: ssh and every server with it
        await eventually(lambda: cards.node("node1").state == "failed")
        view = cards.node("node1")
        assert view.reboots == 1 and "link_down" in view.last_error
        assert "systemctl restart" not in " ".join(sim.node(1).commands)  # ssh was gone
        calls = len(sim.calls())
        await asyncio.sleep(0.4)
        assert len(sim.calls()) == calls  # failed: left alone
        assert "pwrbtn-long" in node_calls(sim, 0, 1, since=before)


async def test_a_node_stuck_booting_fails_after_its_timeouts_and_the_others_come_up(
    tmp_path: Path,
) -> None:
    # Short, for node2 to fail soon; long enough, at the machine's pace, for node5 to come up.
    ready = round(scaled(0.3), 1)
    timeouts = msgspec.structs.replace(FAST, ready=ready)
    async with (
        simulate(tmp_path, faults={"node2": {"stuck_booting": True}}) as sim,
        manager(sim, tmp_path, boot=["node2", "node5"], timeouts=timeouts) as cards,
    ):
        await eventually(lambda: cards.node("node2").state == "failed")
        # node5 is not held back by node2 (on a busy machine it may still be on its way).
        await eventually(lambda: cards.node("node5").state == "up")
        view = cards.node("node2")
        assert f"ready: still booting after {ready:g} s" in view.last_error
        assert "gave up after 2 attempts" in view.last_error
        assert node_calls(sim, 0, 2).count("boot") == 2
        await asyncio.sleep(ready)
        assert node_calls(sim, 0, 2).count("boot") == 2


async def test_shutdown_powers_every_node_off_in_parallel_and_closes_the_images(
    tmp_path: Path,
) -> None:
    extended: list[float] = []
    running = ["node0", "node1", "node5"]  # the others sit in bios_up: the button powers them off
    async with simulate(tmp_path) as sim, manager(sim, tmp_path, boot=running) as cards:
        await eventually(lambda: states(cards) == ["up", "up", "off", "off", "off", "up"])
        before = len(sim.calls())
        outcomes = await cards.shutdown(extend=extended.append)
        assert [o.ok for o in outcomes] == [True] * 6
        assert states(cards) == ["off"] * 6
        for k in range(6):
            assert sim.state(k) == "power_off"
            device = sim.raw(k)["blk"]["vcablk0"]
            assert device["open"] is None and device["enabled"] != "1"  # closed, or never opened
            assert ("systemctl poweroff" in sim.node(k).commands) == (f"node{k}" in running)
        calls = sim.calls()[before:]
        first_close = next(i for i, c in enumerate(calls) if c["argv"][:2] == ["blockio", "close"])
        looked = {tuple(c["argv"][1:3]) for c in calls[:first_close] if c["argv"][0] == "status"}
        assert looked == {(str(c), str(n)) for c in range(2) for n in range(3)}  # all at once
        assert len(extended) >= 2
        assert extended == sorted(extended, reverse=True) and extended[0] > 0


async def test_a_dropped_ssh_connection_is_redialled_and_the_node_stays_up(tmp_path: Path) -> None:
    async with (
        simulate(tmp_path) as sim,
        manager(sim, tmp_path, boot=["node4"]) as cards,
    ):
        await eventually(lambda: cards.node("node4").state == "up")
        accepted = sim.node(4).connections_accepted
        sim.node(4).drop_ssh()
        await eventually(lambda: sim.node(4).connections_accepted > accepted)
        await eventually(lambda: cards.node("node4").state == "up")
        await asyncio.sleep(0.3)
        view = cards.node("node4")
        assert (view.state, view.restarts, view.reboots) == ("up", 0, 0)


async def test_admin_actions_lend_poweroff_and_boot_feed_the_pool(tmp_path: Path) -> None:
    pool = Pool([Node("node0", {}, ["interactive"])])
    async with (
        simulate(tmp_path) as sim,
        manager(sim, tmp_path, boot="none", on_change=pool_feeder(pool)) as cards,
    ):
        assert states(cards) == ["off"] * 6
        assert pool.nodes["node0"].healthy is False
        await cards.boot("node0")
        assert cards.node("node0").state == "up" and pool.nodes["node0"].healthy
        with pytest.raises(Conflict):
            await cards.lend("node1", True)  # off: nothing to lend
        assert (await cards.lend("node0", True)).state == "lent"
        assert cards.lent_nodes() == frozenset({"node0"})
        assert (await cards.lend("node0", False)).state == "up"
        task = cards.poweroff("node0")
        with pytest.raises(Conflict):
            cards.reboot("node0")
        await task
        assert cards.node("node0").state == "off" and sim.state(0) == "power_off"
        assert pool.nodes["node0"].healthy is False
        await asyncio.gather(*cards.reset_card(0))  # from power_off and from bios_up alike
        assert [cards.node(f"node{k}").state for k in range(3)] == ["up"] * 3
        assert all(sim.state(k) == "net_device_ready" for k in range(3))
        assert pool.nodes["node0"].healthy and cards.node("node0").reboots == 1


async def test_an_operation_that_fails_unexpectedly_leaves_its_node_down_and_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error no step expected (a fault of smemd's own, here in dialling ssh) is logged and
    the node is down, where the supervisor's ladder takes it up again, not "booting" forever."""
    changes = Changes()
    async with (
        simulate(tmp_path) as sim,
        manager(sim, tmp_path, boot="none", on_change=changes) as cards,
    ):
        real_link = cards.ctx.link

        async def link(target: Target) -> Any:
            monkeypatch.setattr(cards.ctx, "link", real_link)  # once
            raise RuntimeError("an unforeseen fault")

        monkeypatch.setattr(cards.ctx, "link", link)
        await cards.boot("node0")  # the task ends without raising: nobody awaits an admin's
        node0 = cards.node("node0")
        assert node0.state == "down" and "unforeseen fault" in node0.last_error
        await eventually(lambda: cards.node("node0").state == "up", within=15)
        assert changes.of("node0")[:3] == ["off", "booting", "down"]
        assert "booting" in changes.of("node0")[3:]  # the ladder rebooted it
