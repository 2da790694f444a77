"""This daemon among the daemons on one store: its name in job leases and its heartbeat.

A daemon's name is its host and a hash of its state dir, the same across its restarts (so a
restarted daemon takes its own leases back at once) and different for two daemons on one host
(each has a state dir of its own: the state dir's lock sees to that). Every `BEAT_S` it writes
its row in `daemons`; `/v1/status` lists the daemons heard from within `SEEN_S`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
import time
from pathlib import Path

from smemd import __version__
from smemd.errors import SmemError
from smemd.store.protocol import Store
from smemd.store.records import Peer

log = logging.getLogger("smemd.engine")

BEAT_S = 5.0
SEEN_S = 30.0  # a daemon not heard from for this long is no longer listed
FORGOTTEN_S = 7 * 86400.0  # and after this long its row goes


def daemon_name(state_dir: Path) -> str:
    digest = hashlib.blake2b(str(state_dir.resolve()).encode(), digest_size=4).hexdigest()
    return f"{socket.gethostname()}:{digest}"


class Peers:
    def __init__(self, store: Store, state_dir: Path) -> None:
        self.store = store
        self.me = Peer(
            id=daemon_name(state_dir), host=socket.gethostname(), pid=os.getpid(),
            version=__version__, started_at=time.time(), seen_at=time.time(),
        )  # fmt: skip

    async def beat(self) -> None:
        """Forever: say this daemon is here."""
        while True:
            self.me.seen_at = time.time()
            try:
                async with self.store.write() as writer:
                    await writer.heartbeat(self.me)
                    await writer.forget_peers(time.time() - FORGOTTEN_S)
            except SmemError as err:  # the store is away: the next beat tries again
                log.debug("heartbeat not written: %s", err)
            await asyncio.sleep(BEAT_S)

    async def others(self) -> list[Peer]:
        """The other daemons on the store heard from lately."""
        async with self.store.read() as reader:
            seen = await reader.peers(time.time() - SEEN_S)
        return [peer for peer in seen if peer.id != self.me.id]
