"""kill -9 in the middle of an ingest loses nothing and duplicates nothing."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from smemctl.client import Client
from tests.daemon_process import DaemonProcess

DOCUMENTS = 200
NS = "crash"


def doc(i: int) -> dict[str, object]:
    return {
        "id": f"doc-{i}",
        "content": f"Person{i} lives in Town{i}. Person{i} owns exactly {i + 2} bicycles and {i + 7} kites.",
        "metadata": {"i": i},
    }


def job_counts(client: Client) -> dict[str, int]:
    counts: dict[str, int] = msgspec.json.decode(client.call("GET", "/v1/jobs?limit=1"))["counts"]
    return counts


def wait_for(client: Client, predicate: object, timeout: float = 120) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = job_counts(client)
        if predicate(counts):  # type: ignore[operator]
            return counts
        time.sleep(0.02)
    raise AssertionError(f"jobs did not get there: {job_counts(client)}")


def test_kill_9_twice_mid_ingest_then_everything_done_exactly_once(short_dir: Path) -> None:
    daemon = DaemonProcess(short_dir).start()
    client = Client(daemon.socket)
    reply = msgspec.json.decode(
        client.call(
            "POST", f"/ns/{NS}/document/batch", {"documents": [doc(i) for i in range(DOCUMENTS)]}
        )
    )
    assert reply["count"] == DOCUMENTS  # acknowledged: each is a committed row and job

    for fraction in (0.2, 0.6):
        wait_for(client, lambda c, f=fraction: c.get("done", 0) >= DOCUMENTS * f)
        assert daemon.proc is not None
        daemon.proc.kill()  # SIGKILL: no shutdown code runs
        daemon.proc.wait()
        daemon.addr_file.unlink()
        daemon.start()

    counts = wait_for(client, lambda c: c.get("done", 0) + c.get("failed", 0) == DOCUMENTS)
    assert counts == {"done": DOCUMENTS}, counts

    memories: list[dict[str, object]] = []
    for page in range(1, 20):
        listing = msgspec.json.decode(
            client.call("POST", f"/ns/{NS}/list/memories?limit=100&page={page}", {})
        )
        memories += listing["memories"]
        if page >= listing["pagination"]["totalPages"]:
            break
    texts = [m["memory"] for m in memories]
    assert len(texts) == len(set(texts)), "a memory was stored twice"
    for i in (0, 57, 199):  # every document's facts are there, once
        assert texts.count(f"Person{i} lives in Town{i}.") == 1
    docs = msgspec.json.decode(client.call("POST", f"/ns/{NS}/list/documents?limit=100", {}))
    assert docs["pagination"]["totalItems"] == DOCUMENTS
    assert {d["system"]["status"] for d in docs["documents"]} == {"done"}
    daemon.stop()
