"""A step of bring-up or take-down: named, timed, skipped when already satisfied, failing typed."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec

from boot.context import Context, Timeouts
from boot.target import Target
from smemd.errors import SmemError

log = logging.getLogger("smemd.boot")


class StepFailed(SmemError):
    """A step of the sequence did not reach its goal on a node."""

    status = 503
    code = "boot_step_failed"

    def __init__(self, step: str, node: str, reason: str) -> None:
        super().__init__(f"node {node}: {step}: {reason}")
        self.step, self.node, self.reason = step, node, reason


class Unmet(Exception):
    """Raised inside a step: why it failed, worded for a person; run() adds the step and node."""


Action = Callable[[Target, Context], Awaitable[None]]
Check = Callable[[Target, Context], Awaitable[bool]]


class StepDone(msgspec.Struct, frozen=True):
    step: str
    skipped: bool  # its goal was already met
    seconds: float


@dataclass(frozen=True)
class Step:
    """`action` brings the node to the step's goal; `satisfied`, if given, says it is there already."""

    name: str
    action: Action
    timeout: Callable[[Timeouts], float]
    satisfied: Check | None = None

    async def run(self, target: Target, ctx: Context) -> StepDone:
        limit = self.timeout(ctx.timeouts)
        started = time.monotonic()
        try:
            async with asyncio.timeout(limit):
                if self.satisfied is not None and await self.satisfied(target, ctx):
                    log.info("node %s: %s: already done", target.node, self.name)
                    return StepDone(self.name, True, time.monotonic() - started)
                log.info("node %s: %s", target.node, self.name)
                await self.action(target, ctx)
        except TimeoutError as err:
            raise self._failed(target, f"timed out after {limit:g} s", started) from err
        except (Unmet, SmemError) as err:
            raise self._failed(target, str(err), started) from err
        seconds = time.monotonic() - started
        log.info("node %s: %s: done in %.1f s", target.node, self.name, seconds)
        return StepDone(self.name, False, seconds)

    def _failed(self, target: Target, reason: str, started: float) -> StepFailed:
        seconds = time.monotonic() - started
        log.error("node %s: %s failed after %.1f s: %s", target.node, self.name, seconds, reason)
        return StepFailed(self.name, target.node, reason)


async def run_steps(steps: list[Step], target: Target, ctx: Context) -> list[StepDone]:
    """The steps in order; the first failure ends the sequence for this node."""
    return [await step.run(target, ctx) for step in steps]


async def poll_until(check: Callable[[], Awaitable[bool]], interval: float) -> None:
    """Look again every `interval` s until `check` holds; the caller's timeout bounds it."""
    # ASYNC110: the state lives in vcactl's and the node's hands; there is no event to wait on.
    while not await check():  # noqa: ASYNC110
        await asyncio.sleep(interval)
