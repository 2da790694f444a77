"""The console's Activity view in Chromium: dreaming, traffic, the engine's figures from
/v1/metrics, the request log, the judge's calls with their labels, and calibration; what each role
is offered; and that watching it is not use."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.browser import THEMES, chromium, seed
from tests.conftest import Running, StartDaemon, config_with_tokens
from tests.dreams import GRADED, HONEY, TEA, JudgeTables, dreamt, fake_pair, heuristic_store
from tests.fakes.fleet import start_hosts
from tests.fakes.llama_server import FakeLlamaServer
from tests.metrics_scrape import scrape, total, value
from tests.test_api import call

ADMIN, READER, SCOPED = "admin-secret-0001", "reader-secret-001", "scoped-secret-001"
TOKENS = f"""admin-token = "{ADMIN}"
[[api.tokens]]
name = "reader"
token = "{READER}"
namespaces = ["*"]
[[api.tokens]]
name = "scoped"
token = "{SCOPED}"
namespaces = ["dreams"]
"""
NURSE = "Alex works as a nurse at the city hospital."


class EveryText(JudgeTables):
    """The judge's tables, answering "a fact, at 0.9" for a text they do not name (the seeded
    namespace's memories)."""

    def _type(self, prompt: str, text: str) -> dict[str, float]:
        self.types.setdefault(text, ("fact", 0.9))
        return super()._type(prompt, text)


@pytest.fixture
async def servers() -> AsyncIterator[dict[str, FakeLlamaServer]]:
    tables = EveryText({TEA: ("fact", 0.9), HONEY: ("fact", 0.9)}, {HONEY: TEA})
    tables.types |= {text: (pick, p) for text, (pick, p, _) in GRADED.items()}
    async with fake_pair(tables) as fakes:
        yield fakes


async def judged(
    start_daemon: StartDaemon, state_dir: Path, servers: dict[str, FakeLlamaServer]
) -> Running:
    """A daemon with an admin and a read token whose judge has typed and linked the graded texts."""
    await heuristic_store(start_daemon, state_dir, servers["embed"], [TEA, HONEY, *GRADED])
    nodes = [
        ("node0", servers["embed"], ["interactive", "background"], "embed"),
        ("node1", servers["llm"], ["interactive", "background"], "llm"),
    ]
    running = await start_hosts(
        start_daemon, state_dir, nodes, name="model.toml",
        extra=TOKENS + "[engine]\ndreaming-quiet-s = 0.2\n",
    )  # fmt: skip
    await dreamt(running)
    return running


async def labels(running: Running, kind: str) -> int:
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/calibration")
    assert status == 200, body
    return next(int(j["labels"]) for j in body["judges"] if j["kind"] == kind)


async def test_activity_loads_clean_in_both_themes(
    short_dir: Path, start_daemon: StartDaemon, servers: dict[str, FakeLlamaServer]
) -> None:
    running = await judged(start_daemon, short_dir, servers)
    await seed(running)
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(running.url("/#/activity"), theme=theme, token=ADMIN)
            page = tab.page
            await page.get_by_role("heading", name="Activity", level=1).wait_for()
            await page.get_by_role("button", name="Pause dreaming").wait_for()
            await page.get_by_role("button", name="Fit").wait_for()
            await page.get_by_role("button", name=f"Right: {NURSE}").wait_for()
            requests = page.get_by_role("region", name="Recent requests")
            await requests.get_by_role("cell", name="/ns/{ns}/document/batch").wait_for()
            await page.get_by_role("img", name="Requests per minute over the last hour").wait_for()
            await page.get_by_test_id("jobs-done").wait_for()
            await tab.screenshot(f"activity-{theme}")
            tab.assert_clean()


