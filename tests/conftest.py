"""Fixtures that run the real daemon: as a subprocess, and in-process on the test's event loop."""

from __future__ import annotations

import faulthandler
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web, web_app

from smemd.config import Config, load
from smemd.daemon import Daemon
from tests import leftover_threads, postgres
from tests.daemon_process import DaemonProcess
from tests.pace import pace

# The suites that run once per store backend (the rest run on SQLite): those whose behaviour
# lives in the store.
BACKEND_SUITES = frozenset({
    "test_index_changes", "test_entities", "test_entity_aliases",
    "test_namespace_removal", "test_retraction", "test_tenancy", "test_valid_time",
    "test_memory_api", "test_sdk", "test_sdk_more", "test_reconcile", "test_derives",
    "test_overview", "test_profile", "test_search_entity", "test_graph", "test_review",
    "test_dreaming", "test_legacy_v4", "test_large_documents", "test_query_windows",
    "test_smemctl_memory", "test_smemctl_entities", "test_console_memories",
    "test_namespace_keys", "test_export", "test_import", "test_import_histories", "test_undo",
    "test_rederive", "test_turn_context", "test_recall_speakers", "test_chat_logs",
    "test_chat_log_times",
})  # fmt: skip


def pytest_report_header(config: pytest.Config) -> str:
    return f"machine pace: {pace():.2f} (hang guards multiplied by it; tests/pace.py)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test's hang guard (pytest-timeout's: its marker's, or the configured default) at
    this machine's pace, so a busy machine slows the run without failing it."""
    factor = pace()
    if factor == 1.0:
        return
    default = float(config.getini("timeout") or 0)
    for item in items:
        marker = item.get_closest_marker("timeout")
        given = marker.args[0] if marker and marker.args else default
        if given:  # 0: no guard, which stays none
            item.add_marker(pytest.mark.timeout(float(given) * factor), append=False)


# Per module, the threads running when its first test began: a module's fixtures may outlive
# one test, never the module.
_threads_at_module_start: dict[str, set[threading.Thread]] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    _threads_at_module_start.setdefault(item.nodeid.split("::")[0], leftover_threads.running())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A module that leaves a thread running, which would keep the run from exiting, fails at
    its last test's teardown (tests.leftover_threads)."""
    yield
    module = item.nodeid.split("::")[0]
    if nextitem is None or nextitem.nodeid.split("::")[0] != module:
        left = leftover_threads.left_since(_threads_at_module_start.pop(module, set()))
        if left is not None:
            pytest.fail(f"{module}: {left}", pytrace=False)


EXIT_LIMIT_S = 120


def pytest_unconfigure(config: pytest.Config) -> None:
    """Should the exit still hang (a thread no module started), it ends after EXIT_LIMIT_S
    with every thread's stack written out, not at CI's limit with no word of why."""
    faulthandler.dump_traceback_later(EXIT_LIMIT_S, exit=True)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__.rpartition(".")[2] in BACKEND_SUITES:
        # By module: a module's shared daemon (`daemon`, `process_config`) is made once per
        # backend, and the module's tests run on one backend, then on the other.
        metafunc.parametrize("store_backend", ["sqlite", "postgres"], indirect=True, scope="module")


@pytest.fixture(autouse=True)
def forget_apps() -> Iterator[None]:
    """After each test, aiohttp's memo of middleware chains is emptied: it keeps up to 1,024 of
    them for the life of the process, each holding its application, and with it an in-process
    daemon's whole engine and models (the suite grew past 20 GB without this)."""
    yield
    memo = getattr(web_app, "_cached_build_middleware", None)  # aiohttp's own, not public
    if memo is not None:
        memo.cache_clear()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[postgres.Server]:
    yield from postgres.start()


@pytest.fixture(scope="module")
def store_backend(request: pytest.FixtureRequest) -> str:
    """The store this module's tests run on: SQLite, or PostgreSQL for `BACKEND_SUITES`."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture(autouse=True)
def store_database(store_backend: str, request: pytest.FixtureRequest) -> Iterator[None]:
    """On PostgreSQL, a fresh database for the test's in-process daemons (`make_config`,
    `config_with_tokens` name it)."""
    if store_backend == "sqlite":
        yield
        return
    server: postgres.Server = request.getfixturevalue("postgres_server")
    dsn = server.database()
    postgres.store_settings.update({("store", "kind"): "postgres", ("store", "dsn"): dsn})
    try:
        yield
    finally:
        postgres.store_settings.clear()
        server.drop(dsn)


@pytest.fixture(scope="module")
def process_config(store_backend: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """The `[store]` table for a module's daemon process: '' on SQLite, else a database of the
    module's own."""
    if store_backend == "sqlite":
        yield ""
        return
    server: postgres.Server = request.getfixturevalue("postgres_server")
    dsn = server.database()
    try:
        yield f'[store]\nkind = "postgres"\ndsn = "{dsn}"\n'
    finally:
        server.drop(dsn)


