"""`rederive [-n NS] [--wait] [--llama-url URL] [--apply | --discard]`: re-derive a namespace's
memory from its documents into its shadow (smemd.engine.rederive) and show what would change;
`--apply` swaps it in, `--discard` drops it. Without either, a re-derivation is started unless
one exists (with `--llama-url`, always started: read by that llama-server's model), and its
progress or its diff is shown (`--wait`: once it is ready)."""

from __future__ import annotations

import argparse
import time
from typing import TextIO

from smemctl.client import CallFailed, Client
from smemctl.common import echo, namespace_argument, namespace_path
from smemctl.table import pairs
from smemd.protocol.retraction import Rederived, RederiveRequest

POLL_S = 0.5
# Each reply walks the namespace whole (the start copies its documents, the diff reads both
# memories, the apply swaps them in one transaction): at 100,000 documents, past the default wait.
REDERIVE_WAIT_S = 3600.0


def rederive_arguments(parser: argparse.ArgumentParser) -> None:
    namespace_argument(parser)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--apply", action="store_true", help="swap the re-derived memory in")
    what.add_argument("--discard", action="store_true", help="drop the re-derivation")
    parser.add_argument(
        "--wait", action="store_true", help="wait until the shadow is ingested, then show the diff"
    )
    parser.add_argument(
        "--llama-url", metavar="URL", default=None,
        help="start one whose documents are read by the chat model of the llama-server at URL"
        " (not the daemon's own); admin",
    )  # fmt: skip
    # Its own dest: smemctl's --timeout, before the command, is for each reply.
    parser.add_argument(
        "--timeout", dest="wait_timeout", type=float, default=3600.0, metavar="S",
        help="how long --wait waits (default an hour)",
    )  # fmt: skip


def rederive(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    client = client.waiting(REDERIVE_WAIT_S)
    path = namespace_path(args) + "/rederive"
    if args.llama_url and (args.apply or args.discard):
        raise CallFailed("--llama-url starts a re-derivation: not with --apply or --discard")
    if args.apply or args.discard:
        method, where = ("POST", path + "/apply") if args.apply else ("DELETE", path)
        done, raw = client.send(method, where, None, Rederived)
    else:
        done, raw = _started(client, path, args.llama_url)
        until = time.monotonic() + args.wait_timeout
        while args.wait and done.state == "running":
            if time.monotonic() > until:
                raise CallFailed(f"still re-deriving after {args.wait_timeout:g} s")
            time.sleep(POLL_S)
            done, raw = client.get(path, Rederived)
    if args.json:
        echo(raw, out)
        return
    rows: list[tuple[str, object]] = [
        ("namespace", done.namespace), ("shadow", done.shadow), ("state", done.state),
        ("model", done.model or "the daemon's"), ("documents", done.documents),
        ("pending", done.pending),
    ]  # fmt: skip
    rows += list(done.counts.items())
    print(pairs(rows), file=out)
    for kind, examples in done.examples.items():
        print(f"\n{kind}:", file=out)
        for example in examples:
            print(f"  {example}", file=out)
    if done.not_carried:
        print("\nnot carried over:", file=out)
        for item in done.not_carried:
            print(f"  {item}", file=out)


def _started(client: Client, path: str, model_url: str | None) -> tuple[Rederived, bytes]:
    """The re-derivation that exists, else one started now; with `model_url`, always a new one
    read by that model (the daemon refuses it while one exists)."""
    if model_url:
        return client.post(path, RederiveRequest(llama_url=model_url), Rederived)
    found, raw = client.get(path, Rederived)
    return (found, raw) if found.state != "none" else client.post(path, None, Rederived)
