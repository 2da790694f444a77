"""The memory commands: ingest and remember, search, list, history, forget, restore, profile,
stats and jobs, each a thin caller of one of smemd's v5 routes (`smemd/api/`)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO, TypeVar
from urllib.parse import quote, urlencode

import msgspec

from smemctl.client import CallFailed, Client
from smemctl.table import pairs, table
from smemd.protocol.memory import (
    AddDocument,
    BatchAdd,
    BatchAddResult,
    BatchDocument,
    BatchResult,
    DocumentOut,
    DocumentRef,
    ForgetIds,
    ForgetQuery,
    ForgetResult,
    History,
    Jobs,
    ListBody,
    ListInclude,
    ListResponse,
    MemoryOut,
    NamespaceList,
    NamespaceOut,
    ProfileResponse,
    Search,
    SearchResponse,
)

T = TypeVar("T")

TEXT_SUFFIXES = frozenset({".md", ".txt", ".markdown", ".rst", ".json", ".csv", ".html"})
BATCH_DOCUMENTS = 100
# Under the daemon's default 10 MB body limit, with room for JSON escapes.
BATCH_BYTES = 4 * 1024 * 1024
MAX_ID = 255  # the daemon's bound on a caller's id: a longer one would fail the whole batch
FINISHED = ("done", "failed")


class UsageError(Exception):
    """Bad usage found after parsing: exit 2, like argparse's own errors."""


# --- ingest and remember ----------------------------------------------------------------------


def ingest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="files, directories, or - for stdin"
    )
    _namespace_argument(parser)
    _wait_arguments(parser)


