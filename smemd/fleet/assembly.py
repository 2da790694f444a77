"""The fleet the daemon runs on: one object whatever runs the models, with an embedder per lane.

`builtin` embeds in-process on both lanes, searches ahead of ingest (see turns). `hosts` sends every call through the node pool to
llama-servers at the configured addresses, searches on the interactive lane and ingest on the
background lane, with the pause file lending nodes away. `local` starts llama-servers itself and
serves both lanes from them. The engine sees only `Embedder`s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp

from smemd.cards.hardware import Cards
from smemd.config import Config, NodeConfig
from smemd.fleet import identity
from smemd.fleet.builtin import Embedder, load_embedder
from smemd.fleet.lanes import LaneChatter, LaneEmbedder, LaneReranker
from smemd.fleet.llama import LlamaClient, LlamaError
from smemd.fleet.local import LocalServerError, ServerProcess
from smemd.fleet.pause import PauseWatcher, lendability
from smemd.fleet.pool import Node, Pool, Role
from smemd.fleet.turns import LaneModel, Turns
from smemd.tallies import Tally, Timings
from smemd.tasks import stop

log = logging.getLogger("smemd.fleet")

ROLE_PORTS: tuple[Role, ...] = ("embed", "rerank", "llm")
LOCAL_START_S = 120.0  # loading a model from a cold disk


class FleetError(Exception):
    """The fleet cannot start (a configuration it cannot serve, no embedder reachable)."""


class Fleet:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.kind = config.fleet.kind
        self.pool: Pool | None = None
        self.pauses: PauseWatcher | None = None
        self.interactive: Embedder
        self.background: Embedder
        self.reranker: LaneReranker | None = None  # when some node serves the rerank role
        # When some node serves the llm role: ask on the interactive lane, extraction and
        # judging on the background lane.
        self.interactive_llm: LaneChatter | None = None
        self.background_llm: LaneChatter | None = None
        self.cards: Cards | None = None  # the vca2 fleet's card manager and telemetry
        # Model calls by node, role and outcome, and their seconds, whoever runs the models.
        self.calls = Tally()
        self.call_seconds = Timings()
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Fleet:
        try:
            if self.kind == "builtin":
                model = await asyncio.to_thread(load_embedder)
                turns = Turns(self.calls, self.call_seconds)  # searches ahead of ingest
                self.interactive = LaneModel(model, "interactive", turns)
                self.background = LaneModel(model, "background", turns)
            elif self.kind == "hosts":
                await self._open_hosts()
            elif self.kind == "local":
                await self._open_local()
            else:
                await self._open_vca2()
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()

    async def _open_hosts(self) -> None:
        nodes_config = self.config.fleet.nodes
        if not any(n.embed for n in nodes_config):
            raise FleetError("$.fleet.nodes: no node has an embed port; the engine needs one")
        session = await self._stack.enter_async_context(aiohttp.ClientSession())
        self.pauses = await self._stack.enter_async_context(
            PauseWatcher(Path(self.config.paths.pause_file), known=lendability(nodes_config))
        )
        await self._serve(
            [_node(n, self.kind, session) for n in nodes_config], paused=self.pauses.paused
        )

    async def _open_vca2(self) -> None:
        """The hosts' pool over card nodes that the card manager adopts or boots meanwhile."""
        nodes_config = self.config.fleet.nodes
        if not any(n.embed for n in nodes_config):
            raise FleetError("$.fleet.nodes: no node has an embed port; the engine needs one")
        session = await self._stack.enter_async_context(aiohttp.ClientSession())
        pauses = self.pauses = await self._stack.enter_async_context(
            PauseWatcher(Path(self.config.paths.pause_file), known=lendability(nodes_config))
        )
        cards = self.cards = await self._stack.enter_async_context(Cards(self.config))
        nodes = [_node(n, self.kind, session) for n in nodes_config]
        known = identity.remembered(self.config.state_dir)
        if known is None:
            # The store needs the embedder's name and width before anything is served: the
            # first run waits for the first node that embeds, not for them all.
            timeouts = self.config.cards.timeouts
            embedders = [n for n in nodes if "embed" in n.clients]
            await _first_ready(embedders, cards, timeouts.ready + timeouts.health)
        await self._serve(nodes, paused=lambda: pauses.paused() | cards.lent(), known=known)

    async def _open_local(self) -> None:
        """llama-servers of our own on this host, one per configured model, as one node."""
        local = self.config.fleet.local
        session = await self._stack.enter_async_context(aiohttp.ClientSession())
        clients: dict[Role, LlamaClient] = {}
        for role in ROLE_PORTS:
            model = getattr(local, f"{role}_model")
            if not model:
                continue
            try:
                server = ServerProcess(role, model, local, self.config.state_dir)
            except LocalServerError as err:
                raise FleetError(str(err)) from err
            task = asyncio.create_task(server.supervise(), name=f"llama-{role}")
            self._stack.push_async_callback(_stop_server, server, task)
            clients[role] = LlamaClient(session, server.url, node=f"local {role}")
        node = Node("local", clients, ["interactive", "background"], lendable=False)
        await _wait_ready(node, LOCAL_START_S)
        await self._serve([node], paused=frozenset)

    async def _serve(
        self, nodes: list[Node], paused: Callable[[], frozenset[str]],
        known: identity.Identity | None = None,
    ) -> None:  # fmt: skip
        """Put the nodes in a pool, learn the embedder behind them (or hold them to the one
        `known`), and watch their health."""
        self.pool = Pool(nodes, paused=paused, calls=self.calls, call_seconds=self.call_seconds)
        if known is None:
            known = await _learn_embedder(self.pool)
            await asyncio.to_thread(identity.remember, self.config.state_dir, known)
        else:
            checker = asyncio.create_task(identity.hold_to(self.pool, known), name="fleet-embedder")
            self._stack.push_async_callback(stop, checker)
        name, dimension = known.name, known.dimension
        self.interactive = LaneEmbedder(self.pool, "interactive", name, dimension)
        self.background = LaneEmbedder(self.pool, "background", name, dimension)
        if any("rerank" in node.clients for node in nodes):
            self.reranker = LaneReranker(self.pool)
        if any("llm" in node.clients for node in nodes):
            self.interactive_llm = LaneChatter(self.pool, "interactive")
            self.background_llm = LaneChatter(self.pool, "background")
        watcher = asyncio.create_task(self.pool.watch(), name="fleet-health")
        self._stack.push_async_callback(stop, watcher)
        log.info(
            "fleet %s: %d nodes, embedder %s (%d dimensions)",
            self.kind,
            len(nodes),
            name,
            dimension,
        )