def config_for_process(state_dir: Path, store_table: str) -> Path | None:
    """A config file holding `store_table` for a DaemonProcess in `state_dir` (None if '')."""
    if not store_table:
        return None
    path = state_dir / "smemd.toml"
    path.write_text(store_table)
    return path


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A temp dir with a short path: a Unix socket path must fit in 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="smem-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def make_config(state_dir: Path, **settings: Any) -> Config:
    """A test config that reads nothing from /etc or the environment; `api__token=...` sets it."""
    overrides = {
        ("paths", "state-dir"): str(state_dir),
        ("paths", "socket"): str(state_dir / "smemd.sock"),
        ("api", "listen"): "127.0.0.1:0",
        **postgres.store_settings,
    }
    for name, value in settings.items():
        section, key = name.split("__")
        overrides[section, key.replace("_", "-")] = value
    return load(Path(os.devnull), env={}, overrides=overrides)


def config_with_tokens(state_dir: Path, api: str = "") -> Config:
    """A test config read from a file, as smemd reads one: `make_config`'s paths and port 0, then
    `api`: the `[api]` table's further keys and any `[[api.tokens]]` tables (see `token_table`)."""
    toml = state_dir / "smemd.toml"
    toml.write_text(
        f'[paths]\nstate-dir = "{state_dir}"\nsocket = "{state_dir / "smemd.sock"}"\n'
        f'[api]\nlisten = "127.0.0.1:0"\n{api}\n{postgres.store_table()}'
    )
    return load(toml, env={})


def token_table(
    name: str, secret: str, role: str = "write", namespaces: Sequence[str] = ("*",)
) -> str:
    """One `[[api.tokens]]` entry, for `config_with_tokens`."""
    listed = ", ".join(f'"{n}"' for n in namespaces)
    return (
        f'[[api.tokens]]\nname = "{name}"\ntoken = "{secret}"\nrole = "{role}"\n'
        f"namespaces = [{listed}]\n"
    )


class Running:
    """An in-process daemon with a client on each listener."""

    def __init__(self, daemon: Daemon, unix: aiohttp.ClientSession, tcp: aiohttp.ClientSession):
        self.daemon = daemon
        self.unix = unix
        self.tcp = tcp
        self.base = f"http://{daemon.state.listeners.tcp}"

    def url(self, path: str) -> str:
        return self.base + path


StartDaemon = Callable[..., Awaitable[Running]]


@pytest.fixture
async def start_daemon(short_dir: Path) -> AsyncIterator[StartDaemon]:
    """Start in-process daemons with the given settings; all are stopped at the end of the test."""
    started: list[tuple[Daemon, list[aiohttp.ClientSession]]] = []

    async def start(
        config: Config | None = None, routes: Sequence[web.RouteDef] = (), **settings: Any
    ) -> Running:
        """`routes` are added beside the real ones, for behaviour no real route has yet."""
        daemon = Daemon(config or make_config(short_dir, **settings))
        daemon.app.router.add_routes(routes)
        await daemon.startup()
        unix = aiohttp.ClientSession(
            connector=aiohttp.UnixConnector(path=str(daemon.config.socket))
        )
        tcp = aiohttp.ClientSession()
        started.append((daemon, [unix, tcp]))
        return Running(daemon, unix, tcp)

    yield start
    for daemon, sessions in started:
        for session in sessions:
            await session.close()
        await daemon.shutdown()


@pytest.fixture
async def running(start_daemon: StartDaemon) -> Running:
    return await start_daemon()


@pytest.fixture(scope="module")
def daemon(process_config: str) -> Iterator[DaemonProcess]:
    """One real daemon process shared by a module's tests (it loads a model: starting is slow)."""
    state_dir = Path(tempfile.mkdtemp(prefix="smem-"))
    process = DaemonProcess(state_dir, config_for_process(state_dir, process_config)).start()
    yield process
    process.kill()
    shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture
def daemon_process(short_dir: Path) -> Iterator[DaemonProcess]:
    process = DaemonProcess(short_dir)
    yield process
    process.kill()


def can_connect(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True
