"""The memory commands: search and profile, list, history, forget and restore, each a thin caller
of one of smemd's v5 routes (`smemd/api/`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO, TypeVar
from urllib.parse import urlencode

import msgspec

from smemctl.client import CallFailed, Client
from smemctl.common import (
    UsageError,
    echo,
    fitted,
    iso_instant,
    namespace_argument,
    namespace_path,
    segment,
    some,
    when,
)
from smemd.protocol.memory import (
    ForgetIds,
    ForgetQuery,
    ForgetResult,
    History,
    ListBody,
    ListInclude,
    ListResponse,
    MemoryOut,
    Profile,
    ProfileResponse,
    Search,
    SearchResponse,
)

T = TypeVar("T")


# --- recall -----------------------------------------------------------------------------------


def search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", metavar="QUERY")
    namespace_argument(parser)
    parser.add_argument("--limit", type=int, default=10, metavar="N", help="at most N results")
    parser.add_argument("--mode", choices=("hybrid", "memories", "chunks"), default="hybrid")
    parser.add_argument(
        "--as-of", type=iso_instant, metavar="ISO", help="what held at this time (valid time)"
    )
    parser.add_argument(
        "--as-of-recorded", type=iso_instant, metavar="ISO",
        help="what smem believed at this time (record time)",
    )  # fmt: skip
    # 0, not the API's 0.3: smemctl is for looking, and a weak match is worth seeing with its score.
    parser.add_argument(
        "--threshold", type=_fraction, default=0.0, metavar="X", help="least similarity, 0..1"
    )


def search(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body = Search(
        query=args.query,
        search_mode=args.mode,
        limit=args.limit,
        threshold=args.threshold,
        as_of=args.as_of,
        as_of_recorded=args.as_of_recorded,
    )
    reply, raw = client.post(f"{namespace_path(args)}/search", body, SearchResponse)
    if args.json:
        echo(raw, out)
        return
    rows = [
        (rank, f"{r.similarity:.3f}", "chunk" if r.memory is None else "memory",
         r.memory or r.chunk or "", r.id)
        for rank, r in enumerate(reply.results, 1)
    ]  # fmt: skip
    header = ("rank", "similarity", "kind", "text", "id")
    print(fitted(rows, header, 3, out) if rows else "no results", file=out)


def profile_arguments(parser: argparse.ArgumentParser) -> None:
    namespace_argument(parser)
    parser.add_argument(
        "--as-of", type=iso_instant, metavar="ISO", help="the profile as it held at this time"
    )


def profile(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body = Profile(as_of=args.as_of)
    reply, raw = client.post(f"{namespace_path(args)}/profile", body, ProfileResponse)
    if args.json:
        echo(raw, out)
        return
    for name, facts in (("static", reply.profile.static), ("dynamic", reply.profile.dynamic)):
        print(f"{name}:", file=out)
        rows = [(f.id, f.memory) for f in facts]
        print(fitted(rows, ("id", "text"), 1, out) if rows else "(none)", file=out)


# --- memories ---------------------------------------------------------------------------------


def list_arguments(parser: argparse.ArgumentParser) -> None:
    namespace_argument(parser)
    parser.add_argument("--history", action="store_true", help="every version, not only the latest")
    parser.add_argument("--type", choices=("fact", "preference", "episode"))
    parser.add_argument("--forgotten", action="store_true", help="forgotten memories too")
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="per page (1..100)")
    parser.add_argument("--page", type=int, default=1, metavar="P")


def list_memories(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body = ListBody(
        history=args.history, type=args.type, include=ListInclude(forgotten=args.forgotten)
    )
    query = urlencode({"page": args.page, "limit": args.limit})
    reply, raw = client.post(f"{namespace_path(args)}/list/memories?{query}", body, ListResponse)
    if args.json:
        echo(raw, out)
        return
    rows = [
        (m.id, m.version, _yes(m.is_latest), _yes(m.is_forgotten), m.type,
         when(m.system.created_at), m.memory)
        for m in reply.memories
    ]  # fmt: skip
    header = ("id", "version", "latest", "forgotten", "type", "created", "text")
    if rows:
        print(fitted(rows, header, 6, out), file=out)
    p = reply.pagination
    print(f"page {p.current_page} of {p.total_pages}, {some(p.total_items, 'memory')}", file=out)


def history_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", help="any version's id")
    namespace_argument(parser)


def history(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get(f"{namespace_path(args)}/memories/{segment(args.id)}/history", History)
    if args.json:
        echo(raw, out)
        return
    # Both times: when each version held in the world, and when smem stored and replaced it.
    rows = [
        (m.version, m.id, _yes(m.is_latest), when(m.valid_from), when(m.valid_until),
         when(m.system.created_at), when(m.superseded_at), when(m.forgotten_at), m.memory)
        for m in reply.memories
    ]  # fmt: skip
    header = (
        "version", "id", "latest", "valid from", "valid until", "recorded", "superseded",
        "forgotten", "text",
    )  # fmt: skip
    print(fitted(rows, header, 8, out), file=out)


def forget_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("query", nargs="?", metavar="QUERY", help="forget what this query finds")
    which.add_argument(
        "--id", dest="ids", action="append", metavar="ID", help="forget this memory (repeatable)"
    )
    namespace_argument(parser)
    parser.add_argument("--yes", action="store_true", help="forget what QUERY finds, not a dry run")
    parser.add_argument("--reason", metavar="R", help="why, kept with memories forgotten by --id")
    parser.add_argument(
        "--threshold", type=_fraction, metavar="X", help="QUERY's least similarity (default 0.5)"
    )
    parser.add_argument("--limit", type=int, metavar="N", help="at most N memories for QUERY")


def forget(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.ids:
        _forget_ids(client, args, out)
        return
    if args.reason is not None:
        raise UsageError("--reason goes with --id (a query is its own reason)")
    body = ForgetQuery(query=args.query, dry_run=not args.yes)
    if args.threshold is not None:
        body.threshold = args.threshold
    if args.limit is not None:
        body.limit = args.limit
    reply, raw = _send(
        client, "DELETE", f"{namespace_path(args)}/memories/semantic", body, ForgetResult
    )
    if args.json:
        echo(raw, out)
        return
    if not reply.matches:
        print(f"no memory matches {args.query!r} (threshold {body.threshold:g})", file=out)
        return
    verb = "forgot" if args.yes else "would forget"
    print(f"{verb} {some(len(reply.matches), 'memory')}:", file=out)
    print(fitted([(m.id, m.memory) for m in reply.matches], ("id", "text"), 1, out), file=out)
    if not args.yes:
        print("nothing forgotten yet: add --yes to forget these", file=out)


def _forget_ids(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body = ForgetIds(ids=args.ids, reason=args.reason)
    reply, raw = _send(client, "DELETE", f"{namespace_path(args)}/memories", body, ForgetResult)
    if args.json:
        echo(raw, out)
    else:
        print(f"forgot {some(reply.count, 'memory')}", file=out)
    for error in reply.errors:
        print(f"{error.id}: {error.error}", file=sys.stderr)
    if reply.errors:
        raise CallFailed(f"{len(reply.errors)} of {len(args.ids)} memories not forgotten")


def restore_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID")
    namespace_argument(parser)


def restore(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    path = f"{namespace_path(args)}/memories/{segment(args.id)}/restore"
    memory, raw = client.post(path, None, MemoryOut)
    if args.json:
        echo(raw, out)
        return
    latest = "" if memory.is_latest else ", not the latest version"
    print(f"restored {memory.id} (version {memory.version}{latest}): {memory.memory}", file=out)


def _send(client: Client, method: str, path: str, body: Any, type_: type[T]) -> tuple[T, bytes]:
    raw = client.call(method, path, body)
    return msgspec.json.decode(raw, type=type_), raw


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in 0..1, got {text!r}")
    return value
