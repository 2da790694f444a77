"""Every view of the console, one after another on a namespace of a few hundred memories: each
loads clean (no console error, no failed request), and the console's polling while it is open
never counts as use of the models, so dreaming is not held off by an open tab."""

from __future__ import annotations

import asyncio
import time

from smemd.console.pages import CSP
from tests.browser import chromium, seed
from tests.conftest import StartDaemon

KEYS = {"home": "h", "memories": "m", "documents": "d", "graph": "g", "chat": "c",
        "activity": "a", "nodes": "n", "connect": "k"}  # fmt: skip


async def test_every_view_loads_clean_and_polling_is_not_use(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    await seed(running)
    engine = running.daemon.state.engine
    assert engine is not None
    clock = engine.recall.clock
    browsed_from = time.monotonic()
    quiet_before = clock.quiet_for()
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/home?ns=people"))
        page = tab.page
        for view, key in KEYS.items():
            await page.keyboard.press("g")
            await page.keyboard.press(key)
            await page.wait_for_url(f"**/#/{view}*")
            await page.locator("main h1").first.wait_for()
            await page.wait_for_load_state("networkidle")
        await asyncio.sleep(5.5)  # a poll period of the substrate and the open view
        tab.assert_clean()
        csp_header = (await page.request.get(running.url("/"))).headers["content-security-policy"]
        assert csp_header == CSP
    browsed = time.monotonic() - browsed_from
    assert clock.quiet_for() >= quiet_before + browsed - 0.5, "browsing touched the models"
