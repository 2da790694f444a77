"""smemctl's fleet commands against the real daemon on a `hosts` fleet of fake llama-servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from smemctl.cli import main
from tests.daemon_process import DaemonProcess
from tests.fakes.llama_server import FakeLlamaServer


@pytest.fixture
async def background() -> AsyncIterator[FakeLlamaServer]:
    async with FakeLlamaServer(host="127.0.31.4") as fake:
        yield fake


@pytest.fixture
async def daemon(short_dir: Path, background: FakeLlamaServer) -> AsyncIterator[DaemonProcess]:
    async with FakeLlamaServer(host="127.0.31.3") as interactive:
        config = short_dir / "smemd.toml"
        config.write_text(
            f"""
[paths]
pause-file = "{short_dir / "paused.json"}"
[fleet]
kind = "hosts"
[[fleet.nodes]]
id = "node2"
address = "127.0.31.3"
embed = {interactive.port}
lanes = ["interactive"]
[[fleet.nodes]]
id = "node3"
address = "127.0.31.4"
embed = {background.port}
lanes = ["background"]
lendable = true
"""
        )
        process = DaemonProcess(short_dir, config)
        await asyncio.to_thread(process.start)
        yield process
        process.kill()


async def smemctl(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    # smemctl blocks; the fakes answer on this event loop, so it runs in a thread.
    code = await asyncio.to_thread(main, ["--socket", str(daemon.socket), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_lanes_nodes_pause_resume(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = await smemctl(daemon, capsys, "lanes")
    assert (
        code == 0
        and "interactive: node2" in out
        and "background: node3" in out
        and "no nodes lent" in out
    )
    code, out, _ = await smemctl(
        daemon, capsys, "pause", "node3", "--for", "2h", "--reason", "render", "--wait"
    )
    assert (
        code == 0
        and out.startswith("lent until")
        and "render" in out
        and out.rstrip().endswith("node3")
    )
    code, out, _ = await smemctl(daemon, capsys, "nodes")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["node3"][3] == "lent" and rows["node2"][3] == "up"
    code, out, _ = await smemctl(daemon, capsys, "--json", "lanes")
    assert json.loads(out)["pause"]["nodes"] == ["node3"]
    code, out, _ = await smemctl(daemon, capsys, "resume")
    assert code == 0 and out.strip() == "no nodes lent"


async def test_pause_errors_are_exit_1_and_usage_errors_exit_2(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await smemctl(daemon, capsys, "pause", "node7", "--for", "1h")
    assert code == 1 and "node7" in err
    assert (await smemctl(daemon, capsys, "pause", "node3"))[0] == 2  # neither --until nor --for


async def test_pause_wait_returns_only_once_the_node_is_drained(
    daemon: DaemonProcess, background: FakeLlamaServer, capsys: pytest.CaptureFixture[str]
) -> None:
    background.latency = 0.8  # a slow node3, busy with ingest when the pause comes
    code, _, _ = await smemctl(daemon, capsys, "remember", "Alex keeps bees on the roof.")
    assert code == 0
    while background.in_flight == 0:
        await asyncio.sleep(0.01)
    code, out, _ = await smemctl(daemon, capsys, "pause", "node3", "--for", "2h", "--wait")
    assert code == 0 and "node3" in out
    assert background.in_flight == 0  # returned only after the call in flight finished
