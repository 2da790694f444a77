"""The `vca2` fleet's hardware side: the card manager, and telemetry over the nodes' ssh links.

The fleet keeps its pool of llama-server clients as for any hosts; this adds what owning the
cards means. Nodes are adopted or booted in the background, the pool learns their health from
/health as for any node, lent nodes are added to what the pause file pauses, and on stop the
nodes are powered off (unless `[cards] power-off-on-stop` is false) while systemd is told to
extend its stop timeout.
"""

from __future__ import annotations

import contextlib
import logging

from boot.context import context_for
from boot.target import targets_from_config
from smemd.cards.manager import CardManager
from smemd.cards.telemetry import Sampler, Telemetry
from smemd.config import Config
from smemd.notify import notify

log = logging.getLogger("smemd.cards")


class Cards:
    """`async with Cards(config) as cards:` the nodes are adopted or booting when it enters."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.targets = targets_from_config(config)
        self.telemetry = Telemetry()
        self.manager: CardManager | None = None
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Cards:
        cards = self.config.cards
        context = context_for(self.config, self.targets)
        lanes = {n.id: n.lanes_in("vca2")[0] for n in self.config.fleet.nodes}
        manager = CardManager(
            self.targets, context, boot=cards.boot, thresholds=cards.thresholds,
            intervals=cards.intervals, lanes=lanes,
        )  # fmt: skip
        try:
            self.manager = await self._stack.enter_async_context(manager)
            links = [await context.link(target) for target in self.targets]
            sampler = Sampler(
                links,
                self.telemetry,
                interval=cards.intervals.telemetry,
                timeout=cards.timeouts.ssh,
            )
            await self._stack.enter_async_context(sampler)
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            if self.manager is not None and self.config.cards.power_off_on_stop:
                log.info("powering %d nodes off", len(self.targets))
                await self.manager.shutdown(extend=_extend_stop)
        finally:
            await self._stack.aclose()

    def lent(self) -> frozenset[str]:
        return self.manager.lent_nodes() if self.manager is not None else frozenset()


def _extend_stop(seconds: float) -> None:
    """systemd would kill us at TimeoutStopSec: ask for the time powering off still needs."""
    notify(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}\nSTATUS=powering nodes off")
