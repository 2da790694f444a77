"""The console's Connect view in Chromium: the token gate, the MCP and SDK snippets, and the route
list from the OpenAPI document."""

from __future__ import annotations

import json

from tests.browser import THEMES, chromium, seed
from tests.conftest import StartDaemon
from tests.test_api import ADMIN, TOKEN, call

METHODS = ("get", "post", "put", "patch", "delete")


async def test_connect_loads_clean_and_lists_every_route(start_daemon: StartDaemon) -> None:
    from playwright.async_api import expect

    running = await start_daemon()
    await seed(running, documents=20)
    status, document, _ = await call(running.tcp, "GET", running.url("/v1/openapi.json"))
    assert status == 200
    operations = [
        (method, path, op)
        for path, ops in document["paths"].items()
        for method, op in ops.items()
        if method in METHODS
    ]
    pausing = [o for o in operations if "pause" in f"{o[0]} {o[1]} {o[2]['summary']}".lower()]
    assert 0 < len(pausing) < len(operations)
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(running.url("/#/connect?ns=people"), theme=theme)
            page = tab.page
            await page.get_by_role("heading", name="Connect", level=1).wait_for()
            rows = page.get_by_role("region", name="Routes").locator("tbody tr")
            await rows.first.wait_for()
            assert await rows.count() == len(operations)
            admin = rows.filter(has_text="/v1/pause").filter(has_text="POST")
            assert (await admin.locator(".badge").inner_text()) == "admin"

            snippets = await page.locator("pre code").all_inner_texts()
            assert any(f"{running.base}/ns/people/search" in s for s in snippets)
            assert any('"-n", "people"' in s for s in snippets)
            assert any('base_url="' + running.base in s for s in snippets)
            assert any("baseURL" in s for s in snippets)
            # How to let a web app of one's own call smemd: its origin in allow-origins.
            pages = page.get_by_role("region", name="Web pages")
            assert running.base in await pages.inner_text()
            assert (
                'allow-origins = ["http://localhost:3000"]'
                in await pages.locator("pre code").inner_text()
            )
            await tab.screenshot(f"connect-{theme}")

            await page.get_by_label("Filter routes").fill("pause")
            await expect(rows).to_have_count(len(pausing))
            # `/` focuses the view's search field.
            await page.get_by_label("Filter routes").fill("")
            await page.locator("main h1").click()
            await page.keyboard.press("/")
            assert await page.evaluate("document.activeElement.hasAttribute('data-search')")
            # Copying works, or says it did not and selects the text, without an uncaught error.
            copy = page.get_by_role("button", name="Copy the curl example")
            if theme == "dark":
                await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
                await copy.click()
                await page.get_by_text("Copied", exact=True).wait_for()
                copied = await page.evaluate("navigator.clipboard.readText()")
                assert copied.startswith("# add a document") and "Bearer $SMEM_TOKEN" in copied
            else:
                await page.evaluate(
                    "Object.defineProperty(navigator, 'clipboard', {value: undefined})"
                )
                await copy.click()
                await page.get_by_text("Not copied").wait_for()
                selected = await page.evaluate("getSelection().toString()")
                assert selected.startswith("# add a document")
            tab.assert_clean()


async def test_a_token_unlocks_the_console_and_a_wrong_one_does_not(
    start_daemon: StartDaemon,
) -> None:
    from playwright.async_api import expect

    running = await start_daemon(api__token=TOKEN, api__admin_token=ADMIN)
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/memories?ns=people"))
        page = tab.page
        nav = page.get_by_role("navigation", name="Views").get_by_role("link")
        await page.get_by_role("heading", name="Connect", level=1).wait_for()
        assert [t.split("\n")[0] for t in await nav.all_inner_texts()] == ["Connect"]
        assert await page.get_by_role("region", name="Substrate").count() == 0
        assert await page.get_by_role("button", name="Forget token").count() == 0

        await page.get_by_label("Token").fill("not-the-token")
        await page.get_by_role("button", name="Use token").click()
        await page.get_by_role("alert").filter(has_text="not accepted").wait_for()
        assert await nav.count() == 1
        assert await page.get_by_role("region", name="Substrate").count() == 0

        await page.get_by_label("Token").fill(TOKEN)
        await page.get_by_role("button", name="Use token").click()
        await page.get_by_role("heading", name="Memories", level=1).wait_for()
        assert await nav.count() == 8
        await page.get_by_role("region", name="Substrate").wait_for()

        await page.get_by_role("link", name="Connect").click()
        caller = page.get_by_role("region", name="Caller")
        await caller.get_by_text("write", exact=True).wait_for()
        assert TOKEN not in await page.locator("main").inner_text()
        snippets = await page.locator("pre code").all_inner_texts()
        assert all(TOKEN not in s for s in snippets)
        claude, mcp = snippets[:2]
        assert claude.splitlines() == [
            f"claude mcp add smem -e SMEM_URL={running.base} \\",
            "  -e SMEM_TOKEN=$SMEM_TOKEN \\",
            "  -- smemctl mcp -n people",
        ]
        assert json.loads(mcp)["mcpServers"]["smem"] == {
            "command": "smemctl",
            "args": ["mcp", "-n", "people"],
            "env": {"SMEM_URL": running.base, "SMEM_TOKEN": "${SMEM_TOKEN}"},
        }
        await page.get_by_role("button", name="Forget token").click()
        await expect(nav).to_have_count(1)
        assert await page.evaluate("sessionStorage.getItem('smem.token')") is None
        tab.assert_clean()
