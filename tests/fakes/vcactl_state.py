"""The fake vcactl's state: the cards' nodes in a JSON file, their state machine as timestamped
transitions read off the wall clock, the driver's sysfs beside it, and what tests set on it
(tests/fakes/vcactl.py)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATE_FILE = "vcactl-state.json"
OK, EPERM, EIO, EAGAIN, EBUSY, EINVAL = 0, 1, 5, 11, 16, 22
CPUS, MAX_BLK = 3, 8
BIOS_STATES = ("bios_up", "bios_ready", "bios_down")  # block devices of a node here are "inactive"
BOOTABLE = ("bios_up", "bios_ready", "waiting_for_boot")
WAIT_BIOS_NOT_UP = ("bios_down", "flashing", "resetting", "link_down", "power_off", "powering_down")
AGENT_STATES = ("os_ready", "net_device_ready", "dhcp_error", "net_device_no_ip",
                "dhcp_in_progress", "dhcp_done", "net_device_down")  # fmt: skip


def _needs(states: tuple[str, ...]) -> str:
    quoted = [f'"{state}"' for state in states]
    return f"Card needs to be in {', '.join(quoted[:-1])} or {quoted[-1]} state!"


NEEDS_AGENT = _needs(AGENT_STATES[:6])  # six %s in vcactl's printf for seven states
NEEDS_BIOS = _needs(BOOTABLE)
GLOBAL_FIELDS = {"auto-boot": "1", "debug-enabled": "0", "link-up-timeout-ms": "2000",
                 "handshake-irq-timeout-ms": "30000", "alloc-timeout-ms": "100",
                 "cmd-timeout-ms": "1000", "mac-write-timeout-ms": "1000",
                 "default-daemon-script": "", "wait-cmd-timeout-s": "200",
                 "wait-bios-cmd-timeout-s": "300", "wait-bios-cmd-flashing-s": "1200",
                 "ICMP-ping-inverval-s": "1", "ICMP-response-timeout-s": "10",
                 "va-min-free-memory-enabled": "1"}  # fmt: skip
CPU_FIELDS = ("os-image", "last-os-image", "script", "daemon-script", "ip", "mask", "gateway",
              "host-ip", "host-mask", "cpu-max-freq-non-turbo", "bridge-interface", "node-name",
              "nfs-server", "nfs-path", "block-devs", "va-min-free-memory-enabled-node")  # fmt: skip
BLK_FIELDS = ("mode", "path", "ramdisk-size-mb", "enabled")
NUMBERS = {name for name, value in GLOBAL_FIELDS.items() if value} | {"ramdisk-size-mb", "enabled"}
SUBCOMMANDS = {"blockio": ("list", "open", "close"), "info": ("hw", "system", "node-os", "BIOS"),
               "network": ("all", "ip", "ip6", "mac", "vm-mac", "stats", "dhcp-renew")}  # fmt: skip
NOT_SIMULATED = ("update-BIOS", "recover-BIOS", "update-MAC", "update-EEPROM", "config-use",
                 "config-default", "clear-SMB-event-log", "ICMP-watchdog", "info-hw",
                 "info-system", "get-BIOS-cfg", "set-BIOS-cfg")  # fmt: skip
NODE_FAULTS: dict[str, Any] = {"dead": False, "stuck_booting": False, "no_agent": False,
                               "agent_timeout": False, "bios_too_old": False, "hang": [],
                               "delay": 0.0, "flags": []}  # fmt: skip
GLOBAL_FAULTS: dict[str, Any] = {"no_cards": False, "config_unreadable": False, "busy": False,
                                 "hang": []}  # fmt: skip
BLK_NAME = re.compile(r"^vcablk([0-7])$")
IP = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
SENSORS = "".join(
    f"Core {i}:        +{41 + i}.0°C  (high = +100.0°C, crit = +100.0°C)\n" for i in range(4)
)


@dataclass(frozen=True)
class Timings:
    """Seconds, small for tests; the hardware takes 10-90 s (hardware.md §A.7)."""

    reset: float = 0.3  # resetting -> link_down -> bios_up
    boot: float = 0.3  # booting -> os_ready
    net: float = 0.2  # os_ready -> net_device_ready
    power_down: float = 0.2  # powering_down -> power_off
    power_on: float = 0.2  # power_off -> bios_up after pwrbtn-short
    guard: float = 0.1  # vcactl sleeps 7 s before pressing the button on a node in power_off
    hold: float = 0.05  # pwrbtn-long holds the button for 5 s
    agent_timeout: float = 0.5  # the node agent's 10 s before LBP_IRQ_TIMEOUT
    wait_timeout: float = 3.0  # wait / wait-BIOS give up (wait-cmd-timeout-s is 200 s)
    poll: float = 0.05  # wait / wait-BIOS poll (1 s)


class Usage(Exception):
    """A parse error: vcactl prints it and exits 22."""


SYSFS = "sys"  # beside the state file: the fake driver's sysfs, as smemd's [cards] sysfs


def addressed(argv: list[str]) -> tuple[str, list[str]]:
    """A recorded call's command ("blockio open" with its subcommand) and the card and cpu it
    names: [] for every node, [card] for a card's three, [card, cpu] for one node."""
    words = [w for w in argv if not w.startswith("-")]
    split = 2 if words[:1] == ["blockio"] else 1
    address: list[str] = []
    for word in words[split : split + 2]:
        if not word.isdigit():
            break
        address.append(word)
    return " ".join(words[:split]), address


