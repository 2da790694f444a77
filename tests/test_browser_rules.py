"""The browser rules over HTTP: Host names smemd (421 otherwise), a foreign Origin is refused
(403) unless invited, state-changing bodies are JSON or, for uploads, multipart (415); invited
origins get CORS. Every route of the table is tried, so a new route cannot slip past."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from smemd.api.app import ROUTES
from smemd.config import ConfigError
from tests.conftest import Running, StartDaemon, config_with_tokens, make_config
from tests.test_api import assert_error, call

EVIL = "http://evil.example"
CHANGING = [r for r in ROUTES if r.method in ("POST", "PUT", "PATCH", "DELETE")]


def concrete(path: str) -> str:
    """A route's template with each parameter filled: `{type:documents|…}` takes its first."""
    path = re.sub(r"\{[a-z]+:([a-z-]+)[^}]*\}", r"\1", path)
    return re.sub(r"\{[a-z]+\}", "victim", path).replace("/ns/victim", "/ns/x")


async def seed(running: Running) -> None:
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/ns/x/document",
        json={"content": "Mulder keeps a poster that says I want to believe.", "id": "m1"},
    )  # fmt: skip
    assert status == 200, body
    engine = running.daemon.state.engine
    assert engine is not None
    await engine.wait_idle()


async def snapshot(running: Running) -> Any:
    """What a refused request must not change: the namespaces, documents and memories."""
    _, namespaces, _ = await call(running.unix, "GET", "http://smemd/ns")
    _, documents, _ = await call(running.unix, "POST", "http://smemd/ns/x/list/documents", json={})
    _, memories, _ = await call(running.unix, "POST", "http://smemd/ns/x/list/memories", json={})
    return (
        namespaces,
        documents,
        [(m["id"], m["isForgotten"], m["isLatest"]) for m in memories["memories"]],
    )


@pytest.fixture
async def seeded(start_daemon: StartDaemon) -> Running:
    running = await start_daemon()
    await seed(running)
    return running


async def test_a_foreign_origin_is_refused_on_every_changing_route(seeded: Running) -> None:
    before = await snapshot(seeded)
    for route in CHANGING:
        for content_type, body in (
            ("text/plain", b'{"content": "planted", "id": "csrf1"}'),
            ("application/json", b'{"containerTag": "x", "query": "Mulder", "threshold": 0}'),
        ):
            status, reply, _ = await call(
                seeded.tcp, route.method, seeded.url(concrete(route.path)), data=body,
                headers={"Origin": EVIL, "Content-Type": content_type},
            )  # fmt: skip
            assert_error(status, reply, 403)
            assert "allow-origins" in reply["details"], (route.path, reply)
        # A request with no body at all (a no-cors fetch that sends none) is refused the same.
        status, reply, _ = await call(
            seeded.tcp, route.method, seeded.url(concrete(route.path)), headers={"Origin": "null"}
        )
        assert_error(status, reply, 403)
    assert await snapshot(seeded) == before


async def test_reads_refuse_other_origins_and_other_sites_too(seeded: Running) -> None:
    for path in ("/ns", "/v1/status", "/v1/whoami", "/", "/ns/x/memories/m1"):
        status, reply, _ = await call(seeded.tcp, "GET", seeded.url(path), headers={"Origin": EVIL})
        assert_error(status, reply, 403)
        # An <img> or <script> of another site's page carries no Origin, but says where it is.
        status, reply, _ = await call(
            seeded.tcp, "GET", seeded.url(path),
            headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"},
        )  # fmt: skip
        assert_error(status, reply, 403)
    # A link followed from another site opens the console; the same origin's own calls pass.
    status, _, _ = await call(
        seeded.tcp, "GET", seeded.url("/"),
        headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
    )  # fmt: skip
    assert status == 200
    status, _, _ = await call(
        seeded.tcp, "POST", seeded.url("/ns/x/search"), json={"query": "poster"},
        headers={"Origin": seeded.base, "Sec-Fetch-Site": "same-origin"},
    )  # fmt: skip
    assert status == 200
    # The health check answers anyone: it says only that smemd is up.
    status, health, _ = await call(
        seeded.tcp, "GET", seeded.url("/v1/health"),
        headers={"Origin": EVIL, "Host": "balancer.internal"},
    )  # fmt: skip
    assert status == 200 and health["status"] == "ok"


async def test_a_host_that_is_not_smemd_is_421_which_defeats_rebinding(seeded: Running) -> None:
    port = seeded.base.rsplit(":", 1)[1]
    for path in ("/ns", "/v1/status", "/", "/ns/x/list/memories"):
        method = "POST" if "list" in path else "GET"
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
            status, reply, _ = await call(
                seeded.tcp, method, seeded.url(path), headers={"Host": host}, json={}
            )
            assert_error(status, reply, 421)
            assert "allow-hosts" in reply["details"]
    status, reply, _ = await call(seeded.tcp, "GET", seeded.url("/ns"), headers={"Host": "a b"})
    assert_error(status, reply, 400)
    for host in (
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        "LOCALHOST.",
        f"console.localhost:{port}",
    ):
        status, _, _ = await call(seeded.tcp, "GET", seeded.url("/ns"), headers={"Host": host})
        assert status == 200, host
    # The socket is out of every browser's reach: whatever Host a local tool sends is fine.
    status, _, _ = await call(
        seeded.unix, "GET", "http://smemd/ns", headers={"Host": "evil.example", "Origin": EVIL}
    )
    assert status == 200