async def test_a_label_on_a_call_is_counted_by_calibration(
    short_dir: Path, start_daemon: StartDaemon, servers: dict[str, FakeLlamaServer]
) -> None:
    running = await judged(start_daemon, short_dir, servers)
    before = await labels(running, "type")
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/activity"), token=ADMIN)
        page = tab.page
        counted = page.get_by_test_id("labels-type")
        await page.get_by_label("Which judge's calls").select_option("type")
        await page.get_by_role("button", name=f"Right: {NURSE}").click()
        await page.get_by_text("labelled correct").wait_for()
        await page.get_by_role("button", name=f"Right: {NURSE}").wait_for(state="detached")
        await page.wait_for_function(
            "n => document.querySelector('[data-testid=labels-type]').textContent === String(n)",
            arg=before + 1,
        )
        assert await counted.inner_text() == str(before + 1)
        assert await labels(running, "type") == before + 1

        # The label is among the recent requests; hiding the GETs leaves the writes.
        recent = page.get_by_role("region", name="Recent requests")
        await recent.get_by_role("cell", name="/v1/labels").wait_for()
        await recent.get_by_label("Hide GETs").check()
        await page.wait_for_function(
            "() => ![...document.querySelectorAll('.requests tbody tr')]"
            ".some(tr => tr.cells[1].textContent === 'GET')"
        )
        assert await recent.get_by_role("cell", name="POST", exact=True).count() >= 1

        # An admin fits the thresholds: too few labels yet, so they stay.
        await page.get_by_role("button", name="Fit").click()
        await page.get_by_role("status").get_by_text("type too few labels").wait_for()
        tab.assert_clean()

        # A read token is shown the same, with nothing it may not do.
        tab = await browser.open(running.url("/#/activity"), token=READER)
        page = tab.page
        await page.get_by_role("heading", name="Calibration").wait_for()
        await page.get_by_text("labelled correct").wait_for()
        await page.get_by_test_id("dreaming-state").wait_for()
        for name in ("Pause dreaming", "Resume dreaming", "Fit", f"Wrong: {TEA}", "✓"):
            assert await page.get_by_role("button", name=name).count() == 0, name
        tab.assert_clean()

        # A token limited to some namespaces sees its calls, and not what spans every namespace.
        tab = await browser.open(running.url("/#/activity"), token=SCOPED)
        page = tab.page
        await page.get_by_text("This token is limited to some namespaces").wait_for()
        await page.get_by_text(NURSE).wait_for()
        assert await page.get_by_role("heading", name="Calibration").count() == 0
        assert await page.get_by_role("heading", name="Recent requests").count() == 0
        tab.assert_clean()


async def test_an_admin_pauses_and_resumes_dreaming(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    running = await start_daemon(config_with_tokens(short_dir, TOKENS))
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/activity"), token=ADMIN)
        page = tab.page
        await page.get_by_role("button", name="Pause dreaming").click()
        await page.get_by_role("button", name="Resume dreaming").wait_for()
        assert (await dreaming(running))["enabled"] is False
        await page.get_by_role("button", name="Resume dreaming").click()
        await page.get_by_role("button", name="Pause dreaming").wait_for()
        assert (await dreaming(running))["enabled"] is True
        tab.assert_clean()


async def dreaming(running: Running) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/dreaming")
    assert status == 200, body
    return dict(body)


async def test_watching_activity_is_not_use(start_daemon: StartDaemon) -> None:
    """The view polls every 5 s: over a few of its periods (the page's clock run ahead) the
    daemon's quiet clock keeps growing as the wall clock does."""
    running = await start_daemon()
    async with chromium() as browser:
        tab = await browser.open(running.url("/"))
        page = tab.page
        await page.clock.install()
        polled: list[str] = []
        page.on("response", lambda r: polled.append(r.url) if "/v1/" in r.url else None)
        await page.goto(running.url("/#/activity"))
        await page.get_by_test_id("quiet-for").wait_for()
        started, first = time.monotonic(), (await dreaming(running))["quietForS"]
        quiet = first
        for _ in range(3):
            seen = len(polled)
            await page.clock.run_for(5_000)
            async with asyncio.timeout(5):
                while len([u for u in polled[seen:] if "/v1/dreaming" in u]) < 1:
                    await asyncio.sleep(0.05)
            now = (await dreaming(running))["quietForS"]
            assert now > quiet
            quiet = now
        waited = time.monotonic() - started
        assert quiet - first >= waited - 0.2, (first, quiet, waited)
        polls = ("requests", "activity", "metrics", "judgements", "calibration")
        assert {f"/v1/{p}" for p in polls} <= {
            "/" + u.split("/", 3)[3].split("?")[0] for u in polled
        }
        tab.assert_clean()


UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}


def in_bytes(shown: str) -> float:
    """The bytes a size as the console shows it ("76.4 GiB") stands for."""
    number, unit = shown.split()
    return float(number) * UNITS[unit]


