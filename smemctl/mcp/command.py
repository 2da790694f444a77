"""`smemctl mcp`: the MCP server's command line. The SDK is imported only when it runs, so the
other commands start as fast as before."""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

from smemctl.client import Client
from smemctl.common import UsageError
from smemd.protocol.memory import NAMESPACE_PATTERN


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", default=os.environ.get("SMEM_URL"), metavar="URL",
        help="smemd over TCP, http://host:port (default: $SMEM_URL, else the socket)",
    )  # fmt: skip
    parser.add_argument(
        "--token", default=os.environ.get("SMEM_TOKEN"), metavar="T",
        help="the API token for --url (default: $SMEM_TOKEN)",
    )  # fmt: skip
    parser.add_argument(
        "-n", "--ns", default=os.environ.get("SMEM_NAMESPACE") or "default", metavar="NAMESPACE",
        help="the namespace tools use unless told another (default: $SMEM_NAMESPACE or default)",
    )  # fmt: skip
    parser.add_argument(
        "--http", metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio; each request's "
        "bearer token is forwarded to smemd, so --url is required",
    )  # fmt: skip


def run(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    import re

    import anyio

    from smemctl.mcp.server import build, serve_http, serve_stdio

    if not re.fullmatch(NAMESPACE_PATTERN.strip("^$"), args.ns):
        raise UsageError(f"namespace {args.ns!r} does not match {NAMESPACE_PATTERN}")
    smemd = Client(client.socket_path, client.timeout, url=args.url, token=args.token)
    version = _version()
    if args.http is None:
        anyio.run(serve_stdio, build(lambda ctx: smemd, args.ns, version))
        return
    if args.url is None:
        raise UsageError("--http forwards each request's token to smemd over TCP: give --url")
    host, _, port = args.http.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--http {args.http!r}: give HOST:PORT")

    def per_request(ctx: Any) -> Client:
        header = ctx.request.headers.get("authorization", "") if ctx.request else ""
        scheme, _, token = header.partition(" ")
        given = token.strip() if scheme.lower() == "bearer" else None
        return Client(client.socket_path, client.timeout, url=args.url, token=given)

    anyio.run(serve_http, build(per_request, args.ns, version), host, int(port))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("smem")
    except PackageNotFoundError:
        return ""
