"""A `hosts` fleet of fake llama-servers: starting them, and the smemd config that points at them."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from smemd.config import load
from tests.fakes.llama_server import FakeLlamaServer

if TYPE_CHECKING:  # the bench imports this module without pytest's fixtures
    from tests.conftest import Running, StartDaemon


@contextlib.asynccontextmanager
async def started(servers: dict[str, FakeLlamaServer]) -> AsyncIterator[dict[str, FakeLlamaServer]]:
    for server in servers.values():
        await server.start()
    try:
        yield servers
    finally:
        for server in servers.values():
            await server.stop()


def hosts_config(
    state_dir: Path,
    nodes: Nodes,
    extra: str = "",
) -> str:
    """TOML for a `hosts` fleet: (node id, fake, lanes, role) per node, the role's port the fake's."""
    tables = "".join(
        f'\n[[fleet.nodes]]\nid = "{node}"\naddress = "{fake.host}"\n{role} = {fake.port}\n'
        f"lanes = {json.dumps(list(lanes))}\n"
        for node, fake, lanes, role in nodes
    )
    return f"""
[paths]
state-dir = "{state_dir}"
socket = "{state_dir / "smemd.sock"}"
pause-file = "{state_dir / "paused.json"}"
[api]
listen = "127.0.0.1:0"
{extra}
[fleet]
kind = "hosts"
{tables}"""


Nodes = Sequence[tuple[str, FakeLlamaServer, Sequence[str], str]]


async def start_hosts(
    start_daemon: StartDaemon, state_dir: Path, nodes: Nodes, name: str = "smemd.toml",
    extra: str = "",
) -> Running:  # fmt: skip
    """The in-process daemon on a `hosts` fleet of these fakes, its config read from a file;
    `extra` is TOML put before the fleet's (whole tables, e.g. an `[engine]` section)."""
    toml = state_dir / name
    toml.write_text(hosts_config(state_dir, nodes, extra))
    return await start_daemon(load(toml, env={}))


def node_pair(first_host: str) -> dict[str, FakeLlamaServer]:
    """Two fake embedders on consecutive loopback addresses from `first_host` (127.0.x.y)."""
    prefix, _, last = first_host.rpartition(".")
    return {f"node{k}": FakeLlamaServer(host=f"{prefix}.{int(last) + k}") for k in range(2)}


async def start_two_lanes(
    start_daemon: StartDaemon, state_dir: Path, pair: dict[str, FakeLlamaServer], extra: str = ""
) -> Running:
    """The daemon on `node_pair`'s fakes: node0 serves the interactive lane, node1 the background."""
    return await start_hosts(
        start_daemon,
        state_dir,
        [
            ("node0", pair["node0"], ["interactive"], "embed"),
            ("node1", pair["node1"], ["background"], "embed"),
        ],
        extra=extra,
    )
