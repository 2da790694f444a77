"""`python -m boot status|up|down [NODE...]`: the sequence alone, for recovery without smemd.

Exit status: 0 all nodes succeeded, 1 a node (or vcactl) failed, 2 bad config or arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from boot.context import Context, context_for
from boot.sequence import NodeReport, Outcome, down, run_all, status, up
from boot.target import Target, UnknownNode, targets_from_config
from smemd.config import ConfigError, load
from smemd.errors import SmemError


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m boot", description="Bring VCA nodes up or down, or show where they are."
    )
    parser.add_argument("action", choices=("status", "up", "down"))
    parser.add_argument("nodes", nargs="*", metavar="NODE", help="node ids (default: all)")
    parser.add_argument("--config", type=Path, help="smemd's TOML (default /etc/smem/smemd.toml)")
    parser.add_argument("--state-dir", type=Path, help="where known_hosts is kept")
    parser.add_argument(
        "--poll", type=float, help="seconds between state polls ([cards.timeouts] poll)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit_:  # argparse has printed why
        return 0 if exit_.code == 0 else 2
    try:
        config = load(args.config)
        targets = targets_from_config(config, args.nodes)
    except (ConfigError, UnknownNode) as err:
        sys.stderr.write(f"bad config: {err}\n")
        return 2
    if not targets:
        sys.stderr.write("bad config: no [[fleet.nodes]] to act on\n")
        return 2
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO, stream=sys.stderr,
        format="%(name)s %(levelname)s %(message)s",
    )  # fmt: skip
    timeouts = config.cards.timeouts
    if args.poll is not None:
        timeouts = msgspec.structs.replace(timeouts, poll=args.poll)
    context = context_for(config, targets, state_dir=args.state_dir, timeouts=timeouts)
    return asyncio.run(_act(args.action, targets, context))


async def _act(action: str, targets: list[Target], context: Context) -> int:
    async with context as ctx:
        if action == "status":
            try:
                reports = await status(targets, ctx)
            except SmemError as err:
                sys.stdout.write(f"vcactl failed: {err}\n")
                return 1
            sys.stdout.write(_table(reports))
            return 0
        outcomes = await run_all(up if action == "up" else down, targets, ctx)
    sys.stdout.write("".join(_line(action, o) for o in outcomes))
    return 0 if all(o.ok for o in outcomes) else 1


def _table(reports: list[NodeReport]) -> str:
    rows = [("NODE", "STATE", "IMAGE", "SSH", "HEALTH")]
    for r in reports:
        ssh = "-" if r.ssh is None else ("yes" if r.ssh else "no")
        health = " ".join(f"{role}:{'ok' if ok else 'down'}" for role, ok in r.health.items())
        rows.append((r.node, r.state, r.image, ssh, health or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
                   for row in rows)  # fmt: skip


def _line(action: str, outcome: Outcome) -> str:
    if not outcome.ok:
        return f"{outcome.node}: FAILED at {outcome.failed_step}: {outcome.reason}\n"
    ran = ", ".join(outcome.ran) or "nothing to do"
    return f"{outcome.node}: {action} ok ({ran})\n"


if __name__ == "__main__":
    sys.exit(main())