def ingest(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    documents, skipped = collect(args.paths, sys.stdin)
    progress = Progress()
    merged = BatchAddResult(results=[], count=0, failed=0)
    for batch in _batches(documents):
        reply, _ = client.post(
            f"{_ns(args)}/document/batch", BatchAdd(documents=batch), BatchAddResult
        )
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
        print(f"{_some(len(documents), 'document')} to {args.ns}: {counts or 'none'}", file=out)
        if skipped:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
            print(f"skipped {skipped.total()}: {reasons}", file=out)
    _report_failures(client, args, merged.results, finished)


def remember_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", metavar="TEXT", help="what to remember")
    _namespace_argument(parser)
    _wait_arguments(parser)


def remember(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    ref, raw = client.post(f"{_ns(args)}/document", AddDocument(content=args.text), DocumentRef)
    if args.wait:
        progress = Progress()
        doc = _wait(client, args, [ref.id], progress)[ref.id]
        progress.clear()
        ref = DocumentRef(id=ref.id, status="failed" if doc.system.status == "failed" else "done")
        raw = msgspec.json.encode(ref)
    print(raw.decode() if args.json else f"{ref.id} {ref.status}", file=out)
    if ref.status == "failed":
        raise CallFailed(f"document {ref.id} failed: {_job_errors(client, args).get(ref.id, '?')}")


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
            doc, _ = client.get(f"{_ns(args)}/document/{_segment(pending[0])}", DocumentOut)
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


# --- recall -----------------------------------------------------------------------------------


def search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", metavar="QUERY")
    _namespace_argument(parser)
    parser.add_argument("--limit", type=int, default=10, metavar="N", help="at most N results")
    parser.add_argument("--mode", choices=("hybrid", "memories", "chunks"), default="hybrid")
    parser.add_argument("--as-of", type=_iso, metavar="ISO", help="recall as it was at this time")
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
    )
    reply, raw = client.post(f"{_ns(args)}/search", body, SearchResponse)
    if args.json:
        _raw(raw, out)
        return
    rows = [
        (rank, f"{r.similarity:.3f}", "chunk" if r.memory is None else "memory",
         r.memory or r.chunk or "", r.id)
        for rank, r in enumerate(reply.results, 1)
    ]  # fmt: skip
    header = ("rank", "similarity", "kind", "text", "id")
    print(_fitted(rows, header, 3, out) if rows else "no results", file=out)


def profile_arguments(parser: argparse.ArgumentParser) -> None:
    _namespace_argument(parser)


def profile(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.post(f"{_ns(args)}/profile", {}, ProfileResponse)
    if args.json:
        _raw(raw, out)
        return
    for name, facts in (("static", reply.profile.static), ("dynamic", reply.profile.dynamic)):
        print(f"{name}:", file=out)
        rows = [(f.id, f.memory) for f in facts]
        print(_fitted(rows, ("id", "text"), 1, out) if rows else "(none)", file=out)


# --- memories ---------------------------------------------------------------------------------


def list_arguments(parser: argparse.ArgumentParser) -> None:
    _namespace_argument(parser)
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
    reply, raw = client.post(f"{_ns(args)}/list/memories?{query}", body, ListResponse)
    if args.json:
        _raw(raw, out)
        return
    rows = [
        (m.id, m.version, _yes(m.is_latest), _yes(m.is_forgotten), m.type,
         _when(m.system.created_at), m.memory)
        for m in reply.memories
    ]  # fmt: skip
    header = ("id", "version", "latest", "forgotten", "type", "created", "text")
    if rows:
        print(_fitted(rows, header, 6, out), file=out)
    p = reply.pagination
    print(f"page {p.current_page} of {p.total_pages}, {_some(p.total_items, 'memory')}", file=out)


def history_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", help="any version's id")
    _namespace_argument(parser)


def history(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get(f"{_ns(args)}/memories/{_segment(args.id)}/history", History)
    if args.json:
        _raw(raw, out)
        return
    rows = [
        (m.version, m.id, _yes(m.is_latest), _when(m.valid_until), _when(m.forgotten_at),
         m.type, _when(m.system.created_at), m.memory)
        for m in reply.memories
    ]  # fmt: skip
    header = ("version", "id", "latest", "valid until", "forgotten", "type", "created", "text")
    print(_fitted(rows, header, 7, out), file=out)


def forget_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("query", nargs="?", metavar="QUERY", help="forget what this query finds")
    which.add_argument(
        "--id", dest="ids", action="append", metavar="ID", help="forget this memory (repeatable)"
    )
    _namespace_argument(parser)
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
    reply, raw = _send(client, "DELETE", f"{_ns(args)}/memories/semantic", body, ForgetResult)
    if args.json:
        _raw(raw, out)
        return
    if not reply.matches:
        print(f"no memory matches {args.query!r} (threshold {body.threshold:g})", file=out)
        return
    verb = "forgot" if args.yes else "would forget"
    print(f"{verb} {_some(len(reply.matches), 'memory')}:", file=out)
    print(_fitted([(m.id, m.memory) for m in reply.matches], ("id", "text"), 1, out), file=out)
    if not args.yes:
        print("nothing forgotten yet: add --yes to forget these", file=out)


def _forget_ids(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body = ForgetIds(ids=args.ids, reason=args.reason)
    reply, raw = _send(client, "DELETE", f"{_ns(args)}/memories", body, ForgetResult)
    if args.json:
        _raw(raw, out)
    else:
        print(f"forgot {_some(reply.count, 'memory')}", file=out)
    for error in reply.errors:
        print(f"{error.id}: {error.error}", file=sys.stderr)
    if reply.errors:
        raise CallFailed(f"{len(reply.errors)} of {len(args.ids)} memories not forgotten")


def restore_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID")
    _namespace_argument(parser)


def restore(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    path = f"{_ns(args)}/memories/{_segment(args.id)}/restore"
    memory, raw = client.post(path, None, MemoryOut)
    if args.json:
        _raw(raw, out)
        return
    latest = "" if memory.is_latest else ", not the latest version"
    print(f"restored {memory.id} (version {memory.version}{latest}): {memory.memory}", file=out)


# --- the daemon's books -----------------------------------------------------------------------


def stats_arguments(parser: argparse.ArgumentParser) -> None:
    _namespace_argument(parser, default=None, help="one namespace (default: all)")


def stats(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.ns is None:
        _all_stats(client, args, out)
        return
    ns = _namespace(client, args.ns)
    query = urlencode({"namespace": args.ns, "limit": 1000})
    jobs, _ = client.get(f"/v1/jobs?{query}", Jobs)
    # The reply's counts are over every namespace; these are this one's (its last 1000 jobs).
    counts = dict(Counter(job.phase for job in jobs.jobs))
    if args.json:
        print(msgspec.json.encode({"namespace": ns, "jobs": counts}).decode(), file=out)
        return
    rows = [
        ("namespace", ns.namespace),
        ("documents", ns.document_count),
        ("memories", ns.memory_count),
        ("created", _when(ns.system.created_at)),
        ("jobs", _counts(counts)),
    ]
    print(pairs(rows), file=out)


def _all_stats(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    namespaces = list(_namespaces(client, ""))
    jobs, _ = client.get("/v1/jobs?limit=1", Jobs)
    if args.json:
        body = {"namespaces": namespaces, "jobs": jobs.counts}
        print(msgspec.json.encode(body).decode(), file=out)
        return
    rows = [
        (ns.namespace, ns.document_count, ns.memory_count, _when(ns.system.created_at))
        for ns in namespaces
    ]
    if rows:
        print(table(rows, header=("namespace", "documents", "memories", "created")), file=out)
    print(f"{_some(len(rows), 'namespace')}; jobs: {_counts(jobs.counts)}", file=out)


def _namespace(client: Client, name: str) -> NamespaceOut:
    # `?q=` matches names containing it, so the exact one is picked out.
    for ns in _namespaces(client, name):
        if ns.namespace == name:
            return ns
    raise CallFailed(f"no namespace {name!r}")


def _namespaces(client: Client, contains: str) -> Iterator[NamespaceOut]:
    page = 1
    while True:
        query = urlencode({"q": contains, "limit": 100, "page": page})
        reply, _ = client.get(f"/ns?{query}", NamespaceList)
        yield from reply.namespaces
        if page >= reply.pagination.total_pages:
            return
        page += 1


def jobs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="the N most recent")


def jobs(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get(f"/v1/jobs?{urlencode({'limit': args.limit})}", Jobs)
    if args.json:
        _raw(raw, out)
        return
    rows = [
        (j.id, j.namespace, j.document_id, j.phase, j.attempts, _when(j.updated_at), j.error or "")
        for j in reply.jobs
    ]
    header = ("id", "namespace", "document", "phase", "attempts", "updated", "error")
    if rows:
        print(_fitted(rows, header, 6, out), file=out)
    print(f"jobs: {_counts(reply.counts)}", file=out)


# --- helpers ----------------------------------------------------------------------------------


def _namespace_argument(
    parser: argparse.ArgumentParser, default: str | None = "default", help: str | None = None
) -> None:
    parser.add_argument(
        "-n",
        "--ns",
        default=default,
        metavar="NAMESPACE",
        help=help or "the namespace (default: default)",
    )


def _wait_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait", action="store_true", help="wait until every document is done or failed"
    )
    # Its own dest: smemctl's --timeout, before the command, is for each reply.
    parser.add_argument(
        "--timeout", dest="wait_timeout", type=float, default=300.0, metavar="S",
        help="how long --wait waits (default 300 s)",
    )  # fmt: skip


def _ns(args: argparse.Namespace) -> str:
    return f"/ns/{_segment(args.ns)}"


def _segment(text: str) -> str:
    """One URL path segment: ids made from file paths keep their slashes."""
    return quote(text, safe="")


def _send(client: Client, method: str, path: str, body: Any, type_: type[T]) -> tuple[T, bytes]:
    raw = client.call(method, path, body)
    return msgspec.json.decode(raw, type=type_), raw


def _fitted(
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


def _when(iso: str | None) -> str:
    """An API time (ISO-8601 UTC) to the second, for a table."""
    return iso[:19].replace("T", " ") if iso else "-"


def _some(n: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun if n == 1 else plural}"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{phase} {n}" for phase, n in sorted(counts.items())) or "none"


def _iso(text: str) -> str:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None
    return text


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in 0..1, got {text!r}")
    return value


def _raw(raw: bytes, out: TextIO) -> None:
    out.write(raw.decode())
    out.write("\n")
