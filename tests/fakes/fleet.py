"""A `hosts` fleet of fake llama-servers: starting them, and the smemd config that points at them."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from tests.fakes.llama_server import FakeLlamaServer


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
    nodes: Sequence[tuple[str, FakeLlamaServer, Sequence[str], str]],
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
