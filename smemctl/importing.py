"""`import FILE [-n NS] [--merge skip|replace] [--from mem0|texts]`: an export
(smemd.protocol.exports) put back into an empty namespace through `POST /ns/{ns}/import`, the file
streamed as it is (gzip'd or not; `-` is stdin). The namespace is the one `-n`/`--as` names, or
else the one the export's header names; `--merge` imports into one with data, saying what a
record whose id it holds does.

smemd checks the whole file before it writes anything: a bad line is an error naming the line
(exit 1) and the namespace is left as it was. `--from` reads memories kept elsewhere instead
(smemctl.foreign)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import zlib
from collections import Counter
from pathlib import Path
from typing import BinaryIO, TextIO

import msgspec

from smemctl import foreign
from smemctl.client import CallFailed, Client
from smemctl.common import echo, segment
from smemctl.ingest import send, wait_arguments
from smemctl.table import pairs
from smemd.protocol.exports import Header, Imported

IMPORT_WAIT_S = 3600.0  # for the reply: the daemon embeds every text before it answers


def import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", metavar="FILE", help="an export (.jsonl or .jsonl.gz), or - for stdin"
    )
    parser.add_argument(
        "-n", "--ns", "--as", dest="ns", default=None, metavar="NAMESPACE",
        help="the namespace to import into (default: the one the export names; `default` --from"
        " elsewhere)",
    )  # fmt: skip
    parser.add_argument(
        "--merge", choices=("skip", "replace"), default=None,
        help="into a namespace with data: a record whose id it holds is skipped, or replaces"
        " the one it holds (an smem export only)",
    )  # fmt: skip
    parser.add_argument(
        "--from", dest="source", choices=foreign.FORMATS, default=None,
        help="not an smem export: Mem0's get_all JSON, or JSON Lines of texts; each becomes a"
        " document, read afresh",
    )  # fmt: skip
    wait_arguments(parser)


def import_export(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.source is not None:
        if args.merge:
            raise CallFailed("--merge is for an smem export: --from adds documents, as any add")
        _import_foreign(client, args, out)
        return
    waiting = client.waiting(IMPORT_WAIT_S)
    with contextlib.ExitStack() as stack:
        if args.file == "-":
            source: BinaryIO = sys.stdin.buffer
            size = None
        else:
            try:
                source = stack.enter_context(Path(args.file).open("rb"))
            except OSError as err:
                raise CallFailed(f"cannot read {args.file}: {err.strerror or err}") from None
            size = os.fstat(source.fileno()).st_size
        first = source.peek(1 << 16) if isinstance(source, io.BufferedReader) else b""
        namespace = args.ns or _named(first)
        query = f"?merge={args.merge}" if args.merge else ""
        raw = waiting.upload(
            f"/ns/{segment(namespace)}/import{query}", source, "application/x-ndjson", size
        )
    imported = msgspec.json.decode(raw, type=Imported)
    if args.json:
        echo(raw, out)
        return
    rows = [("namespace", imported.namespace), ("from", args.file)]
    rows += [("records", sum(imported.records.values()))]
    # By kind; the namespace record, always one, is the first row.
    rows += [(k, n) for k, n in imported.records.items() if n and k != "namespace"]
    if imported.merge:
        rows.append((f"held ({imported.merge})", sum(imported.held.values())))
    if imported.requeued:
        rows.append(("queued again", imported.requeued))
    if imported.ingest_id:
        rows.append(("ingest", imported.ingest_id))
    print(pairs(rows), file=out)


def _import_foreign(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as err:
        raise CallFailed(f"cannot read {args.file}: {err.strerror or err}") from None
    args.ns = args.ns or "default"
    send(client, args, foreign.documents(args.source, data), Counter(), out)


def _named(start: bytes) -> str:
    """The namespace the export's header names (the file's first line, gzip'd or not)."""
    if start.startswith(b"\x1f\x8b"):
        start = zlib.decompressobj(wbits=31).decompress(start, 1 << 20)
    try:
        header = msgspec.json.decode(start.split(b"\n", 1)[0], type=Header)
    except (msgspec.MsgspecError, zlib.error):
        raise CallFailed(
            "the first line is not an smem export's header; name the namespace with -n"
        ) from None
    return header.namespace
