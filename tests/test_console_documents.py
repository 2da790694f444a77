"""The console's Documents view in Chromium: the queue's phases, the paged list, adding by text
and by file, reading a document with its memories, and deleting one behind a confirmation."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from tests.browser import THEMES, chromium, seed
from tests.conftest import Running, StartDaemon, config_with_tokens, token_table
from tests.fakes.documents import ARTICLE_TITLE
from tests.fakes.web_pages import PageServer
from tests.settling import until_idle
from tests.test_api import call


async def api(running: Running, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    status, body, _ = await call(running.unix, method, f"http://smemd{path}", **kwargs)
    return status, body


async def first_document(running: Running, namespace: str) -> dict[str, Any]:
    status, body = await api(running, "POST", f"/ns/{namespace}/list/documents?limit=1", json={})
    assert status == 200, body
    return dict(body["documents"][0])


async def test_documents_loads_clean_on_a_seeded_namespace_in_both_themes(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await seed(running)
    doc = await first_document(running, "people")
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(
                running.url(f"/#/documents?ns=people&id={doc['id']}"), theme=theme
            )
            page = tab.page
            await page.get_by_role("heading", name="Documents", level=1).wait_for()
            queue = page.get_by_role("region", name="Processing queue")
            await queue.get_by_role("row").nth(1).wait_for()
            assert await queue.locator(".phase.done").count() == 10  # the latest jobs, all done
            listed = page.get_by_role("region", name="Documents", exact=True)
            await listed.get_by_text("120 documents").wait_for()
            assert await listed.locator("tbody tr").count() == 20  # a page
            await listed.get_by_role("navigation", name="Document pages").wait_for()
            memories = page.get_by_role("list", name="Memories of this document")
            await memories.get_by_role("listitem").first.wait_for()
            link = memories.get_by_role("link").first
            assert re.search(
                r"#/memories\?ns=people&id=\w+", await link.get_attribute("href") or ""
            )
            await tab.screenshot(f"documents-{theme}")
            # A row opens its document from the keyboard too.
            second = listed.locator("tbody tr").nth(1)
            await second.focus()
            await second.press("Enter")
            await page.wait_for_url(re.compile(r"#/documents\?ns=people&id=(?!" + doc["id"] + ")"))
            await listed.locator("tbody tr.selected").nth(0).wait_for()
            assert await listed.locator("tbody tr").nth(1).get_attribute("class") == "selected"
            tab.assert_clean()


async def test_a_document_added_by_text_moves_through_its_phases_to_done_with_its_memories(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    async with chromium() as browser:
        # "fresh" does not exist yet: the first document makes it.
        tab = await browser.open(running.url("/#/documents?ns=fresh"))
        page = tab.page
        await page.get_by_text("No documents in fresh.").wait_for()
        await page.get_by_label("Document text").fill(
            "Mara lives in Lisbon. Mara has a beagle called Tico. Mara prefers tea over coffee."
        )
        await page.get_by_label("Your id (optional)").fill("mara-notes")
        await page.get_by_role("button", name="Add", exact=True).click()
        added = page.get_by_role("status")
        await added.get_by_text("Added").wait_for()
        doc_id = await added.get_by_role("link").inner_text()

        queue = page.get_by_role("region", name="Processing queue")
        row = queue.get_by_role("row").filter(has_text=doc_id)
        await row.locator(".phase.done").wait_for(timeout=20_000)
        trail = row.locator(".trail")
        if await trail.count():  # the phases the poll saw on the way
            assert (await trail.inner_text()).endswith("done")
        # The namespace now exists, and the switcher offers it.
        await page.locator('#namespaces option[value="fresh"]').wait_for(state="attached")

        await row.get_by_role("link", name=doc_id).click()
        await page.wait_for_url(f"**/#/documents?ns=fresh&id={doc_id}")
        memories = page.get_by_role("list", name="Memories of this document")
        await memories.get_by_role("listitem").first.wait_for()
        status, doc = await api(running, "GET", f"/ns/fresh/document/{doc_id}?include=memories")
        assert status == 200 and doc["memories"], doc
        shown = await memories.get_by_role("link").all_inner_texts()
        assert sorted(shown) == sorted(m["memory"] for m in doc["memories"])
        assert any("Lisbon" in text for text in shown)
        content = page.locator(".detail pre.content")
        assert (await content.inner_text()).startswith("Mara lives in Lisbon.")
        tab.assert_clean()


async def test_a_file_upload_becomes_a_document(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/documents?ns=files"))
        page = tab.page
        await page.get_by_role("radio", name="File").check()
        upload = page.get_by_label("File to upload")
        await upload.set_input_files(
            files=[
                {
                    "name": "trip.md",
                    "mimeType": "text/markdown",
                    "buffer": b"# Trip notes\n\nOmar flew to Quito in March.",
                }
            ]
        )
        await page.get_by_role("button", name="Add", exact=True).click()
        added = page.get_by_role("status")
        await added.get_by_text("Added").wait_for()
        doc_id = await added.get_by_role("link").inner_text()
        listed = page.get_by_role("region", name="Documents", exact=True)
        await (
            listed.get_by_role("row")
            .filter(has_text=doc_id)
            .get_by_text("done")
            .wait_for(timeout=20_000)
        )
        status, doc = await api(running, "GET", f"/ns/files/document/{doc_id}")
        assert status == 200, doc
        assert doc["metadata"]["filename"] == "trip.md"
        assert "Omar flew to Quito" in doc["content"]
        assert await upload.input_value() == ""  # emptied
        tab.assert_clean()


async def add_in_the_view(page: Any, mode: str, value: str, before: str = "") -> str:
    """Add a document through the form; its id, as the view says it was added (after `before`,
    the one the view said it added last)."""
    await page.get_by_role("radio", name=mode).check()
    field = {"Text": "Document text", "URL": "URL to fetch"}[mode]
    await page.get_by_label(field).fill(value)
    await page.get_by_role("button", name="Add", exact=True).click()
    added = page.get_by_role("status").filter(has_text="Added")
    link = added.get_by_role("link")
    if before:
        link = link.filter(has_not_text=before)
    await link.wait_for()
    return await link.inner_text()


async def test_a_url_is_fetched_and_a_failed_fetch_shows_its_error_in_the_queue(
    start_daemon: StartDaemon,
) -> None:
    async with PageServer() as pages, chromium() as browser:
        running = await start_daemon(ingest__allow_hosts=[f"127.0.0.1:{pages.port}"])
        tab = await browser.open(running.url("/#/documents?ns=web"))
        page = tab.page
        queue = page.get_by_role("region", name="Processing queue")

        fetched = await add_in_the_view(page, "URL", pages.url("/article"))
        row = queue.get_by_role("row").filter(has_text=fetched)
        await row.locator(".phase.done").wait_for(timeout=20_000)
        await row.get_by_role("link", name=fetched).click()
        detail = page.get_by_role("region", name=ARTICLE_TITLE)
        await detail.get_by_text(pages.url("/article")).wait_for()
        await detail.get_by_role("list", name="Memories of this document").wait_for()

        broken = await add_in_the_view(page, "URL", pages.url("/status/404"), before=fetched)
        row = queue.get_by_role("row").filter(has_text=broken)
        await row.locator(".phase.failed").wait_for(timeout=20_000)
        error = await row.locator(".error").inner_text()
        assert error.startswith("fetching: ") and "404" in error, error
        assert pages.paths == ["/article", "/status/404"]
        tab.assert_clean()


async def test_deleting_a_document_asks_first_and_then_it_is_gone(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    status, ref = await api(
        running, "POST", "/ns/trash/document", json={"content": "Ivo keeps bees.", "id": "bees"}
    )
    assert status == 200, ref
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    async with chromium() as browser:
        tab = await browser.open(running.url(f"/#/documents?ns=trash&id={ref['id']}"))
        page = tab.page
        delete = page.get_by_role("button", name="Delete document")
        # Dismissed: nothing happens.
        page.once("dialog", lambda d: asyncio.ensure_future(d.dismiss()))
        await delete.click()
        await page.get_by_role("list", name="Memories of this document").wait_for()
        status, _ = await api(running, "GET", f"/ns/trash/document/{ref['id']}")
        assert status == 200
        # Accepted: the document goes, and the view closes it.
        messages: list[str] = []
        answered: list[asyncio.Future[None]] = []  # held, so the task is not collected early

        def accept(dialog: Any) -> None:
            messages.append(dialog.message)
            answered.append(asyncio.ensure_future(dialog.accept()))

        page.once("dialog", accept)
        await delete.click()
        await page.wait_for_url("**/#/documents?ns=trash")
        await page.get_by_text("No documents in trash.").wait_for()
        assert "bees" in messages[0]
        status, body = await api(running, "GET", f"/ns/trash/document/{ref['id']}")
        assert status == 404, body
        tab.assert_clean()


async def test_a_read_token_sees_no_write_controls(
    start_daemon: StartDaemon, short_dir: Path
) -> None:
    running = await start_daemon(
        config_with_tokens(short_dir, token_table("reader", "reader-secret-0001", "read"))
    )
    status, ref = await api(running, "POST", "/ns/shelf/document", json={"content": "Lea reads."})
    assert status == 200, ref
    async with chromium() as browser:
        tab = await browser.open(
            running.url(f"/#/documents?ns=shelf&id={ref['id']}"), token="reader-secret-0001"
        )
        page = tab.page
        await page.get_by_role("region", name="Processing queue").wait_for()
        await page.get_by_role("heading", name="Content").wait_for()
        assert await page.get_by_role("region", name="Add a document").count() == 0
        assert await page.get_by_role("button", name="Delete document").count() == 0
        tab.assert_clean()


async def test_the_export_button_saves_the_namespace_in_the_export_format(
    start_daemon: StartDaemon, tmp_path: Path
) -> None:
    running = await start_daemon()
    for text in ("Ines grows figs.", "Ines rides a green bike."):
        status, body = await api(running, "POST", "/ns/garden/document", json={"content": text})
        assert status == 200, body
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/documents?ns=garden"))
        page = tab.page
        listed = page.get_by_role("region", name="Documents", exact=True)
        await listed.get_by_text("2 documents").wait_for()
        async with page.expect_download() as started:
            await listed.get_by_role("button", name="Export").click()
        saved = await started.value
        assert saved.suggested_filename == "garden.jsonl"
        await saved.save_as(tmp_path / "garden.jsonl")
        lines = [json.loads(line) for line in (tmp_path / "garden.jsonl").read_text().splitlines()]
        assert lines[0]["format"] == "smem-export" and lines[0]["namespace"] == "garden"
        assert lines[-1]["record"] == "end" and lines[-1]["records"]["document"] == 2
        assert sum(line["record"] == "document" for line in lines) == 2
        tab.assert_clean()


async def test_a_rederivation_is_shown_with_its_diff_and_applied(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    ns = "http://smemd/ns/people"
    for content, custom in (("Alex lives in Seattle.", "a"), ("Sam owns a red kite.", "c")):
        status, _ = await api(
            running, "POST", "/ns/people/document", json={"content": content, "id": custom}
        )
        assert status == 200
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    status, listed = await api(running, "POST", "/ns/people/list/memories", json={})
    kite = next(m for m in listed["memories"] if "kite" in m["memory"])
    status, _, _ = await call(
        running.unix,
        "PATCH",
        f"{ns}/memories/{kite['id']}",
        json={"memory": "Sam owns a blue kite."},
    )
    assert status == 200
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/documents?ns=people"))
        page = tab.page
        panel = page.get_by_role("region", name="Re-derive")
        await panel.get_by_role("button", name="Re-derive").click()
        counts = panel.get_by_role("table", name="What would change")
        await counts.wait_for(timeout=20_000)
        _, diff = await api(running, "GET", "/ns/people/rederive")
        assert diff["state"] == "ready"
        shown = {
            await row.locator("th").inner_text(): int(await row.locator("td").inner_text())
            for row in await counts.get_by_role("row").all()
        }
        assert shown["Memories gone"] == diff["counts"]["gone"] == 1
        assert shown["Memories added"] == diff["counts"]["added"] == 1
        await panel.get_by_text("Memories gone: examples").click()
        gone = panel.get_by_role("list", name="Memories gone: examples")
        assert await gone.get_by_role("listitem").all_inner_texts() == ["Sam owns a blue kite."]
        await tab.screenshot("documents-rederive")
        page.once("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
        await panel.get_by_role("button", name="Apply").click()
        await panel.get_by_role("status").get_by_text("Applied").wait_for()
        await panel.get_by_role("button", name="Re-derive").wait_for()  # none now
        status, listed = await api(running, "POST", "/ns/people/list/memories", json={})
        texts = {m["memory"] for m in listed["memories"]}
        assert "Sam owns a blue kite." not in texts and any("red kite" in t for t in texts)
        tab.assert_clean()
