"""The console's Activity view in Chromium: dreaming, traffic, the request log, the judge's calls
with their labels, and calibration; what each role is offered; and that watching it is not use."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import THEMES, chromium, seed
from tests.conftest import Running, StartDaemon, config_with_tokens
from tests.dreams import GRADED, HONEY, TEA, JudgeTables, dreamt, fake_pair, heuristic_store
from tests.fakes.fleet import start_hosts
from tests.fakes.llama_server import FakeLlamaServer
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
        assert {"/v1/requests", "/v1/activity", "/v1/judgements", "/v1/calibration"} <= {
            "/" + u.split("/", 3)[3].split("?")[0] for u in polled
        }
        tab.assert_clean()
