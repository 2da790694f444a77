"""No test may leave a thread running that keeps the process from exiting.

Python joins every non-daemon thread before it exits: one left waiting (an aiosqlite
connection never closed waits on its queue forever) hangs the run after its summary, until
CI's own limit ends it with no word of why. So each test module is checked at its end (its
fixtures may outlive a test, never the module), and the one that left such a thread fails,
naming the thread and where it waits.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback

GRACE_S = 5.0  # a thread told to stop (a connection's close) may take a moment to end


def running() -> set[threading.Thread]:
    """The threads the process would wait for at its exit."""
    main = threading.main_thread()
    return {t for t in threading.enumerate() if not t.daemon and t is not main}


def left_since(before: set[threading.Thread]) -> str | None:
    """What the threads started since `before` and still running after the grace wait are
    doing, or None if there are none."""
    started = running() - before
    until = time.monotonic() + GRACE_S
    for thread in started:
        thread.join(max(0.0, until - time.monotonic()))
    left = [t for t in started if t.is_alive()]
    if not left:
        return None
    frames = sys._current_frames()
    told = []
    for thread in left:
        frame = frames.get(thread.ident or 0)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no frame)\n"
        told.append(f"{thread.name}, waiting at:\n{stack}")
    return "threads left running, which the process would wait for at its exit:\n" + "".join(told)
