"""One long-lived ssh connection to a node: supervised, redialled with backoff, its host key pinned."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
from pathlib import Path

import asyncssh
import msgspec

from smemd.devices.known_hosts import KnownHosts, pattern
from smemd.errors import SmemError

# Named as before the move out of smemd.cards: /v1/log-level and journal filters use the name.
log = logging.getLogger("smemd.cards.ssh")
# asyncssh logs every connection and channel at INFO.
logging.getLogger("asyncssh").setLevel(logging.WARNING)


class SshError(SmemError):
    status = 502
    code = "ssh_error"

    def __init__(self, node: str, problem: str) -> None:
        super().__init__(f"node {node}: {problem}")
        self.node = node


class NodeUnreachable(SshError):
    status = 503
    code = "node_unreachable"


class SshTimeout(SshError):
    status = 504
    code = "ssh_timeout"


class Completed(msgspec.Struct, frozen=True):
    exit_status: int  # -1 when the channel closed without one (killed by a signal)
    stdout: str
    stderr: str


class _Watcher(asyncssh.SSHClient):
    """Keeps why the connection ended."""

    def __init__(self) -> None:
        self.reason = "connection closed"

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self.reason = _describe(exc)


class SshLink:
    """`async with SshLink("node0", "172.31.1.1", known_hosts=path) as link: await link.run(...)`."""

    def __init__(
        self, node: str, host: str, port: int = 22, *, username: str = "root",
        client_keys: list[str] | None = None, known_hosts: Path, keepalive_interval: float = 15.0,
        connect_timeout: float = 10.0, max_sessions: int = 8, backoff_initial: float = 1.0,
        backoff_cap: float = 60.0, backoff_jitter: float = 0.5,
    ) -> None:  # fmt: skip
        self.node, self.host, self.port, self.username = node, host, port, username
        self.client_keys = client_keys  # None: no public key auth (the fake nodes ask for none)
        self.known_hosts = known_hosts
        self.keepalive_interval = keepalive_interval
        self.connect_timeout = connect_timeout
        self.backoff_initial, self.backoff_cap = backoff_initial, backoff_cap
        self.backoff_jitter = backoff_jitter  # a delay is shortened by up to this fraction
        self.last_error = ""  # why it is unreachable; "" while connected
        self._sessions = asyncio.Semaphore(max_sessions)  # below sshd's MaxSessions (10)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._up = asyncio.Event()
        self._wake = asyncio.Event()
        self._suppressed = False
        self._announced: bool | None = None  # the reachability last logged
        self._task: asyncio.Task[None] | None = None

    @property
    def reachable(self) -> bool:
        return self._conn is not None

    @property
    def suppressed(self) -> bool:
        return self._suppressed

    async def __aenter__(self) -> SshLink:
        self._task = asyncio.create_task(self._supervise(), name=f"ssh {self.node}")
        self._task.add_done_callback(self._ended)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        conn = self._conn
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])  # not `await task`: that would swallow our own cancel
            self._task = None
        if conn is not None:  # closed by the supervisor as it ended; let the close finish
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.connect_timeout):
                    await conn.wait_closed()

    def suppress(self, quiet: bool) -> None:
        """Mute the unreachable alarm during a deliberate boot, reboot or poweroff."""
        self._suppressed = quiet

    async def wait_reachable(self, timeout: float) -> bool:  # noqa: ASYNC109
        """Whether the node is connected within `timeout` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._up.wait()
        return self.reachable

    async def reconnect(self) -> None:
        """Drop the connection and redial now, skipping any backoff (after a node reboot)."""
        conn = self._conn
        self._wake.set()
        if conn is not None:
            conn.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.connect_timeout):
                    await conn.wait_closed()

    async def run(self, command: str, timeout: float = 5.0) -> Completed:  # noqa: ASYNC109
        """Run one command; a non-zero exit is a result, not an error."""
        conn = self._conn
        if conn is None:
            raise NodeUnreachable(self.node, self.last_error or "not connected")
        shown = command if len(command) <= 60 else command[:57] + "..."
        try:
            # The limit covers waiting for a session slot and opening the channel too. Leaving
            # create_process's block closes the channel, which conn.run(timeout=) would not.
            async with (
                asyncio.timeout(timeout),
                self._sessions,
                conn.create_process(command, errors="replace") as process,
            ):
                done = await process.wait()
        except TimeoutError as err:
            raise SshTimeout(self.node, f"{shown!r}: no answer within {timeout:g} s") from err
        except (OSError, asyncssh.DisconnectError) as err:
            raise NodeUnreachable(self.node, f"{shown!r}: {_describe(err)}") from err
        except asyncssh.ChannelOpenError as err:
            # OPEN_CONNECT_FAILED: the connection closed under us; other codes are refusals.
            kind = NodeUnreachable if err.code == asyncssh.OPEN_CONNECT_FAILED else SshError
            raise kind(self.node, f"{shown!r}: {_describe(err)}") from err
        except asyncssh.Error as err:
            raise SshError(self.node, f"{shown!r}: {_describe(err)}") from err
        status = -1 if done.exit_status is None else done.exit_status
        return Completed(status, str(done.stdout or ""), str(done.stderr or ""))

    def forget_host_key(self) -> None:
        """Remove this host's pinned key (its image was rebuilt); the next connection pins anew."""
        if KnownHosts(self.known_hosts).forget(self.host, self.port):
            log.info("node %s: forgot the host key of %s", self.node, pattern(self.host, self.port))

    async def _supervise(self) -> None:
        delay = self.backoff_initial
        while True:
            if _cancel_pending():
                raise asyncio.CancelledError
            self._wake.clear()
            try:
                conn, watcher = await self._dial()
            except (OSError, TimeoutError, asyncssh.Error, ValueError) as err:
                # ValueError: an unreadable known_hosts file, retried like the rest.
                self._down(self._explain(err), loud=isinstance(err, asyncssh.HostKeyNotVerifiable))
                woken = await self._pause(delay)
                delay = self.backoff_initial if woken else min(delay * 2, self.backoff_cap)
                continue
            if _cancel_pending():  # else the wait below, for a connection nobody closes
                conn.close()
                raise asyncio.CancelledError
            delay = self.backoff_initial
            self._publish(conn)
            try:
                await conn.wait_closed()
            finally:
                self._conn = None
                self._up.clear()
                conn.close()
            self._down(watcher.reason)

    async def _dial(self) -> tuple[asyncssh.SSHClientConnection, _Watcher]:
        known = KnownHosts(self.known_hosts)
        pinned = known.pinned(self.host, self.port)
        watcher = _Watcher()
        conn = await asyncssh.connect(
            self.host, self.port, username=self.username, client_keys=self.client_keys,
            known_hosts=pinned,  # None: any key, this once
            agent_path=None, config=None, client_factory=lambda: watcher,
            keepalive_interval=self.keepalive_interval, keepalive_count_max=3,
            connect_timeout=self.connect_timeout, login_timeout=self.connect_timeout,
        )  # fmt: skip
        key = conn.get_server_host_key()
        if pinned is None and key is not None:  # trust on first use, and remember
            try:
                known.remember(self.host, self.port, key)
            except OSError:
                conn.close()
                raise
            log.info("node %s: pinned host key %s on first use", self.node, key.get_fingerprint())
        return conn, watcher

    async def _pause(self, delay: float) -> bool:
        """Sleep `delay` less some jitter; True if reconnect() cut it short."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay * (1 - self.backoff_jitter * random.random())):
                await self._wake.wait()
        return self._wake.is_set()

    def _ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (err := task.exception()) is not None:
            self.last_error = f"ssh supervisor failed: {_describe(err)}"
            log.error("node %s: %s", self.node, self.last_error, exc_info=err)

    def _publish(self, conn: asyncssh.SSHClientConnection) -> None:
        self._conn = conn
        self.last_error = ""
        self._up.set()
        if self._announced is not True:
            log.info("node %s: ssh reachable at %s:%d", self.node, self.host, self.port)
        self._announced = True

    def _down(self, reason: str, *, loud: bool = False) -> None:
        if loud and reason != self.last_error:
            log.error("node %s: %s", self.node, reason)  # never muted: it may be an impostor
        elif self._announced is not False:
            level = logging.INFO if self._suppressed else logging.WARNING
            log.log(level, "node %s: ssh unreachable: %s", self.node, reason)
        self._announced = False
        self.last_error = reason

    def _explain(self, err: Exception) -> str:
        if isinstance(err, asyncssh.HostKeyNotVerifiable):
            return (
                f"host key mismatch: {pattern(self.host, self.port)} does not present the key "
                f"pinned in {self.known_hosts} (forget_host_key() if its image was rebuilt)"
            )
        return f"{self.host}:{self.port}: {_describe(err)}"


def _describe(err: BaseException) -> str:
    if isinstance(err, OSError) and err.errno is not None:
        return os.strerror(err.errno)  # asyncio's "[Errno 111] Connect call failed (...)" says less
    if isinstance(err, TimeoutError):
        return "timed out"
    return str(err) or type(err).__name__


def _cancel_pending() -> bool:
    """Whether this task was asked to stop, though no CancelledError came: Python 3.11's wait_for
    (asyncssh's connect timeout) swallows a cancel that lands as the connect ends and returns its
    result; the request stays counted. Unhonoured, the link's close would wait forever."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
