"""The console's Nodes view in Chromium, on a `hosts` fleet of fake llama-servers: the nodes, and
lending one to the render farm for a while and taking it back, as an admin; a read token sees no
admin control."""

from __future__ import annotations

import asyncio
import re
import signal
import tomllib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from smemd.tomlwriter import dumps
from tests.browser import THEMES, chromium
from tests.conftest import Running, StartDaemon
from tests.daemon_process import DaemonProcess
from tests.fakes.fleet import node_pair, start_two_lanes, started
from tests.fakes.llama_server import FakeLlamaServer
from tests.test_api import ADMIN, call
from tests.test_cards_daemon import _sampled, nodes_by_id, simulator, until, write_config

READER = "reader-secret-0001"
TOKENS = f"""admin-token = "{ADMIN}"
[[api.tokens]]
name = "reader"
token = "{READER}"
role = "read"
namespaces = ["*"]
"""


@pytest.fixture
async def fakes() -> AsyncIterator[dict[str, FakeLlamaServer]]:
    async with started(node_pair("127.0.33.1")) as servers:
        yield servers


@pytest.fixture
async def running(
    short_dir: Path, start_daemon: StartDaemon, fakes: dict[str, FakeLlamaServer]
) -> Running:
    return await start_two_lanes(start_daemon, short_dir, fakes, extra=TOKENS)


async def lanes(running: Running) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/lanes")
    assert status == 200, body
    return body


async def test_nodes_load_clean_in_both_themes(running: Running) -> None:
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(running.url("/#/nodes"), theme=theme, token=ADMIN)
            page = tab.page
            await page.get_by_role("heading", name="Nodes", level=1).wait_for()
            for node, lane in (("node0", "interactive"), ("node1", "background")):
                card = page.get_by_role("article", name=f"Node {node}")
                await card.locator('[data-state="up"]').wait_for()
                await card.get_by_text(lane, exact=True).wait_for()
                await card.get_by_text("embed", exact=True).wait_for()
            await page.get_by_text("hosts fleet · 2 nodes").wait_for()
            await page.get_by_text("No node is lent").wait_for()
            await tab.screenshot(f"nodes-{theme}")
            tab.assert_clean()


async def test_the_builtin_fleet_has_no_nodes_to_show(start_daemon: StartDaemon) -> None:
    builtin = await start_daemon()
    async with chromium() as browser:
        tab = await browser.open(builtin.url("/#/nodes"))
        await tab.page.get_by_text("runs its models in-process").wait_for()
        await tab.screenshot("nodes-builtin-dark")
        tab.assert_clean()


async def test_an_admin_lends_a_node_for_ten_minutes_and_takes_it_back(running: Running) -> None:
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/nodes"), token=ADMIN)
        page = tab.page
        node0 = page.get_by_role("article", name="Node node0")
        await node0.locator('[data-state="up"]').wait_for()
        await page.get_by_label("Lend for").select_option(label="10 min")
        await page.get_by_label("Reason").fill("render job")
        await page.get_by_role("button", name="Pause node0").click()
        await node0.locator('[data-state="lent"]').wait_for()
        await node0.get_by_text("Lent until").wait_for()
        pause = page.get_by_role("region", name="Pause")
        await pause.get_by_text("by console").wait_for()
        await pause.get_by_text("render job").wait_for()

        body = await lanes(running)
        assert body["pause"]["nodes"] == ["node0"] and body["pause"]["by"] == "console"
        ahead = datetime.fromisoformat(body["pause"]["until"]) - datetime.now(UTC)
        assert timedelta(minutes=9) < ahead <= timedelta(minutes=10)
        assert {n["id"]: n["paused"] for n in body["nodes"]} == {"node0": True, "node1": False}
        shown = await node0.locator("time").first.get_attribute("datetime")
        assert shown == body["pause"]["until"]

        await page.get_by_role("button", name="Resume node0").click()
        await node0.locator('[data-state="up"]').wait_for()
        await page.get_by_text("No node is lent").wait_for()
        body = await lanes(running)
        assert body["pause"] is None and not any(n["paused"] for n in body["nodes"])

        # Several at once, for a length of one's own; then all back at once.
        await page.get_by_role("checkbox", name="Select node0").check()
        await page.get_by_role("checkbox", name="Select node1").check()
        await page.get_by_label("Lend for").select_option(label="custom…")
        await page.get_by_label("Custom duration").fill("1h30m")
        await page.get_by_role("button", name="Pause selected (2)").click()
        node1 = page.get_by_role("article", name="Node node1")
        await node1.locator('[data-state="lent"]').wait_for()
        await node0.locator('[data-state="lent"]').wait_for()
        await tab.screenshot("nodes-lent-dark")
        body = await lanes(running)
        assert body["pause"]["nodes"] == ["node0", "node1"]
        ahead = datetime.fromisoformat(body["pause"]["until"]) - datetime.now(UTC)
        assert timedelta(minutes=89) < ahead <= timedelta(minutes=90)
        await page.get_by_role("button", name="Resume all").click()
        await node1.locator('[data-state="up"]').wait_for()
        await node0.locator('[data-state="up"]').wait_for()
        assert (await lanes(running))["pause"] is None
        tab.assert_clean()


