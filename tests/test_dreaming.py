"""Dreaming through the daemon: a store built on the heuristics gets its types and links from
the model once the lanes are quiet; it waits for quiet, and it can be switched off."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from smemd.config import ConfigError, load
from smemd.engine.dreaming.linker import extends_by_words
from tests.conftest import StartDaemon
from tests.dreams import (
    BOILER,
    EARLY,
    HONEY,
    NS,
    TEA,
    V1,
    dreamt,
    fake_pair,
    heuristic_store,
    judgements,
    memories,
    tables,
    unlink,
    with_model,
)
from tests.fakes.llama_server import FakeLlamaServer
from tests.settling import until_idle
from tests.test_api import assert_error, call

TABLES = tables()


@pytest.fixture
async def servers() -> AsyncIterator[dict[str, FakeLlamaServer]]:
    async with fake_pair(TABLES) as fakes:
        yield fakes


async def test_dreaming_types_and_links_a_store_built_without_a_model(
    short_dir: Path, start_daemon: StartDaemon, servers: dict[str, FakeLlamaServer]
) -> None:
    await heuristic_store(start_daemon, short_dir, servers["embed"], [TEA, HONEY, BOILER, EARLY])
    before = await memories_of(start_daemon, short_dir, servers, quiet_s=600)
    assert {t: m["type"] for t, m in before.items()} == {
        TEA: "fact",
        HONEY: "fact",
        BOILER: "fact",
        EARLY: "preference",
    }
    assert not any("typedBy" in m for m in before.values())

    TABLES.asked.clear()
    running = await with_model(start_daemon, short_dir, servers["embed"], servers["llm"])
    status = await dreamt(running)
    assert status["typingAsked"] == 4 and status["typed"] == 3, status
    # Four memories typed in one call; links asked about only for the two with a neighbour
    # at cosine >= 0.80 (the tea and the tea with honey).
    assert TABLES.asked == ["type", "link", "link"]
    assert status["linksLooked"] == 4 and status["linked"] == 1, status
    after = await memories(running)
    assert after[BOILER]["type"] == "episode" and after[BOILER]["typedBy"] == "judge"
    assert after[TEA]["typedBy"] == "judge"
    # Undecided (0.4 under the bar of 0.5): the heuristic's type stays, and is not asked again.
    assert after[EARLY]["type"] == "preference" and "typedBy" not in after[EARLY]

    types = await judgements(running, "type")
    assert len(types) == 4
    for call_ in types:
        assert call_["options"] == ["fact", "preference", "episode"]
        assert abs(sum(call_["probabilities"]) - 1) < 1e-4
    early = next(c for c in types if c["text"] == EARLY)
    assert early["proposal"] == "preference" and not early["decided"]
    assert early["applied"] == early["fallback"] == "preference"

    links = await judgements(running, "link")
    honey = next(c for c in links if c["text"] == HONEY)
    assert honey["applied"] == f"extends:{after[TEA]['id']}" and honey["decided"]
    status_, found, _ = await call(
        running.unix, "POST", f"{NS}/search",
        json={"query": "green tea honey", "include": {"related": True}, "limit": 1},
    )  # fmt: skip
    assert status_ == 200 and found["results"][0]["memory"] == HONEY, found
    related = found["results"][0]["included"]["related"]["siblings"]
    assert [(m["memory"], m["relation"]) for m in related] == [(TEA, "extends")]


async def memories_of(
    start_daemon: StartDaemon, state_dir: Path, servers: dict[str, FakeLlamaServer], quiet_s: float
) -> dict[str, dict[str, object]]:
    """The memories as a model-served daemon first sees them, then that daemon stopped."""
    running = await with_model(
        start_daemon, state_dir, servers["embed"], servers["llm"], quiet_s=quiet_s, name="peek.toml"
    )
    found = await memories(running)
    _, status, _ = await call(running.unix, "GET", f"{V1}/status")
    assert status["dreaming"]["state"] == "waiting" and status["dreaming"]["untyped"] == 4
    await running.daemon.shutdown()
    return found


async def test_dreaming_waits_for_quiet_and_can_be_switched_off(
    short_dir: Path, start_daemon: StartDaemon, servers: dict[str, FakeLlamaServer]
) -> None:
    await heuristic_store(start_daemon, short_dir, servers["embed"], [TEA, BOILER])
    TABLES.asked.clear()
    running = await with_model(
        start_daemon, short_dir, servers["embed"], servers["llm"], quiet_s=0.6
    )
    # Searches keep the lanes busy: nothing is asked while they come.
    for _ in range(8):
        status, _, _ = await call(running.unix, "POST", f"{NS}/search", json={"query": "tea"})
        assert status == 200
        await asyncio.sleep(0.15)
    _, state, _ = await call(running.unix, "GET", f"{V1}/dreaming")
    assert state["state"] == "waiting" and state["quietForS"] < 0.6 and TABLES.asked == []
    # Switched off, it asks nothing however long the lanes are quiet.
    status, off, _ = await call(running.unix, "POST", f"{V1}/dreaming", json={"enabled": False})
    assert status == 200 and off["enabled"] is False and off["state"] == "off"
    await asyncio.sleep(1.0)
    assert TABLES.asked == []
    status, on, _ = await call(running.unix, "POST", f"{V1}/dreaming", json={"enabled": True})
    assert status == 200 and on["enabled"] is True
    # A console polling every 0.1 s (reads, no model) does not count as use: dreaming starts
    # under it. Were polls use, the 0.6 s of quiet would never come.
    for _ in range(100):
        await call(running.unix, "GET", f"{V1}/status")
        await call(running.unix, "GET", f"{NS}/memories/nothing")
        if TABLES.asked:
            break
        await asyncio.sleep(0.1)
    assert TABLES.asked, "dreaming never started under the polling"
    done = await dreamt(running)
    # Both memories typed in one call (up to nine go together).
    assert done["typingAsked"] == 2 and TABLES.asked.count("type") == 1


async def test_bad_dreaming_requests_get_clear_errors(
    short_dir: Path, start_daemon: StartDaemon, servers: dict[str, FakeLlamaServer]
) -> None:
    running = await with_model(start_daemon, short_dir, servers["embed"], servers["llm"])
    for body in ({"enabled": "yes"}, {}, {"enabled": True, "now": True}):
        status, reply, _ = await call(running.unix, "POST", f"{V1}/dreaming", json=body)
        assert_error(status, reply, 400)
    status, reply, _ = await call(
        running.unix,
        "POST",
        f"{V1}/dreaming",
        data=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert_error(status, reply, 400)


def test_smem_dreaming_switches_it_off_and_rejects_nonsense(tmp_path: Path) -> None:
    toml = tmp_path / "smemd.toml"
    toml.write_text(f'[paths]\nstate-dir = "{tmp_path}"\n')
    assert load(toml, env={}).engine.dreaming is True
    assert load(toml, env={"SMEM_DREAMING": "0"}).engine.dreaming is False
    assert load(toml, env={"SMEM_DREAMING": "on"}).engine.dreaming is True
    with pytest.raises(ConfigError, match=r"\$SMEM_DREAMING: expected 1 or 0"):
        load(toml, env={"SMEM_DREAMING": "maybe"})
    toml.write_text(f'[paths]\nstate-dir = "{tmp_path}"\n[engine]\ndreaming-quiet-s = -1\n')
    with pytest.raises(ConfigError, match="dreaming-quiet-s"):
        load(toml, env={})


async def test_without_a_model_dreaming_links_by_words_and_nothing_errors(
    start_daemon: StartDaemon,
) -> None:
    # Quiet long enough for the links ingest made to be dropped before dreaming starts.
    running = await start_daemon(engine__dreaming_quiet_s=1.0)
    for text in (TEA, HONEY, BOILER):
        status, body, _ = await call(running.unix, "POST", f"{NS}/document", json={"content": text})
        assert status == 200, body
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    await unlink(running)
    done = await dreamt(running)
    assert done["heuristics"] == ["typing", "links"] and done["typingAsked"] == 0
    assert done["linked"] == 1, done  # the tea with honey says all the tea says, and more
    found = await memories(running)
    status, body, _ = await call(
        running.unix, "GET", f"{NS}/memories/{found[HONEY]['id']}?include=related"
    )
    assert status == 200, body
    related = body["included"]["related"]["siblings"]
    assert [(m["memory"], m["relation"], m["outgoing"]) for m in related] == [
        (TEA, "extends", True)
    ]
    status, body, _ = await call(
        running.unix, "GET", f"{NS}/memories/{found[TEA]['id']}?include=related"
    )
    related = body["included"]["related"]["siblings"]  # seen from the other end
    assert [(m["memory"], m["relation"], m["outgoing"]) for m in related] == [
        (HONEY, "extends", False)
    ]
    # The calibration routes answer, with nothing to calibrate.
    status, report, _ = await call(running.unix, "GET", f"{V1}/calibration")
    assert status == 200 and report["heuristics"] is True
    status, fit, _ = await call(running.unix, "POST", f"{V1}/calibration/fit")
    assert status == 200 and {r["outcome"] for r in fit["results"]} == {"too few labels"}
    assert await judgements(running, "link") == []


@pytest.mark.parametrize(
    ("text", "other", "extends"),
    [
        (HONEY, TEA, True),
        (TEA, HONEY, False),  # says less
        (TEA, "Alex drinks green tea every morning!", False),  # says the same
        ("Alex has green tea each morning with honey.", TEA, False),  # other words
        ("The tea is green.", "The the.", False),  # nothing but stopwords to extend
    ],
)
def test_the_heuristic_links_a_memory_that_says_more(text: str, other: str, extends: bool) -> None:
    assert extends_by_words(text, other) is extends
