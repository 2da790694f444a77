"""The systemd notify protocol, without a dependency: one datagram per message."""

from __future__ import annotations

import asyncio
import os
import socket

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
    """Ping from the event loop itself, so a blocked loop stops the pings and systemd notices."""
    while True:
        notify("WATCHDOG=1")
        await asyncio.sleep(interval)
