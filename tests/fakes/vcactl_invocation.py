"""One run of the fake vcactl: its words parsed as vcactl parses them, checked, timed and
carried out on each node it names (tests/fakes/vcactl.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakes.vcactl_commands import HANDLERS
from tests.fakes.vcactl_state import (
    AGENT_STATES,
    BLK_FIELDS,
    BLK_NAME,
    CPU_FIELDS,
    CPUS,
    EAGAIN,
    EBUSY,
    EINVAL,
    EIO,
    GLOBAL_FIELDS,
    MAX_BLK,
    NOT_SIMULATED,
    OK,
    SUBCOMMANDS,
    Usage,
    locked_state,
    node_key,
    shown_state,
)


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
        self.before = {key: shown_state(state["nodes"][key]) for key in self.targets}
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
            if agent and late and shown_state(n) in AGENT_STATES:
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
            with locked_state(path, write=False) as state:
                t = state["timings"]
                deadline = deadline or time.time() + t["wait_timeout"]
                for key in list(pending):
                    node = state["nodes"][key]
                    shown = shown_state(node)
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
        block = BLK_NAME.match(peek() or "")
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
