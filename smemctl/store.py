"""`store copy --to TARGET`: the configured store, whole, into a new one (smemd.store.moving).
It reads the daemon's config, not its socket: the daemon must be stopped."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TextIO

from smemctl.client import CallFailed, Client
from smemctl.common import UsageError


def store_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_subparsers(dest="what", metavar="copy", required=True)
    copy = what.add_parser(
        "copy",
        help="copy a stopped daemon's store into a new, empty one",
        description="Copy the store smemd's config names, every row, into TARGET; the counts"
        " are checked, and a copy that fails leaves TARGET empty.",
    )
    copy.add_argument(
        "--to", required=True, metavar="TARGET",
        help="postgresql://… (or a libpq dsn) of an empty database, or a new SQLite file's path",
    )  # fmt: skip
    copy.add_argument(
        "--config", type=Path, default=None, metavar="FILE",
        help="smemd's config, naming the source store (default: smemd's, as smemd reads it)",
    )  # fmt: skip


def store(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    # Here, not above: every other command keeps smemctl's start light (no store, no driver).
    from smemd.config import ConfigError, load
    from smemd.errors import SmemError
    from smemd.lock import AlreadyRunning
    from smemd.store.moving import copy_to, target_kind
    from smemd.store.refusal import StoreRefused

    try:
        config = load(args.config)  # None: smemd's default file, if there is one
    except ConfigError as err:
        raise UsageError(f"bad config: {err}") from err
    chosen = config.store
    try:
        copied = asyncio.run(copy_to(chosen.kind, config.state_dir, chosen.dsn, args.to))
    except (AlreadyRunning, StoreRefused, FileExistsError, SmemError, OSError) as err:
        detail = f": {err.details}" if isinstance(err, SmemError) and err.details else ""
        raise CallFailed(f"smemctl store copy: {err}{detail}") from err
    total = sum(copied.rows.values())
    print(
        f"copied {total} rows from the {chosen.kind} store into a {target_kind(args.to)} one:",
        file=out,
    )
    for table, rows in copied.rows.items():
        print(f"  {table:<16} {rows}", file=out)
