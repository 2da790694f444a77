"""The console's Home view in Chromium: the seeded namespace's profile and overview in both
themes, and a daemon with no namespace at all."""

from __future__ import annotations

from tests.browser import THEMES, chromium, seed
from tests.conftest import StartDaemon
from tests.test_api import call


async def test_home_shows_the_seeded_namespace_in_both_themes(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    await seed(running)
    _, overview, _ = await call(running.unix, "GET", "http://smemd/ns/people/overview")
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(running.url("/#/home?ns=people"), theme=theme)
            page = tab.page
            await page.get_by_role("heading", name="Home", level=1).wait_for()
            counts = page.get_by_role("region", name="Counts")
            live = f"{overview['memories']['live']:,}"
            await counts.get_by_text(live, exact=True).first.wait_for()
            for heading in (
                "Type mix",
                "Memories per hour",
                "Facts per document",
                "Latest memories",
            ):
                await page.get_by_role("heading", name=heading).wait_for()
            await page.get_by_role("img", name="Memories stored per hour").wait_for()
            static = page.get_by_role("region", name="Static")
            assert await static.get_by_role("link").count() >= 3
            latest = page.get_by_role("region", name="Latest memories").get_by_role("link")
            assert await latest.count() == 8
            await tab.screenshot(f"home-{theme}")
            tab.assert_clean()
        await latest.first.click()
        await page.wait_for_url("**/#/memories?*id=*")
        await (
            page.get_by_role("complementary", name="Memory")
            .get_by_role("heading", name="Versions")
            .wait_for()
        )
        tab.assert_clean()


async def test_home_on_an_empty_daemon_says_how_to_begin(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/home?ns=fresh"))
        page = tab.page
        empty = page.get_by_role("region", name="Empty namespace")
        await empty.get_by_text("No namespace called fresh yet").wait_for()
        await empty.get_by_role("link", name="Documents").wait_for()
        # The first document arrives: the next look finds the namespace (Home polls by name).
        status, _, _ = await call(
            running.unix, "POST", "http://smemd/ns/fresh/document",
            json={"content": "Alice lives in Lisbon."},
        )  # fmt: skip
        assert status in (200, 202)
        await page.reload()
        await page.get_by_role("region", name="Counts").wait_for()
        tab.assert_clean()
