"""boot/: bring-up and take-down against the VCA simulator (fake vcactl + fake nodes), small timings."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from boot import (
    Context,
    StepFailed,
    Target,
    Timeouts,
    down,
    run_all,
    status,
    targets_from_config,
    up,
)
from boot.__main__ import main
from boot.bringup import host_link
from smemd.config import Config, load
from smemd.devices.vcactl import Vcactl, VcactlMissing
from smemd.tomlwriter import dumps
from tests.fakes.vca_sim import Simulator
from tests.fakes.vcactl import Timings, addressed
from tests.pace import scaled

FAST = Timeouts(vcactl=3, reset=3, boot=3, ready=3, health=3, poweroff=3, ssh=2, http=1, poll=0.05)
ACTIONS = ("reset", "blockio open", "boot", "blockio close", "os-shutdown", "pwrbtn-long",
           "pwrbtn-short")  # fmt: skip


def simulate(tmp_path: Path, faults: dict[str, Any] | None = None) -> Simulator:
    """Two simulated cards with hardware times cut to a tenth of a second or so."""
    timings = Timings(
        reset=0.15, boot=0.15, net=0.1, power_down=0.1, power_on=0.1, agent_timeout=0.2
    )
    return Simulator(tmp_path / "sim", timings=timings, faults=faults)


def config_for(sim: Simulator, state_dir: Path) -> dict[str, Any]:
    return {
        "paths": {"state-dir": str(state_dir)},
        "fleet": {"kind": "vca2", "nodes": sim.node_configs()},
        "cards": sim.cards_config(),
    }


def targets(sim: Simulator, tmp_path: Path) -> list[Target]:
    raw = config_for(sim, tmp_path / "state")
    overrides = {
        (section, key): value for section, table in raw.items() for key, value in table.items()
    }
    config: Config = load(Path(os.devnull), env={}, overrides=overrides)
    return targets_from_config(config)


@contextlib.asynccontextmanager
async def context(
    sim: Simulator, tmp_path: Path, timeouts: Timeouts = FAST
) -> AsyncIterator[Context]:
    vcactl = Vcactl(str(sim.vcactl), timeout=timeouts.vcactl)
    # An empty netdev list: the simulator has no ethN, so the host-link step has nothing to check.
    async with Context(
        vcactl, state_dir=tmp_path / "state", timeouts=timeouts, sys_net=tmp_path / "no-net"
    ) as ctx:
        yield ctx


def actions(sim: Simulator, card: int, cpu: int, since: int = 0) -> list[str]:
    """The state-changing vcactl commands run on one node, in order."""
    done = []
    for call in sim.calls()[since:]:
        name, address = addressed(call["argv"])
        if name in ACTIONS and address == [str(card), str(cpu)]:
            done.append(name)
    return done


async def test_cold_up_of_six_nodes_serves_and_a_second_up_changes_nothing(tmp_path: Path) -> None:
    async with simulate(tmp_path) as sim:
        nodes = targets(sim, tmp_path)
        async with context(sim, tmp_path) as ctx:
            outcomes = await run_all(up, nodes, ctx)
        assert [(o.node, o.ok, o.reason) for o in outcomes] == [
            (f"node{k}", True, "") for k in range(6)
        ]
        for k in range(6):
            assert sim.state(k) == "net_device_ready"
            assert all(server.calls["health"] >= 1 for server in sim.node(k).servers.values())
            assert actions(sim, *divmod(k, 3)) == ["reset", "blockio open", "boot"]
            device = sim.raw(k)["blk"]["vcablk0"]
            assert device["open"]["path"] == str(sim.image_dir / f"node{k // 3}{k % 3}.img")
        auto_boot = [c["argv"] for c in sim.calls() if c["argv"][0] == "config"]
        assert auto_boot == [["config", "auto-boot", "0"]]  # once per run, not per node

        before = len(sim.calls())
        async with context(sim, tmp_path) as ctx:
            again = await run_all(up, nodes, ctx)
        assert all(o.ok for o in again)
        for o in again:
            assert not {"reset", "blockio-open", "boot"} & set(o.ran), o
        assert all(actions(sim, *divmod(k, 3), since=before) == [] for k in range(6))
        assert not [c for c in sim.calls()[before:] if c["argv"][0] == "config"]
        assert all(sim.state(k) == "net_device_ready" for k in range(6))


async def test_down_powers_off_over_ssh_and_closes_the_image_and_again_is_harmless(
    tmp_path: Path,
) -> None:
    async with simulate(tmp_path) as sim:
        nodes = [t for t in targets(sim, tmp_path) if t.node in ("node0", "node4")]
        async with context(sim, tmp_path) as ctx:
            assert all(o.ok for o in await run_all(up, nodes, ctx))
            before = len(sim.calls())
            outcomes = await run_all(down, nodes, ctx)
        assert [(o.node, o.ran) for o in outcomes] == [
            ("node0", ["poweroff", "blockio-close"]),
            ("node4", ["poweroff", "blockio-close"]),
        ]
        for k in (0, 4):
            assert "systemctl poweroff" in sim.node(k).commands
            assert actions(sim, *divmod(k, 3), since=before) == ["blockio close"]  # no fallback
            assert sim.state(k) == "power_off"
            device = sim.raw(k)["blk"]["vcablk0"]
            assert (device["open"], device["enabled"]) == (None, "0")
        closes = [c["argv"] for c in sim.calls()[before:] if c["argv"][:2] == ["blockio", "close"]]
        assert all("--force" in argv for argv in closes)  # an RW image stays active after power_off
        await _eventually(lambda: not sim.node(0).running and not sim.node(4).running)

        before = len(sim.calls())
        async with context(sim, tmp_path) as ctx:
            again = await run_all(down, nodes, ctx)
            report = await status(nodes, ctx)
        assert [(o.ok, o.ran) for o in again] == [(True, []), (True, [])]
        assert all(actions(sim, *divmod(k, 3), since=before) == [] for k in (0, 4))
        assert [(r.state, r.image, r.ssh) for r in report] == [("power_off", "disabled", None)] * 2


async def test_down_falls_back_to_the_power_button_and_up_comes_back_from_power_off(
    tmp_path: Path,
) -> None:
    async with simulate(tmp_path, faults={"node1": {"agent_timeout": True}}) as sim:
        node1 = targets(sim, tmp_path)[1]
        quick_ssh = msgspec.structs.replace(FAST, ssh=0.5)
        async with context(sim, tmp_path, quick_ssh) as ctx:
            await up(node1, ctx)
            sim.node(1).hang_ssh(True)  # sshd accepts and never answers
            await down(node1, ctx)
        assert actions(sim, 0, 1) == [
            "reset",
            "blockio open",
            "boot",
            "os-shutdown",
            "pwrbtn-long",
            "blockio close",
        ]
        assert sim.state(1) == "power_off"
        before = len(sim.calls())
        async with context(sim, tmp_path) as ctx:
            await up(node1, ctx)  # back from power_off: the power button first
        assert actions(sim, 0, 1, since=before) == ["pwrbtn-short", "reset", "blockio open", "boot"]
        assert sim.state(1) == "net_device_ready"


async def test_a_dead_node_fails_naming_itself_while_the_others_come_up(tmp_path: Path) -> None:
    async with simulate(tmp_path, faults={"node2": {"dead": True}}) as sim:
        nodes = targets(sim, tmp_path)[:3]
        async with context(sim, tmp_path) as ctx:
            outcomes = await run_all(up, nodes, ctx)
            with pytest.raises(StepFailed) as failed:
                await up(nodes[2], ctx)
        assert [o.ok for o in outcomes] == [True, True, False]
        assert (outcomes[2].failed_step, outcomes[2].node) == ("reset", "node2")
        assert "VCA_RESET failed" in outcomes[2].reason
        assert (failed.value.step, failed.value.node) == ("reset", "node2")
        assert str(failed.value).startswith("node node2: reset: ")
        assert failed.value.code == "boot_step_failed"


async def test_a_node_stuck_booting_times_out(tmp_path: Path) -> None:
    async with simulate(tmp_path, faults={"node3": {"stuck_booting": True}}) as sim:
        node3 = targets(sim, tmp_path)[3]
        timeouts = msgspec.structs.replace(FAST, ready=0.5)
        async with context(sim, tmp_path, timeouts) as ctx:
            with pytest.raises(StepFailed) as failed:
                await up(node3, ctx)
        assert (failed.value.step, failed.value.node) == ("ready", "node3")
        assert failed.value.reason.startswith("still booting after 0.5 s")
        assert sim.state(3) == "booting"


async def test_a_node_without_agent_is_up_once_ssh_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "smemd.boot")
    async with simulate(tmp_path, faults={"node5": {"no_agent": True}}) as sim:
        node5 = targets(sim, tmp_path)[5]
        async with context(sim, tmp_path) as ctx:
            done = await up(node5, ctx)
        assert [d.step for d in done if not d.skipped][-3:] == ["ready", "host-link", "health"]
        assert sim.state(5) == "booting"  # the agent never reports net_device_ready
        assert "ssh answers but the state is booting: no vca_agent?" in caplog.text
        before = len(sim.calls())
        async with context(sim, tmp_path) as ctx:
            await up(node5, ctx)
        assert actions(sim, 1, 2, since=before) == []  # up, so not reset


async def test_a_hung_vcactl_times_out_in_the_driver_and_is_killed(tmp_path: Path) -> None:
    async with simulate(tmp_path, faults={"node0": {"hang": ["boot"]}}) as sim:
        node0 = targets(sim, tmp_path)[0]
        timeouts = msgspec.structs.replace(FAST, boot=0.5)
        async with context(sim, tmp_path, timeouts) as ctx:
            with pytest.raises(StepFailed) as failed:
                await up(node0, ctx)
        assert failed.value.step == "boot"
        assert "vcactl boot 0 0 vcablk0: no exit within 0.5 s; killed" in failed.value.reason
        hung = [c for c in sim.calls() if c["argv"][0] == "boot"]
        assert len(hung) == 1 and hung[0]["rc"] is None
        with pytest.raises(ProcessLookupError):
            os.kill(hung[0]["pid"], 0)


async def test_no_cards_fails_the_stack_step_clearly(tmp_path: Path) -> None:
    async with simulate(tmp_path, faults={"no_cards": True}) as sim:
        node0 = targets(sim, tmp_path)[0]
        async with context(sim, tmp_path) as ctx:
            with pytest.raises(StepFailed) as failed:
                await up(node0, ctx)
    assert failed.value.step == "stack"
    assert (
        "no VCA card present" in failed.value.reason and "modprobe plx87xx" in failed.value.reason
    )


async def test_host_link_warns_about_a_small_mtu(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    net = tmp_path / "net"
    for name, mac, mtu in (
        ("eth0", "52:54:00:12:34:56", "1500"),
        ("eth7", "fe:00:00:00:02:03", "1500"),
    ):
        (net / name).mkdir(parents=True)
        (net / name / "address").write_text(mac + "\n")
        (net / name / "mtu").write_text(mtu + "\n")
    node5 = Target(node="node5", card=1, cpu=2, address="172.31.6.1", image="/none")
    async with Context(Vcactl("/nonexistent"), state_dir=tmp_path, sys_net=net) as ctx:
        await host_link(node5, ctx)
        assert "host link eth7 has MTU 1500, not 65535" in caplog.text
        caplog.clear()
        (net / "eth7" / "mtu").write_text("65535\n")
        await host_link(node5, ctx)
        assert "MTU" not in caplog.text


async def test_the_cli_prints_a_status_row_per_node(tmp_path: Path) -> None:
    async with simulate(tmp_path) as sim:
        nodes = targets(sim, tmp_path)
        async with context(sim, tmp_path) as ctx:
            await up(nodes[0], ctx)
        config = tmp_path / "smemd.toml"
        config.write_text(dumps(config_for(sim, tmp_path / "state")))
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "boot", "status", "--config", str(config),
            "--state-dir", str(tmp_path / "state"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(20):
            stdout, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    rows = [line.split() for line in stdout.decode().splitlines()]
    assert rows[0] == ["NODE", "STATE", "IMAGE", "SSH", "HEALTH"]
    assert rows[1] == [
        "node0",
        "net_device_ready",
        "active",
        "yes",
        "embed:ok",
        "rerank:ok",
        "llm:ok",
    ]
    assert rows[2:] == [[f"node{k}", "bios_up", "disabled", "-", "-"] for k in range(1, 6)]


def test_the_cli_exits_2_on_a_bad_config_or_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "smemd.toml"
    config.write_text('[fleet]\nkind = "vca2"\nnodes = [{id = "node0"}]\n')
    assert main(["up", "node7", "--config", str(config)]) == 2
    assert "node7" in capsys.readouterr().err
    config.write_text("[fleet]\nnodez = 1\n")
    assert main(["status", "--config", str(config)]) == 2
    assert "$.fleet.nodez: unknown field" in capsys.readouterr().err
    assert main(["reboot"]) == 2


async def _eventually(check: Any, within: float = 3.0) -> None:
    deadline = asyncio.get_running_loop().time() + scaled(within)
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_node_state_comes_from_sysfs_with_vcactls_link_rule(tmp_path: Path) -> None:
    sys_vca = tmp_path / "vca"
    target = Target(node="node1", card=0, cpu=1, address="127.0.31.2", image="/x.img")
    vcactl = Vcactl(str(tmp_path / "no-vcactl"))  # any fallback to it would fail loudly
    async with Context(vcactl, state_dir=tmp_path, sys_vca=sys_vca) as ctx:
        node = sys_vca / "vca01"
        node.mkdir(parents=True)
        for state, link, shown in [
            ("net_device_ready", "up", "net_device_ready"),
            ("net_device_ready", "down", "link_down"),  # the link is down: vcactl says so
            ("power_off", "down", "power_off"),
        ]:
            (node / "state").write_text(state + "\n")
            (node / "link_state").write_text(link + "\n")
            assert await ctx.state(target) == shown
        (node / "state").unlink()  # no driver files: vcactl is asked
        with pytest.raises(VcactlMissing):
            await ctx.state(target)
