"""The HTTP surface on both listeners: routes, auth, admin, and the one error shape."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from smemd import __version__, log
from tests.conftest import Running, StartDaemon

TOKEN = "t0ken-for-tests"
ADMIN = "adm1n-for-tests"


async def call(
    session: aiohttp.ClientSession, method: str, url: str, **kwargs: Any
) -> tuple[int, Any, aiohttp.ClientResponse]:
    async with session.request(method, url, **kwargs) as response:
        body = (
            await response.json()
            if response.content_type == "application/json"
            else await response.text()
        )
        return response.status, body, response


def assert_error(status: int, body: Any, expected: int) -> None:
    assert status == expected, body
    assert set(body) == {"error", "details"}, body
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body["details"], str)


async def test_health_on_both_listeners(running: Running) -> None:
    for session, url in (
        (running.unix, "http://smemd/v1/health"),
        (running.tcp, running.url("/v1/health")),
    ):
        status, body, _ = await call(session, "GET", url)
        assert (status, body) == (200, {"status": "ok", "version": __version__, "store": "ok"})


async def test_status_reports_the_process_and_its_listeners(running: Running) -> None:
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/status")
    assert status == 200
    config = running.daemon.config
    assert body["version"] == __version__
    assert body["stateDir"] == config.paths.state_dir
    assert body["listeners"] == {
        "tcp": running.daemon.state.listeners.tcp,
        "socket": str(config.socket),
    }
    assert body["listeners"]["tcp"].startswith("127.0.0.1:") and not body["listeners"][
        "tcp"
    ].endswith(":0")
    assert body["fleetKind"] == "builtin"
    store = body["store"]
    assert (
        store["kind"] == "sqlite" and store["location"] == f"{config.paths.state_dir}/smem.sqlite3"
    )
    assert re.fullmatch(r"3\.\d+\.\d+", store["serverVersion"])  # SQLite's library
    # No model serves the llm role: facts and answers come from the heuristics, and say so.
    assert body["heuristics"] == [
        "extraction", "reconciliation", "answers", "dreaming typing", "dreaming links",
    ]  # fmt: skip
    dreaming = body["dreaming"]
    assert dreaming["enabled"] is True and dreaming["state"] in ("waiting", "rested")
    assert dreaming["quietAfterS"] == 20.0 and dreaming["untyped"] == 0
    assert body["uptimeS"] >= 0


async def test_without_a_token_tcp_is_open(running: Running) -> None:
    status, _, _ = await call(running.tcp, "GET", running.url("/v1/status"))
    assert status == 200


@pytest.fixture
async def guarded(start_daemon: StartDaemon) -> AsyncIterator[Running]:
    yield await start_daemon(api__token=TOKEN, api__admin_token=ADMIN)


@pytest.mark.parametrize(
    "header", [None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer "]
)
async def test_token_required_on_tcp(guarded: Running, header: str | None) -> None:
    headers = {"Authorization": header} if header is not None else {}
    status, body, response = await call(
        guarded.tcp, "GET", guarded.url("/v1/status"), headers=headers
    )
    assert_error(status, body, 401)
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_token_accepted_on_tcp_and_not_needed_on_socket(guarded: Running) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert (await call(guarded.tcp, "GET", guarded.url("/v1/status"), headers=auth))[0] == 200
    assert (await call(guarded.unix, "GET", "http://smemd/v1/status"))[0] == 200


async def test_health_needs_no_token(guarded: Running) -> None:
    assert (await call(guarded.tcp, "GET", guarded.url("/v1/health")))[0] == 200


async def test_admin_route_refused_on_tcp_without_admin_token(guarded: Running) -> None:
    body = {"level": "info"}
    # A token that is not the admin's: forbidden; no token, or a wrong one: not authenticated.
    for header, expected in ((f"Bearer {TOKEN}", 403), ("Bearer nope", 401), (None, 401)):
        headers = {"Authorization": header} if header else {}
        status, reply, _ = await call(
            guarded.tcp, "POST", guarded.url("/v1/log-level"), json=body, headers=headers
        )
        assert_error(status, reply, expected)


async def test_admin_route_answers_on_tcp_with_admin_token_and_on_socket(guarded: Running) -> None:
    admin = {"Authorization": f"Bearer {ADMIN}"}
    status, reply, _ = await call(
        guarded.tcp, "POST", guarded.url("/v1/log-level"), json={"level": "debug"}, headers=admin
    )
    assert status == 200 and reply["level"] == "debug"
    status, reply, _ = await call(
        guarded.unix, "POST", "http://smemd/v1/log-level", json={"level": "info"}
    )
    assert (status, reply["previous"], reply["level"]) == (200, "debug", "info")
    assert logging.getLogger("smemd").level == logging.INFO


async def test_admin_token_also_opens_ordinary_routes(guarded: Running) -> None:
    admin = {"Authorization": f"Bearer {ADMIN}"}
    assert (await call(guarded.tcp, "GET", guarded.url("/v1/status"), headers=admin))[0] == 200


async def test_admin_route_refused_on_tcp_when_no_admin_token_is_configured(
    running: Running,
) -> None:
    status, reply, _ = await call(
        running.tcp, "POST", running.url("/v1/log-level"), json={"level": "info"}
    )
    assert_error(status, reply, 403)


@pytest.mark.parametrize(
    ("payload", "names"),
    [
        (b"{not json", "malformed"),
        (b"", "empty"),
        (b'{"level": 3}', "$.level"),
        (b'{"level": "loud"}', "$.level"),
        (b'{"level": "info", "colour": "red"}', "$.colour"),
        (b"[1, 2]", "$"),
    ],
)
async def test_bad_bodies_are_400_naming_what_is_wrong(
    running: Running, payload: bytes, names: str
) -> None:
    before = logging.getLogger("smemd").level
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/log-level", data=payload,
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert_error(status, body, 400)
    assert names in body["error"] + body["details"]
    assert logging.getLogger("smemd").level == before  # nothing applied


async def test_body_over_the_limit_is_413(start_daemon: StartDaemon) -> None:
    running = await start_daemon(api__max_body_mb=1)
    big = b'{"level": "' + b"x" * (1024 * 1024) + b'"}'
    json = {"Content-Type": "application/json"}
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/log-level", data=io.BytesIO(big), headers=json
    )
    assert_error(status, body, 413)

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the limit must hold anyway
        for _ in range(20):
            yield b"x" * 65536

    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/log-level", data=chunks(), headers=json
    )
    assert_error(status, body, 413)


async def test_unknown_route_is_404_and_wrong_method_405(running: Running) -> None:
    status, body, _ = await call(running.tcp, "GET", running.url("/v1/nope"))
    assert_error(status, body, 404)
    assert "/v1/nope" in body["details"]
    status, body, response = await call(running.tcp, "DELETE", running.url("/v1/status"))
    assert_error(status, body, 405)
    assert set(response.headers["Allow"].split(",")) == {"GET", "HEAD"}


async def test_request_id_is_returned_and_logged(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="smemd.access")
    caplog.handler.addFilter(log.RequestIds())  # as smemd's own handler marks each line
    _, _, response = await call(
        running.tcp, "GET", running.url("/v1/health"), headers={"X-Request-Id": "abc-123"}
    )
    assert response.headers["X-Request-Id"] == "abc-123"
    _, _, response = await call(
        running.tcp, "GET", running.url("/v1/nope"), headers={"X-Request-Id": "x" * 200}
    )
    generated = response.headers["X-Request-Id"]
    assert len(generated) == 16 and generated != "x" * 200
    lines = [
        (getattr(r, "request_id", ""), r.getMessage())
        for r in caplog.records
        if r.name == "smemd.access"
    ]
    assert any(rid == "abc-123" and "GET /v1/health" in line for rid, line in lines)
    assert any(rid == generated and " 404 " in line for rid, line in lines)


async def test_metrics_count_requests_by_route_and_status(running: Running) -> None:
    from tests.metrics_scrape import scrape, value

    for _ in range(3):
        await call(running.unix, "GET", "http://smemd/v1/health")
    await call(running.unix, "GET", "http://smemd/v1/nope")
    samples, types = await scrape(running)
    requests = "smem_http_requests_total"
    assert value(samples, requests, route="/v1/health", method="GET", status=200) == 3
    assert value(samples, requests, route="unmatched", method="GET", status=404) == 1
    duration = "smem_http_request_duration_seconds"
    assert value(samples, duration + "_count", route="/v1/health") == 3
    assert value(samples, duration + "_bucket", route="/v1/health", le="+Inf") == 3
    assert types[duration] == "histogram" and types["smem_http_requests"] == "counter"
    assert value(samples, "smem_uptime_seconds") > 0


async def test_activity_counts_this_minute(running: Running) -> None:
    for _ in range(4):
        await call(running.tcp, "GET", running.url("/v1/health"))
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/activity")
    assert status == 200
    assert body["windowMinutes"] == 60 and len(body["perMinute"]) == 60
    assert body["perMinute"][-1]["requests"] == 4 == body["requests"]
    (health,) = [r for r in body["routes"] if r["route"] == "/v1/health"]
    assert health["requests"] == 4
    assert 0 < health["p50Ms"] <= health["p95Ms"] < 1000


async def test_head_on_health_for_load_balancers(running: Running) -> None:
    async with running.tcp.head(running.url("/v1/health")) as response:
        assert response.status == 200


async def test_unexpected_failure_is_a_500_in_the_error_shape(
    start_daemon: StartDaemon, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("secret internals")

    running = await start_daemon(routes=[web.get("/test/broken", broken)])
    caplog.handler.addFilter(log.RequestIds())  # as smemd's own handler marks each line
    status, body, response = await call(running.tcp, "GET", running.url("/test/broken"))
    assert_error(status, body, 500)
    assert "secret internals" not in body["error"] + body["details"]
    rid = response.headers["X-Request-Id"]
    assert rid in body["details"]
    assert any(r.exc_info and getattr(r, "request_id", "") == rid for r in caplog.records)
