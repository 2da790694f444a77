"""The node pool: which node serves a call, on which lane, and what happens when one fails.

A call names a role (embed, rerank, llm) and a lane (interactive, background). The pool picks,
among healthy, unpaused nodes that serve both, the one with the fewest calls in flight (ties
go round-robin), retries another node on a connection error, timeout or 5xx, and opens a
circuit on a node after `failures_to_open` straight failures; a health probe closes it again.
Background work falls back to interactive nodes only when none of its own can serve, and then
holds at most one call on each, so searches never queue behind ingest.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from typing import Literal, TypeVar

from smemd.errors import Unavailable
from smemd.fleet.llama import LlamaClient, LlamaError, LlamaUnavailable
from smemd.tallies import Tally, Timings

log = logging.getLogger("smemd.fleet")

T = TypeVar("T")
Lane = Literal["interactive", "background"]
Role = Literal["embed", "rerank", "llm"]


class NoNode(Unavailable):
    code = "no_node"


class Node:
    def __init__(
        self,
        name: str,
        clients: Mapping[Role, LlamaClient],
        lanes: Iterable[Lane],
        *,
        lendable: bool = True,
    ) -> None:
        self.name = name
        self.clients = dict(clients)
        self.lanes = frozenset(lanes)
        self.lendable = lendable
        self.in_flight: Counter[Lane] = Counter()
        self.failures = 0  # straight failures
        self.open_until = 0.0  # the circuit is open (no calls) until then, then a probe decides
        self._healthy = True
        self.verdicts = 0  # how many times health was said, by a probe or by the cards
        self.last_error = ""

    @property
    def healthy(self) -> bool:
        return self._healthy

    @healthy.setter
    def healthy(self, healthy: bool) -> None:
        self._healthy = healthy
        self.verdicts += 1

    @property
    def busy(self) -> int:
        return sum(self.in_flight.values())

    def is_open(self, now: float) -> bool:
        return self.open_until > now or (self.open_until > 0 and not self.healthy)


class Pool:
    def __init__(
        self, nodes: Iterable[Node], *, paused: Callable[[], frozenset[str]] = frozenset,
        retries: int = 2, failures_to_open: int = 3, open_seconds: float = 5.0,
        calls: Tally | None = None, call_seconds: Timings | None = None,
    ) -> None:  # fmt: skip
        """`calls` counts each call by node, role and outcome (`ok`, `failed`: another node
        may take it, `refused`: the request's own fault), `call_seconds` times them."""
        self.calls = calls or Tally()
        self.call_seconds = call_seconds or Timings()
        self.nodes = {node.name: node for node in nodes}
        self.paused = paused
        self.retries = retries
        self.failures_to_open = failures_to_open
        self.open_seconds = open_seconds
        self._turn = itertools.count()
        self._settled = asyncio.Condition()

    async def call(self, role: Role, lane: Lane, op: Callable[[LlamaClient], Awaitable[T]]) -> T:
        """Run `op` on a node's client for `role`, on another node if that one fails."""
        tried: set[str] = set()
        last: Exception | None = None
        for _ in range(self.retries + 1):
            node = self.pick(role, lane, exclude=tried)
            if node is None:
                break
            tried.add(node.name)
            node.in_flight[lane] += 1
            started = time.perf_counter()
            try:
                result = await op(node.clients[role])
            except LlamaError as err:
                self.calls.add(node.name, role, "failed" if err.retryable else "refused")
                if not err.retryable:  # the request's own fault: another node would refuse it too
                    raise
                self._failed(node, err)
                last = err
                continue
            finally:
                node.in_flight[lane] -= 1
                self.call_seconds.observe(time.perf_counter() - started, node.name, role)
                await self._notify()
            node.failures = 0
            self.calls.add(node.name, role, "ok")
            return result
        if last is not None:
            raise last
        raise NoNode(f"no node can take {role} on the {lane} lane", self._why_none(role, lane))

    def pick(self, role: Role, lane: Lane, exclude: Collection[str] = ()) -> Node | None:
        now = time.monotonic()
        paused = self.paused()
        usable = [
            n for n in self.nodes.values()
            if role in n.clients and n.name not in exclude and n.name not in paused
            and n.healthy and not n.is_open(now)
        ]  # fmt: skip
        candidates = [n for n in usable if lane in n.lanes]
        if not candidates and lane == "background":
            # Borrow interactive nodes, one background call each, so search keeps its latency.
            candidates = [
                n for n in usable if "interactive" in n.lanes and n.in_flight["background"] < 1
            ]
        if not candidates:
            return None
        fewest = min(n.busy for n in candidates)
        tied = [n for n in candidates if n.busy == fewest]
        return tied[next(self._turn) % len(tied)]

    async def wait_drained(self, names: Iterable[str], within: float) -> bool:
        """Until the named nodes have nothing in flight; False if `within` seconds passed first."""
        wanted = [self.nodes[n] for n in names if n in self.nodes]
        async with self._settled:
            try:
                async with asyncio.timeout(within):
                    await self._settled.wait_for(lambda: all(n.busy == 0 for n in wanted))
            except TimeoutError:
                return False
        return True

    async def probe(self, node: Node) -> None:
        """Ask each of the node's servers for /health; a success closes an open circuit. An
        answer is dropped if the node's health was said meanwhile (the cards saw it come up
        while an older probe was still waiting on a server that was loading)."""
        asked = node.verdicts
        try:
            for client in node.clients.values():
                if not (await client.health()).is_ready:
                    raise LlamaUnavailable(node.name, "GET /health", "still loading")
        except LlamaError as err:
            if node.verdicts != asked:
                return
            node.healthy = False
            node.last_error = str(err)
            return
        if node.verdicts != asked:
            return
        if not node.healthy or node.open_until:
            log.info("node %s is back", node.name)
        node.healthy = True
        node.failures = 0
        node.open_until = 0.0

    async def watch(self, period: float = 2.0) -> None:
        """Probe every node forever (run as a task); unhealthy nodes get no calls meanwhile."""
        while True:
            await asyncio.gather(*(self.probe(n) for n in self.nodes.values()))
            await asyncio.sleep(period)

    def _failed(self, node: Node, err: Exception) -> None:
        node.failures += 1
        node.last_error = str(err)
        if node.failures >= self.failures_to_open and not node.is_open(time.monotonic()):
            node.open_until = time.monotonic() + self.open_seconds
            log.warning(
                "node %s: %d straight failures, resting it: %s", node.name, node.failures, err
            )

    async def _notify(self) -> None:
        async with self._settled:
            self._settled.notify_all()

    def _why_none(self, role: Role, lane: Lane) -> str:
        paused = self.paused()
        serving = [n for n in self.nodes.values() if role in n.clients]
        if not serving:
            return f"no node is configured with a {role} server"
        states = [
            f"{n.name}: "
            + (
                "paused"
                if n.name in paused
                else "down"
                if not n.healthy or n.is_open(time.monotonic())
                else "busy"
            )
            for n in serving
        ]
        return "; ".join(states)
