"""The console's Memories view in Chromium: browsing the seeded namespace in both themes, search
and open, Update (the version timeline grows), Forget and Restore (the view and the API agree)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser import THEMES, chromium, seed
from tests.conftest import Running, StartDaemon, config_with_tokens, token_table
from tests.test_api import call

NS = "http://smemd/ns/people"


async def memory(running: Running, memory_id: str) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", f"{NS}/memories/{memory_id}")
    assert status == 200, body
    return body


async def test_memories_lists_the_seeded_namespace_in_both_themes(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    live = await seed(running)
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(running.url("/#/memories?ns=people"), theme=theme)
            page = tab.page
            await page.get_by_role("heading", name="Memories", level=1).wait_for()
            await page.get_by_text(f"{live} live memories").wait_for()
            rows = page.get_by_role("region", name="Memory list").locator("tbody tr")
            assert await rows.count() == 20
            await (
                page.get_by_role("navigation", name="Memory pages")
                .get_by_role("button", name="Next")
                .click()
            )
            await page.get_by_text(f"page 2 of {-(-live // 20)}").wait_for()
            await page.get_by_label("Status").select_option("superseded")
            await page.get_by_role("cell", name="superseded").first.wait_for()
            await rows.first.focus()
            await page.keyboard.press("Enter")
            await page.wait_for_url("**id=*")
            detail = page.get_by_role("complementary", name="Memory")
            await (
                detail.get_by_role("list", name="Version timeline").locator("li").nth(1).wait_for()
            )
            await tab.screenshot(f"memories-{theme}")
            tab.assert_clean()


async def test_search_then_open_a_memory(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    await seed(running, documents=40)
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/memories?ns=people"))
        page = tab.page
        await page.locator("tbody tr").first.wait_for()
        await page.keyboard.press("/")
        await page.keyboard.type("Grace lives")
        await page.get_by_text("of the 100 best").wait_for()
        first = page.locator("tbody tr").first
        text = (await first.locator("td").first.inner_text()).strip()
        assert "Grace" in text
        await page.get_by_label("Type").select_option("fact")
        await first.click()
        await page.wait_for_url("**id=*")
        detail = page.get_by_role("complementary", name="Memory")
        await detail.locator("blockquote").get_by_text(text.split(" v")[0]).wait_for()
        tab.assert_clean()


async def test_update_grows_the_timeline_and_forget_and_restore_go_both_ways(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await seed(running, documents=20)
    _, listed, _ = await call(
        running.unix, "POST", f"{NS}/list/memories", params={"limit": "1"}, json={}
    )
    first = listed["memories"][0]
    async with chromium() as browser:
        tab = await browser.open(running.url(f"/#/memories?ns=people&id={first['id']}"))
        page = tab.page
        detail = page.get_by_role("complementary", name="Memory")
        timeline = detail.get_by_role("list", name="Version timeline").locator("li")
        await timeline.first.wait_for()
        before = await timeline.count()
        await detail.get_by_label("New text").fill("Ines moved to Riga last spring.")
        await detail.get_by_role("button", name="Update").click()
        await detail.locator("blockquote").get_by_text("Ines moved to Riga").wait_for()
        await (
            detail.get_by_role("list", name="Version timeline")
            .locator(f"li:nth-child({before + 1})")
            .wait_for()
        )
        assert await timeline.count() == before + 1
        newest = page.url.rsplit("id=", 1)[1]
        assert newest != first["id"]
        _, history, _ = await call(running.unix, "GET", f"{NS}/memories/{newest}/history")
        assert len(history["memories"]) == before + 1
        assert (await memory(running, first["id"]))["isLatest"] is False

        status = detail.locator("[data-status]")
        assert await status.inner_text() == "live"
        await detail.get_by_label("Reason").fill("wrong person")
        await detail.get_by_role("button", name="Forget").click()
        await detail.get_by_role("button", name="Restore").wait_for()
        assert await status.inner_text() == "forgotten"
        await detail.get_by_text("wrong person").wait_for()
        gone = await memory(running, newest)
        assert gone["isForgotten"] and gone["forgetReason"] == "wrong person"
        await detail.get_by_role("button", name="Restore").click()
        await detail.get_by_role("button", name="Forget").wait_for()
        assert await status.inner_text() == "live"
        assert (await memory(running, newest))["isForgotten"] is False
        tab.assert_clean()


async def test_a_read_token_sees_no_write_control(
    start_daemon: StartDaemon, short_dir: Path
) -> None:
    tokens = 'token = "wr1te-for-tests"\n' + token_table("reader", "r3ad-only", "read", ["people"])
    running = await start_daemon(config_with_tokens(short_dir, tokens))
    await seed(running, documents=5)
    _, listed, _ = await call(
        running.unix, "POST", f"{NS}/list/memories", params={"limit": "1"}, json={}
    )
    memory_id = listed["memories"][0]["id"]
    async with chromium() as browser:
        tab = await browser.open(
            running.url(f"/#/memories?ns=people&id={memory_id}"), token="r3ad-only"
        )
        detail = tab.page.get_by_role("complementary", name="Memory")
        await detail.get_by_role("list", name="Version timeline").locator("li").first.wait_for()
        for control in ("Update", "Forget", "Restore"):
            assert await detail.get_by_role("button", name=control).count() == 0
        tab.assert_clean()
