#!/usr/bin/env python3
"""A fake Intel VCA 2.3.26 `vcactl`: its syntax, output and exit codes, over a JSON state file."""

# Runs as `python3 vcactl.py --state STATE.json <vcactl args...>` (the wrapper `install` writes does
# that), stdlib only so that it starts fast. Messages, streams and exit codes follow Intel's
# vcactl(1) page and vcactrl.cpp of VCA 2.3.26. Node states are stored as
# timestamped transitions, so a later invocation reads the current state off the wall clock.

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
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
_BLK_NAME = re.compile(r"^vcablk([0-7])$")
_IP = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_SENSORS = "".join(
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
def _locked(path: Path, *, write: bool = True) -> Iterator[dict[str, Any]]:
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


def _go(node: dict[str, Any], first: str, *later: tuple[float, str]) -> None:
    """Enter `first` now and each later state at its offset in seconds."""
    now = time.time()
    node["state"], node["since"] = first, now
    node["next"] = [[now + offset, state] for offset, state in later]


def _shown(node: dict[str, Any]) -> str:
    """What vcactl reads: the state, or link_down while the PCIe link is down."""
    return "link_down" if node["faults"]["dead"] else str(node["state"])


def _new_node(card: int, cpu: int) -> dict[str, Any]:
    n = card * CPUS + cpu + 1  # hardware.md §A.4: 172.31.n.1
    config = dict.fromkeys((f for f in CPU_FIELDS if f != "block-devs"), "")
    config.update({"ip": f"172.31.{n}.1", "mask": "24", "gateway": f"172.31.{n}.254",
                   "host-ip": f"172.31.{n}.254", "host-mask": "24", "cpu-max-freq-non-turbo": "0",
                   "node-name": f"vca_node_{card}{cpu}", "nfs-server": f"172.31.{n}.254",
                   "nfs-path": "/mnt/%s", "va-min-free-memory-enabled-node": "1"})  # fmt: skip
    return {"card": card, "cpu": cpu, "state": "bios_up", "since": time.time(), "next": [],
            "os_up_at": None, "faults": json.loads(json.dumps(NODE_FAULTS)), "config": config,
            "blk": {"vcablk0": {**dict.fromkeys(BLK_FIELDS, ""), "open": None}}}  # fmt: skip


def _set(target: dict[str, Any], changes: dict[str, Any]) -> None:
    for name, value in changes.items():
        if name not in target:
            raise ValueError(f"unknown fault {name!r}")
        target[name] = value


def install(
    directory: Path, *, cards: int = 2, timings: Timings | None = None,
    faults: dict[str, Any] | None = None,
) -> Path:  # fmt: skip
    """Write a fresh state (every node bios_up) and a `vcactl` wrapper in `directory`; return it.

    `faults`: global ones by name (no_cards, config_unreadable, busy, hang) and per node under its
    id, e.g. {"node2": {"dead": True}, "node4": {"hang": ["status"], "delay": 0.3}}.
    """
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    nodes = {node_key(c, n): _new_node(c, n) for c in range(cards) for n in range(CPUS)}
    state = {"cards": cards, "timings": asdict(timings or Timings()), "nodes": nodes, "calls": [],
             "faults": json.loads(json.dumps(GLOBAL_FAULTS)), "config": dict(GLOBAL_FIELDS)}  # fmt: skip
    for name, value in (faults or {}).items():
        if name in nodes:
            _set(nodes[name]["faults"], value)
        else:
            _set(state["faults"], {name: value})
    path = directory / STATE_FILE
    path.write_text(json.dumps(state))
    wrapper = directory / "vcactl"
    me = shlex.quote(str(Path(__file__).resolve()))
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {me} --state {shlex.quote(str(path))} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def read_state(path: Path | str) -> dict[str, Any]:
    """The whole state as of now: nodes (state, next, os_up_at, faults, config, blk) and calls."""
    with _locked(Path(path), write=False) as state:
        return state


def node_state(path: Path | str, card: int, cpu: int) -> str:
    """The state `vcactl status` prints for the node now."""
    return _shown(read_state(path)["nodes"][node_key(card, cpu)])


def os_is_up(path: Path | str, card: int, cpu: int) -> bool:
    """Whether the node's OS runs (ssh and servers would answer), agent or not."""
    node = read_state(path)["nodes"][node_key(card, cpu)]
    up_at = node["os_up_at"]
    return not node["faults"]["dead"] and up_at is not None and up_at <= time.time()


def set_node(path: Path | str, card: int, cpu: int, **changes: Any) -> None:
    """Change a node now: `state=...` (an agent state also marks its OS up), `os_up_at`, faults."""
    with _locked(Path(path)) as state:
        node = state["nodes"][node_key(card, cpu)]
        if "state" in changes:
            _go(node, changes["state"])
            node["os_up_at"] = time.time() if changes["state"] in AGENT_STATES else None
        if "os_up_at" in changes:
            node["os_up_at"] = changes["os_up_at"]
        _set(node["faults"], {k: v for k, v in changes.items() if k not in ("state", "os_up_at")})


def set_faults(path: Path | str, **changes: Any) -> None:
    """Set global faults: no_cards, config_unreadable, busy, hang."""
    with _locked(Path(path)) as state:
        _set(state["faults"], changes)


def power_off(path: Path | str, card: int, cpu: int) -> None:
    """What the node does after `systemctl poweroff`: powering_down, then power_off."""
    with _locked(Path(path)) as state:
        node = state["nodes"][node_key(card, cpu)]
        _go(node, "powering_down", (state["timings"]["power_down"], "power_off"))
        node["os_up_at"] = None


class Invocation:
    """One vcactl run: the parsed words, what it prints, its exit code."""

    def __init__(self, words: list[str], force: bool) -> None:
        self.cmd, self.rest, self.force = (words[0], words[1:], force) if words else ("", [], force)
        self.p: dict[str, Any] = {}
        self.out: list[str] = []
        self.err: list[str] = []
        self.rc = OK
        self.targets: list[str] = []
        self.before: dict[str, str] = {}  # each target's state when the run started
        self.last_path = ""  # vcactl's static `previous_file_path` in check_blk_path

    def error(self, node: dict[str, Any] | None, message: str) -> bool:
        prefix = "" if node is None else f"Card: {node['card']} Cpu: {node['cpu']} - "
        self.err.append(f"ERROR: {prefix}{message}")
        return False

    def info(self, node: dict[str, Any], message: str) -> None:
        self.out.append(f"Card: {node['card']} Cpu: {node['cpu']} - {message}")

    def prepare(self, state: dict[str, Any]) -> float | None:
        """Parse and check; the seconds to sleep (unlocked) before executing, None when done."""
        faults = state["faults"]
        if faults["busy"]:
            self.rc = EBUSY  # the config named mutex could not be created
        elif not self.cmd:
            self.err.append("WARNING: Missing command!")
            self.rc = EINVAL
        elif faults["config_unreadable"]:
            self.error(None, "could not parse vca configuration file!")
            self.rc = EIO
        elif self.cmd not in HANDLERS and self.cmd not in ("wait", "wait-BIOS", "help"):
            if self.cmd in NOT_SIMULATED:
                self.error(None, f"vcactl simulator: '{self.cmd}' is not simulated")
            else:
                self.err += ["ERROR: Wrong command!", ""]
            self.rc = EINVAL
        if self.rc:
            return None
        try:
            self.p = parse(self.cmd, self.rest, state)
        except Usage as err:
            self.err.append(f"ERROR: {err}")
            if str(err).startswith("Unrecognized parameter"):
                self.out.append("use: vcactl help")
            self.rc = EINVAL
            return None
        if faults["no_cards"]:
            self.rc = EINVAL  # "No nodes are available!" is only logged at debug level
            return None
        self.targets = self._targets(state)
        nodes = [state["nodes"][key] for key in self.targets]
        self.before = {key: _shown(state["nodes"][key]) for key in self.targets}
        if self.cmd in faults["hang"] or any(self.cmd in n["faults"]["hang"] for n in nodes):
            return float("inf")
        pause = sum(n["faults"]["delay"] for n in nodes)
        agent = (
            self.cmd in ("temp", "network", "os-shutdown", "reboot")
            or self.p.get("sub") == "node-os"
        )
        t = state["timings"]
        for n in nodes:
            late = n["faults"]["agent_timeout"] and not n["faults"]["no_agent"]
            if agent and late and _shown(n) in AGENT_STATES:
                pause += t["agent_timeout"]
        if self.cmd == "pwrbtn-short" and "power_off" in self.before.values():
            pause += t["guard"]
        return pause + (t["hold"] if self.cmd == "pwrbtn-long" else 0.0)

    def _targets(self, state: dict[str, Any]) -> list[str]:
        card, cpu = self.p.get("card"), self.p.get("cpu")
        cards = range(state["cards"]) if card is None else [card]
        cpus = range(CPUS) if cpu is None else [cpu]
        if self.cmd == "info" and self.p["sub"] in ("hw", "system"):  # per card, or once
            cpus = [0]
            cards = cards if self.p["sub"] == "hw" else [0]
        keys = [node_key(c, n) for c in cards for n in cpus]
        return [key for key in keys if key in state["nodes"]]

    def execute(self, state: dict[str, Any]) -> None:
        handler = HANDLERS[self.cmd]
        for i, key in enumerate(self.targets):
            if not handler(self, state, state["nodes"][key], i):
                self.rc = EAGAIN  # any failed node step

    def wait(self, path: Path, want: Callable[[str], bool], done: str, fail: str) -> None:
        """vcactl wait / wait-BIOS: poll every node until it is there, in an error state, or late."""
        pending, grace = list(self.targets), dict.fromkeys(self.targets, 0)
        deadline = None
        while pending:
            with _locked(path, write=False) as state:
                t = state["timings"]
                deadline = deadline or time.time() + t["wait_timeout"]
                for key in list(pending):
                    node = state["nodes"][key]
                    shown = _shown(node)
                    if want(shown):
                        self.info(node, done)
                    elif (
                        self.cmd == "wait"
                        and shown in ("dhcp_error", "net_device_down")
                        and grace[key] < 10
                    ):
                        grace[key] += 1  # vcactl gives these ten polls to clear
                        continue
                    elif self.cmd == "wait" and shown in (
                        "drv_probe_error",
                        "dhcp_error",
                        "nfs_mount_error",
                        "net_device_down",
                    ):
                        self.rc = EAGAIN
                        self.error(node, f"error state detected: {shown}")
                    elif time.time() >= deadline:
                        self.rc = EAGAIN
                        self.error(node, fail)
                    else:
                        continue
                    pending.remove(key)
            if pending:
                time.sleep(t["poll"])


def parse(cmd: str, words: list[str], state: dict[str, Any]) -> dict[str, Any]:
    """vcactl's argument parsers for `cmd`, in their order."""
    rest: list[str] = list(words)
    p: dict[str, Any] = {}

    def peek() -> str | None:
        return rest[0] if rest else None

    if cmd in SUBCOMMANDS:
        if peek() not in SUBCOMMANDS[cmd]:
            raise Usage(f"Need subcommands: {', '.join(SUBCOMMANDS[cmd])}.")
        p["sub"] = rest.pop(0)
    if (arg := peek()) is not None and arg.isdigit():
        card = int(rest.pop(0))
        if cmd != "config" and (state["faults"]["no_cards"] or card >= state["cards"]):
            raise Usage(f"Card {card} not found!")
        p["card"] = card
        if (arg := peek()) is not None and arg.isdigit():
            if int(arg) >= CPUS:
                raise Usage(f"No cpu {arg} on card {card} found!")
            p["cpu"] = int(rest.pop(0))
    if cmd in ("boot", "reboot") and (arg := peek()) is not None and arg != "--force-last-os-image":
        if arg != "vcablk0" and not os.path.isfile(arg):
            raise Usage(f"file {arg} does not exist!")
        p["file"] = rest.pop(0)
    if cmd == "boot" and peek() == "--force-last-os-image":
        p["last"] = rest.pop(0)
    if cmd in ("blockio", "config", "config-show"):
        block = _BLK_NAME.match(peek() or "")
        if block:
            p["blk"] = int(block[1])
            rest.pop(0)
        elif cmd == "blockio" and (p["sub"] != "list" or peek() is not None):
            raise Usage(
                f"Wrong blockio id! Correct value: vcablkN, where N >= 0 and N < {MAX_BLK}."
            )
    if cmd == "blockio" and p["sub"] != "open" and peek() is not None:
        raise Usage(f'Command "blockio {p["sub"]}" accept only one parameter (blockio id)!')
    if cmd == "blockio" and p["sub"] == "open" and (arg := peek()) is not None:
        if arg not in ("RO", "RW", "ramdisk"):
            raise Usage("Wrong blockio type! Allowed values: RO, RW, ramdisk.")
        p["mode"] = rest.pop(0)
        if (arg := peek()) is None:
            raise Usage("Missing blockio type param!")
        if p["mode"] != "ramdisk" and not os.path.isfile(arg):
            raise Usage(f"Wrong blockio type param! File ({arg}) doesn't exist.")
        if p["mode"] == "ramdisk" and (not arg.isdigit() or int(arg) == 0):
            raise Usage(
                f"Wrong blockio type param!\nInvalid block device size ({arg}). Have to be more than 0."
            )
        p["param"] = rest.pop(0)
    known = {*GLOBAL_FIELDS, *CPU_FIELDS, *BLK_FIELDS}
    if cmd == "config":
        if (arg := peek()) is None or arg not in known:
            raise Usage(
                "Missing parameter name!" if arg is None else f"Invalid parameter name: {arg}"
            )
        p["param"] = rest.pop(0)
        if peek() is None:
            raise Usage("Missing parameter value!")
        p["value"] = rest.pop(0)
    if cmd == "config-show" and "blk" not in p and (arg := peek()) in known:
        p["param"] = rest.pop(0)
    if cmd == "config-show" and peek() == "--value" and p.get("param") in CPU_FIELDS:
        p["strip"] = rest.pop(0)
    if cmd == "config-show" and "blk" in p:
        p["param"] = f"vcablk{p.pop('blk')}"
    if rest:
        raise Usage(f"Unrecognized parameter {rest[0]}")
    return p


Node = dict[str, Any]


def _rw_active(node: Node) -> bool:
    opened = [dev["open"] for dev in node["blk"].values() if dev["open"]]
    return any(o["mode"] == "RW" for o in opened) and _shown(node) not in BIOS_STATES


def _usable(run: Invocation, node: Node, name: str) -> bool:
    """get_blk_config_field: the device's config can be opened."""
    dev = node["blk"][name]
    if dev["mode"] not in ("RO", "RW", "ramdisk"):
        run.error(
            node,
            f"Incorrect block device mode ({dev['mode']}) in config file for block device {name}!",
        )
        return run.error(node, "Cannot get blk_dev_info from config")
    if dev["mode"] != "ramdisk" and not os.path.isfile(dev["path"]):
        run.error(
            node, f"File ({dev['path']}) used from config to create block device {name} not exist!"
        )
        return run.error(node, "Cannot get blk_dev_info from config")
    return True


def _open(node: Node, name: str) -> None:
    """The backend opens the image: the node sees it as /dev/vcablkN."""
    dev = node["blk"][name]
    ramdisk = dev["mode"] == "ramdisk"
    size = int(dev["ramdisk-size-mb"] or 0) if ramdisk else os.path.getsize(dev["path"]) >> 20
    dev["open"] = {"mode": dev["mode"], "path": "" if ramdisk else dev["path"], "size_mb": size}


def _path_taken(run: Invocation, state: dict[str, Any], node: Node, path: str) -> bool:
    """check_blk_path: another node has `path` enabled, or this run already opened it."""
    others = [n for n in state["nodes"].values() if n is not node]
    taken = run.last_path == path or any(
        dev["mode"] != "ramdisk" and dev["path"] == path and dev["enabled"] == "1"
        for other in others for dev in other["blk"].values())  # fmt: skip
    if taken:
        run.error(
            node,
            f"File {path} is already opened in other block device. Cannot open the same file on few block devices.",
        )
    run.last_path = path
    return taken


def do_status(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    flags = "".join(f", {flag}" for flag in node["faults"]["flags"])
    run.out.append(f"Card: {node['card']} Cpu: {node['cpu']} STATE: {_shown(node)}{flags}")
    return True


def do_reset(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    if node["faults"]["dead"]:
        return run.error(None, "VCA_RESET failed: Input/output error!")
    if not run.force and _rw_active(node):
        run.error(
            node,
            f"VCA Card {node['card']} CPU {node['cpu']} has an active blockio device in RW mode",
        )
        run.info(
            node,
            "Resetting such a device may lead to data corruption. Reset the node in a graceful way (from OS level), or invoke reset with --force flag",
        )
        return False
    t = state["timings"]["reset"]
    _go(node, "resetting", (t / 3, "link_down"), (t, "bios_up"))
    node["os_up_at"] = None
    return True


def _boot(state: dict[str, Any], node: Node, after: float = 0.0) -> None:
    """The BIOS hands over to the OS `after` seconds from now; its agent, if any, reports states."""
    t, faults, now = state["timings"], node["faults"], time.time()
    steps = [(after, "booting")] if after else []  # else the caller entered booting
    if not faults["stuck_booting"] and not faults["no_agent"]:
        steps += [
            (after + t["boot"], "os_ready"),
            (after + t["boot"] + t["net"], "net_device_ready"),
        ]
    node["next"] += [[now + offset, name] for offset, name in steps]
    node["os_up_at"] = None if faults["stuck_booting"] else now + after + t["boot"]


def do_boot(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    config = node["config"]
    image = config["last-os-image"] if "last" in run.p else run.p.get("file") or config["os-image"]
    if not image:
        return run.error(
            node,
            "os-image not set! Please run: vcactl config <card_id> <cpu_id> os-image <path_to_file>",
        )
    if image != "vcablk0" and not os.path.isfile(image):
        return run.error(node, f"os-image file {image} does not exist!")
    shown = _shown(node)
    if shown == "net_device_ready":
        run.info(node, "OS ALREADY UP!")
        return False
    if shown not in BOOTABLE:
        return run.error(node, NEEDS_BIOS)
    for name, dev in node["blk"].items():
        if dev["enabled"] == "1" and not dev["open"]:
            taken = (
                name == "vcablk0"
                and dev["mode"] != "ramdisk"
                and _path_taken(run, state, node, dev["path"])
            )
            if taken or not _usable(run, node, name):
                return run.error(node, "Cannot open block devices.")
            _open(node, name)
    if image == "vcablk0" and not node["blk"].get("vcablk0", {}).get("open"):
        return run.error(node, "Block device vcablk0 need be in inactive/active state!")
    _go(node, "booting")
    _boot(state, node)
    config["last-os-image"] = image if image == "vcablk0" else os.path.realpath(image)
    return True


def _agent(run: Invocation, node: Node) -> bool:
    """The host -> node agent channel (vca_agent_command)."""
    if _shown(node) not in AGENT_STATES:
        return run.error(node, NEEDS_AGENT)
    if node["faults"]["no_agent"]:
        return run.error(node, "VCA_AGENT_COMMAND returned with LBP_INTERNAL_ERROR")
    if node["faults"]["agent_timeout"]:
        return run.error(node, "VCA_AGENT_COMMAND returned with LBP_IRQ_TIMEOUT")
    return True


def do_os_shutdown(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    if _shown(node) == "net_device_up":
        hint = " Please use 'pwrbtn-short' command!" if run.cmd == "os-shutdown" else ""
        return run.error(
            node,
            f"It's impossible to use {run.cmd} command in net_device_up state, because in this state VcaAgent doesn't work properly.{hint}",
        )
    if not _agent(run, node):
        return run.error(node, f"Execute '{run.cmd}' command failed!")
    t = state["timings"]
    node["os_up_at"] = None
    if run.cmd == "reboot":
        run.info(node, "OS Reboot requested by user")
        _go(node, "os_rebooting")
        _boot(state, node, after=t["power_down"])
    else:
        run.info(node, "OS Shutdown requested by user")  # the agent runs `halt -p`
        _go(node, "powering_down", (t["power_down"], "power_off"))
    return True


def do_pwrbtn(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    t, config = state["timings"], state["config"]
    if run.cmd == "pwrbtn-short" and run.before[node_key(node["card"], node["cpu"])] == "power_off":
        _go(node, "link_down", (t["power_on"], "bios_up"))
        if config["auto-boot"] == "1" and node["config"]["os-image"]:
            # vcactld's pwrbtn_boot runs `vcactl boot`, which opens the enabled block devices;
            # its errors would go to vcactld's log, not to this run's output.
            for name, dev in node["blk"].items():
                if dev["enabled"] == "1" and _usable(Invocation([], False), node, name):
                    _open(node, name)
            _boot(state, node, after=t["power_on"])
        return True
    _go(node, "powering_down", (t["power_down"], "power_off"))  # ACPI off, or the 5 s override
    node["os_up_at"] = None
    return True


def do_blockio(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    sub, blk = run.p["sub"], run.p.get("blk")
    name = f"vcablk{blk}"
    if sub == "list":
        if i == 0:
            run.out += [
                f"{'Card':>5} {'Cpu':>5} {'Name':>9} {'State':>9} {'Mode':>8} {'Size(MB)':>9} {'FilePath':>2}",
                "-" * 60,
            ]
        for dev_name in sorted(node["blk"]) if blk is None else [name]:
            dev = node["blk"].get(dev_name)
            if dev is None:
                continue
            if dev["open"]:
                row = [("inactive" if _shown(node) in BIOS_STATES else "active"), dev["open"]["mode"],
                       str(dev["open"]["size_mb"]), dev["open"]["path"]]  # fmt: skip
            else:
                row = ["enabled" if dev["enabled"] == "1" else "disabled", dev["mode"],
                       dev["ramdisk-size-mb"], "" if dev["mode"] == "ramdisk" else dev["path"]]  # fmt: skip
            st, mode, size, path = (value or "-" for value in row)
            run.out.append(
                f"{node['card']:>5} {node['cpu']:>5} {dev_name:>9} {st:>9} {mode:>8} {size:>9} {path}"
            )
        return True
    dev = node["blk"].get(name)
    if sub == "close":
        if dev is None or dev["enabled"] != "1":
            run.err.append(
                f"WARNING: Card: {node['card']} Cpu: {node['cpu']} - Block device {name} is not open. You do not need to close it."
            )
            return True
        if _rw_active(node) and not run.force:
            also = " and OS is not booted from this device," if blk == 0 else ""
            run.error(
                node,
                f"You're trying to disconnect active block device! It may lead to data corruption. Please use os-shutdown command first. If you're sure that you want to close it anyway,{also} please use --force flag.",
            )
            return run.error(node, "Failed to close block device!")
        dev["open"], dev["enabled"] = None, "0"
        return True
    if dev is not None and dev["open"]:
        run.error(node, f"Block device {name} already exist.")
        return run.error(node, "Failed to open block device!")
    mode = run.p.get("mode")
    if mode == "RW" and _path_taken(run, state, node, run.p["param"]):
        return run.error(node, "Failed to open block device!")
    if dev is None:
        if mode is None:
            run.error(node, f"Block device {name} not defined in config file!")
            return run.error(node, "Failed to open block device!")
        dev = node["blk"][name] = {**dict.fromkeys(BLK_FIELDS, ""), "open": None}
    if mode == "ramdisk":
        dev.update({"mode": mode, "path": "", "ramdisk-size-mb": run.p["param"]})
    elif mode is not None:
        dev.update({"mode": mode, "path": os.path.realpath(run.p["param"]), "ramdisk-size-mb": "0"})
    if not _usable(run, node, name):
        return run.error(node, "Failed to open block device!")
    dev["enabled"] = "1"
    if _shown(node) not in BIOS_STATES:
        _open(node, name)  # a node past its BIOS gets the device at once, others at boot
    elif node["state"] == "bios_up":
        _go(node, "bios_ready")  # the LBP handshake (hardware.md §A.3)
    return True


def do_config(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    param, value = run.p["param"], run.p["value"]
    if param in GLOBAL_FIELDS:
        if i > 0:
            return True
        if param in NUMBERS and not re.fullmatch(r"\d*", value):
            return run.error(None, f'"{value}" is not valid for {param}')
        state["config"][param] = value
        return True
    if param == "ip" and value != "dhcp":
        if "cpu" not in run.p:
            return run.error(None, 'card_id and cpu_id is required to change config field "ip"!')
        if not _IP.match(value):
            return run.error(None, "Ip address incorrect!")
    if param in CPU_FIELDS and param != "block-devs":
        node["config"][param] = value
    elif param in BLK_FIELDS and "blk" in run.p:
        dev = node["blk"].setdefault(
            f"vcablk{run.p['blk']}", {**dict.fromkeys(BLK_FIELDS, ""), "open": None}
        )
        dev[param] = value
    return True


def _show_devs(run: Invocation, node: Node, indent: int) -> None:
    for name in sorted(node["blk"]):
        run.out.append(" " * indent + f"{name}:")
        run.out += [" " * (indent + 2) + f"{f}: {node['blk'][name][f]}" for f in BLK_FIELDS]


def do_config_show(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    param, header = run.p.get("param"), f"card {node['card']} cpu {node['cpu']}: "
    if param is None:
        if i == 0:
            run.out += [
                "Global configuration:",
                *(f"  {k}: {v}" for k, v in state["config"].items()),
            ]
        run.out.append(header)
        for field in CPU_FIELDS:
            if field == "block-devs":
                run.out.append("  block-devs:")
                _show_devs(run, node, 4)
            else:
                run.out.append(f"  {field}: {node['config'][field]}")
    elif param in GLOBAL_FIELDS:
        if i == 0:
            run.out.append(state["config"][param])
    elif param == "block-devs":
        run.out.append(header)
        _show_devs(run, node, 2)
    elif param in CPU_FIELDS:
        value = node["config"][param]
        run.out += [value] if "strip" in run.p else [header, f"  {param}: {value}"]
    elif param in node["blk"]:
        run.out += [
            header,
            f"  {param}:",
            *(f"    {f}: {node['blk'][param][f]}" for f in BLK_FIELDS),
        ]
    return True


def do_temp(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    if not _agent(run, node):
        return run.error(None, "Execute 'temp' command failed!")
    # vcactl drops the first three lines of `sensors` (chip, adapter, Package id 0).
    run.out += [f"Card {node['card']} Cpu {node['cpu']}:", _SENSORS]
    return True


def do_network(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    if not _agent(run, node):
        return run.error(None, "Execute network command failed!")
    if "cpu" not in run.p:  # vcactl prints the header unless given sub, card and cpu
        run.out.append(f"Card {node['card']} Cpu {node['cpu']}:")
    ip = node["config"]["ip"]
    run.out.append(ip if run.p["sub"] == "ip" else f"inet {ip}/24 scope global eth0")
    return True


def do_info(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    sub, card, cpu = run.p["sub"], node["card"], node["cpu"]
    if sub == "hw":
        run.out.append(
            f"Card {card}: VCA GEN 2 FAB 2, EEPROM version: unknown (CRC1: 0x00000000 CRC2: 0x00000000)"
        )
        return True
    if sub == "system":
        run.out += [
            "Apps version: build: 2.3.26 build on: 2019-06-03 12:00:00",
            "Modules build: 2.3.26",
        ]
        return True
    if "cpu" not in run.p:
        run.out.append(f"Card {card} Cpu {cpu}:")
    if sub == "node-os":
        agent = _shown(node) != "link_down" and _agent(run, node)
        run.out.append(
            'NAME="Ubuntu"\nVERSION_ID="22.04"'
            if agent
            else "linux - cannot get more info about node-os"
        )
    elif node["faults"]["dead"]:
        run.error(None, "LBP_GET_BIOS_PARAM failed!")
        run.rc = EPERM  # vcactl's `else command_err = 1` when the ioctl itself fails
    elif node["faults"]["bios_too_old"]:
        run.error(
            node,
            "\tToo old version of BIOS which does not support command ' info BIOS '. Update BIOS at node",
        )
        run.rc = EPERM
    else:
        if node["state"] == "bios_up":
            _go(node, "bios_ready")  # info BIOS handshakes first
        run.out += ["\tVersion:\tMV_2.1.0", "\tRelease Date:\t2018.06.22 12:00:00"]
    return True  # print_info_cmd_data ignores how the subcommand went


def do_script(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    node["config"]["script"] = run.p.get("file", "")
    return True


HANDLERS: dict[str, Callable[[Invocation, dict[str, Any], Node, int], bool]] = {
    "status": do_status, "reset": do_reset, "boot": do_boot, "reboot": do_os_shutdown,
    "os-shutdown": do_os_shutdown, "pwrbtn-short": do_pwrbtn, "pwrbtn-long": do_pwrbtn,
    "blockio": do_blockio, "config": do_config, "config-show": do_config_show, "temp": do_temp,
    "network": do_network, "info": do_info, "script": do_script,
}  # fmt: skip
WAITS: dict[str, tuple[Callable[[str], bool], str, str]] = {"wait": (lambda s: s == "net_device_ready", "Net device ready!", "wait TIMEOUT!"),
         "wait-BIOS": (lambda s: s not in WAIT_BIOS_NOT_UP, "BIOS is up and running!", "wait-BIOS TIMEOUT!")}  # fmt: skip


def _record(path: Path, args: list[str], started: float, rc: int | None) -> None:
    call = {"argv": args, "at": started, "rc": rc, "pid": os.getpid(), "spawned": _spawned()}
    with _locked(path) as state:
        state["calls"].append({**call, "ended": time.time()})


def _spawned() -> float | None:
    """When this process started, interpreter start-up included (10 ms resolution): what a
    benchmark counts as the time vcactl itself took."""
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    age = uptime - int(stat[19]) / os.sysconf("SC_CLK_TCK")  # starttime: field 22 of stat
    return time.time() - age


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--state":
        sys.stderr.write("usage: vcactl.py --state STATE.json <vcactl args...>\n")
        return 2
    path, args, started = Path(argv[1]), argv[2:], time.time()
    words, force = list(args), False
    flags = ("-v", "-vv", "--force", "--skip-modprobe-check")  # vcactl's, at either end
    while words and words[0] in flags:
        force |= words.pop(0) == "--force"
    while words and words[-1] in flags:
        force |= words.pop() == "--force"
    run = Invocation(words, force)
    with _locked(path) as state:
        pause = run.prepare(state)
        if pause == float("inf"):
            state["calls"].append({"argv": args, "at": started, "rc": None, "pid": os.getpid()})
    if pause == float("inf"):
        while True:  # a hung vcactl: only a signal ends it
            time.sleep(60)
    if pause is not None:
        time.sleep(pause)
        if run.cmd in WAITS:
            run.wait(path, *WAITS[run.cmd])
        elif run.cmd == "help":
            run.out.append("vcactl (simulated): see `man vcactl`")
        else:
            with _locked(path) as state:
                run.execute(state)
    _record(path, args, started, run.rc)
    sys.stdout.write("".join(f"{line}\n" for line in run.out))
    sys.stderr.write("".join(f"{line}\n" for line in run.err))
    return run.rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
