"""The console's Chat view in Chromium: asking a namespace, its citations opening the sources
(memories of that namespace), the thread kept per namespace across reloads, and errors shown in
the thread. The daemon runs on in-process models with no llm role, so smemd answers with the
sources alone and a note saying so; one test gives it a model (a fake llama-server) to see an
answer's inline citations."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from tests.browser import THEMES, chromium, seed
from tests.conftest import Running, StartDaemon
from tests.fakes.fleet import start_hosts, started
from tests.fakes.llama_server import FakeLlamaServer
from tests.test_answers import ANSWER, model, remember
from tests.test_api import call


async def ask(page: Any, question: str) -> None:
    box = page.get_by_label("Ask", exact=True)
    await box.fill(question)
    await box.press("Enter")


async def memory_text(running: Running, namespace: str, memory_id: str) -> str:
    status, body, _ = await call(
        running.unix, "GET", f"http://smemd/ns/{namespace}/memories/{memory_id}"
    )
    assert status == 200, body
    return str(body["memory"])


async def test_chat_loads_clean_on_a_seeded_namespace_in_both_themes(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await seed(running)
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(running.url("/#/chat?ns=people"), theme=theme)
            page = tab.page
            await page.get_by_role("heading", name="Chat", level=1).wait_for()
            await page.get_by_text("Ask people anything").wait_for()
            await ask(page, "Where does Alice live?")
            thread = page.get_by_role("list", name="Thread")
            await thread.get_by_text("no model serves the llm role", exact=False).wait_for()
            await thread.get_by_role("button", name="Source 1", exact=True).click()
            await thread.get_by_role("list", name="Sources").wait_for()
            await tab.screenshot(f"chat-{theme}")
            tab.assert_clean()


async def test_a_citation_opens_its_source_a_memory_of_the_namespace(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await seed(running)
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/chat?ns=people"))
        page = tab.page
        box = page.get_by_label("Ask", exact=True)
        await box.fill("Where does Alice live?")
        await box.press("Shift+Enter")  # a new line, not a send
        await box.press_sequentially("And what pets?")
        assert await box.input_value() == "Where does Alice live?\nAnd what pets?"
        assert await page.get_by_role("list", name="Thread").count() == 0
        await box.press("Enter")
        thread = page.get_by_role("list", name="Thread")
        question = thread.locator(".question")
        assert (await question.inner_text()).endswith("Where does Alice live?\nAnd what pets?")
        reply = thread.locator(".reply")
        await reply.wait_for()
        assert await box.input_value() == ""

        toggle = reply.get_by_role("button", name=re.compile(r"Show \d+ sources?"))
        assert await toggle.get_attribute("aria-expanded") == "false"
        sources = reply.get_by_role("list", name="Sources")
        assert not await sources.is_visible()
        await reply.get_by_role("button", name="Source 2").click()
        await sources.wait_for()
        assert (
            await reply.get_by_role("button", name=re.compile(r"Hide")).get_attribute(
                "aria-expanded"
            )
            == "true"
        )
        second = sources.locator("li.lit")
        assert await second.get_attribute("data-n") == "2"
        link = second.get_by_role("link", name="Open in Memories")
        target = (await link.get_attribute("href") or "").split("?", 1)
        assert target[0] == "#/memories"
        query = parse_qs(target[1])
        assert query["ns"] == ["people"]
        text = await second.locator(".source-text").inner_text()
        assert text == await memory_text(running, "people", query["id"][0])
        assert "Alice" in "\n".join(await sources.locator(".source-text").all_inner_texts())
        tab.assert_clean()


async def test_the_thread_survives_a_reload_and_is_kept_per_namespace(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await seed(running, documents=20)
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/chat?ns=people"))
        page = tab.page
        await ask(page, "Who has a beagle?")
        thread = page.get_by_role("list", name="Thread")
        await thread.locator(".reply").wait_for()
        await page.reload()
        await thread.get_by_text("Who has a beagle?").wait_for()
        await thread.locator(".reply").get_by_role("button", name="Source 1", exact=True).wait_for()

        await page.goto(running.url("/#/chat?ns=elsewhere"))
        await page.get_by_text("Ask elsewhere anything").wait_for()
        await ask(page, "Anyone here?")
        await thread.get_by_text("Nothing in elsewhere matched.").wait_for()
        assert await thread.locator(".turn").count() == 1

        await page.goto(running.url("/#/chat?ns=people"))
        await thread.get_by_text("Who has a beagle?").wait_for()
        assert await thread.locator(".turn").count() == 1
        await page.get_by_role("button", name="New thread").click()
        await page.get_by_text("Ask people anything").wait_for()
        await page.reload()
        await page.get_by_text("Ask people anything").wait_for()
        await page.goto(running.url("/#/chat?ns=elsewhere"))
        await thread.get_by_text("Anyone here?").wait_for()
        tab.assert_clean()


async def test_a_refused_question_is_shown_in_the_thread(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/chat?ns=people"))
        tab.expected_statuses.add(400)
        page = tab.page
        await ask(page, "x" * 10_001)  # past the 10,000 characters a question may have
        alert = page.get_by_role("list", name="Thread").get_by_role("alert")
        await alert.wait_for()
        assert "$.q" in await alert.inner_text()
        tab.assert_clean()


async def test_an_answer_cites_its_sources_inline(
    start_daemon: StartDaemon, short_dir: Path
) -> None:
    servers = {
        "node0": FakeLlamaServer(host="127.0.31.1"),
        "node1": FakeLlamaServer(host="127.0.31.2", chat=model),
    }
    async with started(servers) as fakes, chromium() as browser:
        running = await start_hosts(
            start_daemon, short_dir,
            [
                ("node0", fakes["node0"], ["interactive", "background"], "embed"),
                ("node1", fakes["node1"], ["interactive"], "llm"),
            ],
        )  # fmt: skip
        await remember(running)
        fakes["node1"].latency = 1.0  # the answer takes a while: long enough to see it pending
        tab = await browser.open(running.url("/#/chat?ns=default"))
        page = tab.page
        await ask(page, "Where does Alex live?")
        thread = page.get_by_role("list", name="Thread")
        await thread.get_by_role("status").get_by_text("Recalling and answering").wait_for()
        assert await thread.get_attribute("aria-busy") == "true"
        assert await page.get_by_role("button", name="Asking…").is_disabled()
        reply = thread.locator(".reply")
        await reply.get_by_text("answered by fake.gguf").wait_for()
        # ANSWER cites [1], which exists, and [99], which does not: only [1] is a button.
        assert await reply.locator(".answer-text").inner_text() == ANSWER
        assert await reply.get_by_role("button", name=re.compile(r"^Source ")).count() == 1
        await reply.get_by_role("button", name="Source 1", exact=True).click()
        source = reply.get_by_role("list", name="Sources").get_by_role("listitem")
        assert await source.locator(".source-text").inner_text() == "Alex lives in Seattle."
        await source.get_by_text("Moving notes").wait_for()
        await source.get_by_role("link", name="Open in Memories").wait_for()
        assert await thread.get_attribute("aria-busy") == "false"
        tab.assert_clean()
