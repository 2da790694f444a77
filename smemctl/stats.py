"""The daemon's books: `stats` (documents, memories and jobs per namespace) and `jobs`."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import TextIO
from urllib.parse import urlencode

import msgspec

from smemctl.client import Client
from smemctl.common import echo, fitted, namespace_argument, namespace_path, some, when
from smemctl.table import pairs, table
from smemd.protocol.memory import Jobs, NamespaceDetails, NamespaceList, NamespaceOut


def stats_arguments(parser: argparse.ArgumentParser) -> None:
    namespace_argument(parser, default=None, help="one namespace (default: all)")


def stats(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.ns is None:
        _all_stats(client, args, out)
        return
    # A namespace that does not exist is the daemon's 404, exit 1.
    ns, _ = client.get(namespace_path(args), NamespaceDetails)
    counts = _job_counts(client, args.ns)
    if args.json:
        print(msgspec.json.encode({"namespace": ns, "jobs": counts}).decode(), file=out)
        return
    rows = [
        ("namespace", ns.namespace),
        ("documents", ns.document_count),
        ("memories", ns.memory_count),
        ("created", when(ns.system.created_at)),
        ("jobs", _counts(counts)),
    ]
    print(pairs(rows), file=out)


def _all_stats(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    namespaces = list(_namespaces(client))
    counts = _job_counts(client, None)
    if args.json:
        body = {"namespaces": namespaces, "jobs": counts}
        print(msgspec.json.encode(body).decode(), file=out)
        return
    rows = [
        (ns.namespace, ns.document_count, ns.memory_count, when(ns.system.created_at))
        for ns in namespaces
    ]
    if rows:
        print(table(rows, header=("namespace", "documents", "memories", "created")), file=out)
    print(f"{some(len(rows), 'namespace')}; jobs: {_counts(counts)}", file=out)


def _namespaces(client: Client) -> Iterator[NamespaceOut]:
    page = 1
    while True:
        query = urlencode({"limit": 100, "page": page})
        reply, _ = client.get(f"/ns?{query}", NamespaceList)
        yield from reply.namespaces
        if page >= reply.pagination.total_pages:
            return
        page += 1


def _job_counts(client: Client, namespace: str | None) -> dict[str, int]:
    """Jobs in each phase, in one namespace or all; the reply's one job is not needed."""
    query: dict[str, object] = {"limit": 1}
    if namespace is not None:
        query["namespace"] = namespace
    jobs, _ = client.get(f"/v1/jobs?{urlencode(query)}", Jobs)
    return jobs.counts


def jobs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="the N most recent")


def jobs(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    reply, raw = client.get(f"/v1/jobs?{urlencode({'limit': args.limit})}", Jobs)
    if args.json:
        echo(raw, out)
        return
    rows = [
        (j.id, j.namespace, j.document_id, j.phase, j.attempts, when(j.updated_at), j.error or "")
        for j in reply.jobs
    ]
    header = ("id", "namespace", "document", "phase", "attempts", "updated", "error")
    if rows:
        print(fitted(rows, header, 6, out), file=out)
    print(f"jobs: {_counts(reply.counts)}", file=out)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{phase} {n}" for phase, n in sorted(counts.items())) or "none"
