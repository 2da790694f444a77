"""`smemd`: parse flags, load the config, run the daemon. Exit 0 clean, 1 failed, 2 bad config."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from smemd import __version__, limit_blas_threads, log
from smemd.config import DEFAULT_CONFIG_FILE, Config, ConfigError, load, render_config

EXIT_OK, EXIT_FAILED, EXIT_BAD_CONFIG = 0, 1, 2
STUCK_THREADS_S = 2.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="smemd", description="The smem memory daemon.")
    parser.add_argument(
        "--config",
        type=Path,
        metavar="PATH",
        help=f"TOML config file (default: {DEFAULT_CONFIG_FILE} when it exists)",
    )
    parser.add_argument(
        "--state-dir", metavar="DIR", help="overrides [paths] state-dir and $SMEM_STATE_DIR"
    )
    parser.add_argument(
        "--socket", metavar="PATH", help="overrides [paths] socket and $SMEM_SOCKET"
    )
    parser.add_argument(
        "--listen", metavar="HOST:PORT", help="overrides [api] listen; port 0 picks one"
    )
    parser.add_argument("--log-level", metavar="LEVEL", help="overrides [daemon] log-level")
    parser.add_argument(
        "--log-format", metavar="FORMAT", help="overrides [daemon] log-format: text or json"
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check-config", action="store_true", help="validate the config and exit")
    action.add_argument(
        "--print-config", action="store_true", help="print the effective config as TOML"
    )
    action.add_argument(
        "--restore", type=Path, metavar="BACKUP",
        help="put a backup (smemctl backup) in the state dir, then exit; the daemon is stopped",
    )  # fmt: skip
    parser.add_argument(
        "--replace", action="store_true",
        help="with --restore: in place of the store the state dir holds",
    )  # fmt: skip
    parser.add_argument("--version", action="version", version=f"smemd {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.replace and args.restore is None:
        parser.error("--replace goes with --restore")
    flags: dict[tuple[str, str], Any] = {
        ("paths", "state-dir"): args.state_dir,
        ("paths", "socket"): args.socket,
        ("api", "listen"): args.listen,
        ("daemon", "log-level"): args.log_level,
        ("daemon", "log-format"): args.log_format,
    }
    try:
        config = load(args.config, overrides={k: v for k, v in flags.items() if v is not None})
    except ConfigError as err:
        print(f"smemd: bad config: {err}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    if args.check_config:
        print("config ok")
        return EXIT_OK
    if args.print_config:
        sys.stdout.write(render_config(config))
        return EXIT_OK
    if args.restore is not None:
        return _restore(config, args.restore, replace=args.replace)
    log.setup(config.daemon.log_level, config.daemon.log_format)
    limit_blas_threads()
    from smemd.daemon import Daemon  # numpy comes with it: after the thread limit

    try:
        code = asyncio.run(Daemon(config).serve())
    except KeyboardInterrupt:  # before the signal handlers were installed
        return EXIT_FAILED
    return _exit_past_stuck_threads(code)


def _restore(config: Config, backup: Path, *, replace: bool) -> int:
    from smemd.backup.restoring import BackupRefused, restore
    from smemd.lock import AlreadyRunning

    if config.store.kind != "sqlite":
        print(
            f"smemd: the config's store is {config.store.kind}: a backup restores a SQLite"
            " store (a PostgreSQL one is restored by its server)",
            file=sys.stderr,
        )
        return EXIT_BAD_CONFIG
    try:
        manifest = restore(backup, config.state_dir, replace=replace)
    except (BackupRefused, AlreadyRunning) as err:
        print(f"smemd: cannot restore: {err}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    except OSError as err:
        print(f"smemd: cannot restore: {err}", file=sys.stderr)
        return EXIT_FAILED
    namespaces = len(manifest.namespaces)
    print(
        f"restored the backup of {manifest.created_at} ({namespaces} namespaces) into"
        f" {config.state_dir}"
    )
    return EXIT_OK


def _exit_past_stuck_threads(code: int) -> int:
    """The stop is done; a thread still in a call that never returns (the store's, on a failing
    disk) or takes long (a model batch, a graph build) would keep the process alive, since
    Python waits for such threads at exit: they get STUCK_THREADS_S together."""
    stuck = [t for t in threading.enumerate() if t.is_alive() and not t.daemon]
    stuck = [t for t in stuck if t is not threading.main_thread()]
    until = time.monotonic() + STUCK_THREADS_S
    for thread in stuck:
        thread.join(timeout=max(0.0, until - time.monotonic()))
    if any(t.is_alive() for t in stuck):
        log.daemon.error("threads still busy after the stop; exiting without them")
        logging.shutdown()
        os._exit(code)
    return code
