"""What one tenant's token can do to the rest: how many namespaces it may make (`[api]
max-namespaces`), which container tags it may write into its documents, and that moving a
namespace re-queues its pending work without a failure to count."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from smemd.store.sqlite import schema
from smemd.store.sqlite.schema import MIGRATIONS
from smemd.store.sqlite.store import SqliteStore
from tests.conftest import Running, StartDaemon, config_with_tokens, token_table
from tests.raw_sqlite import connect, connection
from tests.settling import until_idle
from tests.test_api import assert_error, call
from tests.test_large_documents import add, prose, status_of

A, B = "tenant-a-secret-01", "tenant-b-secret-01"


def as_token(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
async def tenants(start_daemon: StartDaemon, short_dir: Path) -> Running:
    return await start_daemon(
        config_with_tokens(
            short_dir,
            "max-namespaces = 3\n"
            + token_table("tenant-a", A, "write", ["tenant_a", "tenant_a:*"])
            + token_table("tenant-b", B, "write", ["tenant_b*"]),
        )
    )


async def make(running: Running, secret: str, ns: str, how: int = 0) -> tuple[int, Any]:
    """A write that makes `ns`: a document, a bucket, or a v3 document, by turns."""
    body: dict[str, Any]
    if how % 3 == 0:
        path, body, method = f"/ns/{ns}/document", {"content": "Alex keeps bees."}, "POST"
    elif how % 3 == 1:
        path, body, method = f"/ns/{ns}/profile/buckets", {"buckets": {"work": "Jobs"}}, "PUT"
    else:
        path, body, method = "/v3/documents", {"content": "Alex.", "containerTag": ns}, "POST"
    status, reply, _ = await call(
        running.tcp, method, running.url(path), json=body, headers=as_token(secret)
    )
    return status, reply


async def test_a_token_makes_at_most_max_namespaces(tenants: Running) -> None:
    for i, ns in enumerate(("tenant_a", "tenant_a:1", "tenant_a:2")):
        status, body = await make(tenants, A, ns, i)
        assert status == 200, body
    for i in range(3):
        status, body = await make(tenants, A, "tenant_a:3", i)
        assert_error(status, body, 403)
        assert "max-namespaces (3)" in body["details"] and "'tenant-a'" in body["details"]
    # What it has it may still write to; another token has its own bound; the socket has none.
    status, body = await make(tenants, A, "tenant_a:1")
    assert status == 200, body
    status, body = await make(tenants, B, "tenant_b1")
    assert status == 200, body
    status, body, _ = await call(
        tenants.unix, "POST", "http://smemd/ns/tenant_a:4/document", json={"content": "Admin."}
    )
    assert status == 200, body
    status, listed, _ = await call(tenants.unix, "GET", "http://smemd/ns?limit=50")
    assert sorted(n["id"] for n in listed["namespaces"]) == [
        "tenant_a", "tenant_a:1", "tenant_a:2", "tenant_a:4", "tenant_b1",
    ]  # fmt: skip
    # A namespace removed frees its place; a move's new target takes one.
    status, body, _ = await call(
        tenants.tcp, "DELETE", tenants.url("/ns/tenant_a:2"), headers=as_token(A)
    )
    assert status == 200, body
    status, body, _ = await call(
        tenants.tcp, "DELETE", tenants.url("/ns/tenant_a:1"), params={"moveTo": "tenant_a:9"},
        headers=as_token(A),
    )  # fmt: skip
    assert status == 200, body
    status, body = await make(tenants, A, "tenant_a:10")
    assert status == 200, body
    status, body = await make(tenants, A, "tenant_a:11")
    assert_error(status, body, 403)


async def test_without_tokens_tcp_callers_share_one_bound(start_daemon: StartDaemon) -> None:
    running = await start_daemon(api__max_namespaces=2)
    for ns in ("one", "two"):
        status, body, _ = await call(
            running.tcp, "PUT", running.url(f"/ns/{ns}/profile/buckets"),
            json={"buckets": {"work": "Jobs"}},
        )  # fmt: skip
        assert status == 200, body
    status, body, _ = await call(
        running.tcp, "PUT", running.url("/ns/three/profile/buckets"),
        json={"buckets": {"work": "Jobs"}},
    )  # fmt: skip
    assert_error(status, body, 403)
    assert "'anonymous'" in body["details"]


async def test_container_tags_past_the_first_must_be_the_tokens_own(tenants: Running) -> None:
    refused = [
        ("POST", "/v3/documents", {"content": "Leak.", "containerTags": ["tenant_a", "tenant_b"]}),
        ("POST", "/v3/documents", {"content": "Leak.", "containerTag": "tenant_a", "containerTags": ["tenant_b"]}),
        ("POST", "/v3/documents/batch", {"documents": [{"content": "Leak.", "containerTags": ["tenant_a", "tenant_b"]}]}),
        ("POST", "/v3/documents/batch", {"containerTags": ["tenant_a", "tenant_b"], "documents": ["Leak."]}),
    ]  # fmt: skip
    for method, path, body in refused:
        status, reply, _ = await call(
            tenants.tcp, method, tenants.url(path), json=body, headers=as_token(A)
        )
        assert_error(status, reply, 403)
        assert "containerTags" in reply["details"] and "tenant_b" in reply["details"], reply
    status, ref, _ = await call(
        tenants.tcp, "POST", tenants.url("/v3/documents"), headers=as_token(A),
        json={"content": "Shared.", "containerTags": ["tenant_a", "tenant_a:shared"], "customId": "s"},
    )  # fmt: skip
    assert status == 200, ref
    status, reply, _ = await call(
        tenants.tcp, "PATCH", tenants.url(f"/v3/documents/{ref['id']}"), headers=as_token(A),
        json={"containerTags": ["tenant_a", "tenant_b"]},
    )  # fmt: skip
    assert_error(status, reply, 403)
    status, doc, _ = await call(tenants.unix, "GET", f"http://smemd/v3/documents/{ref['id']}")
    assert doc["containerTags"] == ["tenant_a", "tenant_a:shared"], doc
    status, listed, _ = await call(tenants.unix, "GET", "http://smemd/ns?limit=50")
    assert [n["id"] for n in listed["namespaces"]] == ["tenant_a"]  # no leak wrote anything


async def test_moves_requeue_pending_jobs_and_count_no_failure(start_daemon: StartDaemon) -> None:
    running = await start_daemon(engine__dreaming=False)
    status, body = await add(running, "first", prose(600), id="long")
    assert status == 200, body
    while await status_of(running, "first", "long") != "embedding":
        await asyncio.sleep(0.02)
    for source, target in (("first", "second"), ("second", "third")):
        status, body, _ = await call(
            running.unix, "DELETE", f"http://smemd/ns/{source}", params={"moveTo": target}
        )
        assert status == 200, body
        status, jobs, _ = await call(running.unix, "GET", "http://smemd/v1/jobs")
        assert "failed" not in jobs["counts"], jobs
    # A new content while it is pending is no failure either.
    status, body, _ = await call(
        running.unix, "PATCH", "http://smemd/ns/third/document/long", json={"content": prose(3)}
    )
    assert status == 200, body
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    assert await status_of(running, "third", "long") == "done"
    status, jobs, _ = await call(running.unix, "GET", "http://smemd/v1/jobs")
    assert jobs["counts"] == {"done": 1}, jobs  # one job, re-queued in place each time
    assert jobs["jobs"][0]["namespace"] == "third"


async def test_superseded_failures_from_before_are_taken_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.sqlite3"
    monkeypatch.setattr(schema, "MIGRATIONS", [m for m in MIGRATIONS if m[0] < "0013"])
    store = SqliteStore(path)
    await store.open()
    async with store.write() as writer:
        await writer.ensure_namespace("n", 1.0)
        for job, phase, error in (
            ("job_old", "failed", "superseded by a newer revision"),
            ("job_bad", "failed", "extracting: the model went away"),
            ("job_new", "done", None),
        ):
            await writer.insert_job(job, "n", "doc_1", 1, 1.0)
            await connection(writer).execute(
                "UPDATE jobs SET phase = ?, error = ? WHERE id = ?", [phase, error, job]
            )
        await connection(writer).execute(
            "INSERT INTO candidates (job_id, position, chunk_id, text, type, vector)"
            " VALUES ('job_old', 0, 'chk_1', 'a fact', 'fact', x'00')"
        )
    await store.close()
    monkeypatch.undo()
    store = SqliteStore(path)
    assert "0013_superseded_jobs" in await store.open()
    await store.close()
    with connect(path) as db:
        assert sorted(r[0] for r in db.execute("SELECT id FROM jobs")) == ["job_bad", "job_new"]
        assert db.execute("SELECT count(*) FROM candidates").fetchone() == (0,)
