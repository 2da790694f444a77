"""The fleet commands: lanes, and lending nodes to the render farm (pause, resume)."""

from __future__ import annotations

import argparse
from typing import TextIO

import msgspec

from smemctl.client import Client
from smemctl.common import echo
from smemd.protocol import ActivePause, Lanes, PauseReply


def _pause_line(pause: ActivePause | None) -> str:
    if pause is None:
        return "no nodes lent"
    who = f" by {pause.by}" if pause.by else ""
    why = f" ({pause.reason})" if pause.reason else ""
    return f"lent until {pause.until}{who}{why}: {' '.join(pause.nodes)}"


def lanes(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get("/v1/lanes", Lanes)
    if args.json:
        echo(raw, out)
        return
    print(f"fleet {reply.fleet_kind}", file=out)
    for lane in ("interactive", "background"):
        members = reply.interactive if lane == "interactive" else reply.background
        print(f"{lane}: {' '.join(members) or '-'}", file=out)
    print(_pause_line(reply.pause), file=out)
    if reply.pause_error:
        print(f"pause file refused: {reply.pause_error}", file=out)


def pause_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("nodes", nargs="+", metavar="NODE")
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--until", metavar="ISO", help="an instant with its UTC offset")
    when.add_argument("--for", dest="for_", metavar="DURATION", help="e.g. 2h, 90m, 1h30m")
    parser.add_argument("--reason", default="", metavar="TEXT")
    parser.add_argument("--by", default="smemctl", metavar="WHO")
    parser.add_argument(
        "--wait", action="store_true", help="return once the nodes have nothing in flight"
    )
    parser.add_argument(
        "--wait-timeout", type=float, default=300.0, metavar="S", help="how long --wait waits"
    )


def pause(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body: dict[str, object] = {
        "nodes": args.nodes,
        "by": args.by,
        "reason": args.reason,
        "wait": args.wait,
    }
    body["until" if args.until else "for"] = args.until or args.for_
    if args.wait:
        body["timeoutS"] = args.wait_timeout
        client.timeout = max(
            client.timeout, args.wait_timeout + 10
        )  # the reply comes after the wait
    reply, raw = client.post("/v1/pause", body, PauseReply)
    if args.json:
        echo(raw, out)
        return
    print(_pause_line(reply.pause), file=out)
    if reply.drained is False:
        print("not drained yet: calls were still in flight at the timeout", file=out)


def resume_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("nodes", nargs="*", metavar="NODE", help="default: every lent node")


def resume(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body = {"nodes": args.nodes} if args.nodes else {}
    raw = client.call("DELETE", "/v1/pause", body)
    if args.json:
        echo(raw, out)
        return
    print(_pause_line(msgspec.json.decode(raw, type=PauseReply).pause), file=out)
