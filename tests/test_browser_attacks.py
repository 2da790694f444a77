"""Pages of other origins, in a real Chromium, try to write to and read the memory of a local
smemd: each way a page may send without asking (no-cors fetches, text/plain, form-encoded and
multipart forms) against every family of state-changing route, and a DNS-rebound page. smemd
sees each attempt and refuses it; nothing is written, nothing is read."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from aiohttp import web

from tests.browser import chromium
from tests.conftest import Running, StartDaemon
from tests.test_api import call
from tests.test_browser_rules import seed, snapshot

REBOUND = "evil.test"  # a name the browser resolves to 127.0.0.1, as a rebinding attacker's does

# Each attack: how the page sends it, the method and path, and the body. POST is all that a
# no-cors fetch or a form may use; PATCH and DELETE need a preflight, which must fail too.
ATTACKS = [
    ("fetch", "POST", "/ns/x/document", {"content": "Planted by a page.", "id": "csrf1"}),
    ("fetch", "POST", "/ns/x/document/batch", {"documents": [{"content": "Planted."}]}),
    ("fetch", "POST", "/v3/documents", {"content": "Planted v3.", "containerTag": "x"}),
    ("fetch", "POST", "/v4/memories", {"memories": [{"content": "Planted v4."}], "containerTag": "x"}),
    ("fetch", "POST", "/v4/memories/forget-matching", {"containerTag": "x", "query": "Mulder", "threshold": 0}),
    ("fetch", "POST", "/ns/x/document/m1/retract", None),
    ("fetch", "POST", "/v1/labels", {"memoryId": "mem_x", "type": "fact"}),
    ("fetch", "POST", "/ns/x/entities/merge", {"into": "Mulder", "names": ["Scully"]}),
    ("cors", "DELETE", "/ns/x", None),
    ("cors", "PATCH", "/ns/x/document/m1", {"content": "Changed."}),
    ("cors", "DELETE", "/v4/memories", {"containerTag": "x", "content": "Mulder"}),
    ("text-form", "POST", "/ns/x/document", {"content": "Planted by a form.", "id": "csrf2"}),
    ("text-form", "POST", "/v3/documents", {"content": "Planted by a form.", "containerTag": "x"}),
    ("url-form", "POST", "/v3/documents", {"content": "Planted by a form.", "containerTag": "x"}),
    ("multipart", "POST", "/ns/x/document/file", None),
    ("multipart", "POST", "/v3/documents/file", None),
]  # fmt: skip

ATTACK_PAGE = """<!doctype html><meta charset="utf-8"><title>a page of another origin</title>
<body><script>
const target = %(target)s, attacks = %(attacks)s;
function form(enctype, action, fields, file) {
  const frame = document.createElement("iframe");  // the form navigates it, not this page
  frame.name = "f" + Math.random().toString(36).slice(2);
  document.body.append(frame);
  const f = document.createElement("form");
  Object.assign(f, {method: "POST", action: target + action, enctype, target: frame.name});
  for (const [name, value] of Object.entries(fields)) {
    const input = document.createElement("input");
    // text/plain sends `name=value`: a name of `{"content": "…", "x` and a value of `"}` make JSON
    Object.assign(input, {type: "hidden", name, value});
    f.append(input);
  }
  if (file) {
    const input = document.createElement("input");
    input.type = "file"; input.name = "file";
    const dt = new DataTransfer();
    dt.items.add(new File(["Planted by an upload."], "a.txt", {type: "text/plain"}));
    input.files = dt.files;
    f.append(input);
  }
  document.body.append(f);
  return new Promise(done => { frame.onload = () => done("submitted"); f.submit(); });
}
async function attack([how, method, path, body]) {
  try {
    if (how === "fetch") {
      await fetch(target + path, {method, mode: "no-cors", headers: {"Content-Type": "text/plain"},
                                  body: body === null ? undefined : JSON.stringify(body)});
      return "sent";
    }
    if (how === "cors") {
      const r = await fetch(target + path, {method, headers: {"Content-Type": "application/json"},
                                            body: body === null ? undefined : JSON.stringify(body)});
      return "read " + r.status;  // only if smemd allowed this origin: it must not
    }
    if (how === "text-form") {
      const json = JSON.stringify(body);
      return await form("text/plain", path, {[json.slice(0, -2) + ', "x": "']: '"}'});
    }
    if (how === "url-form") return await form("application/x-www-form-urlencoded", path, body);
    return await form("multipart/form-data", path, {containerTag: "x"}, true);
  } catch (err) {
    return "blocked: " + err;
  }
}
(async () => {
  const results = [];
  for (const a of attacks) results.push(await attack(a));
  window.results = results;
})();
</script>"""

REBOUND_PAGE = """<!doctype html><meta charset="utf-8"><title>rebound</title><script>
(async () => {
  const out = {};
  for (const [method, path, body] of [["GET", "/ns"], ["GET", "/v1/status"],
      ["POST", "/ns/x/list/memories", {}], ["POST", "/ns/x/document", {content: "Planted."}]]) {
    try {
      const r = await fetch(path, {method, headers: {"Content-Type": "application/json"},
                                   body: body ? JSON.stringify(body) : undefined});
      out[method + " " + path] = r.status + " " + (await r.text()).slice(0, 200);
    } catch (err) { out[method + " " + path] = "blocked: " + err; }
  }
  window.results = out;
})();
</script>"""


@dataclass
class Attacker:
    url: str  # the origin of its pages
    page: str = ""  # what /attack.html serves


@pytest.fixture
async def attacker() -> AsyncIterator[Attacker]:
    """A web server of another origin on loopback (another port), serving the attack page."""
    attacker = Attacker("")

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=attacker.page, content_type="text/html")

    app = web.Application()
    app.router.add_get("/attack.html", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    attacker.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield attacker
    await runner.cleanup()


async def refused_requests(running: Running) -> list[tuple[str, int]]:
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/requests?limit=500")
    assert status == 200
    return [(r["route"], r["status"]) for r in body["requests"] if r["status"] in (403, 421)]


async def test_pages_of_other_origins_cannot_write_or_erase(
    start_daemon: StartDaemon, attacker: Attacker
) -> None:
    running = await start_daemon()
    await seed(running)
    before = await snapshot(running)
    attacker.page = ATTACK_PAGE % {
        "target": json.dumps(running.base), "attacks": json.dumps([list(a) for a in ATTACKS]),
    }  # fmt: skip
    async with chromium() as browser:
        tab = await browser.open(f"{attacker.url}/attack.html")
        results = await tab.page.wait_for_function("window.results", timeout=30_000)
        outcomes = await results.json_value()
    for (how, method, path, _), outcome in zip(ATTACKS, outcomes, strict=True):
        assert not outcome.startswith("read"), (how, method, path, outcome)
    engine = running.daemon.state.engine
    assert engine is not None
    await asyncio.sleep(0.5)  # a job a refused request had queued would be picked up by now
    await engine.wait_idle()
    assert await snapshot(running) == before
    # Each attack reached smemd and was refused there, not only by the browser.
    refused = await refused_requests(running)
    sent = [a for a in ATTACKS if a[0] != "cors"]
    assert len([r for r in refused if r[1] == 403]) >= len(sent), refused
    preflights = [
        r for r in refused if r[0] in ("/ns/{ns}", "/ns/{ns}/document/{id}", "/v4/memories")
    ]
    assert preflights, refused  # the preflights of the cors attempts were refused


async def test_a_rebound_page_can_read_nothing(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    await seed(running)
    before = await snapshot(running)
    port = int(running.base.rsplit(":", 1)[1])
    # Chromium's own Local Network Access checks refuse such a page's requests to loopback;
    # Firefox and Safari have none, so they are off here: smemd must refuse them itself.
    async with chromium(
        f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",
        "--disable-features=LocalNetworkAccessChecks",
    ) as browser:
        tab = await browser.open("about:blank")
        tab.expected_statuses.add(421)
        page_url = f"http://{REBOUND}:{port}/rebound.html"
        # The attacker's page, as its own server first served it under its name; from here on
        # the name resolves to 127.0.0.1, so its same-origin fetches go to smemd.
        await tab.page.route(
            page_url, lambda route: route.fulfill(body=REBOUND_PAGE, content_type="text/html")
        )
        await tab.page.goto(page_url)
        results = await tab.page.wait_for_function("window.results", timeout=30_000)
        outcomes = await results.json_value()
    assert len(outcomes) == 4
    for what, outcome in outcomes.items():
        assert outcome.startswith("421 "), (what, outcome)
        assert "Mulder" not in outcome
    assert await snapshot(running) == before
    assert [s for _, s in await refused_requests(running)].count(421) >= 4
