"""The node commands: `nodes` (with temperatures on cards), `cards`, `telemetry`, and the admin
actions `boot`, `reboot`, `poweroff` and `reset`."""

from __future__ import annotations

import argparse
import urllib.parse
from typing import TextIO

from smemctl.client import Client
from smemctl.common import echo
from smemctl.table import table
from smemd.protocol.cards import ActionReply, Cards, NodeInfo, Nodes, Telemetry


def _temperature(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}°C"


def _memory(total: int | None, available: int | None) -> str:
    if total is None or available is None:
        return "-"
    return f"{(total - available) / 1024**2:.1f}/{total / 1024**2:.0f}G"


def _node_row(n: NodeInfo) -> tuple[object, ...]:
    return (
        n.id, ",".join(n.lanes), ",".join(n.roles), n.state, _temperature(n.temperature_c),
        _memory(n.mem_total_kb, n.mem_available_kb), "yes" if n.lendable else "no",
        sum(n.in_flight.values()), n.last_error[:60],
    )  # fmt: skip


def nodes(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get("/v1/nodes", Nodes)
    if args.json:
        echo(raw, out)
        return
    if not reply.nodes:
        print(f"the {reply.fleet_kind} fleet has no nodes", file=out)
        return
    rows = [_node_row(n) for n in reply.nodes]
    header = ("node", "lanes", "roles", "state", "temp", "memory", "lendable", "in flight",
              "last error")  # fmt: skip
    print(table(rows, header=header), file=out)


def cards(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get("/v1/cards", Cards)
    if args.json:
        echo(raw, out)
        return
    for card in reply.cards:
        states = " ".join(f"{node}:{state}" for node, state in card.nodes.items())
        print(f"card {card.card}: {states}", file=out)


def telemetry_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("node", metavar="NODE")
    parser.add_argument("--since", default="0", help="seconds since the epoch, or ISO-8601")


def telemetry(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    query = "/v1/telemetry?" + urllib.parse.urlencode({"node": args.node, "since": args.since})
    reply, raw = client.get(query, Telemetry)
    if args.json:
        echo(raw, out)
        return
    rows = [
        (s.at, _temperature(s.temperature_c), _memory(s.mem_total_kb, s.mem_available_kb), s.error)
        for s in reply.samples
    ]
    print(table(rows, header=("at", "temp", "memory", "error")), file=out)


def action_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("nodes", nargs="+", metavar="NODE")


def reset_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("nodes", nargs="*", metavar="NODE", default=[])
    target.add_argument("--card", type=int, help="reset a whole card's nodes")


def _act(action: str, client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if action == "reset" and args.card is not None:
        reply, _ = client.post(f"/v1/cards/{args.card}/reset", None, ActionReply)
        print(f"reset started: {' '.join(reply.nodes)}", file=out)
        return
    for node in args.nodes:
        client.post(f"/v1/nodes/{node}/{action}", None, ActionReply)
        print(f"{action} started: {node}", file=out)


def boot(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    _act("boot", client, args, out)


def reboot(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    _act("reboot", client, args, out)


def poweroff(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    _act("poweroff", client, args, out)


def reset(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    _act("reset", client, args, out)
