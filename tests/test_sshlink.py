"""SshLink and node telemetry against real asyncssh servers: FakeNodes on 127.0.31.x."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from smemd.cards.telemetry import SAMPLE_COMMAND, Sample, Sampler, Telemetry, parse_sample
from smemd.devices.sshlink import NodeUnreachable, SshLink, SshTimeout
from tests.fakes.vca_node import MEM_TOTAL_KB, FakeNode
from tests.pace import scaled


def link_to(node: FakeNode, known_hosts: Path, **options: Any) -> SshLink:
    """A link with test-sized timings."""
    settings: dict[str, Any] = {"backoff_initial": 0.05, "backoff_cap": 0.2, "connect_timeout": 2}
    return SshLink("node0", node.host, node.ssh_port, known_hosts=known_hosts, **settings | options)


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 5.0) -> None:
    deadline = time.monotonic() + scaled(within)
    while not await check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def health(url: str) -> int | None:
    """The /health status, or None when refused."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url + "/health") as response:
            return response.status
    except aiohttp.ClientConnectionError:
        return None


async def test_run_answers_exit_status_and_output(tmp_path: Path) -> None:
    async with FakeNode("127.0.31.1") as node, link_to(node, tmp_path / "known_hosts") as link:
        assert await link.wait_reachable(5)
        done = await link.run("systemctl is-active sm-emb sm-llm")
        assert (done.exit_status, done.stdout, done.stderr) == (0, "active\nactive\n", "")
        missing = await link.run("frobnicate --now")
        assert missing.exit_status == 127
        assert "frobnicate: not found" in missing.stderr
        assert node.commands == ["systemctl is-active sm-emb sm-llm", "frobnicate --now"]


async def test_host_key_is_pinned_on_first_use(tmp_path: Path) -> None:
    known_hosts = tmp_path / "state" / "known_hosts"
    async with FakeNode("127.0.31.2") as node:
        async with link_to(node, known_hosts) as first:
            assert await first.wait_reachable(5)
        assert known_hosts.read_text() == node.known_hosts_line()
        assert node.known_hosts_line().startswith(f"[127.0.31.2]:{node.ssh_port} ssh-ed25519 ")
        async with link_to(node, known_hosts) as second:
            assert await second.wait_reachable(5)
            assert (await second.run("systemctl is-active sm-rrk")).stdout == "active\n"
        assert known_hosts.read_text() == node.known_hosts_line()  # pinned, not added again


async def test_a_changed_host_key_is_refused_until_forgotten(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    known_hosts = tmp_path / "known_hosts"
    async with FakeNode("127.0.31.3") as node:
        async with link_to(node, known_hosts) as link:
            assert await link.wait_reachable(5)
        pinned = known_hosts.read_text()
        await node.stop()
        node.new_host_key()
        await node.start()
        async with link_to(node, known_hosts) as link:
            assert not await link.wait_reachable(0.5)
            assert "host key mismatch" in link.last_error
            with pytest.raises(NodeUnreachable) as refused:
                await link.run("systemctl is-active sm-emb")
            assert (refused.value.status, refused.value.code) == (503, "node_unreachable")
            assert known_hosts.read_text() == pinned
            assert node.commands == []
            errors = [r for r in caplog.records if r.levelno == logging.ERROR]
            assert len(errors) == 1, "logged loudly, once, though retried"
            assert "host key mismatch" in errors[0].getMessage()
            link.forget_host_key()
            await link.reconnect()
            assert await link.wait_reachable(5)
            assert link.last_error == ""
        assert known_hosts.read_text() == node.known_hosts_line() != pinned


async def test_a_node_that_is_down_is_reached_when_it_comes_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="smemd.cards.ssh")
    async with FakeNode("127.0.31.4") as node:
        await node.stop()  # down, on the port it had
        async with link_to(node, tmp_path / "known_hosts") as link:
            assert not await link.wait_reachable(0.5)  # several redials at 0.05..0.2 s
            assert link.last_error == f"127.0.31.4:{node.ssh_port}: Connection refused"
            with pytest.raises(NodeUnreachable):
                await link.run("systemctl is-active sm-emb")
            await node.start()
            assert await link.wait_reachable(5)
            assert (await link.run("systemctl is-active sm-emb")).exit_status == 0
    messages = [r.getMessage() for r in caplog.records if r.name == "smemd.cards.ssh"]
    assert sum("unreachable" in m for m in messages) == 1, "a state change is logged once"
    assert sum("reachable at" in m for m in messages) == 1


