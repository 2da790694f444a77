"""Two simulated VCA 2 cards: the fake vcactl's state file joined to a FakeNode per node."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.fakes.vca_node import FakeNode
from tests.fakes.vcactl import (
    CPUS,
    STATE_FILE,
    SYSFS,
    Timings,
    install,
    node_key,
    node_state,
    power_off,
    read_state,
    set_faults,
    set_node,
)

log = logging.getLogger("tests.vca_sim")
ROLES = ("ssh", "embed", "rerank", "llm")


def node_address(k: int) -> str:
    """Node k's loopback stand-in for its 172.31.(k+1).1."""
    return f"127.0.31.{k + 1}"


def _port_free_on_all(hosts: list[str], taken: set[int]) -> int:
    """A port that can be bound on every host: one number serves every node, as 22 and 8080 do."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind((hosts[0], 0))
            port = int(probe.getsockname()[1])
        if port in taken:
            continue
        try:
            for host in hosts[1:]:
                with socket.socket() as other:
                    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    other.bind((host, port))
        except OSError:
            continue
        return port
    raise RuntimeError("no port free on every simulated node address")


def _os_runs(node: dict[str, Any], now: float) -> bool:
    """Whether ssh and the model servers answer: the agent says the net is up, or (no agent) the OS runs."""
    if node["faults"]["dead"]:
        return False
    if node["state"] == "net_device_ready":
        return True
    up_at = node["os_up_at"]
    return bool(node["faults"]["no_agent"]) and up_at is not None and up_at <= now


class Simulator:
    """`async with Simulator(tmp_path) as sim:` vcactl at `sim.vcactl`, nodes at `sim.node(k)`."""

    def __init__(
        self, directory: Path, *, cards: int = 2, timings: Timings | None = None,
        faults: dict[str, Any] | None = None, poll: float = 0.05,
    ) -> None:  # fmt: skip
        self.directory = Path(directory).resolve()
        self.cards = cards
        self.timings = timings or Timings()
        self.faults = faults
        self.poll = poll
        self.vcactl = self.directory / "vcactl"
        self.state_file = self.directory / STATE_FILE
        self.image_dir = self.directory / "images"
        self.nodes: list[FakeNode] = []
        self.ports: dict[str, int] = {}
        self._powering_off: set[int] = set()  # nodes whose FakeNode stops itself after poweroff
        self._watcher: asyncio.Task[None] | None = None

    @property
    def count(self) -> int:
        return self.cards * CPUS

    async def __aenter__(self) -> Simulator:
        self.vcactl = install(
            self.directory, cards=self.cards, timings=self.timings, faults=self.faults
        )
        self.image_dir.mkdir(exist_ok=True)
        hosts = [node_address(k) for k in range(self.count)]
        for role in ROLES:
            self.ports[role] = _port_free_on_all(hosts, set(self.ports.values()))
        for k in range(self.count):
            card, cpu = divmod(k, CPUS)
            (self.image_dir / f"node{card}{cpu}.img").touch()
            self.nodes.append(FakeNode(
                hosts[k], ssh_port=self.ports["ssh"], embed_port=self.ports["embed"],
                rerank_port=self.ports["rerank"], llm_port=self.ports["llm"],
                on_poweroff=functools.partial(self._poweroff, k), chat=node_model,
            ))  # fmt: skip
        self._watcher = asyncio.create_task(self._watch(), name="vca simulator")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        for node in self.nodes:
            await node.__aexit__(None, None, None)

    def node(self, k: int) -> FakeNode:
        return self.nodes[k]

    def ssh_port(self, k: int) -> int:
        return self.nodes[k].ssh_port

    def state(self, k: int) -> str:
        """What `vcactl status` shows for node k now."""
        return node_state(self.state_file, *divmod(k, CPUS))

    def raw(self, k: int) -> dict[str, Any]:
        """Node k's whole simulated record: state, faults, config, blk."""
        return dict(read_state(self.state_file)["nodes"][node_key(*divmod(k, CPUS))])

    def calls(self) -> list[dict[str, Any]]:
        """Every vcactl run so far: argv, at, rc (None while hung), pid."""
        return list(read_state(self.state_file)["calls"])

    def set_node(self, k: int, **changes: Any) -> None:
        set_node(self.state_file, *divmod(k, CPUS), **changes)

    def set_faults(self, **changes: Any) -> None:
        set_faults(self.state_file, **changes)

    def node_configs(self) -> list[dict[str, Any]]:
        """One `[[fleet.nodes]]` table per node: card 0 serves interactive work, card 1 background."""
        return [
            {
                "id": f"node{k}",
                "address": node_address(k),
                "embed": self.ports["embed"],
                "rerank": self.ports["rerank"],
                "llm": self.ports["llm"],
                "card": k // CPUS,
                "cpu": k % CPUS,
                "lanes": ["interactive" if k < CPUS else "background"],
            }
            for k in range(self.count)
        ]

    def cards_config(self) -> dict[str, Any]:
        """The `[cards]` table that points smemd at this simulator."""
        return {
            "vcactl": str(self.vcactl), "image-dir": str(self.image_dir),
            "ssh-port": self.ports["ssh"], "sysfs": str(self.directory / SYSFS),
        }  # fmt: skip

    def _poweroff(self, k: int) -> None:
        """`systemctl poweroff` on node k: vcactl sees powering_down, then power_off."""
        self._powering_off.add(k)
        power_off(self.state_file, *divmod(k, CPUS))

    async def _watch(self) -> None:
        while True:
            try:
                state = await asyncio.to_thread(read_state, self.state_file)
                now = time.time()
                for k, node in enumerate(self.nodes):
                    await self._follow(
                        k, node, _os_runs(state["nodes"][node_key(*divmod(k, CPUS))], now)
                    )
            except Exception:  # a watcher that dies silently would hang every test on it
                log.exception("vca simulator: watcher tick failed")
            await asyncio.sleep(self.poll)

    async def _follow(self, k: int, node: FakeNode, runs: bool) -> None:
        if k in self._powering_off:
            if node.running:
                return  # FakeNode stops itself once it has answered `systemctl poweroff`
            self._powering_off.discard(k)
        if runs and not node.running:
            log.debug("vca simulator: node%d OS up", k)
            await node.start()
        elif not runs and node.running:
            log.debug("vca simulator: node%d OS down", k)
            await node.stop()


def node_model(body: Mapping[str, Any]) -> str:
    """The nodes' chat model: extraction lists the document's sentences as facts; any other
    question gets the fake's default answer (a grammar's first alternative)."""
    if "json_schema" not in body:
        return "ok"
    prompt = str(body["messages"][-1]["content"])
    document = prompt.split("<document", 1)[1] if "<document" in prompt else ">"
    text = document.split(">", 1)[1].rsplit("</document>", 1)[0]
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    facts: list[dict[str, Any]] = [
        {"text": s[:400], "type": "fact", "eventDate": None, "entities": []} for s in sentences
    ]
    return json.dumps(facts)
