"""`smemctl [--socket PATH] [--json] COMMAND`: talk to smemd over its Unix socket.

Exit codes: 0 done, 1 the daemon answered with an error (or a document failed, or smemd could
not be talked to), 2 bad usage, 3 smemd is not running.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from smemctl import (
    answers,
    backup,
    calibration,
    entities,
    export,
    fleet,
    importing,
    ingest,
    memory,
    nodes,
    rederive,
    review,
    stats,
    store,
    undo,
)  # fmt: skip
from smemctl.client import CallFailed, Client, NotRunning
from smemctl.common import UsageError, echo
from smemctl.mcp import command as mcp_command
from smemctl.table import duration, pairs, table
from smemd.paths import default_socket
from smemd.protocol import Activity, Health, LogLevelReply, Status, TokenList

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_RUNNING = 0, 1, 2, 3

Command = Callable[[Client, argparse.Namespace, TextIO], None]
Arguments = Callable[[argparse.ArgumentParser], None]


def status(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get("/v1/status", Status)
    if args.json:
        echo(raw, out)
        return
    rows = [
        ("version", reply.version),
        ("pid", reply.pid),
        ("uptime", duration(reply.uptime_s)),
        ("started", reply.started_at),
        ("state dir", reply.state_dir),
        ("tcp", reply.listeners.tcp),
        ("socket", reply.listeners.socket),
        ("fleet", reply.fleet_kind),
        ("log level", reply.log_level),
    ]
    print(pairs(rows), file=out)


def health(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get("/v1/health", Health)
    if args.json:
        echo(raw, out)
    else:
        print(f"{reply.status} (smemd {reply.version})", file=out)


def metrics(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    text = client.call("GET", "/v1/metrics").decode()
    if args.json:
        print(json.dumps(parse_prometheus(text)), file=out)
    else:
        out.write(text)


def activity(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get("/v1/activity", Activity)
    if args.json:
        echo(raw, out)
        return
    last = reply.per_minute[-1].requests if reply.per_minute else 0
    print(
        f"{reply.requests} requests in the last {reply.window_minutes} min, {last} this minute",
        file=out,
    )
    rows = [(r.route, r.requests, f"{r.p50_ms:.2f}", f"{r.p95_ms:.2f}") for r in reply.routes]
    if rows:
        print(table(rows, header=("route", "requests", "p50 ms", "p95 ms")), file=out)


def log_level(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    # The daemon validates the level, so a bad one comes back as its error reply.
    change = {"level": args.level.lower(), "logger": args.logger}
    reply, raw = client.post("/v1/log-level", change, LogLevelReply)
    if args.json:
        echo(raw, out)
    else:
        print(f"{reply.logger}: {reply.previous} -> {reply.level}", file=out)


def tokens(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get("/v1/tokens", TokenList)
    if args.json:
        echo(raw, out)
        return
    rows = [(t.name, t.role, ", ".join(t.namespaces), t.source) for t in reply.tokens]
    if not rows:
        print("no tokens: TCP is open to every route but the admin ones", file=out)
        return
    print(table(rows, header=("name", "role", "namespaces", "configured in")), file=out)


def log_level_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("level", metavar="LEVEL", help="debug, info, warning, error or critical")
    parser.add_argument("--logger", default="smemd", help="which logger (default: smemd)")


COMMANDS: dict[str, tuple[Command, str, Arguments | None]] = {
    "status": (status, "the daemon's version, uptime, listeners and fleet", None),
    "health": (health, "is the daemon answering", None),
    "metrics": (metrics, "Prometheus metrics (--json: a list of samples)", None),
    "activity": (activity, "requests per minute and per-route latency over the last hour", None),
    "log-level": (log_level, "change the daemon's log level", log_level_arguments),
    "tokens": (tokens, "the API tokens: names, roles and namespaces (never secrets)", None),
    "ingest": (
        ingest.ingest,
        "add files, directories (their text files) or stdin (-) as documents",
        ingest.ingest_arguments,
    ),
    "remember": (ingest.remember, "add one document from TEXT", ingest.remember_arguments),
    "search": (memory.search, "search memories and chunks", memory.search_arguments),
    "list": (memory.list_memories, "list memories, newest first", memory.list_arguments),
    "history": (
        memory.history,
        "every version of a memory, oldest first",
        memory.history_arguments,
    ),
    "forget": (
        memory.forget,
        "forget what QUERY finds (a dry run without --yes), or memories by --id",
        memory.forget_arguments,
    ),
    "restore": (memory.restore, "bring back a forgotten memory", memory.restore_arguments),
    "profile": (
        memory.profile,
        "a namespace's static and dynamic profile",
        memory.profile_arguments,
    ),
    "mcp": (
        mcp_command.run,
        "serve smem's tools to an agent over MCP (stdio, or streamable HTTP with --http)",
        mcp_command.arguments,
    ),
    "ask": (
        answers.ask,
        "answer QUESTION from memory, citing numbered sources",
        answers.ask_arguments,
    ),
    "compress": (
        answers.compress,
        "the numbered context recall gives QUERY, and its tokens",
        answers.compress_arguments,
    ),
    "dreaming": (
        calibration.dreaming,
        "dreaming's state and backlog; on or off switches it",
        calibration.dreaming_arguments,
    ),
    "judgements": (
        calibration.judgements,
        "the judge's logged calls, oldest first",
        calibration.judgements_arguments,
    ),
    "label": (
        calibration.label,
        "a person's word: a memory's type, a call right or wrong, a link right or wrong",
        calibration.label_arguments,
    ),
    "review": (
        review.review,
        "open contradictions (two memories that disagree), or resolve one",
        review.review_arguments,
    ),
    "entities": (
        entities.entities,
        "the entities memories name; suggestions, decisions, merge KEEP NAME…, split NAME",
        entities.entities_arguments,
    ),
    "entity": (
        entities.entity,
        "one entity: what holds of it now, what held before, who is named with it",
        entities.entity_arguments,
    ),
    "calibration": (
        calibration.calibration,
        "each judge's threshold and how its labelled calls fare (--fit: fit them first)",
        calibration.calibration_arguments,
    ),
    "stats": (stats.stats, "documents, memories and jobs per namespace", stats.stats_arguments),
    "lanes": (fleet.lanes, "which nodes serve each lane, and what is lent", None),
    "nodes": (
        nodes.nodes,
        "the fleet's nodes: lanes, roles, state, temperature, memory, calls in flight",
        None,
    ),
    "cards": (nodes.cards, "the VCA cards and the state of each node", None),
    "telemetry": (
        nodes.telemetry,
        "a card node's temperature and memory samples (the last hour)",
        nodes.telemetry_arguments,
    ),
    "boot": (nodes.boot, "boot card nodes", nodes.action_arguments),
    "reboot": (nodes.reboot, "reboot card nodes", nodes.action_arguments),
    "poweroff": (nodes.poweroff, "power card nodes off", nodes.action_arguments),
    "reset": (nodes.reset, "reset card nodes (or --card N) and boot them", nodes.reset_arguments),
    "pause": (
        fleet.pause,
        "lend nodes (--until or --for), optionally waiting until drained",
        fleet.pause_arguments,
    ),
    "resume": (fleet.resume, "take lent nodes back (all without NODE)", fleet.resume_arguments),
    "jobs": (stats.jobs, "recent ingest jobs and the count in each phase", stats.jobs_arguments),
    "backup": (
        backup.backup,
        "back the store up into a new directory while smemd serves (smemd --restore undoes it)",
        backup.backup_arguments,
    ),
    "export": (
        export.export,
        "the namespace as JSON Lines (the export format) to FILE or stdout",
        export.export_arguments,
    ),
    "import": (
        importing.import_export,
        "put an export back into an empty namespace (-n, or the one the export names)",
        importing.import_arguments,
    ),
    "rederive": (
        rederive.rederive,
        "re-derive the namespace's memory from its documents and show the diff; --apply, --discard",
        rederive.rederive_arguments,
    ),
    "undo": (
        undo.undo,
        "take back everything one add brought (its documents retracted, with the cascade)",
        undo.undo_arguments,
    ),
    "redo": (undo.redo, "put back an add that was undone", undo.undo_arguments),
    "store": (
        store.store,
        "copy a stopped daemon's store into a new one: store copy --to postgresql://… or FILE",
        store.store_arguments,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smemctl",
        description="Administer smemd over its Unix socket.",
        epilog="exit codes: 0 ok, 1 error reply, 2 bad usage, 3 smemd not running",
    )
    parser.add_argument(
        "--socket",
        type=Path,
        metavar="PATH",
        help="smemd's socket (default: $SMEM_SOCKET or the daemon's default)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the daemon's JSON instead of a table"
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="seconds to wait for a reply"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, summary, arguments) in COMMANDS.items():
        sub = commands.add_parser(name, help=summary, description=summary)
        if arguments is not None:
            arguments(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # argparse exits 2 on bad usage, 0 for --help
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    client = Client(args.socket or default_socket(), timeout=args.timeout)
    command, _, _ = COMMANDS[args.command]
    try:
        command(client, args, sys.stdout)
    except UsageError as err:
        print(f"smemctl {args.command}: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except NotRunning as err:
        print(err, file=sys.stderr)
        return EXIT_NOT_RUNNING
    except CallFailed as err:
        print(err, file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def parse_prometheus(text: str) -> list[dict[str, object]]:
    """Samples of the text format as {name, labels, value}, by prometheus-client's parser."""
    # Here, not at the top: it costs every other command 40 ms of start.
    from prometheus_client.parser import text_string_to_metric_families

    return [
        {"name": sample.name, "labels": dict(sample.labels), "value": sample.value}
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]