async def test_a_dropped_connection_is_redialled(tmp_path: Path) -> None:
    async with FakeNode("127.0.31.5") as node, link_to(node, tmp_path / "known_hosts") as link:
        assert await link.wait_reachable(5)
        node.drop_ssh()

        async def answers() -> bool:
            try:
                return (await link.run("systemctl is-active sm-llm")).exit_status == 0
            except NodeUnreachable:
                return False

        await eventually(answers)
        assert node.connections_accepted == 2


async def test_a_hanging_command_times_out_and_the_link_survives(tmp_path: Path) -> None:
    async with FakeNode("127.0.31.6") as node, link_to(node, tmp_path / "known_hosts") as link:
        assert await link.wait_reachable(5)
        node.hang_ssh(True)
        started = time.monotonic()
        with pytest.raises(SshTimeout) as hung:
            await link.run("systemctl is-active sm-emb", timeout=0.3)
        assert 0.3 <= time.monotonic() - started < scaled(1.5)
        assert hung.value.code == "ssh_timeout"
        node.hang_ssh(False)
        assert (await link.run("systemctl is-active sm-emb")).exit_status == 0
        assert link.reachable and node.connections_accepted == 1


async def test_a_crashed_model_comes_back_with_systemctl_restart(tmp_path: Path) -> None:
    async with FakeNode("127.0.31.1") as node, link_to(node, tmp_path / "known_hosts") as link:
        assert await link.wait_reachable(5)
        assert await health(node.url("llm")) == 200
        await node.kill_model("llm")
        assert await health(node.url("llm")) is None
        assert await health(node.url("embed")) == 200
        state = await link.run("systemctl is-active sm-llm")
        assert (state.exit_status, state.stdout) == (3, "failed\n")
        assert (await link.run("systemctl restart sm-llm")).exit_status == 0
        assert await health(node.url("llm")) == 200
        unknown = await link.run("systemctl restart sm-nope")
        assert unknown.exit_status == 5 and "not found" in unknown.stderr


async def test_poweroff_stops_the_node_quietly_when_suppressed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    powered_off: list[bool] = []
    node = FakeNode("127.0.31.2", on_poweroff=lambda: powered_off.append(True))
    async with node, link_to(node, tmp_path / "known_hosts") as link:
        assert await link.wait_reachable(5)
        link.suppress(True)
        assert (await link.run("systemctl poweroff")).exit_status == 0
        await eventually(lambda: asyncio.sleep(0, not link.reachable))
        assert powered_off == [True] and not node.running
        assert await health(node.url("embed")) is None
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_reconnect_redials_now(tmp_path: Path) -> None:
    async with FakeNode("127.0.31.3") as node, link_to(node, tmp_path / "known_hosts") as link:
        assert await link.wait_reachable(5)
        await link.reconnect()
        assert await link.wait_reachable(5)
        assert node.connections_accepted == 2
        assert (await link.run("systemctl is-active sm-rrk")).exit_status == 0


