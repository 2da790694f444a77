"""Entities: the no-model finder, the rows ingest links, and the routes through the real daemon."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from smemd.engine.entities.finder import find
from smemd.store.records import Mention, NewMemory
from smemd.store.sqlite import schema
from smemd.store.sqlite.schema import MIGRATIONS
from smemd.store.sqlite.store import SqliteStore
from tests.bench.entities import score
from tests.conftest import Running
from tests.postgres import store_at
from tests.raw_sqlite import connection
from tests.test_api import assert_error, call
from tests.test_memory_api import NS, add, settle


def names(text: str) -> list[tuple[str, str]]:
    return [(f.name, f.kind) for f in find(text)]


def test_the_finder_names_speakers_spans_possessives_and_subjects() -> None:
    assert names("Caroline: I went to the support group with Melanie.") == [
        ("Caroline", "person"),
        ("Melanie", "person"),
    ]
    assert names("Yesterday Bob Smith moved to New York.") == [
        ("Bob Smith", "person"),
        ("New York", "place"),
    ]
    assert names("Alex's shifts at Mercy Hospital are at night.") == [
        ("Alex", "person"),
        ("Mercy Hospital", "organisation"),
    ]
    assert names("Maria works for Acme Corp.") == [
        ("Maria", "person"),
        ("Acme Corp", "organisation"),
    ]
    assert names("My favourite brand is Nike. Thanks, Gina!") == [
        ("Nike", "thing"),
        ("Gina", "person"),
    ]


def test_the_finder_leaves_out_sentence_openers_time_words_and_acronyms() -> None:
    assert names("The meeting moved to Tuesday. Yesterday was cold.") == []
    assert names("BTW, the NASA launch is in March. Life is good.") == []
    assert names("Running was hard. I told Mom at Christmas.") == []


def test_the_bench_stays_above_its_floor() -> None:
    result = score()
    assert result.sentences >= 60
    assert result.precision >= 0.85, result.wrong
    assert result.recall >= 0.8, result.wrong


async def test_an_old_store_gets_entity_rows_from_the_names_extraction_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.sqlite3"
    monkeypatch.setattr(schema, "MIGRATIONS", [m for m in MIGRATIONS if m[0] < "0008"])
    store = SqliteStore(path)
    await store.open()
    async with store.write() as writer:
        await writer.ensure_namespace("n", 1.0)
        for i, (named, valid_from) in enumerate(
            [(["Alex", "Oslo"], 10.0), (["alex"], 30.0), ([], 20.0)]
        ):
            new = NewMemory(
                id=f"mem_{i}", namespace="n", text=f"fact {i}", type="fact", root_id=f"mem_{i}",
                entities=named, valid_from=valid_from,
            )  # fmt: skip
            await writer.insert_memory(new, np.ones(4, dtype=np.float32), 1.0)
    await store.close()
    monkeypatch.undo()
    store = SqliteStore(path)
    assert (await store.open())[0] == "0008_entities"  # and any migration after it
    async with store.read() as reader:
        found, total = await reader.entities("n", q=None, kind=None, limit=10, offset=0)
        assert total == 2
        assert [(e.name, e.memories, e.first_seen, e.last_seen) for e in found] == [
            ("Alex", 2, 10.0, 30.0),
            ("Oslo", 1, 10.0, 10.0),
        ]
        related = await reader.co_mentioned(found[0].id, 10)
        assert [(e.name, e.memories) for e in related] == [("Oslo", 1)]
    await store.close()


async def entities(running: Running, **query: Any) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", f"{NS}/entities", params=query)
    assert status == 200, body
    return body


async def test_ingest_links_entities_and_the_list_counts_their_memories(running: Running) -> None:
    await add(running, "Caroline: I went to the support group with Melanie.")
    await add(running, "Melanie ran a charity race in Boston.")
    await add(running, "Our trip to the lake was lovely.")
    await settle(running)
    body = await entities(running)
    counts = {e["name"]: (e["kind"], e["memories"]) for e in body["entities"]}
    assert counts == {
        "Melanie": ("person", 2),
        "Caroline": ("person", 1),
        "Boston": ("place", 1),
    }
    assert body["entities"][0]["name"] == "Melanie"
    assert body["pagination"]["totalItems"] == 3
    only = await entities(running, q="caro")
    assert [e["name"] for e in only["entities"]] == ["Caroline"]
    places = await entities(running, kind="place")
    assert [e["name"] for e in places["entities"]] == ["Boston"]
    paged = await entities(running, limit="1", page="2")
    assert len(paged["entities"]) == 1 and paged["pagination"]["totalPages"] == 3

    melanie = body["entities"][0]["id"]
    for entity in (melanie, "MELANIE"):
        status, listed, _ = await call(
            running.unix, "POST", f"{NS}/list/memories", json={"entity": entity}
        )
        assert status == 200, listed
        assert sorted(m["memory"] for m in listed["memories"]) == [
            "Caroline: I went to the support group with Melanie.",
            "Melanie ran a charity race in Boston.",
        ]
    status, listed, _ = await call(
        running.unix, "POST", f"{NS}/list/memories", json={"entity": "Nobody"}
    )
    assert status == 200 and listed["memories"] == [], listed
    status, profile, _ = await call(running.unix, "GET", f"{NS}/entities/{melanie}")
    assert status == 200, profile
    assert {e["name"]: e["memories"] for e in profile["related"]} == {"Caroline": 1, "Boston": 1}


async def test_a_profile_after_an_update_shows_the_current_fact_first_and_the_old_in_history(
    running: Running,
) -> None:
    await add(running, "Alex lives in Seattle.")
    await settle(running)
    _, listed, _ = await call(running.unix, "POST", f"{NS}/list/memories", json={})
    old = listed["memories"][0]
    status, new, _ = await call(
        running.unix, "PATCH", f"{NS}/memories/{old['id']}", json={"memory": "Alex lives in Oslo."}
    )
    assert status == 200, new
    body = await entities(running)
    alex = next(e for e in body["entities"] if e["name"] == "Alex")
    assert alex["memories"] == 1  # live ones: the old version is history
    status, profile, _ = await call(running.unix, "GET", f"{NS}/entities/{alex['id']}")
    assert status == 200, profile
    assert profile["entity"]["name"] == "Alex" and profile["entity"]["kind"] == "person"
    assert [m["memory"] for m in profile["current"]] == ["Alex lives in Oslo."]
    assert [m["memory"] for m in profile["history"]] == ["Alex lives in Seattle."]
    assert profile["history"][0]["validUntil"] == profile["current"][0]["validFrom"]
    assert profile["entity"]["firstSeen"] == profile["history"][0]["validFrom"]
    assert profile["entity"]["lastSeen"] == profile["current"][0]["validFrom"]
    assert {e["name"] for e in profile["related"]} == {"Oslo"}


async def test_bad_entity_requests_are_400_or_404(running: Running) -> None:
    for query in ({"kind": "planet"}, {"limit": "0"}, {"page": "x"}, {"limit": "101"}):
        status, body, _ = await call(running.unix, "GET", f"{NS}/entities", params=query)
        assert_error(status, body, 400)
    status, body, _ = await call(running.unix, "GET", f"{NS}/entities/ent_missing")
    assert_error(status, body, 404)
    other = "http://smemd/ns/elsewhere"
    await add(running, "Melanie ran a race.")
    await settle(running)
    melanie = (await entities(running))["entities"][0]["id"]
    status, body, _ = await call(running.unix, "GET", f"{other}/entities/{melanie}")
    assert_error(status, body, 404)


async def test_moving_a_namespace_joins_entities_of_one_name_and_removing_takes_them(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path / "s.sqlite3")
    await store.open()
    async with store.write() as writer:
        for i, (ns, name, valid_from) in enumerate(
            [("a", "Alex", 10.0), ("a", "Oslo", 10.0), ("b", "alex", 20.0)]
        ):
            await writer.ensure_namespace(ns, 1.0)
            new = NewMemory(
                id=f"mem_{i}", namespace=ns, text=f"fact {i}", type="fact", root_id=f"mem_{i}",
                valid_from=valid_from, mentions=[Mention(name=name, kind="person")],
            )  # fmt: skip
            await writer.insert_memory(new, np.ones(4, dtype=np.float32), 1.0)
        await writer.move_namespace("a", "b")
    async with store.read() as reader:
        found, _ = await reader.entities("b", q=None, kind=None, limit=10, offset=0)
        assert [(e.name, e.memories, e.first_seen, e.last_seen) for e in found] == [
            ("alex", 2, 10.0, 20.0),
            ("Oslo", 1, 10.0, 10.0),
        ]
        assert (await reader.entities("a", q=None, kind=None, limit=10, offset=0))[1] == 0
    async with store.write() as writer:
        await writer.remove_namespace("b")
    async with store.read() as reader:
        assert (await reader.entities("b", q=None, kind=None, limit=10, offset=0))[1] == 0
        rows = await connection(reader).execute_fetchall("SELECT count(*) FROM memory_entities")
        assert next(iter(rows))[0] == 0
    await store.close()
