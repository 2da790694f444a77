"""What each vcactl command does to a node, with vcactl's messages and checks
(tests/fakes/vcactl.py)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.fakes.vcactl_state import (
    AGENT_STATES,
    BIOS_STATES,
    BLK_FIELDS,
    BOOTABLE,
    CPU_FIELDS,
    EPERM,
    GLOBAL_FIELDS,
    IP,
    NEEDS_AGENT,
    NEEDS_BIOS,
    NUMBERS,
    SENSORS,
    WAIT_BIOS_NOT_UP,
    enter,
    node_key,
    shown_state,
)

if TYPE_CHECKING:
    from tests.fakes.vcactl_invocation import Invocation

Node = dict[str, Any]


def _rw_active(node: Node) -> bool:
    opened = [dev["open"] for dev in node["blk"].values() if dev["open"]]
    return any(o["mode"] == "RW" for o in opened) and shown_state(node) not in BIOS_STATES


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
    run.out.append(f"Card: {node['card']} Cpu: {node['cpu']} STATE: {shown_state(node)}{flags}")
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
    enter(node, "resetting", (t / 3, "link_down"), (t, "bios_up"))
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
    shown = shown_state(node)
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
    enter(node, "booting")
    _boot(state, node)
    config["last-os-image"] = image if image == "vcablk0" else os.path.realpath(image)
    return True


def _agent(run: Invocation, node: Node) -> bool:
    """The host -> node agent channel (vca_agent_command)."""
    if shown_state(node) not in AGENT_STATES:
        return run.error(node, NEEDS_AGENT)
    if node["faults"]["no_agent"]:
        return run.error(node, "VCA_AGENT_COMMAND returned with LBP_INTERNAL_ERROR")
    if node["faults"]["agent_timeout"]:
        return run.error(node, "VCA_AGENT_COMMAND returned with LBP_IRQ_TIMEOUT")
    return True


def do_os_shutdown(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    if shown_state(node) == "net_device_up":
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
        enter(node, "os_rebooting")
        _boot(state, node, after=t["power_down"])
    else:
        run.info(node, "OS Shutdown requested by user")  # the agent runs `halt -p`
        enter(node, "powering_down", (t["power_down"], "power_off"))
    return True


def do_pwrbtn(run: Invocation, state: dict[str, Any], node: Node, i: int) -> bool:
    t, config = state["timings"], state["config"]
    if run.cmd == "pwrbtn-short" and run.before[node_key(node["card"], node["cpu"])] == "power_off":
        enter(node, "link_down", (t["power_on"], "bios_up"))
        if config["auto-boot"] == "1" and node["config"]["os-image"]:
            # vcactld's pwrbtn_boot runs `vcactl boot`, which opens the enabled block devices;
            # its errors would go to vcactld's log, not to this run's output.
            for name, dev in node["blk"].items():
                if dev["enabled"] == "1" and _usable(Invocation([], False), node, name):
                    _open(node, name)
            _boot(state, node, after=t["power_on"])
        return True
    enter(node, "powering_down", (t["power_down"], "power_off"))  # ACPI off, or the 5 s override
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
                row = [("inactive" if shown_state(node) in BIOS_STATES else "active"), dev["open"]["mode"],
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
    if shown_state(node) not in BIOS_STATES:
        _open(node, name)  # a node past its BIOS gets the device at once, others at boot
    elif node["state"] == "bios_up":
        enter(node, "bios_ready")  # the LBP handshake (hardware.md §A.3)
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
        if not IP.match(value):
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
    run.out += [f"Card {node['card']} Cpu {node['cpu']}:", SENSORS]
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
        agent = shown_state(node) != "link_down" and _agent(run, node)
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
            enter(node, "bios_ready")  # info BIOS handshakes first
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
