"""What the memory commands share: the namespace argument and its URL, and output for humans."""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Sequence
from datetime import datetime
from typing import TextIO
from urllib.parse import quote

from smemctl.table import table


class UsageError(Exception):
    """Bad usage found after parsing: exit 2, like argparse's own errors."""


def namespace_argument(
    parser: argparse.ArgumentParser, default: str | None = "default", help: str | None = None
) -> None:
    parser.add_argument(
        "-n",
        "--ns",
        default=default,
        metavar="NAMESPACE",
        help=help or "the namespace (default: default)",
    )


def namespace_path(args: argparse.Namespace) -> str:
    return f"/ns/{segment(args.ns)}"


def segment(text: str) -> str:
    """One URL path segment: ids made from file paths keep their slashes."""
    return quote(text, safe="")


def echo(raw: bytes, out: TextIO) -> None:
    """The daemon's reply as it came, for --json."""
    out.write(raw.decode())
    out.write("\n")


def fitted(
    rows: Sequence[Sequence[object]], header: Sequence[str], text_column: int, out: TextIO
) -> str:
    """A table with its text column on one line, cut to fit the terminal (uncut into a pipe)."""
    cells = [[str(c) for c in row] for row in rows]
    for row in cells:
        row[text_column] = " ".join(row[text_column].split())
    columns = _columns(out)
    if columns is None:
        return table(cells, header)
    others = sum(
        max(len(header[i]), *(len(row[i]) for row in cells))
        for i in range(len(header))
        if i != text_column
    )
    room = max(20, columns - others - 2 * (len(header) - 1))
    for row in cells:
        if len(row[text_column]) > room:
            row[text_column] = row[text_column][: room - 1] + "…"
    return table(cells, header)


def _columns(out: TextIO) -> int | None:
    """The terminal's width: $COLUMNS, else the terminal's own when `out` is one."""
    if "COLUMNS" in os.environ or out.isatty():
        return shutil.get_terminal_size().columns
    return None


def iso_instant(text: str) -> str:
    """An argument that must be an ISO-8601 time; the daemon checks its range."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None
    return text


def when(iso: str | None) -> str:
    """An API time (ISO-8601 UTC) to the second, for a table."""
    return iso[:19].replace("T", " ") if iso else "-"


def some(n: int, noun: str) -> str:
    """`1 memory`, `2 memories`."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun if n == 1 else plural}"
