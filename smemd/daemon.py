"""The daemon's life in three awaited phases: startup, run, shutdown.

Signal handlers only set events: the first SIGTERM or SIGINT asks for a graceful stop, a second
of either forces one, and the process ends within FORCED_EXIT_S of it whatever is left.
Shutdown lets in-flight requests finish until its deadline, then cancels them; requests that
arrive meanwhile are refused, and only then are the connections closed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

from aiohttp import web

from smemd import connections, listeners, log
from smemd.api.app import create_app
from smemd.api.state import ApiState
from smemd.backup.snapshot import clear_interrupted
from smemd.config import Config, parse_listen
from smemd.engine.core import EmbedderMismatch, Engine
from smemd.errors import StorageFull, StorageUnavailable
from smemd.fleet.assembly import Fleet, FleetError
from smemd.lock import AlreadyRunning, StateLock
from smemd.notify import keep_watchdog, notify, watchdog_interval
from smemd.protocol import Listeners
from smemd.store.opening import StoreRefused, configured_store

# After the drain, how long a connection may take to end: the rest of a refused request's body
# to arrive, a reply to be written out. A client that stalls must not stretch the stop.
CLOSE_GRACE_S = 0.25
# After a second signal, how long the rest of the stop may take before the process just ends.
FORCED_EXIT_S = 2.0


class StartupError(Exception):
    """The daemon cannot start; `exit_code` 2 when only a change of its configuration can help."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Daemon:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.state = ApiState(config=config)
        self.app = create_app(self.state)
        self.should_exit = asyncio.Event()
        self.force_exit = asyncio.Event()
        self.addr_file = config.state_dir / "smemd.addr"
        self._stack = contextlib.AsyncExitStack()
        self._runner: web.AppRunner | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._listeners: list[connections.Listener] = []
        self._owns_process = False  # serving a real process's signals, not a test's loop

    async def serve(self, *, handle_signals: bool = True) -> int:
        """Run until asked to stop; the exit code: 0 after a clean stop, 1 if startup failed."""
        if handle_signals:
            self._install_signal_handlers()
        try:
            await self.startup()
            await self.run()
        except StartupError as err:
            log.daemon.error("%s", err)
            return err.exit_code
        finally:
            await self.shutdown()
        return 0

    async def startup(self) -> None:
        notify("STATUS=starting")
        log.quiet_malformed_requests()
        try:
            self._claim_state_dir()
            clear_interrupted(self.config.state_dir)  # a backup cut off by a kill
            unix_sock = self._stack.enter_context(self._bound_unix())
            tcp_sock = self._stack.enter_context(contextlib.closing(self._bind_tcp()))
        except (OSError, AlreadyRunning, listeners.ListenerError) as err:
            raise StartupError(str(err)) from err
        await self._start_engine()
        self.state.listeners = Listeners(
            tcp=listeners.tcp_address(tcp_sock), socket=str(self.config.socket)
        )
        # Each connection is aiohttp's handler with these options (see smemd.connections); the
        # idle timeout is its keep-alive timeout.
        options: dict[str, Any] = {
            "access_log": None,
            "keepalive_timeout": self.config.api.idle_timeout_s,
        }
        # Requests get their time in our own drain (shutdown-timeout-s); aiohttp's shutdown
        # comes after it and only waits, briefly, for replies still being written.
        self._runner = web.AppRunner(
            self.app, handle_signals=False, shutdown_timeout=CLOSE_GRACE_S, **options
        )
        await self._runner.setup()
        assert self._runner.server is not None
        limit = connections.raise_descriptor_limit()
        cap = connections.connection_cap(self.config.api.max_connections, 2, limit)
        for name, sock in (("socket", unix_sock), ("tcp", tcp_sock)):
            serve = connections.aiohttp_connections(self._runner.server, **options)
            listener = connections.Listener(sock, serve, cap)
            listener.start()
            self._listeners.append(listener)
            self.state.connections[name] = listener
        self._write_addr_file()
        log.daemon.info(
            "listening on http://%s and %s", self.state.listeners.tcp, self.config.socket
        )
        notify(f"READY=1\nSTATUS=serving on {self.state.listeners.tcp} and {self.config.socket}")
        interval = watchdog_interval()
        if interval is not None:
            self._spawn(keep_watchdog(interval))

    async def _start_engine(self) -> None:
        """The fleet and the store open, and unfinished jobs resume, before anyone can connect."""
        notify("STATUS=loading models")
        try:
            fleet = await self._stack.enter_async_context(Fleet(self.config))
        except FleetError as err:
            raise StartupError(str(err)) from err
        chosen = self.config.store
        store = configured_store(
            chosen.kind,
            self.config.state_dir,
            dsn=chosen.dsn,
            pool_size=chosen.pool_size,
            statement_timeout_s=chosen.statement_timeout_s,
        )
        engine = Engine(
            store,
            self.config.state_dir,
            fleet.interactive,
            self.config.engine,
            background=fleet.background,
            reranker=fleet.reranker,
            llm=fleet.background_llm,
            ingest=self.config.ingest,
        )
        try:
            await engine.start()
        except (OSError, StorageFull, StorageUnavailable) as err:
            raise StartupError(f"cannot open the store {store.location}: {err}") from err
        except StoreRefused as err:
            raise StartupError(f"cannot use the store {store.location}: {err}", 2) from err
        except EmbedderMismatch as err:
            raise StartupError(str(err)) from err
        self._stack.push_async_callback(engine.stop)
        self.state.engine = engine
        self.state.fleet = fleet
        self.state.metrics.attach(engine, fleet, self.config.state_dir)
        log.daemon.info(
            "engine ready: %s fleet, embedder %s, store %s",
            fleet.kind,
            fleet.interactive.name,
            engine.store.location,
        )

    async def run(self) -> None:
        await self.should_exit.wait()

    async def shutdown(self) -> None:
        notify("STOPPING=1\nSTATUS=stopping")
        cut = 0
        if self._runner is not None:
            cut = await self._drain(self._runner)
            self._runner = None
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._stack.aclose()
        # Closed now; and aiohttp caches each application's middleware chain for the process's
        # life, so a state still holding them would keep the models loaded (in-process tests).
        self.state.engine = self.state.fleet = None
        if cut:
            log.daemon.warning(
                "stopped; cancelled %d request(s) still running at the deadline", cut
            )
        else:
            log.daemon.info("stopped")

    async def _drain(self, runner: web.AppRunner) -> int:
        """Stop listening, give running requests until the deadline, then close the connections;
        the number of requests cancelled at the deadline."""
        # From here the observe middleware refuses whatever reaches it: only the requests
        # already running can hold the stop, however many clients keep sending.
        self.state.is_stopping = True
        deadline = self.config.daemon.shutdown_timeout_s
        log.daemon.info("stopping; in-flight requests have %.0f s to finish", deadline)
        for listener in self._listeners:
            listener.close()
        for listener in self._listeners:
            await listener.settled()
        # Requests first, connections after. aiohttp's cleanup marks every connection closing
        # before it waits, and a closing connection drops what it reads: a request whose body
        # was still on its way (headers in one packet, body in the next) would wait for it
        # until the deadline.
        is_forced = await self._wait_unless_forced(_all_done(self.state.in_flight), deadline)
        cut = len(self.state.in_flight)
        for task in list(self.state.in_flight):
            task.cancel()
        if not is_forced:
            # A request refused meanwhile has had its 503; its connection closes once aiohttp
            # has read and dropped the rest of its body: at once, unless the client stalls.
            await self._wait_unless_forced(_all_done(self.state.refused), CLOSE_GRACE_S)
        for connection in list(self.state.refused):
            connection.cancel()  # aiohttp closes a connection whose task is cancelled
        await runner.cleanup()
        return cut

    async def _wait_unless_forced(self, work: Coroutine[Any, Any, None], limit_s: float) -> bool:
        """Await `work` for at most `limit_s`, or until a forced stop; True if forced."""
        done = asyncio.create_task(work)
        forced = asyncio.create_task(self.force_exit.wait())
        await asyncio.wait({done, forced}, timeout=limit_s, return_when=asyncio.FIRST_COMPLETED)
        done.cancel()
        forced.cancel()
        return self.force_exit.is_set()

    def handle_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.should_exit.is_set():
            log.daemon.warning("%s again: stopping now", name)
            self.force_exit.set()
            if self._owns_process:
                # Whatever the stop is still waiting on (a card powering off, a store that
                # hangs), the process ends within this grace.
                timer = threading.Timer(FORCED_EXIT_S, _exit_now)
                timer.daemon = True
                timer.start()
            return
        log.daemon.info("received %s", name)
        self.should_exit.set()

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.handle_signal, signum)
        # At its end asyncio.run waits for every thread of the default executor, with no bound
        # on Python 3.11: a model batch or a graph build in one would hold the stop. This one
        # lets them go; main() then gives them a moment and exits past them.
        loop.set_default_executor(_AbandoningExecutor())
        self._owns_process = True

    def _claim_state_dir(self) -> None:
        self.config.state_dir.mkdir(parents=True, exist_ok=True, mode=listeners.DIR_MODE)
        lock = StateLock(self.config.state_dir)
        lock.acquire()
        self._stack.callback(lock.release)

    @contextlib.contextmanager
    def _bound_unix(self) -> Iterator[socket.socket]:
        path = self.config.socket
        sock = listeners.bind_unix(path, self.config.api.socket_group)
        try:
            yield sock
        finally:
            sock.close()
            listeners.remove_unix(path)

    def _bind_tcp(self) -> socket.socket:
        host, port = parse_listen(self.config.api.listen)
        return listeners.bind_tcp(host, port)

    def _write_addr_file(self) -> None:
        """Tell scripts and tests which port was bound (useful when port 0 was asked for)."""
        tmp = self.addr_file.with_suffix(".addr.tmp")
        tmp.write_text(self.state.listeners.tcp + "\n")
        os.replace(tmp, self.addr_file)
        self._stack.callback(_unlink, self.addr_file)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._tasks.add(asyncio.create_task(coro))


class _AbandoningExecutor(concurrent.futures.ThreadPoolExecutor):
    """The default executor, whose shutdown never waits for work still in its threads."""

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=False, cancel_futures=True)


def _exit_now() -> None:
    log.daemon.error("forced stop: exiting now, %.0f s after the second signal", FORCED_EXIT_S)
    logging.shutdown()
    os._exit(1)


async def _all_done(tasks: set[asyncio.Task[Any]]) -> None:
    """Until `tasks`, a set that others add to and discard from, is empty.

    During the stop nothing joins in_flight, and only connections that were open before it can
    add to refused, once each (refusals close their connection): both sets only run down.
    """
    while tasks:
        await asyncio.wait(set(tasks))


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
