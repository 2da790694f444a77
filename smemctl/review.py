"""`review`: the open contradictions (`/v1/review`, or `/ns/{ns}/review` with a namespace), and
`review resolve ID OTHER_ID --keep ID|both` (`POST /ns/{ns}/review`)."""

from __future__ import annotations

import argparse
from typing import TextIO
from urllib.parse import urlencode

from smemctl.client import Client
from smemctl.common import echo, segment, some, when
from smemctl.table import table
from smemd.protocol.memory import MemoryOut
from smemd.protocol.review import ContradictionOut, Resolve, Resolved, Review


def review_arguments(parser: argparse.ArgumentParser) -> None:
    _namespace(parser, None, "one namespace (default: every one)")
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="per page (1..100)")
    parser.add_argument("--page", type=int, default=1, metavar="P")
    what = parser.add_subparsers(dest="what", metavar="resolve")
    resolve = what.add_parser(
        "resolve",
        help="keep one memory of a contradiction (the other is forgotten) or both",
        description="Keep one memory of a contradiction (the other is forgotten: `restore` undoes"
        " it) or both (both are true).",
    )
    resolve.add_argument("memory_id", metavar="ID")
    resolve.add_argument("other_id", metavar="OTHER_ID")
    resolve.add_argument("--keep", required=True, metavar="ID|both", help="the id kept, or both")
    # Not set here unless given, so `review -n NS resolve …` keeps NS.
    _namespace(resolve, argparse.SUPPRESS, "the pair's namespace (default: default)")


def review(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.what == "resolve":
        _resolve(client, args, out)
        return
    query = urlencode({"page": args.page, "limit": args.limit})
    path = "/v1/review" if args.ns is None else f"/ns/{segment(args.ns)}/review"
    reply, raw = client.get(f"{path}?{query}", Review)
    if args.json:
        echo(raw, out)
        return
    for c in reply.contradictions:
        print(_block(c), file=out)
        print(file=out)
    p = reply.pagination
    print(
        f"page {p.current_page} of {max(p.total_pages, 1)}, {some(p.total_items, 'contradiction')}",
        file=out,
    )
    if reply.contradictions:
        print("resolve: smemctl review resolve ID OTHER_ID --keep ID|both [-n NAMESPACE]", file=out)


def _block(c: ContradictionOut) -> str:
    """The pair, newer first: one line about the contradiction, then a row per memory."""
    head = f"{c.namespace}: found {when(c.created_at)}, score {c.score:.2f}"
    if c.label is not None:
        head += f", reopened (last resolved: keep {c.label})"
    rows = [_row(c.memory), _row(c.contradicts)]
    lines = table(rows, header=("id", "created", "event", "text")).splitlines()
    return "\n".join([head, *("  " + line for line in lines)])


def _row(m: MemoryOut) -> tuple[str, str, str, str]:
    return (m.id, when(m.system.created_at), when(m.event_at), " ".join(m.memory.split()))


def _resolve(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    ns = args.ns or "default"
    body = Resolve(memory_id=args.memory_id, contradicts=args.other_id, keep=args.keep)
    reply, raw = client.post(f"/ns/{segment(ns)}/review", body, Resolved)
    if args.json:
        echo(raw, out)
        return
    if reply.keep == "both":
        done = f"kept both {reply.memory.id} and {reply.contradicts.id}"
    else:
        kept, lost = (
            (reply.memory, reply.contradicts)
            if reply.keep == reply.memory.id
            else (reply.contradicts, reply.memory)
        )
        done = f"kept {kept.id}; forgot {lost.id} (restore {lost.id} undoes it)"
    if not reply.changed:
        done = f"already resolved ({when(reply.resolved_at)}): {done}; nothing changed"
    print(done, file=out)


def _namespace(parser: argparse.ArgumentParser, default: object, help: str) -> None:
    parser.add_argument(
        "-n", "--ns", "--namespace", dest="ns", default=default, metavar="NAMESPACE", help=help
    )
