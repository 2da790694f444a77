"""The console's shell in Chromium: the rail, the route in the hash, the keyboard, the substrate,
and the token gate."""

from __future__ import annotations

import re

from playwright.async_api import expect

from tests.browser import chromium
from tests.conftest import StartDaemon


async def test_the_shell_loads_clean_and_the_keyboard_moves_between_views(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    async with chromium() as browser:
        tab = await browser.open(running.url("/"))
        page = tab.page
        await page.get_by_role("navigation", name="Views").wait_for()
        links = page.get_by_role("navigation", name="Views").get_by_role("link")
        assert [t.replace("\n", " ") for t in await links.all_inner_texts()] == [
            "Home g h", "Memories g m", "Documents g d", "Graph g g", "Chat g c",
            "Activity g a", "Nodes g n", "Connect g k",
        ]  # fmt: skip
        await page.keyboard.press("g")
        await page.keyboard.press("m")
        await page.wait_for_url("**/#/memories*")
        await page.get_by_role("heading", name="Memories", level=1).wait_for()
        assert await page.title() == "Memories · smem"
        await page.keyboard.press("g")
        await page.keyboard.press("a")
        await page.wait_for_url("**/#/activity")
        await expect(page.locator('nav a[aria-current="page"]')).to_have_text(
            re.compile("^Activity")
        )
        await page.get_by_role("region", name="Substrate").get_by_text("in-process").wait_for()
        await page.get_by_label("Namespace").fill("work")
        await page.get_by_label("Namespace").press("Enter")
        await page.wait_for_url("**/#/home?ns=work")
        tab.assert_clean()


async def test_seeding_makes_a_few_hundred_memories(start_daemon: StartDaemon) -> None:
    from tests.browser import seed

    running = await start_daemon()
    assert await seed(running) >= 200