async def test_a_read_token_sees_no_admin_control(running: Running) -> None:
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/nodes"), token=READER)
        page = tab.page
        await page.get_by_role("article", name="Node node1").locator('[data-state="up"]').wait_for()
        await page.get_by_text("No node is lent").wait_for()
        main = page.get_by_role("main")
        assert await main.get_by_role("button").count() == 0
        assert await main.get_by_role("checkbox").count() == 0
        assert await page.get_by_role("region", name="Lend nodes").count() == 0
        tab.assert_clean()


async def test_on_cards_the_view_plots_telemetry_and_an_admin_powers_a_node_off_and_on(
    tmp_path: Path,
) -> None:
    async with simulator(tmp_path) as sim:
        config = tmp_path / "smemd.toml"
        config.write_text(
            dumps(
                {
                    "api": {"admin-token": ADMIN},
                    **tomllib.loads(write_config(sim, tmp_path).read_text()),
                }
            )
        )
        (tmp_path / "state").mkdir()
        daemon = DaemonProcess(tmp_path / "state", config)
        await asyncio.to_thread(daemon.start, [], None, True)
        try:

            async def all_up() -> bool:
                return all(n["state"] == "up" for n in (await nodes_by_id(daemon)).values())

            await until(all_up, 30, "six nodes up")
            await until(lambda: _sampled(daemon, "node0"), 10, "a sample of node0")
            async with chromium() as browser:
                tab = await browser.open(f"http://{daemon.tcp}/#/nodes", token=ADMIN)
                page = tab.page
                card0 = page.get_by_role("region", name="Card 0")
                node0 = card0.get_by_role("article", name="Node node0")
                await node0.get_by_text("card 0 · cpu 0").wait_for()
                await node0.get_by_role(
                    "img", name="node0 package temperature over the last hour"
                ).wait_for()
                await node0.get_by_role(
                    "img", name="node0 memory used over the last hour"
                ).wait_for()
                await node0.get_by_text(re.compile(r"^\d+\.\d °C · \d+% of")).wait_for()
                card1 = page.get_by_role("region", name="Card 1")
                await card1.get_by_role("article", name="Node node5").wait_for()
                await tab.screenshot("nodes-cards-dark")

                node5 = card1.get_by_role("article", name="Node node5")
                await node5.get_by_role("button", name="Power off node5").click()
                await (
                    node5.get_by_role("group", name="Confirm power off")
                    .get_by_role("button", name="Yes, power off")
                    .click()
                )
                await node5.locator('[data-state="off"]').wait_for()
                assert (await nodes_by_id(daemon))["node5"]["state"] == "off"
                await node5.get_by_role("button", name="Boot node5", exact=True).click()
                await node5.locator('[data-state="up"]').wait_for()
                tab.assert_clean()
        finally:
            await asyncio.to_thread(daemon.stop, signal.SIGTERM, 30.0)