async def test_the_engine_panel_shows_what_metrics_says(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    running = await start_daemon(config_with_tokens(short_dir, TOKENS))
    await seed(running, "engine", documents=3)
    for query in ("Where does Alice live?", "Who has a parrot?"):
        status, body, _ = await call(
            running.unix, "POST", "http://smemd/ns/engine/search", json={"query": query}
        )
        assert status == 200, body
    samples, _ = await scrape(running)
    done = value(samples, "smem_ingest_jobs_ended_total", outcome="done")
    searches = total(samples, "smem_recall_seconds_count", purpose="search")  # over its modes
    free = value(samples, "smem_state_dir_free_bytes")
    assert (done, searches) == (3, 2) and free > 0
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(running.url("/#/activity"), theme=theme, token=READER)
            engine = tab.page.get_by_role("region", name="Engine", exact=True)
            await engine.get_by_test_id("jobs-done").wait_for()
            assert await engine.get_by_test_id("jobs-done").inner_text() == f"{done:g}"
            assert await engine.get_by_test_id("recall-search").inner_text() == f"{searches:g}"
            shown = await engine.get_by_test_id("free-bytes").inner_text()
            assert abs(in_bytes(shown) - free) <= 0.02 * free, (shown, free)  # three figures
            for phase in ("queued", "fetching", "chunking", "embedding", "extracting"):
                await engine.get_by_role("cell", name=phase, exact=True).wait_for()
            await engine.get_by_text("Writer wait").wait_for()
            await engine.get_by_role("region", name="Dreaming backlog").wait_for()
            await tab.screenshot(f"activity-engine-{theme}")
            tab.assert_clean()


# Label values with every escape, a label set with spaces and a trailing comma, a timestamp, and
# the special values; then lines no scraper would take, which the console passes over.
SAMPLES = r"""# HELP smem_x A line of help with "quotes" and a \\ backslash.
# TYPE smem_x counter
smem_x_total{path="a \"quoted\" }, name",code="x\\y"} 3
smem_x_total{path="line\nbreak",} 1.5e+06 1700000000000
smem_x_total{ path = "spaced" , code="\q" } 2
smem_y +Inf
smem_y_negative{a="1"} -Inf
smem_z NaN
"""
NOT_SAMPLES = """not a sample {
smem_bad{a="unclosed} 1
smem_bad{a=1} 1
smem_bad{a="1" b="2"} 1
smem_bad one
smem_bad 1 2 3
"""
PARSE = "async text => (await import('/console/metrics.js')).parseMetrics(text)"
Sample = tuple[str, dict[str, str], float | str]


def reference(text: str) -> list[Sample]:
    """The samples as prometheus-client's parser reads them (NaN as a string, to compare)."""
    return [
        (s.name, s.labels, "NaN" if math.isnan(s.value) else float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def read(samples: list[dict[str, Any]]) -> list[Sample]:
    return [
        (s["name"], s["labels"], "NaN" if math.isnan(s["value"]) else float(s["value"]))
        for s in samples
    ]


async def test_the_console_reads_metrics_as_prometheus_does_and_copes_without_them(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await seed(running, "engine", documents=3)
    status, text, _ = await call(running.unix, "GET", "http://smemd/v1/metrics")
    assert status == 200, text
    async with chromium() as browser:
        tab = await browser.open(running.url("/"))
        page = tab.page
        assert read(await page.evaluate(PARSE, text)) == reference(text)
        crafted = read(await page.evaluate(PARSE, SAMPLES + NOT_SAMPLES))
        assert crafted == reference(SAMPLES)
        assert crafted[0][1] == {"path": 'a "quoted" }, name', "code": "x\\y"}

        # A scrape that fails is a line in the panel; the rest of the view carries on, and the
        # figures come back with the next scrape that answers.
        tab.expected_statuses.add(503)
        failure = '{"error": "storage_unavailable", "details": "injected"}'
        await page.route(
            "**/v1/metrics",
            lambda route: route.fulfill(status=503, content_type="application/json", body=failure),
        )
        await page.goto(running.url("/#/activity"))
        engine = page.get_by_role("region", name="Engine", exact=True)
        await engine.get_by_text("The engine's figures are unavailable").wait_for()
        await page.get_by_test_id("quiet-for").wait_for()
        await page.get_by_role("region", name="Recent requests").get_by_role("table").wait_for()
        assert await engine.get_by_test_id("jobs-done").count() == 0
        await page.unroute("**/v1/metrics")
        await engine.get_by_test_id("jobs-done").wait_for()
        assert await engine.get_by_text("unavailable").count() == 0
        tab.assert_clean()
