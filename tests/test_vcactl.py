"""The vcactl driver against the vcactl simulator, a real executable in tmp_path; and the parsers."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from smemd.devices.vcactl import (
    BiosTooOld,
    ConfigUnreadable,
    NoCards,
    NodeStepFailed,
    Vcactl,
    VcactlBusy,
    VcactlMissing,
    VcactlTimeout,
    VcactlUsage,
)
from smemd.devices.vcactl_output import (
    BlockDevice,
    Message,
    NodeFailure,
    NodeStatus,
    node_failures,
    parse_blockio_list,
    parse_config_show,
    parse_messages,
    parse_node_lines,
    parse_status,
)
from tests.fakes import vcactl as sim
from tests.pace import scaled

# hardware.md §A.5, verbatim.
STATUS_SAMPLE = """\
Card: 0 Cpu: 0 STATE: net_device_ready
Card: 0 Cpu: 1 STATE: net_device_ready
Card: 0 Cpu: 2 STATE: booting
Card: 1 Cpu: 0 STATE: bios_up
Card: 1 Cpu: 1 STATE: power_off
Card: 1 Cpu: 2 STATE: link_down
"""
BLOCKIO_SAMPLE = """\
 Card   Cpu      Name     State     Mode  Size(MB) FilePath
------------------------------------------------------------
    0     0   vcablk0    active       RW     20480 /var/lib/vca/node00.img
    0     1   vcablk0    active       RW     20480 /var/lib/vca/node01.img
    0     2   vcablk0   enabled       RW         0 /var/lib/vca/node02.img
    1     0   vcablk0  inactive       RW     20480 /var/lib/vca/node10.img
    1     1   vcablk0  disabled       RW         0 /var/lib/vca/node11.img
    1     2   vcablk0  disabled        -         - -