async def test_allow_hosts_and_allow_origins_invite_a_name_and_a_page(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    app = "http://app.localhost:3000"
    running = await start_daemon(
        config_with_tokens(
            short_dir,
            f'allow-hosts = ["Memory.Example"]\nallow-origins = ["{app}", "https://ui.example"]\n',
        )
    )
    await seed(running)
    status, _, _ = await call(
        running.tcp, "GET", running.url("/ns"), headers={"Host": "memory.example:8900"}
    )
    assert status == 200
    # The invited page's preflight, then its request: both carry what lets the page read them.
    async with running.tcp.options(
        running.url("/ns/x/document"),
        headers={
            "Origin": app, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
            "Access-Control-Request-Private-Network": "true",
        },
    ) as preflight:  # fmt: skip
        assert preflight.status == 204
        assert preflight.headers["Access-Control-Allow-Origin"] == app
        assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
        assert "Authorization" in preflight.headers["Access-Control-Allow-Headers"]
        assert preflight.headers["Access-Control-Allow-Private-Network"] == "true"
    status, body, response = await call(
        running.tcp, "POST", running.url("/ns/x/document"), headers={"Origin": app},
        json={"content": "The app may write.", "id": "invited"},
    )  # fmt: skip
    assert status == 200, body
    assert response.headers["Access-Control-Allow-Origin"] == app
    assert "X-Request-Id" in response.headers["Access-Control-Expose-Headers"]
    # Its errors can be read too; an origin not listed is still refused, preflight and all.
    status, body, response = await call(
        running.tcp, "POST", running.url("/ns/x/document"), headers={"Origin": app}, json={}
    )
    assert status == 400 and response.headers["Access-Control-Allow-Origin"] == app
    for origin in ("http://app.localhost:3001", "https://app.localhost:3000", EVIL):
        async with running.tcp.options(
            running.url("/ns/x/document"),
            headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
        ) as refused:
            assert refused.status == 403
            assert "Access-Control-Allow-Origin" not in refused.headers


async def test_changing_routes_take_json_an_upload_or_their_stream_and_nothing_else(
    seeded: Running,
) -> None:
    before = await snapshot(seeded)
    form = aiohttp.FormData({"content": "planted", "id": "csrf2"})
    for route in CHANGING:
        wanted = (
            "multipart/form-data"
            if route.form is not None
            else route.streamed or "application/json"
        )
        sends: list[dict[str, Any]] = [
            {"data": b'{"content": "planted"}', "headers": {"Content-Type": "text/plain"}},
            {"data": b"content=planted&id=csrf3"},  # aiohttp labels it form-encoded
            {"data": b'{"content": "planted"}', "headers": {"Content-Type": ""}},
        ]
        if route.form is None:
            sends.append({"data": form})
        else:
            sends.append({"json": {"content": "planted"}})
        for send in sends:
            if "data" in send and isinstance(send["data"], bytes) and "headers" not in send:
                send["headers"] = {"Content-Type": "application/x-www-form-urlencoded"}
            status, reply, _ = await call(
                seeded.unix, route.method, "http://smemd" + concrete(route.path), **send
            )
            assert_error(status, reply, 415)
            assert f"takes {wanted}" in reply["details"], (route.path, reply)
    assert await snapshot(seeded) == before
    # A charset parameter is still JSON; a request with no body needs no type at all.
    status, body, _ = await call(
        seeded.unix, "POST", "http://smemd/ns/x/search", data=b'{"query": "poster"}',
        headers={"Content-Type": "application/json; charset=utf-8"},
    )  # fmt: skip
    assert status == 200, body
    status, body, _ = await call(seeded.unix, "POST", "http://smemd/ns/x/document/m1/retract")
    assert status == 200, body


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("allow-origins", ["http://ok.example", "ftp://x"], "$.api.allow-origins[1]"),
        ("allow-origins", ["http://x.example/path"], "scheme://host[:port] alone"),
        ("allow-origins", ["null"], "$.api.allow-origins[0]"),
        ("allow-hosts", ["mem.example:8900"], "without a port"),
        ("allow-hosts", ["not a host"], "$.api.allow-hosts[0]"),
    ],
)
def test_bad_origins_and_hosts_stop_smemd_naming_them(
    short_dir: Path, key: str, value: list[str], says: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        make_config(short_dir, **{f"api__{key.replace('-', '_')}": value})
