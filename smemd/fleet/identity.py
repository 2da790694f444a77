"""Which embedder the fleet's nodes serve: learnt from a node, remembered in the state dir.

The store can only be opened once the embedder is known (vectors of two models must never
meet). A card fleet whose nodes are still booting would keep smemd from serving anything
until the first one is up; with the embedder remembered from the last run, smemd serves at
once and checks each node as it comes up: a node serving another model loses its embed role.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import msgspec

from smemd.fleet.llama import LlamaError
from smemd.fleet.pool import Node, Pool

log = logging.getLogger("smemd.fleet")
FILE_NAME = "fleet-embedder.json"


class Identity(msgspec.Struct, frozen=True):
    name: str
    dimension: int


async def learn(node: Node) -> Identity | None:
    """The model and width behind the node's embed role; None when it does not answer."""
    client = node.clients.get("embed")
    if client is None:
        return None
    try:
        props = await client.props(timeout=5.0)
        vector = await client.embed(["which model are you"], timeout=10.0)
    except LlamaError as err:
        log.warning("node %s: cannot learn the embedder: %s", node.name, err)
        return None
    return Identity(props.model, int(vector.shape[1]))


def remembered(state_dir: Path) -> Identity | None:
    try:
        return msgspec.json.decode((state_dir / FILE_NAME).read_bytes(), type=Identity)
    except FileNotFoundError:
        return None
    except (OSError, msgspec.DecodeError) as err:  # unreadable: learn it again
        log.warning("%s: %s; the embedder is learnt from the nodes", state_dir / FILE_NAME, err)
        return None


def remember(state_dir: Path, identity: Identity) -> None:
    path = state_dir / FILE_NAME
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(msgspec.json.encode(identity))
    temporary.replace(path)


async def hold_to(pool: Pool, identity: Identity, period: float = 2.0) -> None:
    """Check each embedding node once it is healthy (run as a task, until all are checked)."""
    unchecked = {n.name for n in pool.nodes.values() if "embed" in n.clients}
    while unchecked:
        for name in sorted(unchecked):
            node = pool.nodes[name]
            if not node.healthy:
                continue
            served = await learn(node)
            if served is None:
                continue
            unchecked.discard(name)
            if served != identity:
                del node.clients["embed"]
                node.last_error = f"serves embedder {served.name}/{served.dimension}, not {identity.name}/{identity.dimension}"
                log.error("node %s: %s: it gets no embedding calls", name, node.last_error)
        await asyncio.sleep(period)
