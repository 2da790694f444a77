"""`GET /v1/requests`: the last requests, newest first, as route templates, in a ring of fixed
size; refused to a token limited to some namespaces."""

from __future__ import annotations

from pathlib import Path

from smemd.api.activity import Activity, Seen
from smemd.protocol.recent import RECENT_KEPT
from tests.conftest import Running, StartDaemon, config_with_tokens, token_table
from tests.test_api import assert_error, call

V1 = "http://smemd/v1"


async def recent(running: Running, query: str = "") -> list[dict[str, object]]:
    status, body, _ = await call(running.unix, "GET", f"{V1}/requests{query}")
    assert status == 200, body
    assert body["kept"] == RECENT_KEPT
    return list(body["requests"])


async def test_requests_are_listed_newest_first_by_their_route_template(running: Running) -> None:
    await call(running.unix, "POST", "http://smemd/ns/secret-team/document",
               json={"content": "Alex keeps bees."}, headers={"X-Request-Id": "ingest-1"})  # fmt: skip
    await call(running.unix, "GET", "http://smemd/ns/secret-team/memories/mem_123?include=related")
    await call(running.tcp, "GET", running.url("/console/app.js"))  # the console's own file
    await call(running.tcp, "GET", running.url("/"))
    await call(running.unix, "GET", f"{V1}/health?probe=private-value")
    listed = await recent(running)
    assert [(r["method"], r["route"]) for r in listed[:3]] == [
        ("GET", "/v1/health"),
        ("GET", "/ns/{ns}/memories/{id}"),
        ("POST", "/ns/{ns}/document"),
    ]
    newest, _, ingest = listed[:3]
    assert newest["status"] == 200 and ingest["requestId"] == "ingest-1"
    assert listed[1]["status"] == 404
    assert set(newest) == {"at", "method", "route", "status", "durationMs", "requestId"}
    assert isinstance(newest["durationMs"], float) and str(newest["at"]).endswith("Z")
    text = str(listed)
    assert "secret-team" not in text and "mem_123" not in text and "private-value" not in text
    assert "/console" not in text and all(r["route"] != "/" for r in listed)
    # The listing is itself a request, kept once answered.
    assert (await recent(running, "?limit=1"))[0]["route"] == "/v1/requests"


async def test_the_ring_keeps_the_last_requests_only(running: Running) -> None:
    for n in range(RECENT_KEPT + 20):
        await call(running.unix, "GET", f"{V1}/health", headers={"X-Request-Id": f"r{n}"})
    listed = await recent(running, f"?limit={RECENT_KEPT}")
    assert len(listed) == RECENT_KEPT
    # The listing is kept once answered, so not in its own reply.
    assert [r["requestId"] for r in listed[:3]] == [f"r{RECENT_KEPT + 19 - n}" for n in range(3)]
    assert listed[-1]["requestId"] == "r20"
    assert len(await recent(running)) == 50  # the default


async def test_the_limit_is_bounded(running: Running) -> None:
    for bad in ("0", "-1", str(RECENT_KEPT + 1), "many", "1.5"):
        status, body, _ = await call(running.unix, "GET", f"{V1}/requests?limit={bad}")
        assert_error(status, body, 400)


async def test_a_token_limited_to_some_namespaces_is_refused(
    start_daemon: StartDaemon, short_dir: Path
) -> None:
    tokens = token_table("scoped", "scoped-secret-001", "read", ["mine"]) + token_table(
        "reader", "reader-secret-001", "read"
    )
    running = await start_daemon(config_with_tokens(short_dir, tokens))
    for secret, expected in (("scoped-secret-001", 403), ("reader-secret-001", 200)):
        status, body, _ = await call(
            running.tcp, "GET", running.url("/v1/requests"),
            headers={"Authorization": f"Bearer {secret}"},
        )  # fmt: skip
        assert status == expected, body


def test_the_ring_is_bounded_and_newest_first_without_a_daemon() -> None:
    activity = Activity()
    now = 1_800_000_000.0
    for n in range(RECENT_KEPT * 2):
        activity.observe("/r", 0.002, now=now + n, seen=Seen("GET", 200, f"r{n}"))
    activity.observe("/page", 0.001, now=now + RECENT_KEPT * 2)  # counted, not kept
    kept = activity.recent(RECENT_KEPT + 10)
    assert len(kept) == RECENT_KEPT
    assert kept[0].request_id == f"r{RECENT_KEPT * 2 - 1}" and kept[0].duration_ms == 2.0
    assert kept[-1].request_id == f"r{RECENT_KEPT}"
    assert activity.snapshot(now=now + RECENT_KEPT * 2).requests > 0
