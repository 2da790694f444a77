"""How fast this machine runs Python now, beside the quiet 2-core machine the suite's time bounds
were set on: hang guards (pytest-timeout's, a wait's) and a test's bounds on how long something
may take are multiplied by it, so a machine busy with other work slows the run without failing
it, and a hang still fails it.

The pace is one CPU-bound loop timed a few times (the median: a loaded scheduler gives uneven
slices), over its time on that quiet machine, between 1 and `MAX_PACE`; `SMEM_TEST_PACE` sets
it instead.
"""

from __future__ import annotations

import functools
import os
import statistics
import time

QUIET_LOOP_S = 0.12  # `_loop` on the quiet machine (2 cores, nothing else running)
SAMPLES = 7
MAX_PACE = 4.0  # past this a machine is not busy but stuck: the bounds keep their meaning


def _loop() -> float:
    started = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i * i % 7
    return time.perf_counter() - started


@functools.cache
def pace() -> float:
    """How many times slower than the quiet machine this one runs now (1 or more)."""
    if given := os.environ.get("SMEM_TEST_PACE"):
        return max(1.0, float(given))
    measured = statistics.median(_loop() for _ in range(SAMPLES))
    return min(MAX_PACE, max(1.0, measured / QUIET_LOOP_S))


def scaled(seconds: float) -> float:
    """A hang guard of `seconds` on the quiet machine, at this machine's pace."""
    return seconds * pace()
