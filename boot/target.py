"""A node as the boot sequence sees it: where it sits, how to reach it, which image it boots."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

from smemd.config import Config

CPUS_PER_CARD = 3


class Target(msgspec.Struct, kw_only=True, frozen=True):
    node: str  # node0..node5
    card: int
    cpu: int
    address: str
    image: str  # <image-dir>/node<card><cpu>.img
    ssh_port: int = 22
    embed: int | None = None  # a model server's port; None where the node lacks that role
    rerank: int | None = None
    llm: int | None = None

    @property
    def roles(self) -> dict[str, int]:
        """The model servers this node runs, by role."""
        ports = {"embed": self.embed, "rerank": self.rerank, "llm": self.llm}
        return {role: port for role, port in ports.items() if port is not None}

    @property
    def mac(self) -> str:
        """The host-side netdev's MAC for this node (hardware.md §A.4)."""
        return f"fe:00:00:00:0{self.card + 1}:0{self.cpu + 1}"


class UnknownNode(ValueError):
    """A node named on the command line that the config does not have."""


def targets_from_config(config: Config, names: Sequence[str] = ()) -> list[Target]:
    """The configured nodes (those in `names`, or all), in config order."""
    targets = []
    for node in config.fleet.nodes:
        k = int(re.sub(r"\D", "", node.id))
        card = k // CPUS_PER_CARD if node.card is None else node.card
        cpu = k % CPUS_PER_CARD if node.cpu is None else node.cpu
        image = Path(config.cards.image_dir) / f"node{card}{cpu}.img"
        targets.append(Target(
            node=node.id, card=card, cpu=cpu, address=node.address or f"172.31.{k + 1}.1",
            image=str(image), ssh_port=config.cards.ssh_port, embed=node.embed, rerank=node.rerank,
            llm=node.llm,
        ))  # fmt: skip
    known = {t.node for t in targets}
    if missing := [name for name in names if name not in known]:
        raise UnknownNode(f"not in the config's [[fleet.nodes]]: {', '.join(missing)}")
    return [t for t in targets if not names or t.node in names]