def _node(config: NodeConfig, kind: str, session: aiohttp.ClientSession) -> Node:
    address = config.address or f"172.31.{int(config.id[4:]) + 1}.1"  # VCA's default layout
    clients = {
        role: LlamaClient(session, f"http://{address}:{port}", node=config.id)
        for role in ROLE_PORTS
        if (port := getattr(config, role)) is not None
    }
    return Node(config.id, clients, config.lanes_in(kind), lendable=config.lendable)


async def _learn_embedder(pool: Pool) -> identity.Identity:
    """The model and width behind the embed role, from the first node that answers."""
    for node in pool.nodes.values():
        if (found := await identity.learn(node)) is not None:
            return found
    raise FleetError("no embedding node answered; the store needs to know the embedder first")


async def _first_ready(nodes: list[Node], cards: Cards, within: float) -> None:
    """Until one of `nodes` answers /health; give up when none can, or after `within` seconds."""
    assert cards.manager is not None
    deadline = time.monotonic() + within
    while True:
        for node in nodes:
            with contextlib.suppress(LlamaError):
                if (await node.clients["embed"].health(timeout=2.0)).is_ready:
                    return
        views = {v.id: v for v in cards.manager.nodes()}
        hopeless = [views[n.name] for n in nodes if views[n.name].state in ("failed", "off")]
        if len(hopeless) == len(nodes) or time.monotonic() > deadline:
            why = "; ".join(f"{v.id}: {v.state} {v.last_error}".strip() for v in views.values())
            raise FleetError(f"no node that embeds came up ({why})")
        await asyncio.sleep(min(1.0, within / 10))


async def _wait_ready(node: Node, within: float) -> None:
    """Until every server of the node answers /health with ok (loading a model takes a while)."""
    deadline = time.monotonic() + within
    for role, client in node.clients.items():
        while True:
            try:
                if (await client.health(timeout=2.0)).is_ready:
                    break
            except LlamaError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise FleetError(
                    f"llama-server ({role}) was not ready within {within:.0f} s; see its log in the state dir"
                )
            await asyncio.sleep(0.2)


async def _stop_server(server: ServerProcess, task: asyncio.Task[None]) -> None:
    await server.stop()
    await stop(task)
