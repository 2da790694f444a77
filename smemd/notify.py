"""The systemd notify protocol, without a dependency: one datagram per message; and the
watchdog, fed only while the event loop answers."""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import threading
import time

from smemd import log

_warned = False


def notify(message: str) -> None:
    """Send `message` (e.g. READY=1) to $NOTIFY_SOCKET if systemd gave us one."""
    global _warned
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):  # abstract namespace
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message.encode())
    except OSError as err:
        if not _warned:
            log.daemon.warning("cannot notify systemd at %s: %s", address.lstrip("\0"), err)
            _warned = True


def watchdog_interval() -> float | None:
    """Seconds between WATCHDOG=1 pings (half of WATCHDOG_USEC), or None when not asked for."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    if pid and pid != str(os.getpid()):  # meant for another process of the unit
        return None
    return int(usec) / 2 / 1_000_000


async def keep_watchdog(interval: float) -> None:
    """Feed the watchdog (see Watchdog) until cancelled."""
    watchdog = Watchdog(asyncio.get_running_loop(), interval)
    watchdog.start()
    try:
        await asyncio.Future()  # until cancelled
    finally:
        watchdog.stop()


class Watchdog:
    """WATCHDOG=1 every `interval`, each only after the event loop has run, within that
    interval, a probe put on it from this thread. A loop blocked longer (a CPU-bound call, a
    read of a dead disk) stops the pings, and systemd restarts smemd once WatchdogSec passes
    without one; the thread also logs the stall, which the blocked loop itself could not."""

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float) -> None:
        self.loop = loop
        self.interval = interval
        self._answered = 0  # the last probe the loop has run
        self._should_stop = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._feed, name="smemd-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._changed:
            self._should_stop = True
            self._changed.notify()
        self._thread.join()

    def _feed(self) -> None:
        probe = 0
        stalled_since: float | None = None  # when the loop last failed to answer in time
        while True:
            probe += 1
            sent = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(self._answer, probe)
            except RuntimeError:  # the loop is closed: nothing left to watch
                return
            with self._changed:
                is_answered = self._changed.wait_for(
                    functools.partial(self._is_answered, probe), self.interval
                )
                if self._should_stop:
                    return
            if is_answered:
                notify("WATCHDOG=1")
                if stalled_since is not None:
                    log.daemon.warning(
                        "event loop answers again after %.1f s", time.monotonic() - stalled_since
                    )
                    stalled_since = None
            elif stalled_since is None:
                stalled_since = sent
                log.daemon.error(
                    "event loop has not answered for %g s: the watchdog is not fed",
                    self.interval,
                )
            with self._changed:
                rest = sent + self.interval - time.monotonic()
                if self._changed.wait_for(lambda: self._should_stop, max(rest, 0.0)):
                    return

    def _is_answered(self, probe: int) -> bool:
        return self._should_stop or self._answered >= probe

    def _answer(self, probe: int) -> None:
        """On the loop: it runs."""
        with self._changed:
            self._answered = probe
            self._changed.notify()
