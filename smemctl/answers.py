"""The answer commands: `ask` (an answer and its numbered sources) and `compress` (the context alone),
thin callers of smemd's `POST /v1/ask` and `POST /v1/compress`."""

from __future__ import annotations

import argparse
from typing import TextIO

from smemctl.client import Client
from smemctl.common import echo, namespace_argument
from smemd.protocol.answers import Ask, AskReply, Compress, CompressReply, ContextItem


def ask_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", metavar="QUESTION")
    namespace_argument(parser)
    parser.add_argument("--limit", type=int, default=10, metavar="N", help="recall at most N items")


def ask(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body = Ask(q=args.question, namespace=args.ns, limit=args.limit)
    reply, raw = client.post("/v1/ask", body, AskReply)
    if args.json:
        echo(raw, out)
        return
    if reply.answer is None:
        print(f"no answer: {reply.note or 'no model answered'}", file=out)
    else:
        print(reply.answer, file=out)
    print(file=out)
    if not reply.sources:
        print("sources: none", file=out)
        return
    print("sources:", file=out)
    for item in reply.sources:
        print(_source_line(item), file=out)


def compress_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", metavar="QUERY")
    namespace_argument(parser)
    parser.add_argument("--limit", type=int, default=10, metavar="N", help="recall at most N items")
    parser.add_argument(
        "--max-tokens", type=int, metavar="T", help="leave out items past about T tokens"
    )


def compress(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    body = Compress(q=args.query, namespace=args.ns, limit=args.limit, max_tokens=args.max_tokens)
    reply, raw = client.post("/v1/compress", body, CompressReply)
    if args.json:
        echo(raw, out)
        return
    print(reply.context, file=out)
    items = "1 item" if len(reply.items) == 1 else f"{len(reply.items)} items"
    print(f"{reply.tokens} tokens, {items}", file=out)


def _source_line(item: ContextItem) -> str:
    """`[n] (date; title) text  (kind id)` on one line."""
    head = "; ".join(part for part in (item.date, item.title) if part)
    text = " ".join(item.text.split())
    prefix = f"[{item.n}] ({head}) " if head else f"[{item.n}] "
    return f"{prefix}{text}  ({item.kind} {item.id})"
