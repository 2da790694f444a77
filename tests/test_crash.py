"""kill -9 in the middle of an ingest loses nothing and duplicates nothing."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path

import msgspec

from smemctl.client import Client
from tests.daemon_process import DaemonProcess
from tests.pace import scaled

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
    deadline = time.monotonic() + scaled(timeout)
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


def test_kill_9_mid_import_leaves_the_namespace_as_it_was_and_no_scratch(
    short_dir: Path, tmp_path: Path
) -> None:
    from smemd.protocol.exports import Header, MemoryRecord, NamespaceRecord, Trailer

    count = 3000  # seconds of embedding: the kill lands while the file is being checked
    memories = [
        MemoryRecord(
            id=f"mem_crash_{i}", text=f"Note {i}: the ferry leaves at {i % 24} o'clock.",
            type="fact", version=1, is_latest=True, root_id=f"mem_crash_{i}", parent_id=None,
            document_id=None, chunk_id=None, created_at=1.0e9 + i, updated_at=1.0e9 + i,
            event_at=None, valid_from=None, valid_until=None, superseded_at=None,
            forgotten_at=None, forget_reason=None, expires_at=None, is_static=False,
            is_inference=False, metadata={}, typed_by=None, entities=[], linked_at=None,
            inferred_at=None, retraction_id=None,
        )
        for i in range(count)
    ]  # fmt: skip
    records = [
        Header(format="smem-export", version=1, smem_version="0", exported_at="x", namespace=NS),
        NamespaceRecord(supporting_context="", created_at=1.0e9, updated_at=1.0e9, created_by=None),
        *memories,
        Trailer(records={"namespace": 1, "memory": count}),
    ]
    export = tmp_path / "big.jsonl"
    export.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in records))
    daemon = DaemonProcess(short_dir).start()
    scratch = short_dir / "imports"
    sending = threading.Thread(target=_send_quietly, args=(daemon, export), daemon=True)
    sending.start()
    deadline = time.monotonic() + scaled(60)
    while not any(p.stat().st_size for p in scratch.glob(".import-*/vectors")):
        assert time.monotonic() < deadline, "the import never began to embed"
        time.sleep(0.02)
    daemon.kill()  # SIGKILL mid-import: no shutdown code runs
    daemon.addr_file.unlink()
    daemon.start()
    client = Client(daemon.socket)
    status = json.loads(client.call("GET", "/ns?limit=100"))
    assert NS not in {n["name"] for n in status["namespaces"]}
    assert not scratch.exists() or not list(scratch.iterdir())  # the killed import left nothing
    daemon.stop()


def _send_quietly(daemon: DaemonProcess, export: Path) -> None:
    with export.open("rb") as body, contextlib.suppress(Exception):  # cut by the kill
        Client(daemon.socket, timeout=120).upload(
            f"/ns/{NS}/import", body, "application/x-ndjson", export.stat().st_size
        )
