"""Which embedder the fleet's nodes serve: learnt from a node, remembered in the state dir.

The store can only be opened once the embedder is known (vectors of two models must never
meet). A card fleet whose nodes are still booting would keep smemd from serving anything
until the first one is up; with the embedder remembered from the last run, smemd serves at
once and checks each node as it comes up: a node serving another model loses its embed role.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Annotated

import msgspec

from smemd.fleet.llama import LlamaError
from smemd.fleet.pool import Node, Pool

log = logging.getLogger("smemd.fleet")
FILE_NAME = "fleet-embedder.json"


class Identity(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]
    dimension: Annotated[int, msgspec.Meta(ge=1, le=65536)]


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
    """The embedder recorded by an earlier run; None, with a warning, when the record is bad."""
    path = state_dir / FILE_NAME
    try:
        return msgspec.json.decode(path.read_bytes(), type=Identity)
    except FileNotFoundError:
        return None
    except OSError as err:
        problem = err.strerror or str(err)
    except msgspec.DecodeError as err:  # not JSON, or not this record (ValidationError too)
        problem = f"not a record of the embedder: {err}"
    log.warning("%s: %s; the embedder is learnt from the nodes", path, problem)
    return None


def remember(state_dir: Path, identity: Identity) -> None:
    """Record the embedder for the next start, atomically. Blocking.

    The record only lets a later start serve before the nodes answer, so failing to write it
    is a warning (the next start learns again), and no temporary file is left behind.
    """
    path = state_dir / FILE_NAME
    record = msgspec.json.encode(identity)
    try:
        before: bytes | None = path.read_bytes()
    except OSError:  # absent, or unreadable: the write below says what is wrong
        before = None
    if before == record:
        return
    if before is not None:
        log.warning("%s: replaced by the embedder the nodes serve, %s", path, identity.name)
    temporary = path.with_name(f".{FILE_NAME}.tmp")
    try:
        temporary.write_bytes(record)
        os.replace(temporary, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            temporary.unlink()
        log.warning(
            "%s: cannot record the embedder: %s; the next start learns it from the nodes",
            path, err.strerror or err,
        )  # fmt: skip


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
