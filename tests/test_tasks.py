"""Stopping background tasks (smemd.tasks.stop): each ends, an error is not lost, and a stop
cut short is cut short."""

from __future__ import annotations

import asyncio

import pytest

from smemd.tasks import stop
from tests.pace import scaled


async def _slow_to_end(tidied: asyncio.Event, done_tidying: asyncio.Event) -> None:
    """A task that, asked to stop, tidies up (a process to reap, a file to close) until
    `done_tidying` is set, then sets `tidied` and ends."""
    try:
        await asyncio.sleep(3600)
    finally:
        await done_tidying.wait()
        tidied.set()


def _released() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


async def test_every_task_given_is_cancelled_and_ended_when_stop_returns() -> None:
    tidied = [asyncio.Event() for _ in range(3)]
    tasks = [asyncio.create_task(_slow_to_end(e, _released())) for e in tidied]
    await asyncio.sleep(0)
    await stop(*tasks)
    assert all(task.cancelled() for task in tasks)
    assert all(e.is_set() for e in tidied)


async def test_nothing_to_stop_is_no_error() -> None:
    await stop()


async def test_an_error_a_task_ended_with_is_raised_after_the_others_ended() -> None:
    async def fails() -> None:
        raise RuntimeError("sampler broke")

    broken = asyncio.create_task(fails())
    tidied = asyncio.Event()
    slow = asyncio.create_task(_slow_to_end(tidied, _released()))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="sampler broke"):
        await stop(broken, slow)
    assert slow.cancelled() and tidied.is_set()


async def test_a_stop_cut_short_by_its_own_timeout_ends_at_the_timeout() -> None:
    # The old way (`task.cancel(); await task` under suppress(CancelledError)) swallowed the
    # timeout's cancel with the task's and waited for the task however long it took.
    tidied, done_tidying = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(_slow_to_end(tidied, done_tidying))
    await asyncio.sleep(0)
    try:
        async with asyncio.timeout(scaled(5.0)):  # a hang fails here, not at the suite's guard
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.1):
                    await stop(task)
    finally:
        done_tidying.set()
    assert not tidied.is_set()  # the stop gave up; the task ends in its own time
    await asyncio.wait([task])
    assert task.cancelled() and tidied.is_set()


async def test_a_caller_cancelled_while_it_stops_a_task_is_cancelled_and_goes_no_further() -> None:
    tidied, done_tidying = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(_slow_to_end(tidied, done_tidying))
    went_on = asyncio.Event()

    async def shut_down() -> None:
        await stop(task)
        went_on.set()

    caller = asyncio.create_task(shut_down())
    await asyncio.sleep(0.05)
    caller.cancel()
    await asyncio.wait([caller], timeout=scaled(5.0))
    done_tidying.set()
    await asyncio.wait([task])
    assert caller.cancelled()
    assert not went_on.is_set()