class CancelSwallowingLink(SshLink):
    """Dials as Python 3.11's wait_for does when a cancel lands as the connect completes: the
    connection is returned and the CancelledError is lost. Here it happens on every cancel."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dialling = asyncio.Event()

    async def _dial(self) -> Any:
        dialled = asyncio.ensure_future(super()._dial())
        self.dialling.set()
        try:
            return await asyncio.shield(dialled)
        except asyncio.CancelledError:
            return await dialled


async def test_a_link_closed_while_it_dials_ends_even_if_the_cancel_is_swallowed(
    tmp_path: Path,
) -> None:
    async with FakeNode("127.0.31.11") as node:
        link = CancelSwallowingLink(
            "node0", node.host, node.ssh_port, known_hosts=tmp_path / "known_hosts",
            backoff_initial=0.05, connect_timeout=2,
        )  # fmt: skip

        async def dial_and_close() -> None:
            async with link:
                await link.dialling.wait()

        closing = asyncio.create_task(dial_and_close())
        done, _ = await asyncio.wait([closing], timeout=scaled(5))
        closing.cancel()
        assert closing in done, "the close waits for its supervisor, which waits on the connection"
        assert not link.reachable

        async def closed() -> bool:
            return not node.connections

        await eventually(closed)  # the connection the dial made, closed rather than kept
        assert node.connections_accepted == 1


async def test_samples_over_ssh_move_and_parse(tmp_path: Path) -> None:
    telemetry = Telemetry()
    async with FakeNode("127.0.31.4") as node, link_to(node, tmp_path / "known_hosts") as link:
        assert await link.wait_reachable(5)
        async with Sampler([link], telemetry, interval=0.02):
            await eventually(lambda: asyncio.sleep(0, len(telemetry.since("node0", 0)) >= 6))
        samples = telemetry.since("node0", 0)
        temperatures = [s.temperature_c for s in samples]
        assert all(t is not None and 30 <= t <= 70 for t in temperatures)
        assert len(set(temperatures)) > 1
        assert all(s.error == "" and s.mem_total_kb == MEM_TOTAL_KB for s in samples)
        assert all(0 < (s.mem_available_kb or 0) < MEM_TOTAL_KB for s in samples)
        assert telemetry.latest("node0") == samples[-1]
        assert node.commands[0] == SAMPLE_COMMAND


async def test_no_coretemp_gives_no_temperature(tmp_path: Path) -> None:
    telemetry = Telemetry()
    async with FakeNode("127.0.31.5") as node, link_to(node, tmp_path / "known_hosts") as link:
        assert await link.wait_reachable(5)
        node.no_coretemp = True
        await Sampler([link], telemetry).sample()
    sample = telemetry.latest("node0")
    assert sample is not None
    assert (sample.temperature_c, sample.error, sample.mem_total_kb) == (None, "", MEM_TOTAL_KB)


async def test_an_unreachable_node_records_a_failed_sample(tmp_path: Path) -> None:
    telemetry = Telemetry()
    async with FakeNode("127.0.31.6") as node:
        await node.stop()
        async with link_to(node, tmp_path / "known_hosts") as link:
            await Sampler([link], telemetry).sample()
    sample = telemetry.latest("node0")
    assert sample is not None and sample.error
    assert (sample.temperature_c, sample.mem_total_kb, sample.mem_available_kb) == (None,) * 3


async def test_a_hung_node_records_a_failed_sample_within_the_timeout(tmp_path: Path) -> None:
    telemetry = Telemetry()
    async with FakeNode("127.0.31.1") as node, link_to(node, tmp_path / "known_hosts") as link:
        assert await link.wait_reachable(5)
        node.hang_ssh(True)
        started = time.monotonic()
        await Sampler([link], telemetry, timeout=0.2).sample()
        assert time.monotonic() - started < scaled(1.5)
    sample = telemetry.latest("node0")
    assert sample is not None and "no answer" in sample.error and sample.temperature_c is None


def test_since_filters_by_time_and_an_hour_is_kept() -> None:
    telemetry = Telemetry()
    now = time.time()
    for age in (4000, 3000, 600, 30):
        telemetry.record(
            "node1", parse_sample(f"pkg_temp_mc {age}\nMemTotal 8\nMemAvailable 4\n", now - age)
        )
    assert [s.temperature_c for s in telemetry.since("node1", 0)] == [3.0, 0.6, 0.03]
    assert [s.temperature_c for s in telemetry.since("node1", now - 700)] == [0.6, 0.03]
    telemetry.unreachable("node1", "down", now)
    assert [s.error for s in telemetry.since("node1", now - 60)] == ["", "down"]
    telemetry.record("node1", Sample(at=now + 3590, temperature_c=40.0))
    kept = telemetry.since("node1", 0)
    assert [s.at for s in kept] == [now, now + 3590]  # 30 s old went past the hour at now + 3590
    assert telemetry.latest("node2") is None and telemetry.since("node2", 0) == []


def test_parse_sample_reads_the_output_and_rejects_garbage() -> None:
    text = "pkg_temp_mc 47000\nMemTotal 32768000\nMemFree 18841232\nMemAvailable 24110980\nSwapTotal 0\nSwapFree 0\n"
    sample = parse_sample(text, at=5.0)
    assert sample == Sample(
        at=5.0, temperature_c=47.0, mem_total_kb=32768000, mem_available_kb=24110980
    )
    assert parse_sample(text.replace("47000", "-1")).temperature_c is None
    with pytest.raises(ValueError, match="KEY NUMBER"):
        parse_sample("<html>502 Bad Gateway</html>")
    with pytest.raises(ValueError, match="MemAvailable"):
        parse_sample("pkg_temp_mc 47000\nMemTotal 32768000\n")
    with pytest.raises(ValueError):
        parse_sample("")


def test_sample_command_is_valid_sh_and_runs_here() -> None:
    assert subprocess.run(["sh", "-n", "-c", SAMPLE_COMMAND], timeout=10).returncode == 0
    done = subprocess.run(
        ["sh", "-c", SAMPLE_COMMAND], capture_output=True, text=True, timeout=10, check=True
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("pkg_temp_mc ")
    assert any(line.startswith("MemTotal ") for line in lines)
    parse_sample(done.stdout)  # this machine, with or without coretemp
