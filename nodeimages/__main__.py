"""`python -m nodeimages write-overlay DIR`: each node's overlay tree under DIR/<node id>/.

Exit 0 done, 1 could not write, 2 bad config or arguments (as smemd exits on a bad config).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nodeimages import overlay
from nodeimages.units import LLAMA_SERVER
from smemd.config import DEFAULT_CONFIG_FILE, ConfigError, NodeConfig, load

EXIT_OK, EXIT_FAILED, EXIT_BAD_CONFIG = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m nodeimages", description="What goes onto each VCA node's OS image."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    write = commands.add_parser(
        "write-overlay",
        help="render each node's files under DIR/<node id>/",
        description="Render each node's overlay (llama-server units and env files, sshd drop-in, "
        "coretemp) under DIR/<node id>/ from smemd's [[fleet.nodes]]. Idempotent.",
    )
    write.add_argument("dir", type=Path, metavar="DIR")
    write.add_argument(
        "--config",
        type=Path,
        metavar="PATH",
        help=f"smemd's TOML config (default: {DEFAULT_CONFIG_FILE} when it exists)",
    )
    write.add_argument(
        "--node",
        action="extend",
        nargs="+",
        default=[],
        metavar="ID",
        help="only these nodes (repeatable; default: every node in the config)",
    )
    write.add_argument(
        "--ssh-public-key",
        type=Path,
        metavar="FILE",
        help="smemd's public key, installed as root's authorized_keys",
    )
    write.add_argument(
        "--llama-server",
        default=LLAMA_SERVER,
        metavar="PATH",
        help=f"llama-server's absolute path on the node (default: {LLAMA_SERVER})",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        nodes = load(args.config).fleet.nodes
        if not nodes:
            raise ConfigError("$.fleet.nodes: no nodes, so no overlay to write")
    except ConfigError as err:
        print(f"nodeimages: bad config: {err}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    try:
        nodes = _chosen(nodes, args.node)
        keys = (
            None if args.ssh_public_key is None else overlay.read_public_keys(args.ssh_public_key)
        )
        binary = _checked_binary(args.llama_server)
    except overlay.OverlayError as err:
        print(f"nodeimages: {err}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    for node in nodes:
        rendered = overlay.render(node, llama_server=binary, authorized_keys=keys)
        try:
            changed = overlay.write(args.dir / node.id, rendered)
        except OSError as err:
            print(f"nodeimages: {node.id}: cannot write the overlay: {err}", file=sys.stderr)
            return EXIT_FAILED
        roles = ", ".join(f"sm-{role}" for role in rendered.roles) or "no model servers"
        print(f"{node.id}: {args.dir / node.id} ({roles}; {changed} paths changed)")
    return EXIT_OK


def _chosen(nodes: list[NodeConfig], wanted: list[str]) -> list[NodeConfig]:
    """The nodes named in `wanted` (all when it is empty), in the config's order."""
    known = [node.id for node in nodes]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise overlay.OverlayError(
            f"--node: no node {unknown[0]!r} in $.fleet.nodes (there are {', '.join(known)})"
        )
    return [node for node in nodes if not wanted or node.id in wanted]


def _checked_binary(path: str) -> str:
    # ExecStart= needs an absolute path; a space would split it, and systemd expands % and $.
    if not path.startswith("/") or any(c.isspace() or c in "%$" for c in path):
        raise overlay.OverlayError(
            f"--llama-server: need an absolute path without spaces, % or $: {path!r}"
        )
    return path


if __name__ == "__main__":
    sys.exit(main())
