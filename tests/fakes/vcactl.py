#!/usr/bin/env python3
"""A fake Intel VCA 2.3.26 `vcactl`: its syntax, output and exit codes, over a JSON state file."""

# Runs as `python3 vcactl.py --state STATE.json <vcactl args...>` (the wrapper `install` writes does
# that), stdlib only so that it starts fast. Messages, streams and exit codes follow Intel's
# vcactl(1) page and vcactrl.cpp of VCA 2.3.26. Node states are stored as
# timestamped transitions, so a later invocation reads the current state off the wall clock.
# Its parts: the state (vcactl_state), a run's parsing and checks (vcactl_invocation) and what
# each command does (vcactl_commands); tests import what they set and read from here.

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run by path, its parts are found from the repository's root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes.vcactl_commands import WAITS
from tests.fakes.vcactl_invocation import Invocation
from tests.fakes.vcactl_state import (
    CPUS,
    GLOBAL_FAULTS,
    GLOBAL_FIELDS,
    STATE_FILE,
    SYSFS,
    Timings,
    addressed,
    locked_state,
    new_node,
    node_key,
    node_state,
    os_is_up,
    power_off,
    read_state,
    set_faults,
    set_known,
    set_node,
)

__all__ = [
    "CPUS", "STATE_FILE", "SYSFS", "Timings", "addressed", "install", "node_key", "node_state",
    "os_is_up", "power_off", "read_state", "set_faults", "set_node",
]  # fmt: skip


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
    nodes = {node_key(c, n): new_node(c, n) for c in range(cards) for n in range(CPUS)}
    state = {"cards": cards, "timings": asdict(timings or Timings()), "nodes": nodes, "calls": [],
             "faults": json.loads(json.dumps(GLOBAL_FAULTS)), "config": dict(GLOBAL_FIELDS)}  # fmt: skip
    for name, value in (faults or {}).items():
        if name in nodes:
            set_known(nodes[name]["faults"], value)
        else:
            set_known(state["faults"], {name: value})
    path = directory / STATE_FILE
    path.write_text(json.dumps(state))
    wrapper = directory / "vcactl"
    me = shlex.quote(str(Path(__file__).resolve()))
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {me} --state {shlex.quote(str(path))} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def _record(path: Path, args: list[str], started: float, rc: int | None) -> None:
    call = {"argv": args, "at": started, "rc": rc, "pid": os.getpid(), "spawned": _spawned()}
    with locked_state(path) as state:
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
    with locked_state(path) as state:
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
            with locked_state(path) as state:
                run.execute(state)
    _record(path, args, started, run.rc)
    sys.stdout.write("".join(f"{line}\n" for line in run.out))
    sys.stderr.write("".join(f"{line}\n" for line in run.err))
    return run.rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