def node_key(card: int, cpu: int) -> str:
    return f"node{card * CPUS + cpu}"


@contextlib.contextmanager
def locked_state(path: Path, *, write: bool = True) -> Iterator[dict[str, Any]]:
    """The state under flock (vcactl runs once per node, in parallel), due transitions applied."""
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        state = json.loads(path.read_text())
        now = time.time()
        for node in state["nodes"].values():
            while node["next"] and node["next"][0][0] <= now:
                node["since"], node["state"] = node["next"].pop(0)
        yield state
        if write:
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_text(json.dumps(state))
            os.replace(tmp, path)
        _publish_sysfs(path.parent / SYSFS, state)
    finally:
        os.close(fd)  # releases the flock


def _publish_sysfs(root: Path, state: dict[str, Any]) -> None:
    """The driver's /sys/class/vca/vca<card><cpu>/{state,link_state}, as of this look."""
    for node in state["nodes"].values():
        directory = root / f"vca{node['card']}{node['cpu']}"
        directory.mkdir(parents=True, exist_ok=True)
        link = "down" if node["faults"]["dead"] else "up"
        for name, value in (("state", node["state"]), ("link_state", link)):
            # Readers share the lock, and two in one process may publish at once: own names.
            tmp = directory / f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
            tmp.write_text(f"{value}\n")
            os.replace(tmp, directory / name)


def enter(node: dict[str, Any], first: str, *later: tuple[float, str]) -> None:
    """Enter `first` now and each later state at its offset in seconds."""
    now = time.time()
    node["state"], node["since"] = first, now
    node["next"] = [[now + offset, state] for offset, state in later]


def shown_state(node: dict[str, Any]) -> str:
    """What vcactl reads: the state, or link_down while the PCIe link is down."""
    return "link_down" if node["faults"]["dead"] else str(node["state"])


def new_node(card: int, cpu: int) -> dict[str, Any]:
    n = card * CPUS + cpu + 1  # hardware.md §A.4: 172.31.n.1
    config = dict.fromkeys((f for f in CPU_FIELDS if f != "block-devs"), "")
    config.update({"ip": f"172.31.{n}.1", "mask": "24", "gateway": f"172.31.{n}.254",
                   "host-ip": f"172.31.{n}.254", "host-mask": "24", "cpu-max-freq-non-turbo": "0",
                   "node-name": f"vca_node_{card}{cpu}", "nfs-server": f"172.31.{n}.254",
                   "nfs-path": "/mnt/%s", "va-min-free-memory-enabled-node": "1"})  # fmt: skip
    return {"card": card, "cpu": cpu, "state": "bios_up", "since": time.time(), "next": [],
            "os_up_at": None, "faults": json.loads(json.dumps(NODE_FAULTS)), "config": config,
            "blk": {"vcablk0": {**dict.fromkeys(BLK_FIELDS, ""), "open": None}}}  # fmt: skip


def set_known(target: dict[str, Any], changes: dict[str, Any]) -> None:
    for name, value in changes.items():
        if name not in target:
            raise ValueError(f"unknown fault {name!r}")
        target[name] = value


def read_state(path: Path | str) -> dict[str, Any]:
    """The whole state as of now: nodes (state, next, os_up_at, faults, config, blk) and calls."""
    with locked_state(Path(path), write=False) as state:
        return state


def node_state(path: Path | str, card: int, cpu: int) -> str:
    """The state `vcactl status` prints for the node now."""
    return shown_state(read_state(path)["nodes"][node_key(card, cpu)])


def os_is_up(path: Path | str, card: int, cpu: int) -> bool:
    """Whether the node's OS runs (ssh and servers would answer), agent or not."""
    node = read_state(path)["nodes"][node_key(card, cpu)]
    up_at = node["os_up_at"]
    return not node["faults"]["dead"] and up_at is not None and up_at <= time.time()


def set_node(path: Path | str, card: int, cpu: int, **changes: Any) -> None:
    """Change a node now: `state=...` (an agent state also marks its OS up), `os_up_at`, faults."""
    with locked_state(Path(path)) as state:
        node = state["nodes"][node_key(card, cpu)]
        if "state" in changes:
            enter(node, changes["state"])
            node["os_up_at"] = time.time() if changes["state"] in AGENT_STATES else None
        if "os_up_at" in changes:
            node["os_up_at"] = changes["os_up_at"]
        set_known(
            node["faults"], {k: v for k, v in changes.items() if k not in ("state", "os_up_at")}
        )


def set_faults(path: Path | str, **changes: Any) -> None:
    """Set global faults: no_cards, config_unreadable, busy, hang."""
    with locked_state(Path(path)) as state:
        set_known(state["faults"], changes)


def power_off(path: Path | str, card: int, cpu: int) -> None:
    """What the node does after `systemctl poweroff`: powering_down, then power_off."""
    with locked_state(Path(path)) as state:
        node = state["nodes"][node_key(card, cpu)]
        enter(node, "powering_down", (state["timings"]["power_down"], "power_off"))
        node["os_up_at"] = None
