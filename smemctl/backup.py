"""`backup DEST`: the daemon backs its store up into DEST, a new directory on its host, while it
serves (smemd.backup); `smemd --restore DEST` puts it back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from smemctl.client import Client
from smemctl.common import echo
from smemctl.table import pairs
from smemd.protocol.backups import BackupReply, BackupRequest

BACKUP_WAIT_S = 3600.0  # a large store takes minutes: the default reply wait is too short


def backup_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dest", type=Path, metavar="DEST",
        help="a directory that does not exist yet, written by the daemon (so on its host)",
    )  # fmt: skip


def backup(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    waiting = client.waiting(BACKUP_WAIT_S)
    body = BackupRequest(to=str(args.dest.expanduser().absolute()))
    done, raw = waiting.post("/v1/backup", body, BackupReply)
    if args.json:
        echo(raw, out)
        return
    manifest = done.manifest
    rows = [
        ("backup", done.path),
        ("taken at", manifest.created_at),
        ("namespaces", len(manifest.namespaces)),
        ("documents", sum(n.documents for n in manifest.namespaces.values())),
        ("memories", sum(n.memories for n in manifest.namespaces.values())),
        ("files", len(manifest.files)),
        ("bytes", done.bytes),
        ("seconds", f"{done.seconds:.1f}"),
    ]
    print(pairs(rows), file=out)
