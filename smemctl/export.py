"""`export [-n NS] [FILE|-]`: the namespace as JSON Lines (smemd.protocol.exports), from
`GET /ns/{ns}/export`, to FILE (gzip'd when it ends in .gz, or with --gzip) or to stdout. A
gzip'd export is the daemon's gzip'd body, kept as it came.

The body is checked as it passes: an export whose last line is not the trailer was cut off,
and is an error (exit 1); a FILE is written beside itself and renamed only once it is whole,
so a FILE that exists is a whole export."""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import sys
import zlib
from pathlib import Path
from typing import BinaryIO, TextIO

import msgspec

from smemctl.client import CallFailed, Client
from smemctl.common import echo, namespace_argument, namespace_path
from smemctl.table import pairs
from smemd.protocol.exports import Trailer

EXPORT_WAIT_S = 3600.0  # between two blocks of a large export, at most
GZIP_WBITS = 31


def export_arguments(parser: argparse.ArgumentParser) -> None:
    namespace_argument(parser)
    parser.add_argument(
        "file", nargs="?", default="-", metavar="FILE",
        help="where to write it (default -, stdout); a name ending in .gz is gzip'd",
    )  # fmt: skip
    parser.add_argument("--gzip", action="store_true", help="gzip it (also on stdout)")


class TailKeeper:
    """Writes the body on (gzip'd when `packed`, whichever way it came) and keeps its last line."""

    def __init__(self, into: BinaryIO, packed: bool, came_packed: bool) -> None:
        self.into = into
        self.unpacker = zlib.decompressobj(wbits=GZIP_WBITS) if came_packed else None
        self.packer = zlib.compressobj(wbits=GZIP_WBITS) if packed and not came_packed else None
        self.keep_as_came = packed and came_packed
        self.tail = b""
        self.written = 0

    def write(self, block: bytes) -> int:
        text = self.unpacker.decompress(block) if self.unpacker else block
        out = self.packer.compress(text) if self.packer else (block if self.keep_as_came else text)
        self.into.write(out)
        self.written += len(out)
        self.tail = (self.tail + text)[-(1 << 20) :]  # a trailer is far shorter than this
        return len(block)

    def close(self) -> None:
        if self.packer:
            out = self.packer.flush()
            self.into.write(out)
            self.written += len(out)

    def trailer(self) -> Trailer | None:
        lines = self.tail.rstrip(b"\n").rsplit(b"\n", 1)
        try:
            return msgspec.json.decode(lines[-1], type=Trailer)
        except msgspec.MsgspecError:
            return None


def export(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    packed = args.gzip or args.file.endswith(".gz")
    waiting = client.waiting(EXPORT_WAIT_S)
    path = namespace_path(args) + "/export"
    to_stdout = args.file == "-"
    target = Path(args.file)
    partial = target.with_name(target.name + ".partial")
    with contextlib.ExitStack() as stack:
        if to_stdout:
            sink: BinaryIO = sys.stdout.buffer
        else:
            try:
                sink = stack.enter_context(partial.open("wb"))
            except OSError as err:
                raise CallFailed(f"cannot write {target}: {err.strerror or err}") from None
            stack.callback(partial.unlink, missing_ok=True)  # gone unless renamed below
        keepers: list[TailKeeper] = []

        def keeper(response: http.client.HTTPResponse) -> TailKeeper:
            came_packed = response.getheader("Content-Encoding", "") == "gzip"
            keepers.append(TailKeeper(sink, packed, came_packed))
            return keepers[0]

        waiting.download(path, keeper, gzip=packed)
        keepers[0].close()
        size = keepers[0].written
        trailer = keepers[0].trailer()
        if trailer is None:
            raise CallFailed("the export was cut off (its last line is not the trailer)")
        if not to_stdout:
            sink.flush()
            os.fsync(sink.fileno())
            os.replace(partial, target)
    records = sum(trailer.records.values())
    report = out if not to_stdout else sys.stderr
    if args.json:
        echo(msgspec.json.encode(trailer), report)
        return
    rows = [("namespace", args.ns), ("to", args.file), ("records", records), ("bytes", size)]
    # By kind; the namespace record, always one, is the first row.
    rows += [(k, n) for k, n in trailer.records.items() if n and k != "namespace"]
    print(pairs(rows), file=report)
