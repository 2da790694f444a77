"""`undo INGEST_ID [-n NS]` and `redo INGEST_ID [-n NS]`: take back everything one add brought
(its documents retracted, with the cascade) and put it back (`POST /ns/{ns}/ingest/{id}/undo`,
`…/redo`). The ingest id is what `ingest` and `import` print, or an add's `Smem-Ingest-Id`."""

from __future__ import annotations

import argparse
from typing import TextIO

from smemctl.client import Client
from smemctl.common import echo, namespace_argument, namespace_path, segment
from smemctl.table import pairs
from smemd.protocol.retraction import IngestUndone


def undo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ingest_id", metavar="INGEST_ID", help="the add's ingest id")
    namespace_argument(parser)


def undo(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    _act(client, args, out, "undo")


def redo(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    _act(client, args, out, "redo")


def _act(client: Client, args: argparse.Namespace, out: TextIO, verb: str) -> None:
    path = f"{namespace_path(args)}/ingest/{segment(args.ingest_id)}/{verb}"
    done, raw = client.post(path, None, IngestUndone)
    if args.json:
        echo(raw, out)
        return
    acted = "retracted" if done.undone else "unretracted"
    rows = [
        ("ingest", done.ingest_id), (f"documents {acted}", len(done.documents)),
        ("memories withdrawn", len(done.withdrawn)), ("reinstated", len(done.reinstated)),
        ("unlinked", len(done.unlinked)),
    ]  # fmt: skip
    print(pairs(rows), file=out)