"""


def start(
    tmp_path: Path, *, timings: sim.Timings | None = None, faults: dict[str, Any] | None = None
) -> tuple[Vcactl, Path]:
    """The simulator installed in tmp_path, a driver on it, and its state file."""
    wrapper = sim.install(tmp_path, timings=timings, faults=faults)
    return Vcactl(str(wrapper), timeout=10), wrapper.with_name(sim.STATE_FILE)


def image(tmp_path: Path, name: str = "node00.img", size_mb: int = 20480) -> str:
    """A sparse image file, as vcactl canonicalises its path."""
    path = tmp_path / name
    with path.open("wb") as f:
        f.truncate(size_mb << 20)
    return os.path.realpath(path)


async def settle(vcactl: Vcactl, card: int, cpu: int, want: str, within: float = 5.0) -> list[str]:
    """Poll status until the node shows `want`; the states seen on the way."""
    seen: list[str] = []
    deadline = time.monotonic() + scaled(within)
    while not seen or seen[-1] != want:
        [status] = await vcactl.status(card, cpu)
        if not seen or seen[-1] != status.state:
            seen.append(status.state)
        assert time.monotonic() < deadline, f"node never reached {want}: {seen}"
        await asyncio.sleep(0.03)
    return seen


def calls(state: Path) -> list[list[str]]:
    return [call["argv"] for call in sim.read_state(state)["calls"]]


async def test_status_of_two_cards(tmp_path: Path) -> None:
    vcactl, state = start(tmp_path)
    everything = await vcactl.status()
    assert [(s.node, s.state) for s in everything] == [(f"node{k}", "bios_up") for k in range(6)]
    assert [s.node for s in await vcactl.status(1)] == ["node3", "node4", "node5"]
    sim.set_node(state, 1, 2, flags=["dma_hang"])
    assert await vcactl.status(1, 2) == [NodeStatus(1, 2, "bios_up", ["dma_hang"])]


async def test_bring_up_then_take_down(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    vcactl, state = start(tmp_path, timings=sim.Timings(reset=0.6, boot=0.4, net=0.2))
    img = image(tmp_path)

    await vcactl.reset(0, 0)
    seen = await settle(vcactl, 0, 0, "bios_up")
    assert seen[0] in ("resetting", "link_down")  # the first poll comes well within the 0.6 s
    assert seen == [s for s in ("resetting", "link_down", "bios_up") if s in seen]
    await vcactl.set_config("auto-boot", "0")
    assert await vcactl.config_value("auto-boot") == "0"
    assert (await vcactl.config_show()).settings["auto-boot"] == "0"
    await vcactl.blockio_open(0, 0, img)
    assert [s.state for s in await vcactl.status(0, 0)] == ["bios_ready"]
    assert await vcactl.blockio_list(0, 0) == [
        BlockDevice(0, 0, "vcablk0", "enabled", "RW", 0, img)
    ]
    await vcactl.boot(0, 0)
    seen = await settle(vcactl, 0, 0, "net_device_ready")
    assert seen[0] == "booting"
    assert seen == [s for s in ("booting", "os_ready", "net_device_ready") if s in seen]
    assert await vcactl.blockio_list(0, 0) == [
        BlockDevice(0, 0, "vcablk0", "active", "RW", 20480, img)
    ]
    node = (await vcactl.config_show(0, 0)).node(0, 0)
    assert node is not None and node.fields["last-os-image"] == "vcablk0"
    assert node.block_devs["vcablk0"] == {
        "mode": "RW",
        "path": img,
        "ramdisk-size-mb": "0",
        "enabled": "1",
    }
    assert await vcactl.config_value("ip", 0, 0) == "172.31.1.1"

    await vcactl.os_shutdown(0, 0)
    await settle(vcactl, 0, 0, "power_off")
    with pytest.raises(NodeStepFailed) as refused:  # an RW image still counts as active
        await vcactl.blockio_close(0, 0)
    assert refused.value.nodes == ["node0"]
    assert refused.value.failures[0].kind == "blockio_active"
    assert "--force" in str(refused.value)
    await vcactl.blockio_close(0, 0, force=True)
    assert await vcactl.blockio_list(0, 0) == [
        BlockDevice(0, 0, "vcablk0", "disabled", "RW", 0, img)
    ]
    with caplog.at_level(logging.WARNING, logger="smemd.cards"):
        await vcactl.blockio_close(0, 0)  # closing it again: a WARNING, exit 0
    assert "Block device vcablk0 is not open" in caplog.text
    assert ["blockio", "close", "0", "0", "vcablk0", "--force"] in calls(state)


async def test_reset_is_refused_while_an_rw_image_is_active(tmp_path: Path) -> None:
    vcactl, state = start(tmp_path)
    await vcactl.blockio_open(0, 1, image(tmp_path))
    await vcactl.boot(0, 1)
    with pytest.raises(NodeStepFailed) as refused:
        await vcactl.reset(0, 1)
    [failure] = refused.value.failures
    assert (failure.node, failure.kind) == ("node1", "blockio_active")
    assert "VCA Card 0 CPU 1 has an active blockio device in RW mode" in failure.message
    assert sim.node_state(state, 0, 1) in ("booting", "os_ready", "net_device_ready")
    await vcactl.reset(0, 1, force=True)
    assert sim.node_state(state, 0, 1) in ("resetting", "link_down", "bios_up")


async def test_boot_in_a_wrong_state_names_the_node(tmp_path: Path) -> None:
    vcactl, state = start(tmp_path)
    sim.set_node(state, 1, 1, state="power_off")
    with pytest.raises(NodeStepFailed) as failed:
        await vcactl.boot(1, 1)
    err = failed.value
    assert (err.nodes, err.returncode, err.status) == (["node4"], 11, 503)
    assert err.failures[0].kind == "wrong_state"
    assert 'Card needs to be in "bios_up", "bios_ready" or "waiting_for_boot" state!' in str(err)
    assert str(err).startswith("vcactl boot 1 1 vcablk0: node4: ")


async def test_dead_node_shows_link_down_and_fails_boot_and_reset(tmp_path: Path) -> None:
    vcactl, _ = start(tmp_path, faults={"node2": {"dead": True}})
    assert [s.state for s in await vcactl.status(0)] == ["bios_up", "bios_up", "link_down"]
    with pytest.raises(NodeStepFailed) as boot:
        await vcactl.boot(0, 2)
    assert (boot.value.nodes, boot.value.failures[0].kind) == (["node2"], "wrong_state")
    with pytest.raises(NodeStepFailed) as reset:
        await vcactl.reset(0, 2, force=True)
    assert reset.value.nodes == ["node2"]  # vcactl's message names no node: the call did
    assert "VCA_RESET failed" in reset.value.failures[0].message


async def test_agent_timeout(tmp_path: Path) -> None:
    vcactl, state = start(tmp_path, faults={"node3": {"agent_timeout": True}})
    sim.set_node(state, 1, 0, state="net_device_ready")
    started = time.monotonic()
    with pytest.raises(NodeStepFailed) as failed:
        await vcactl.os_shutdown(1, 0)
    assert time.monotonic() - started >= sim.Timings().agent_timeout
    [failure] = failed.value.failures
    assert (failure.node, failure.kind) == ("node3", "agent_timeout")
    assert failure.message == (
        "VCA_AGENT_COMMAND returned with LBP_IRQ_TIMEOUT; Execute 'os-shutdown' command failed!"
    )
    assert sim.node_state(state, 1, 0) == "net_device_ready"


async def test_node_without_agent_stays_booting_while_its_os_comes_up(tmp_path: Path) -> None:
    faults = {"node0": {"no_agent": True}, "node1": {"stuck_booting": True}}
    vcactl, state = start(tmp_path, faults=faults)
    for cpu in (0, 1):
        await vcactl.blockio_open(0, cpu, image(tmp_path, f"node0{cpu}.img", 64))
        await vcactl.boot(0, cpu)
        if cpu == 0:  # checked at once: on a loaded machine the next node's calls take a while
            assert not sim.os_is_up(state, 0, 0)
    await asyncio.sleep(sim.Timings().boot + sim.Timings().net + 0.1)
    assert [s.state for s in await vcactl.status(0)][:2] == ["booting", "booting"]
    assert sim.os_is_up(state, 0, 0)  # what a fake node runner starts its servers on
    assert not sim.os_is_up(state, 0, 1)
    with pytest.raises(NodeStepFailed) as no_state:
        await vcactl.os_shutdown(0, 0)
    assert no_state.value.failures[0].kind == "wrong_state"
    sim.set_node(state, 0, 0, state="net_device_ready")
    with pytest.raises(NodeStepFailed) as no_agent:
        await vcactl.os_shutdown(0, 0)
    assert no_agent.value.failures[0].kind == "agent_missing"
    sim.power_off(state, 0, 0)  # ssh `systemctl poweroff`
    assert not sim.os_is_up(state, 0, 0)
    await settle(vcactl, 0, 0, "power_off")


async def test_a_hanging_vcactl_is_killed_at_the_timeout(tmp_path: Path) -> None:
    wrapper = sim.install(tmp_path, faults={"node1": {"hang": ["status"]}})
    vcactl = Vcactl(str(wrapper), timeout=0.8)
    started = time.monotonic()
    with pytest.raises(VcactlTimeout):
        await vcactl.status(0, 1)
    assert 0.8 <= time.monotonic() - started < scaled(3.0)
    [call] = sim.read_state(wrapper.with_name(sim.STATE_FILE))["calls"]
    assert (call["argv"], call["rc"]) == (["status", "0", "1"], None)
    with pytest.raises(ProcessLookupError):
        os.kill(call["pid"], 0)  # killed and reaped
    assert [s.state for s in await vcactl.status(0, 0)] == ["bios_up"]


async def test_a_cancelled_call_leaves_no_vcactl_behind(tmp_path: Path) -> None:
    wrapper = sim.install(tmp_path, faults={"hang": ["blockio"]})
    call = asyncio.create_task(Vcactl(str(wrapper)).blockio_list())
    state = wrapper.with_name(sim.STATE_FILE)
    while not sim.read_state(state)["calls"]:
        await asyncio.sleep(0.02)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    with pytest.raises(ProcessLookupError):
        os.kill(sim.read_state(state)["calls"][0]["pid"], 0)


async def test_no_cards(tmp_path: Path) -> None:
    vcactl, _ = start(tmp_path, faults={"no_cards": True})
    with pytest.raises(NoCards) as silent:
        await vcactl.status()
    assert (silent.value.returncode, silent.value.errors) == (22, [])
    with pytest.raises(NoCards, match="Card 0 not found!"):
        await vcactl.status(0, 0)


async def test_missing_or_not_executable(tmp_path: Path) -> None:
    with pytest.raises(VcactlMissing):
        await Vcactl(str(tmp_path / "vcactl")).status()
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\n")
    with pytest.raises(VcactlMissing):
        await Vcactl(str(plain)).status()


async def test_other_exit_codes(tmp_path: Path) -> None:
    vcactl, state = start(tmp_path, faults={"node0": {"bios_too_old": True}})
    with pytest.raises(VcactlUsage) as usage:  # a parse error: exit 22 with a message
        await vcactl.blockio_open(0, 0, str(tmp_path / "missing.img"))
    assert usage.value.errors == [
        f"Wrong blockio type param! File ({tmp_path}/missing.img) doesn't exist."
    ]
    with pytest.raises(BiosTooOld):
        await vcactl.run("info", "BIOS", "0", "0", card=0, cpu=0)
    sim.set_faults(state, config_unreadable=True)
    with pytest.raises(ConfigUnreadable, match="could not parse vca configuration file"):
        await vcactl.status()
    sim.set_faults(state, config_unreadable=False, busy=True)
    with pytest.raises(VcactlBusy):
        await vcactl.status()
    assert [c["rc"] for c in sim.read_state(state)["calls"]] == [22, 1, 5, 16]


async def test_parallel_across_nodes_one_at_a_time_on_a_node(tmp_path: Path) -> None:
    delay = 0.25
    vcactl, _ = start(tmp_path, faults={f"node{k}": {"delay": delay} for k in range(3)})

    async def timed(*calls: Awaitable[object]) -> float:
        started = time.monotonic()
        await asyncio.gather(*calls)
        return time.monotonic() - started

    one = await timed(vcactl.status(0, 0))
    across = await timed(*(vcactl.status(0, cpu) for cpu in range(3)))
    same = await timed(*(vcactl.status(0, 0) for _ in range(3)))
    assert one >= delay
    assert across < one + delay  # three nodes at once: about as long as one
    assert same >= 3 * delay  # one node: one after the other


async def test_a_call_over_all_nodes_waits_for_each_node(tmp_path: Path) -> None:
    vcactl, state = start(tmp_path, faults={"node0": {"agent_timeout": True}})
    sim.set_node(state, 0, 0, state="net_device_ready")
    slow = asyncio.create_task(vcactl.os_shutdown(0, 0))
    await asyncio.sleep(0.1)
    other, everything = await asyncio.gather(vcactl.status(1, 0), vcactl.status())
    with pytest.raises(NodeStepFailed):
        await slow
    started = {" ".join(c["argv"]): c["at"] for c in sim.read_state(state)["calls"]}
    held_until = started["os-shutdown 0 0"] + sim.Timings().agent_timeout
    assert started["status 1 0"] < held_until  # another node: not held up
    assert started["status"] >= held_until  # every node: waited for node0's lock
    assert len(other) == 1 and len(everything) == 6


async def test_the_simulators_blockio_table_is_vcactls(tmp_path: Path) -> None:
    done = await Vcactl(str(sim.install(tmp_path))).run("blockio", "list", "1", "2")
    header, dashes, *_, unconfigured = BLOCKIO_SAMPLE.splitlines()
    assert done.stdout.splitlines() == [header, dashes, unconfigured]


def test_parse_status_sample() -> None:
    parsed = parse_status(STATUS_SAMPLE)
    assert [(s.node, s.state) for s in parsed] == [
        ("node0", "net_device_ready"), ("node1", "net_device_ready"), ("node2", "booting"),
        ("node3", "bios_up"), ("node4", "power_off"), ("node5", "link_down"),
    ]  # fmt: skip
    assert all(s.flags == [] for s in parsed)


def test_parse_status_two_spaces_and_flags() -> None:
    text = "Card: 0 Cpu: 0  STATE: net_device_ready\nCard: 1 Cpu: 2 STATE: bios_up, gold_bios, pwr_btn_press\n"
    assert parse_status(text) == [
        NodeStatus(0, 0, "net_device_ready"),
        NodeStatus(1, 2, "bios_up", ["gold_bios", "pwr_btn_press"]),
    ]


def test_parse_blockio_sample() -> None:
    rows = parse_blockio_list(BLOCKIO_SAMPLE)
    assert [(r.node, r.state) for r in rows] == [
        ("node0", "active"), ("node1", "active"), ("node2", "enabled"),
        ("node3", "inactive"), ("node4", "disabled"), ("node5", "disabled"),
    ]  # fmt: skip
    assert rows[0] == BlockDevice(0, 0, "vcablk0", "active", "RW", 20480, "/var/lib/vca/node00.img")
    assert rows[2].size_mb == 0
    assert rows[5] == BlockDevice(1, 2, "vcablk0", "disabled", None, None, None)


def test_parse_config_show() -> None:
    text = (
        "Global configuration:\n  auto-boot: 0\n  default-daemon-script: \n"
        "card 0 cpu 0: \n  os-image: \n  ip: 172.31.1.1\n  block-devs:\n    vcablk0:\n"
        "      mode: RW\n      path: /var/lib/vca/node00.img\n      ramdisk-size-mb: 0\n"
        "      enabled: 1\n  va-min-free-memory-enabled-node: 1\n"
        "card 1 cpu 2: \n  ip: 172.31.6.1\n"
    )
    config = parse_config_show(text)
    assert config.settings == {"auto-boot": "0", "default-daemon-script": ""}
    node0 = config.node(0, 0)
    assert node0 is not None
    assert node0.fields == {
        "os-image": "",
        "ip": "172.31.1.1",
        "va-min-free-memory-enabled-node": "1",
    }
    assert node0.block_devs == {
        "vcablk0": {
            "mode": "RW",
            "path": "/var/lib/vca/node00.img",
            "ramdisk-size-mb": "0",
            "enabled": "1",
        }
    }
    node5 = config.nodes["node5"]
    assert (node5.card, node5.cpu, node5.fields) == (1, 2, {"ip": "172.31.6.1"})
    # `config-show 0 1 vcablk0` indents the device two spaces less
    one = parse_config_show("card 0 cpu 1: \n  vcablk0:\n    mode: RO\n    path: /x.img\n").nodes[
        "node1"
    ]
    assert (one.fields, one.block_devs) == ({}, {"vcablk0": {"mode": "RO", "path": "/x.img"}})


def test_parse_messages_and_failures() -> None:
    stderr = (
        "ERROR: Card: 1 Cpu: 0 - VCA_AGENT_COMMAND returned with LBP_IRQ_TIMEOUT\n"
        "ERROR: Execute 'temp' command failed!\n"
        "WARNING: Card: 0 Cpu: 0 - Block device vcablk0 is not open. You do not need to close it.\n"
        "stray line\n"
    )
    errors, warnings = parse_messages(stderr)
    assert errors == [
        Message("VCA_AGENT_COMMAND returned with LBP_IRQ_TIMEOUT", 1, 0),
        Message("Execute 'temp' command failed!"),
    ]
    assert [w.node for w in warnings] == ["node0"]
    info = parse_node_lines("Card: 0 Cpu: 2 - OS ALREADY UP!\nCard 0 Cpu 2:\n")
    assert info == [Message("OS ALREADY UP!", 0, 2)]
    assert node_failures(errors, info, [(0, 2), (1, 0)]) == [
        NodeFailure(0, 2, "OS ALREADY UP!", "already_up"),
        NodeFailure(1, 0, "VCA_AGENT_COMMAND returned with LBP_IRQ_TIMEOUT", "agent_timeout"),
    ]
    # one node addressed: lines that name none are its
    assert node_failures(errors, [], [(1, 0)])[0].message.endswith(
        "; Execute 'temp' command failed!"
    )
