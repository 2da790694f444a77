"""The daemon's life in three awaited phases: startup, run, shutdown.

Signal handlers only set events: the first SIGTERM or SIGINT asks for a graceful stop, a second
SIGINT forces one. Shutdown lets in-flight requests finish until its deadline, then cancels them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sqlite3
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

from aiohttp import web

from smemd import listeners, log
from smemd.api.app import create_app
from smemd.api.state import ApiState
from smemd.config import Config, parse_listen
from smemd.engine.core import EmbedderMismatch, Engine
from smemd.fleet.fleet import Fleet, FleetError
from smemd.lock import AlreadyRunning, StateLock
from smemd.notify import keep_watchdog, notify, watchdog_interval
from smemd.protocol import Listeners


class StartupError(Exception):
    pass


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

    async def serve(self, *, handle_signals: bool = True) -> int:
        """Run until asked to stop; the exit code: 0 after a clean stop, 1 if startup failed."""
        if handle_signals:
            self._install_signal_handlers()
        try:
            await self.startup()
            await self.run()
        except StartupError as err:
            log.daemon.error("%s", err)
            return 1
        finally:
            await self.shutdown()
        return 0

    async def startup(self) -> None:
        notify("STATUS=starting")
        log.quiet_malformed_requests()
        try:
            self._claim_state_dir()
            unix_sock = self._stack.enter_context(self._bound_unix())
            tcp_sock = self._stack.enter_context(contextlib.closing(self._bind_tcp()))
        except (OSError, AlreadyRunning, listeners.ListenerError) as err:
            raise StartupError(str(err)) from err
        await self._start_engine()
        self.state.listeners = Listeners(
            tcp=listeners.tcp_address(tcp_sock), socket=str(self.config.socket)
        )
        # Our own deadline cuts requests first; aiohttp's, a little later, is only a backstop.
        self._runner = web.AppRunner(
            self.app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=self.config.daemon.shutdown_timeout_s + 1,
        )
        await self._runner.setup()
        for sock in (unix_sock, tcp_sock):
            await web.SockSite(self._runner, sock).start()
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
        engine = Engine(
            self.config.state_dir,
            fleet.interactive,
            self.config.engine,
            background=fleet.background,
            reranker=fleet.reranker,
            llm=fleet.background_llm,
        )
        try:
            await engine.start()
        except (OSError, sqlite3.Error) as err:
            raise StartupError(f"cannot open the store in {self.config.state_dir}: {err}") from err
        except EmbedderMismatch as err:
            raise StartupError(str(err)) from err
        self._stack.push_async_callback(engine.stop)
        self.state.engine = engine
        self.state.fleet = fleet
        log.daemon.info(
            "engine ready: %s fleet, embedder %s, store %s",
            fleet.kind,
            fleet.interactive.name,
            engine.store.path,
        )

    async def run(self) -> None:
        await self.should_exit.wait()

    async def shutdown(self) -> None:
        notify("STOPPING=1\nSTATUS=stopping")
        deadline = self.config.daemon.shutdown_timeout_s
        cut = 0
        if self._runner is not None:
            log.daemon.info("stopping; in-flight requests have %.0f s to finish", deadline)
            drain = asyncio.create_task(self._runner.cleanup())
            forced = asyncio.create_task(self.force_exit.wait())
            await asyncio.wait(
                {drain, forced}, timeout=deadline, return_when=asyncio.FIRST_COMPLETED
            )
            forced.cancel()
            if not drain.done():
                cut = len(self.state.in_flight)
                for task in list(self.state.in_flight):
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(drain, timeout=1.0)
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

    def handle_signal(self, signum: int) -> None:
        if self.should_exit.is_set() and signum == signal.SIGINT:
            log.daemon.warning("second interrupt: stopping now")
            self.force_exit.set()
            return
        log.daemon.info("received %s", signal.Signals(signum).name)
        self.should_exit.set()

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.handle_signal, signum)

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


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
