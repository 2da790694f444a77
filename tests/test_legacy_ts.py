"""The official TypeScript SDK 4 against the real daemon, run by the machine's Node.js: what
memorybench's Supermemory provider does (tests/ts/memorybench_client.mjs, SDK 4.0.0 as memorybench
pins it), and the rest of the SDK's v3/v4 calls (tests/ts/sdk4_calls.mjs, SDK 4.25.4), with the
data visible across generations (added through v3, read through v5, and the reverse).

The SDK comes from the npm registry into tests/ts/node_modules (`npm ci --prefix tests/ts`, which
`.ci/run` does). Without Node.js or that folder these tests skip, unless SMEM_REQUIRE_SDKS=1.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.bench.memorybench import provider_content
from tests.conftest import Running, StartDaemon
from tests.settling import until_idle
from tests.test_api import call

TS_DIR = Path(__file__).parent / "ts"
VERSIONS = {"supermemory": "4.25.4", "supermemory-4.0.0": "4.0.0"}  # as tests/ts/package.json
TOKEN = "ts-sdk-test-key"


def require_ts_sdk() -> str:
    """The path of `node`, once the SDK versions are installed; else skip (or fail in CI)."""
    node = shutil.which("node")
    reason = "" if node else "no node on PATH"
    for package, version in VERSIONS.items():
        manifest = TS_DIR / "node_modules" / package / "package.json"
        found = json.loads(manifest.read_text())["version"] if manifest.is_file() else None
        if not reason and found != version:
            reason = f"no {package} {version} in {manifest.parent} (npm ci --prefix tests/ts)"
    if reason:
        if os.environ.get("SMEM_REQUIRE_SDKS") == "1":
            pytest.fail(f"{reason}, and SMEM_REQUIRE_SDKS=1")
        pytest.skip(reason)
    assert node is not None
    return node


async def run_node(script: str, payload: Any, base_url: str) -> Any:
    """Run tests/ts/`script` on `payload` (JSON on its stdin) against `base_url`; its stdout,
    decoded. A child process the loop awaits: the daemon under test runs on this same loop."""
    node = require_ts_sdk()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPERMEMORY_")}
    child = await asyncio.create_subprocess_exec(
        node, str(TS_DIR / script), "-", base_url, TOKEN,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(child.communicate(json.dumps(payload).encode()), 50)
    assert child.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


async def sdk4(running: Running, *calls: tuple[Any, ...]) -> list[Any]:
    """Make each (method path, args) call on TS SDK 4.25.4; its replies, in order. A call the daemon
    refused comes back as {"error": {"status", "body", "name"}}."""
    plan = [{"call": name, "args": list(args)} for name, *args in calls]
    answer = await run_node("sdk4_calls.mjs", plan, running.base)
    assert answer["version"] == VERSIONS["supermemory"]
    return [o.get("ok", o) for o in answer["outcomes"]]


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


async def v5(running: Running, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    status, reply, _ = await call(
        running.tcp, method, running.url(path), json=body,
        headers={"Authorization": f"Bearer {TOKEN}"},
    )  # fmt: skip
    return status, reply


@pytest.fixture
async def daemon(start_daemon: StartDaemon) -> Running:
    require_ts_sdk()
    return await start_daemon(api__token=TOKEN)


SESSIONS: list[dict[str, Any]] = [
    {
        "sessionId": "mb-s1",
        "messages": [
            {"role": "user", "content": "I adopted a greyhound named Biscuit.", "speaker": "Dana"},
            {"role": "assistant", "content": "Biscuit is a lovely name <3", "speaker": "Sam"},
        ],
        "metadata": {"date": "2023-05-08T13:56:00.000Z", "formattedDate": "1:56 pm on 8 May, 2023"},
    },
    {
        "sessionId": "mb-s2",
        "messages": [
            {
                "role": "user",
                "content": "My sister Priya bought a sailboat named Marlin.",
                "speaker": "Dana",
            },
            {
                "role": "assistant",
                "content": "Marlin is a great name for a sailboat.",
                "speaker": "Sam",
            },
        ],
        "metadata": {
            "date": "2023-06-01T09:05:00.000Z",
            "formattedDate": "9:05 am on 1 June, 2023",
        },
    },
]


async def test_memorybench_provider_flow(daemon: Running) -> None:
    """Add each session with containerTag and metadata, poll until done, search with memorybench's
    body; the sessions are documents v5 reads, and each question finds its own session."""
    payload = {
        "containerTag": "mb_dana",
        "sessions": SESSIONS,
        "questions": ["What is the name of the greyhound?", "What is the name of the sailboat?"],
        "pollMs": 20,
        "maxRetries": 0,
    }
    got = await run_node("memorybench_client.mjs", payload, daemon.base)
    assert len(got["documentIds"]) == 2
    assert [(i["documentStatus"], i["memoryStatus"]) for i in got["indexed"]] == [
        ("done", "done")
    ] * 2

    for session, doc_id in zip(SESSIONS, got["documentIds"], strict=True):
        status, doc = await v5(daemon, "GET", f"/ns/mb_dana/document/{doc_id}")
        assert status == 200, doc
        when = session["metadata"]["formattedDate"]
        assert doc["content"] == provider_content(session["messages"], when)  # the bench's copy too
        assert doc["metadata"]["sessionId"] == session["sessionId"]
        assert doc["metadata"]["date"] == session["metadata"]["date"]

    await settle(daemon)  # memorybench searches once ingest is done; its poll saw "done"
    greyhound, sailboat = got["searches"]
    for search, session_id, word in (
        (greyhound, "mb-s1", "Biscuit"),
        (sailboat, "mb-s2", "Marlin"),
    ):
        assert search["results"], search
        assert search["total"] == len(search["results"]) and search["timing"] >= 0
        top = search["results"][0]
        assert top["metadata"]["sessionId"] == session_id, search
        assert word in (top.get("memory") or top.get("chunk") or ""), top
        assert all(
            0 <= r["similarity"] <= 1 and r["id"] and r["updatedAt"] for r in search["results"]
        )
        assert {r["metadata"]["sessionId"] for r in search["results"]} <= {"mb-s1", "mb-s2"}


async def test_sdk4_calls_across_generations(daemon: Running) -> None:
    """Add, batch, get, list, search (v3 and v4), profile, memory update and forget, delete."""
    tag = "ts_gen"
    status, _ = await v5(daemon, "POST", f"/ns/{tag}/document", {
        "id": "v5-note", "content": "The lighthouse keeper on Skerry Island is Ingrid."})  # fmt: skip
    assert status == 200
    await settle(daemon)

    added, doc2, batch = await sdk4(
        daemon,
        ("add", {"content": "Dana prefers green tea in the morning.", "containerTag": tag,
                 "customId": "ts-pref", "metadata": {"source": "ts", "rank": 2}}),
        ("documents.add", {"content": "Dana plays the cello on Sundays.", "containerTag": tag,
                           "customId": "ts-cello"}),
        ("documents.batchAdd", {"containerTag": tag, "documents": [
            {"content": "Dana was born in Tromso.", "customId": "ts-born"},
            {"content": "Dana keeps bees on the roof."}]}),
    )  # fmt: skip
    assert added["id"] and added["status"] in ("queued", "done"), added
    assert doc2["id"] and doc2["status"] in ("queued", "done"), doc2
    assert (batch["success"], batch["failed"], len(batch["results"])) == (2, 0, 2), batch
    await settle(daemon)

    # Added through v3 (the TS SDK), read through v5: the v3 customId is the v5 id.
    status, doc = await v5(daemon, "GET", f"/ns/{tag}/document/ts-pref")
    assert status == 200, doc
    assert doc["content"] == "Dana prefers green tea in the morning."
    assert doc["metadata"]["source"] == "ts" and doc["metadata"]["rank"] == 2
    assert doc["system"]["status"] == "done"

    got, missing, listed, v4_hits, v3_hits, executed, profile, alias = await sdk4(
        daemon,
        ("documents.get", added["id"]),
        ("documents.get", "no-such-document"),
        ("documents.list", {"containerTags": [tag], "limit": 50}),
        ("search.memories", {"q": "who keeps the lighthouse?", "containerTag": tag,
                             "threshold": 0.3}),
        ("search.documents", {"q": "lighthouse keeper Skerry Island", "containerTags": [tag]}),
        ("search.execute", {"q": "cello on Sundays", "containerTags": [tag], "limit": 5}),
        ("profile", {"containerTag": tag}),
        ("get", f"/v3/memories/{added['id']}"),
    )  # fmt: skip
    assert got["id"] == added["id"] and got["customId"] == "ts-pref", got
    assert got["content"] == "Dana prefers green tea in the morning." and got["status"] == "done"
    assert tag in got["containerTags"], got
    assert missing["error"]["status"] == 404 and missing["error"]["name"] == "NotFoundError"
    ours = {"ts-pref", "ts-cello", "ts-born", "v5-note"}  # and the batch's one without an id
    assert ours <= {d["customId"] for d in listed["memories"]}, listed
    assert listed["pagination"]["totalItems"] == 5, listed["pagination"]

    # Added through v5, found through the TS SDK's v4 and v3 searches.
    assert v4_hits["results"], v4_hits
    assert "Ingrid" in (v4_hits["results"][0].get("memory") or v4_hits["results"][0].get("chunk"))
    keeper = v3_hits["results"][0]
    assert keeper["documentId"] and "Ingrid" in keeper["chunks"][0]["content"], v3_hits
    assert {"isRelevant", "score"} <= set(keeper["chunks"][0])
    assert "cello" in executed["results"][0]["chunks"][0]["content"], executed
    facts = profile["profile"]["static"] + profile["profile"]["dynamic"]
    assert "Dana was born in Tromso." in facts, profile  # strings, not v5's {id, memory}
    assert alias["id"] == added["id"] and alias["status"] == "done", alias

    hits = await sdk4(
        daemon,
        ("search.memories", {"q": "green tea", "containerTag": tag, "searchMode": "memories"}),
        ("search.memories", {"q": "bees on the roof", "containerTag": tag, "searchMode": "memories"}),
    )  # fmt: skip
    tea, bees = (next(r for r in h["results"] if r.get("memory")) for h in hits)
    assert "green tea" in tea["memory"] and "bees" in bees["memory"], hits

    updated, forgot, patched, deleted, bulk, gone = await sdk4(
        daemon,
        ("memories.updateMemory", {"containerTag": tag, "id": tea["id"],
                                   "newContent": "Dana prefers black coffee in the morning."}),
        ("memories.forget", {"containerTag": tag, "id": bees["id"], "reason": "moved house"}),
        ("documents.update", doc2["id"], {"content": "Dana plays the viola on Sundays."}),
        ("documents.delete", "ts-born"),
        ("documents.deleteBulk", {"ids": ["v5-note"]}),
        ("documents.get", "ts-born"),
    )  # fmt: skip
    assert updated["memory"] == "Dana prefers black coffee in the morning.", updated
    assert updated["version"] == 2 and updated["parentMemoryId"] == tea["id"], updated
    assert forgot == {"id": bees["id"], "forgotten": True}
    assert patched["id"] == doc2["id"] and patched["status"] in ("queued", "done"), patched
    assert deleted is None  # 204: the SDK resolves to nothing
    assert bulk["deletedCount"] == 1 and bulk["success"] is True, bulk
    assert gone["error"]["status"] == 404
    await settle(daemon)

    # What the TS SDK changed, seen through v5.
    status, found = await v5(daemon, "POST", f"/ns/{tag}/search",
                             {"query": "what does Dana drink in the morning?", "searchMode": "memories"})  # fmt: skip
    assert status == 200, found
    texts = [r["memory"] for r in found["results"]]
    assert "Dana prefers black coffee in the morning." in texts
    assert "Dana prefers green tea in the morning." not in texts
    status, bee = await v5(daemon, "GET", f"/ns/{tag}/memories/{bees['id']}")
    assert status == 200 and bee["isForgotten"] is True, bee
    status, viola = await v5(daemon, "GET", f"/ns/{tag}/document/ts-cello")
    assert status == 200 and viola["content"] == "Dana plays the viola on Sundays.", viola
    for gone_id in ("ts-born", "v5-note"):
        status, _ = await v5(daemon, "GET", f"/ns/{tag}/document/{gone_id}")
        assert status == 404, gone_id
