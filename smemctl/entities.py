"""`entities` (the namespace's entities, or `entities suggestions|decisions|merge|split`) and
`entity NAME` (one entity's story: current facts, history, who is named with it)."""

from __future__ import annotations

import argparse
from typing import TextIO
from urllib.parse import urlencode

from smemctl.client import Client
from smemctl.common import echo, namespace_argument, namespace_path, segment, some, when
from smemctl.table import table
from smemd.protocol.entities import (
    AliasDecisions,
    Entities,
    EntityOut,
    EntityProfile,
    Merge,
    Merged,
    Split,
    SplitDone,
    Suggestions,
)  # fmt: skip


def entities_arguments(parser: argparse.ArgumentParser) -> None:
    namespace_argument(parser)
    parser.add_argument("-q", "--query", default=None, help="a part of a name or alias")
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="per page (1..100)")
    parser.add_argument("--page", type=int, default=1, metavar="P")
    what = parser.add_subparsers(dest="what", metavar="suggestions|decisions|merge|split")
    what.add_parser("suggestions", help="names that may be one entity, best first")
    what.add_parser("decisions", help="merges and splits made, by a person or the judge")
    merge = what.add_parser(
        "merge", help="merge NAME… into KEEP (recorded; split undoes it)",
        description="Merge each NAME into KEEP: their memories are KEEP's from then on.",
    )  # fmt: skip
    merge.add_argument("keep", metavar="KEEP", help="the entity kept: an id, name or alias")
    merge.add_argument("names", metavar="NAME", nargs="+")
    split = what.add_parser("split", help="make a merged NAME an entity of its own again")
    split.add_argument("name", metavar="NAME")
    for sub in (merge, split):
        namespace_argument(sub, argparse.SUPPRESS)  # `entities -n NS merge …` keeps NS


def entities(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    base = f"{namespace_path(args)}/entities"
    if args.what == "merge":
        merged, raw = client.post(f"{base}/merge", Merge(into=args.keep, names=args.names), Merged)
        if not _json(args, raw, out):
            e = merged.entity
            print(f"merged into {e.name} ({e.id}): aliases {', '.join(e.aliases)};"
                  f" {some(e.memories, 'memory')}", file=out)  # fmt: skip
        return
    if args.what == "split":
        split, raw = client.post(f"{base}/split", Split(name=args.name), SplitDone)
        if not _json(args, raw, out):
            parts = "; ".join(f"{e.name} ({some(e.memories, 'memory')})" for e in split.entities)
            print(f"split: {parts}", file=out)
        return
    if args.what == "suggestions":
        found, raw = client.get(f"{base}/suggestions?limit={args.limit}", Suggestions)
        if not _json(args, raw, out):
            rows: list[tuple[str, ...]] = [
                (s.alias.name, s.keep.name, f"{s.score:.2f}", f"{s.name_score:.2f}",
                 "-" if s.context_score is None else f"{s.context_score:.2f}")
                for s in found.suggestions
            ]  # fmt: skip
            print(table(rows, ("name", "may be", "score", "names", "context")), file=out)
            if rows:
                print("merge: smemctl entities merge KEEP NAME [-n NAMESPACE]", file=out)
        return
    query = urlencode({"page": args.page, "limit": args.limit})
    if args.what == "decisions":
        decided, raw = client.get(f"{base}/decisions?{query}", AliasDecisions)
        if not _json(args, raw, out):
            made = [
                (when(d.created_at), d.alias.name, "same as" if d.same else "not", d.entity.name,
                 d.by, "-" if d.probability is None else f"{d.probability:.2f}",
                 "undone" if d.undone_at else "")
                for d in decided.decisions
            ]  # fmt: skip
            print(table(made, ("when", "name", "", "entity", "by", "p", "")), file=out)
        return
    if args.query:
        query += "&" + urlencode({"q": args.query})
    listed, raw = client.get(f"{base}?{query}", Entities)
    if not _json(args, raw, out):
        rows = [(e.name, e.kind, str(e.memories), ", ".join(e.aliases)) for e in listed.entities]
        print(table(rows, ("name", "kind", "memories", "aliases")), file=out)
        p = listed.pagination
        print(f"page {p.current_page} of {max(p.total_pages, 1)}, {some(p.total_items, 'entity')}",
              file=out)  # fmt: skip


def entity_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="an id, name or alias (any case)")
    namespace_argument(parser)


def entity(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    profile, raw = client.get(
        f"{namespace_path(args)}/entities/{segment(args.name)}", EntityProfile
    )
    if _json(args, raw, out):
        return
    print(_head(profile.entity), file=out)
    for title, memories in (("now", profile.current), ("before", profile.history)):
        if memories:
            print(f"\n{title}:", file=out)
            rows: list[tuple[str, ...]] = [
                (m.id, when(m.valid_from), when(m.valid_until) if m.valid_until else "",
                 " ".join(m.memory.split()))
                for m in memories
            ]  # fmt: skip
            print(table(rows, ("id", "from", "until", "text")), file=out)
    if profile.related:
        named = ", ".join(f"{e.name} ({e.memories})" for e in profile.related)
        print(f"\nnamed with: {named}", file=out)


def _head(e: EntityOut) -> str:
    also = f", also {', '.join(e.aliases)}" if e.aliases else ""
    return (
        f"{e.name} ({e.kind}{also}): {some(e.memories, 'memory')},"
        f" seen {when(e.first_seen)} to {when(e.last_seen)}"
    )


def _json(args: argparse.Namespace, raw: bytes, out: TextIO) -> bool:
    if args.json:
        echo(raw, out)
    return bool(args.json)
