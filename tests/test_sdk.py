"""The official Supermemory SDK (5.0.1) against the real daemon: the P0 calls of reference §6."""

from __future__ import annotations

import io
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import supermemory
from supermemory import Supermemory

from tests.conftest import config_for_process
from tests.daemon_process import DaemonProcess
from tests.pace import scaled

NS = "user_alex"
TOKEN = "local-test-key"


@pytest.fixture(scope="module")
def client(process_config: str) -> Iterator[Supermemory]:
    state_dir = Path(tempfile.mkdtemp(prefix="smem-"))
    config = config_for_process(state_dir, process_config)
    daemon = DaemonProcess(state_dir, config).start(env={"SMEM_TOKEN": TOKEN})
    with Supermemory(api_key=TOKEN, base_url=f"http://{daemon.tcp}", max_retries=0) as client:
        yield client
    daemon.kill()
    shutil.rmtree(state_dir, ignore_errors=True)


def wait_done(client: Supermemory, ref: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while client.documents.get(NS, ref).system.status != "done":
        assert time.monotonic() < deadline, f"{ref} not done"
        time.sleep(0.05)


def test_p0_calls(client: Supermemory) -> None:
    ref = client.add(
        NS, content="Alex prefers morning meetings.", id="pref-1",
        metadata={"source": "chat", "priority": 3, "tags": ["work"]}, date="2025-01-15", dreaming="instant",
    )  # fmt: skip
    assert ref.id and ref.status in ("queued", "done")

    batch = client.documents.batch_add(
        NS,
        documents=[
            {"content": "Alex lives in Seattle.", "id": "loc-1"},
            {"content": "Alex works at Stripe.", "metadata": {"source": "crm"}},
        ],
    )
    assert (batch.count, batch.failed, len(batch.results)) == (2, 0, 2)
    for ref_id in ("pref-1", "loc-1", batch.results[1].id):
        wait_done(client, ref_id)

    doc = client.documents.get(NS, "pref-1", include=["chunks", "memories"])
    assert doc.system.status == "done" and doc.system.dreaming_status == "done"
    assert doc.content == "Alex prefers morning meetings."
    assert [c.content for c in doc.chunks or []] == ["Alex prefers morning meetings."]
    assert [m.memory for m in doc.memories or []] == ["Alex prefers morning meetings."]

    res = client.search(
        NS, query="when does alex like to meet?", search_mode="hybrid", limit=5, threshold=0.3,
        rerank="none", rewrite_query=False, include={"documents": True, "related": True},
        filter={"operator": "and", "operands": [
            {"field": "source", "operator": "eq", "value": "chat"},
            {"field": "priority", "operator": "gte", "value": 3},
        ]},
    )  # fmt: skip
    assert res.results and res.search_time >= 0
    assert {r.memory or r.chunk for r in res.results} == {"Alex prefers morning meetings."}
    assert all(r.metadata["source"] == "chat" and 0 <= r.similarity <= 1 for r in res.results)
    first = next(r for r in res.results if r.memory)
    assert first.is_latest and first.included and first.included.document
    assert first.included.document.id == ref.id

    prof = client.profile(NS)
    static = [f.memory for f in prof.profile.static]
    assert "Alex prefers morning meetings." in static and "Alex lives in Seattle." in static

    page = client.list(NS, "memories", page=1, limit=10, sort="createdAt", order="desc")
    assert page.pagination.total_items == 3 and len(page.memories) == 3
    assert page.documents == [] and page.chunks == []

    upd = client.documents.update(NS, "pref-1", content="Alex now prefers afternoon meetings.")
    assert upd.status == "queued"
    wait_done(client, "pref-1")
    target = next(m for m in page.memories if m.memory == "Alex works at Stripe.")
    fr = client.memories.forget(NS, ids=[target.id])
    assert (fr.count, fr.errors) == (1, [])

    details = client.memories.get(NS, target.id, include=["related", "documents"], related_limit=5)
    assert details.is_forgotten

    dry = client.memories.forget_matching(NS, query="afternoon meetings", dry_run=True)
    assert dry.matches[0].memory == "Alex now prefers afternoon meetings." and dry.count == 0

    dl = client.documents.delete(NS, ids=["pref-1"])
    assert (dl.count, dl.errors) == (1, [])
    with pytest.raises(supermemory.NotFoundError) as caught:
        client.documents.get(NS, "missing-doc")
    assert caught.value.status_code == 404
    assert isinstance(caught.value.body, dict) and set(caught.value.body) == {"error", "details"}

    namespaces = client.namespaces.list(page=1, limit=10)
    assert [n.namespace for n in namespaces.namespaces] == [NS]


def test_upload_text_file_and_refuse_binary(client: Supermemory) -> None:
    ref = client.documents.upload_file(
        NS, file=("notes.txt", io.BytesIO(b"Alex keeps bees."), "text/plain"), metadata='{"k": "v"}'
    )
    wait_done(client, ref.id)
    doc = client.documents.get(NS, ref.id)
    assert doc.content == "Alex keeps bees." and doc.metadata == {"k": "v", "filename": "notes.txt"}
    with pytest.raises(supermemory.APIStatusError) as caught:
        client.documents.upload_file(
            NS, file=("x.bin", io.BytesIO(b"\xff\xfe\x00"), "application/octet-stream")
        )
    assert caught.value.status_code == 415
