"""`ingest` and `remember`: collect files into documents, send them in batches, and with --wait
poll each one until it is done or failed, on a progress line."""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO
from urllib.parse import urlencode

import msgspec

from smemctl.client import CallFailed, Client
from smemctl.common import (
    UsageError,
    iso_instant,
    namespace_argument,
    namespace_path,
    segment,
    some,
)
from smemd.protocol.memory import (
    AddDocument,
    BatchAdd,
    BatchAddResult,
    BatchDocument,
    BatchResult,
    DocumentOut,
    DocumentRef,
    Jobs,
)
from smemd.protocol.retraction import INGEST_HEADER

TEXT_SUFFIXES = frozenset({".md", ".txt", ".markdown", ".rst", ".json", ".csv", ".html"})
BATCH_DOCUMENTS = 100
# Under the daemon's default 10 MB body limit, with room for JSON escapes.
BATCH_BYTES = 4 * 1024 * 1024
MAX_ID = 255  # the daemon's bound on a caller's id: a longer one would fail the whole batch
FINISHED = ("done", "failed")


def ingest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="files, directories, or - for stdin"
    )
    namespace_argument(parser)
    wait_arguments(parser)


def ingest(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    documents, skipped = collect(args.paths, sys.stdin)
    send(client, args, documents, skipped, out)


def send(
    client: Client, args: argparse.Namespace, documents: list[BatchDocument],
    skipped: Counter[str], out: TextIO,
) -> None:  # fmt: skip
    """Add the documents to `args.ns` in batches (waiting with `--wait`) and report how each
    went, and what was skipped."""
    progress = Progress()
    merged = BatchAddResult(results=[], count=0, failed=0)
    # One add, however many batches: `undo` takes it back whole.
    ingest = {INGEST_HEADER: f"ing_{uuid.uuid4().hex[:16]}"}
    for batch in _batches(documents):
        reply, _ = client.post(
            f"{namespace_path(args)}/document/batch", BatchAdd(documents=batch), BatchAddResult,
            ingest,
        )  # fmt: skip
        merged.results += reply.results
        merged.count += reply.count
        merged.failed += reply.failed
        progress.show(f"sent {len(merged.results)}/{len(documents)} documents")
    accepted = [r for r in merged.results if r.status != "error"]
    finished = _wait(client, args, [r.id for r in accepted], progress) if args.wait else {}
    progress.clear()
    for result in accepted:
        if result.id in finished:
            result.status = finished[result.id].system.status or result.status
    if args.json:
        print(msgspec.json.encode(merged).decode(), file=out)
    else:
        statuses = Counter(r.status for r in merged.results)
        counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
        print(f"{some(len(documents), 'document')} to {args.ns}: {counts or 'none'}", file=out)
        if skipped:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
            print(f"skipped {skipped.total()}: {reasons}", file=out)
        if merged.results:
            print(f"ingest {ingest[INGEST_HEADER]} (smemctl undo takes it back)", file=out)
    _report_failures(client, args, merged.results, finished)


def remember_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", metavar="TEXT", help="what to remember")
    namespace_argument(parser)
    parser.add_argument(
        "--date", type=iso_instant, metavar="ISO",
        help="when it was said or happened (its valid time; default: now)",
    )  # fmt: skip
    wait_arguments(parser)


def remember(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body = AddDocument(content=args.text, date=args.date)
    ref, raw = client.post(f"{namespace_path(args)}/document", body, DocumentRef)
    if args.wait:
        progress = Progress()
        doc = _wait(client, args, [ref.id], progress)[ref.id]
        progress.clear()
        ref = DocumentRef(id=ref.id, status="failed" if doc.system.status == "failed" else "done")
        raw = msgspec.json.encode(ref)
    print(raw.decode() if args.json else f"{ref.id} {ref.status}", file=out)
    if ref.status == "failed":
        raise CallFailed(f"document {ref.id} failed: {_job_errors(client, args).get(ref.id, '?')}")


def wait_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait", action="store_true", help="wait until every document is done or failed"
    )
    # Its own dest: smemctl's --timeout, before the command, is for each reply.
    parser.add_argument(
        "--timeout", dest="wait_timeout", type=float, default=300.0, metavar="S",
        help="how long --wait waits (default 300 s)",
    )  # fmt: skip


def collect(arguments: Sequence[str], stdin: TextIO) -> tuple[list[BatchDocument], Counter[str]]:
    """The documents the arguments name, and how many files were skipped for each reason."""
    documents: list[BatchDocument] = []
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    for argument in arguments:
        if argument == "-":
            text = stdin.read()
            if text.strip():
                documents.append(BatchDocument(content=text, metadata={"source": "stdin"}))
            else:
                skipped["empty"] += 1
            continue
        root = Path(argument)
        if root.is_dir():
            found: Iterator[tuple[Path, str]] = _walk(root, skipped)
        elif root.is_file():
            found = iter([(root, root.name)])
        else:
            raise UsageError(f"{argument}: no such file or directory")
        for path, doc_id in found:
            text, why = _read_text(path)
            if why is None and doc_id in seen:
                why = "duplicate id"
            elif why is None and len(doc_id) > MAX_ID:
                why = "id too long"
            if why is not None:
                skipped[why] += 1
                continue
            seen.add(doc_id)
            source = os.path.abspath(path)
            documents.append(BatchDocument(content=text, id=doc_id, metadata={"source": source}))
    return documents, +skipped  # without the reasons counted zero times


def _walk(root: Path, skipped: Counter[str]) -> Iterator[tuple[Path, str]]:
    """Files under root of a text type or none, hidden ones left out, with their path from root."""
    for folder, dirs, files in os.walk(root):
        skipped["hidden"] += sum(d.startswith(".") for d in dirs)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(folder, name)
            if name.startswith("."):
                skipped["hidden"] += 1
            elif path.suffix and path.suffix.lower() not in TEXT_SUFFIXES:
                skipped["not a text type"] += 1
            else:
                yield path, path.relative_to(root).as_posix()


def _read_text(path: Path) -> tuple[str, str | None]:
    """The file's text, or why it is skipped."""
    try:
        data = path.read_bytes()
    except OSError:
        return "", "unreadable"
    if b"\0" in data:
        return "", "binary"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "", "binary"
    return text, None if text.strip() else "empty"


def _batches(documents: list[BatchDocument]) -> Iterator[list[BatchDocument]]:
    batch: list[BatchDocument] = []
    size = 0
    for doc in documents:
        if batch and (len(batch) == BATCH_DOCUMENTS or size + len(doc.content) > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(doc)
        size += len(doc.content)
    if batch:
        yield batch


def _wait(
    client: Client, args: argparse.Namespace, ids: list[str], progress: Progress
) -> dict[str, DocumentOut]:
    """Each document once done or failed. The worker takes jobs oldest first, so each round polls
    in the order sent and stops at the first one still in progress."""
    finished: dict[str, DocumentOut] = {}
    pending = deque(ids)
    deadline = time.monotonic() + args.wait_timeout
    pause = 0.05
    while True:
        while pending:
            doc, _ = client.get(
                f"{namespace_path(args)}/document/{segment(pending[0])}", DocumentOut
            )
            if doc.system.status not in FINISHED:
                break
            finished[pending.popleft()] = doc
        failed = sum(d.system.status == "failed" for d in finished.values())
        progress.show(f"processed {len(finished)}/{len(ids)} documents, {failed} failed")
        if not pending:
            return finished
        if time.monotonic() > deadline:
            progress.clear()
            raise CallFailed(
                f"timed out after {args.wait_timeout:g} s:"
                f" {len(pending)} of {len(ids)} documents still processing"
            )
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


def _report_failures(
    client: Client,
    args: argparse.Namespace,
    results: Sequence[BatchResult],
    finished: dict[str, DocumentOut],
) -> None:
    """Name each rejected or failed document on stderr; any at all is exit 1."""
    rejected = [r for r in results if r.status == "error"]
    failed = [d for d in finished.values() if d.system.status == "failed"]
    for r in rejected:
        details = f": {r.details}" if r.details else ""
        print(f"rejected {r.id or '(stdin)'}: {r.error}{details}", file=sys.stderr)
    reasons = _job_errors(client, args) if failed else {}
    for d in failed:
        print(f"failed {d.custom_id or d.id}: {reasons.get(d.id, '?')}", file=sys.stderr)
    if rejected or failed:
        raise CallFailed(f"{len(rejected) + len(failed)} of {len(results)} documents not ingested")


def _job_errors(client: Client, args: argparse.Namespace) -> dict[str, str]:
    # A document does not carry why it failed; its job does.
    query = urlencode({"namespace": args.ns, "limit": 1000})
    jobs, _ = client.get(f"/v1/jobs?{query}", Jobs)
    errors: dict[str, str] = {}
    for job in reversed(jobs.jobs):  # oldest first, so the latest revision's error wins
        errors[job.document_id] = job.error or "?"
    return errors


class Progress:
    """One status line on stderr, rewritten in place; silent when stderr is not a terminal."""

    def __init__(self) -> None:
        self.is_shown = sys.stderr.isatty()
        self.width = 0

    def show(self, text: str) -> None:
        if self.is_shown:
            sys.stderr.write("\r" + text.ljust(self.width))
            sys.stderr.flush()
            self.width = len(text)

    def clear(self) -> None:
        if self.is_shown and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
            self.width = 0
