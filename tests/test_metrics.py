"""`GET /v1/metrics` read with prometheus-client's parser after scripted work on the real daemon:
each family moves as the work it counts happens (ingest, recall, indexes, store, dreaming, the
fleet's model calls and nodes, a pause; the cards on the simulator)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from smemctl.client import UnixConnection
from tests.conftest import Running, StartDaemon
from tests.daemon_process import DaemonProcess
from tests.fakes.fleet import start_hosts, started
from tests.fakes.llama_server import FakeLlamaServer
from tests.metrics_scrape import parsed, scrape, total, value
from tests.test_api import call
from tests.test_cards_daemon import acall, nodes_by_id, simulator, until, write_config
from tests.test_memory_api import settle

NS = "http://smemd/ns/metered"


async def work(running: Running) -> None:
    """Three documents ingested, then a search, a compress and a profile."""
    documents = [{"content": t} for t in (
        "Alex lives in Seattle and works as a nurse.", "Sam owns a red kite.",
        "Mia plays the cello every Sunday.",
    )]  # fmt: skip
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document/batch", json={"documents": documents}
    )
    assert status == 200, body
    await settle(running)
    for method, path, payload in (
        ("POST", f"{NS}/search", {"query": "Where does Alex live?", "threshold": 0}),
        ("POST", "http://smemd/v1/compress", {"q": "kite", "namespace": "metered"}),
        ("POST", f"{NS}/profile", {}),
    ):
        status, body, _ = await call(running.unix, method, path, json=payload)
        assert status == 200, (path, body)


async def test_the_engine_and_the_fleet_families_move_with_the_work(
    start_daemon: StartDaemon, short_dir: Path
) -> None:
    fakes = {
        "node0": FakeLlamaServer(host="127.0.33.1"),
        "node1": FakeLlamaServer(host="127.0.33.2"),
    }
    async with started(fakes):
        running = await start_hosts(start_daemon, short_dir, [
            ("node0", fakes["node0"], ["interactive"], "embed"),
            ("node1", fakes["node1"], ["background"], "embed"),
        ])  # fmt: skip
        before, _ = await scrape(running)
        await work(running)
        fakes["node0"].fail_next(1)  # one failed call, tried again on node0's lane: none left
        await call(running.unix, "POST", f"{NS}/search", json={"query": "cello"})
        status, body, _ = await call(
            running.unix, "POST", "http://smemd/v1/pause", json={"nodes": ["node1"], "for": "1h"}
        )
        assert status == 200, body
        after, types = await scrape(running)

    def moved(name: str, **labels: Any) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    # Ingest: every phase timed, the jobs done, facts read by the rules, decisions, memories.
    for phase in ("queued", "chunking", "embedding", "extracting", "reconciling"):
        assert moved("smem_ingest_phase_seconds_count", phase=phase) == 3, phase
    assert moved("smem_ingest_jobs_ended_total", outcome="done") == 3
    assert moved("smem_extracted_facts_total", reader="rules") >= 3
    assert moved("smem_reconcile_decisions_total", by="rules") >= 3
    assert moved("smem_memories_written_total") >= 3
    assert types["smem_ingest_jobs"] == "gauge" and total(after, "smem_ingest_jobs") == 0
    # Recall: by what it served, results returned, no cross-encoder on this fleet.
    assert moved("smem_recall_seconds_count", purpose="search", mode="hybrid") == 2
    assert moved("smem_recall_seconds_count", purpose="compress") == 1
    assert moved("smem_recall_seconds_count", purpose="profile") >= 1
    assert moved("smem_recall_results_total", purpose="search") >= 1
    assert moved("smem_recall_reranked_total", reranked="no") == 2  # the search and compress
    # Indexes and the store.
    assert value(after, "smem_index_namespaces", kind="memories", state="flat") >= 1
    assert moved("smem_index_load_seconds_count") >= 1
    assert value(after, "smem_store_database_bytes") > 0
    assert value(after, "smem_state_dir_free_bytes") > 0
    assert moved("smem_store_writer_wait_seconds_count") >= 3 * 5
    assert types["smem_store_faults"] == "counter"
    assert types["smem_dreaming_backlog"] == "gauge"
    # The fleet: calls by node, role and outcome (the injected failure too), seconds, nodes.
    assert moved("smem_model_calls_total", node="node1", role="embed", outcome="ok") >= 3
    assert moved("smem_model_calls_total", node="node0", role="embed", outcome="ok") >= 2
    assert moved("smem_model_calls_total", node="node0", role="embed", outcome="failed") == 1
    assert moved("smem_model_call_seconds_count", node="node0", role="embed") >= 3
    assert value(after, "smem_node_healthy", node="node0") == 1
    assert value(after, "smem_node_paused", node="node1") == 1
    assert value(after, "smem_node_paused", node="node0") == 0
    assert 3500 < value(after, "smem_pause_expires_seconds") <= 3600
    assert value(after, "smem_model_calls_in_flight", node="node0") == 0


async def test_the_builtin_model_s_calls_count_as_its_node(running: Running) -> None:
    await work(running)
    samples, _ = await scrape(running)
    assert value(samples, "smem_model_calls_total", node="builtin", role="embed", outcome="ok") >= 4
    assert value(samples, "smem_pause_expires_seconds") == 0


async def test_the_cards_families_follow_the_nodes(tmp_path: Path) -> None:
    async with simulator(tmp_path, faults={"node3": {"dead": True}}) as sim:
        daemon = DaemonProcess(tmp_path / "state", write_config(sim, tmp_path))
        (tmp_path / "state").mkdir()
        await asyncio.to_thread(daemon.start, ["--log-level", "warning"], None, True)
        try:

            async def sampled() -> dict[str, Any] | None:
                nodes = await nodes_by_id(daemon)
                # Up on the cards and healthy in the fleet's pool, which probes on its own.
                up = [n for n in nodes.values() if n["state"] == "up" and n["healthy"]]
                return nodes if len(up) == 5 and nodes["node0"]["temperatureC"] else None

            await until(sampled, 30, "five nodes up, healthy and sampled")
            status, body = await acall(daemon, "POST", "/ns/cards/search", {"query": "kites"})
            assert status == 200, body
            samples, _ = parsed(await asyncio.to_thread(_metrics_of, daemon))
        finally:
            daemon.kill()
    assert value(samples, "smem_card_node_state", node="node0", state="up") == 1
    assert value(samples, "smem_card_node_state", node="node0", state="off") == 0
    assert value(samples, "smem_card_node_state", node="node3", state="failed") == 1
    assert value(samples, "smem_card_node_boots_total", node="node0") >= 1
    assert value(samples, "smem_card_node_temperature_celsius", node="node0") > 0
    assert value(samples, "smem_card_node_memory_available_bytes", node="node0") > 0
    assert total(samples, "smem_vcactl_seconds_count") >= 6
    assert total(samples, "smem_model_calls_total", role="embed", outcome="ok") >= 1


def _metrics_of(daemon: DaemonProcess) -> str:
    conn = UnixConnection(daemon.socket, timeout=30)
    try:
        conn.request("GET", "/v1/metrics")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


async def test_promtool_finds_nothing_to_say(running: Running) -> None:
    """Prometheus's own linter, where it is installed (Debian's `prometheus` package)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        assert not os.environ.get("SMEM_REQUIRE_PROMTOOL"), "SMEM_REQUIRE_PROMTOOL is set"
        pytest.skip("no promtool here; the parser tests above read the format")
    await work(running)
    status, text, _ = await call(running.unix, "GET", "http://smemd/v1/metrics")
    assert status == 200
    checked = await asyncio.to_thread(
        subprocess.run, [promtool, "check", "metrics"], input=text.encode(), capture_output=True,
        check=False,
    )  # fmt: skip
    assert checked.returncode == 0 and not checked.stdout.strip(), checked
