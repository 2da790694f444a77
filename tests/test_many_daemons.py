"""Several smemd on one PostgreSQL database, as real processes: one memory served by all, jobs
taken over from a daemon killed mid-ingest and finished exactly once, updates to the same facts
from two daemons at once kept as one chain, each daemon naming the others in its status."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from smemd.engine.ingest.worker import LEASE_S
from tests import postgres
from tests.daemon_process import DaemonProcess
from tests.pace import scaled
from tests.test_cards_daemon import call

NS = "team"


@pytest.fixture
def dsn(postgres_server: postgres.Server) -> Iterator[str]:
    dsn = postgres_server.database()
    yield dsn
    postgres_server.drop(dsn)


@contextlib.contextmanager
def daemons(dsn: str, root: Path, count: int) -> Iterator[list[DaemonProcess]]:
    started: list[DaemonProcess] = []
    try:
        for i in range(count):
            state = root / f"d{i}"
            state.mkdir()
            config = state / "smemd.toml"
            config.write_text(f'[store]\nkind = "postgres"\ndsn = "{dsn}"\n')
            started.append(DaemonProcess(state, config).start(["--log-level", "warning"]))
        yield started
    finally:
        for daemon in started:
            if daemon.proc is not None and daemon.proc.poll() is None:
                daemon.stop()


def add(daemon: DaemonProcess, content: str, namespace: str = NS, **fields: Any) -> str:
    status, body = call(daemon, "POST", f"/ns/{namespace}/document", {"content": content, **fields})
    assert status == 200, body
    return str(body["id"])


def open_jobs(dsn: str) -> int:
    with postgres.connect(dsn) as db:
        return postgres.count(
            db, "SELECT count(*) FROM jobs WHERE phase NOT IN ('done', 'failed')", []
        )


def settle(dsn: str, timeout: float) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while open_jobs(dsn) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert open_jobs(dsn) == 0, "jobs still open"


def one_latest_per_chain(dsn: str) -> None:
    with postgres.connect(dsn) as db:
        chains = db.execute(
            "SELECT root_id, sum(is_latest) FROM memories GROUP BY root_id"
        ).fetchall()
        assert chains and all(latest == 1 for _, latest in chains), chains
        twice = db.execute(
            "SELECT namespace, text, count(*) FROM memories WHERE is_latest = 1"
            " GROUP BY namespace, text HAVING count(*) > 1"
        ).fetchall()
        assert twice == [], twice


def test_two_daemons_serve_one_memory_and_name_each_other(dsn: str, short_dir: Path) -> None:
    with daemons(dsn, short_dir, 2) as (a, b):
        add(a, "Priya maintains the billing service in Go.")
        settle(dsn, 30)
        started = time.monotonic()  # what one daemon acknowledged, another finds
        status, body = call(b, "POST", f"/ns/{NS}/search", {"query": "who maintains billing?"})
        assert status == 200 and "billing" in body["results"][0]["memory"], body
        assert time.monotonic() - started < scaled(1.0)
        status, body = call(a, "GET", "/v1/status")
        assert status == 200
        store = body["store"]
        assert store["daemon"] and [p["pid"] for p in store["peers"]] == [b.proc.pid]  # type: ignore[union-attr]


def test_a_daemon_killed_mid_ingest_leaves_its_jobs_to_the_other(dsn: str, short_dir: Path) -> None:
    with daemons(dsn, short_dir, 2) as (a, _):
        for i in range(24):  # queued through the daemon about to die: its worker leases them
            add(
                a, f"Project {i} is owned by team {i % 5} and ships in week {i + 10}.", f"ns{i % 4}"
            )
        with postgres.connect(dsn) as db:  # wait until the doomed daemon holds some
            for _ in range(100):
                held = postgres.count(db, "SELECT count(*) FROM jobs WHERE leased_by IS NOT NULL"
                                      " AND phase NOT IN ('done', 'failed')", [])  # fmt: skip
                if held:
                    break
                time.sleep(0.05)
        assert a.proc is not None
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait()
        settle(dsn, LEASE_S + 40)  # the dead daemon's leases expire, then the other works them
        with postgres.connect(dsn) as db:
            assert postgres.count(db, "SELECT count(*) FROM jobs WHERE phase = 'done'", []) == 24
            assert (
                postgres.count(db, "SELECT count(*) FROM documents WHERE status <> 'done'", []) == 0
            )
            # Each fact once: reconciled once per document, not again by the daemon taking over.
            for i in range(24):
                found = postgres.count(
                    db, "SELECT count(*) FROM memories WHERE text LIKE ? AND is_latest = 1",
                    [f"Project {i} is owned%"],
                )  # fmt: skip
                assert found == 1, (i, found)
        one_latest_per_chain(dsn)


def test_two_daemons_updating_the_same_fact_at_once_keep_one_chain(
    dsn: str, short_dir: Path
) -> None:
    with daemons(dsn, short_dir, 2) as (a, b):
        add(a, "Alex lives in Seattle.")
        settle(dsn, 30)
        for round_ in range(3):  # each daemon a different update of the same fact, together
            add(a, f"Alex moved to Portland in round {round_}.")
            add(b, f"Alex moved to Denver in round {round_}.")
        settle(dsn, 60)
        one_latest_per_chain(dsn)
