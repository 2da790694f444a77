"""Aliases through the real daemon: suggestions, a person's merge and split (exact, memories
stored after the merge included, a merge of merges undone one step at a time), the decisions
recorded, bad requests; and the judge deciding suggestions while dreaming, a label overruling it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from smemd.engine.entities.merging import merge_in
from smemd.engine.entities.suggestions import Named, name_similarity, suggestions
from smemd.store.records import Mention, NewMemory
from tests.conftest import Running, StartDaemon
from tests.dreams import NS as DREAMS
from tests.dreams import V1, JudgeTables, dreamt, fake_pair, heuristic_store, judgements, with_model
from tests.postgres import store_at
from tests.test_api import assert_error, call
from tests.test_memory_api import NS, add, settle


async def entities(running: Running, ns: str = NS) -> dict[str, dict[str, Any]]:
    status, body, _ = await call(running.unix, "GET", f"{ns}/entities", params={"limit": "100"})
    assert status == 200, body
    return {e["name"]: e for e in body["entities"]}


async def post(running: Running, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    status, reply, _ = await call(running.unix, "POST", f"{NS}/entities/{path}", json=body)
    return status, reply


async def named(running: Running, entity: str) -> list[str]:
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/list/memories", json={"entity": entity}
    )
    assert status == 200, body
    return sorted(m["memory"] for m in body["memories"])


def test_names_are_close_by_nickname_part_acronym_and_slip_not_by_title_or_neighbour() -> None:
    assert name_similarity("Bob Smith", "Robert Smith") >= 0.85
    assert name_similarity("Raj", "Raj Patel") >= 0.85
    assert name_similarity("NYC", "New York City") >= 0.85
    assert name_similarity("Caroline", "Carolyn") > 0.7
    assert name_similarity("Mr Okafor", "Mrs Okafor") == 0.0  # the titles clash
    assert name_similarity("Mr Chen", "Lily Chen") < 0.7  # perhaps her father
    assert name_similarity("Boston", "Boston College") < 0.7
    assert name_similarity("Bob Smith", "Bob Jones") == 0.0
    assert name_similarity("John", "Joan") == 0.0


async def test_merge_and_split_through_the_daemon(running: Running) -> None:
    await add(running, "Robert Smith moved to Denver in the spring.")
    await add(running, "Bob Smith goes hiking near Denver every weekend.")
    await add(running, "Bob Jones plays chess on Thursdays.")
    await settle(running)
    status, body, _ = await call(running.unix, "GET", f"{NS}/entities/suggestions")
    assert status == 200, body
    pairs = [{s["keep"]["name"], s["alias"]["name"]} for s in body["suggestions"]]
    assert {"Robert Smith", "Bob Smith"} in pairs
    assert not any("Bob Jones" in pair for pair in pairs), pairs
    first = body["suggestions"][pairs.index({"Robert Smith", "Bob Smith"})]
    assert first["nameScore"] >= 0.85 and isinstance(first["contextScore"], float)

    status, merged = await post(running, "merge", {"into": "robert smith", "names": ["Bob Smith"]})
    assert status == 200, merged
    robert = merged["entity"]
    assert robert["name"] == "Robert Smith" and robert["aliases"] == ["Bob Smith"]
    assert robert["memories"] == 2
    decision = merged["decisions"][0]
    assert decision["same"] is True and decision["by"] == "person"
    assert decision["alias"]["name"] == "Bob Smith" and decision["undoneAt"] is None
    listed = await entities(running)
    assert "Bob Smith" not in listed and listed["Robert Smith"]["aliases"] == ["Bob Smith"]
    # The alias finds the entity: its profile, and what names it.
    status, profile, _ = await call(running.unix, "GET", f"{NS}/entities/bob smith")
    assert status == 200 and profile["entity"]["id"] == robert["id"], profile
    both = [
        "Bob Smith goes hiking near Denver every weekend.",
        "Robert Smith moved to Denver in the spring.",
    ]
    assert await named(running, "Bob Smith") == both == await named(running, robert["id"])
    status, body, _ = await call(running.unix, "GET", f"{NS}/entities/suggestions")
    assert not any(
        {s["keep"]["name"], s["alias"]["name"]} == {"Robert Smith", "Bob Smith"}
        for s in body["suggestions"]
    )
    # A memory stored after the merge under the alias belongs to the entity...
    await add(running, "Bob Smith bought a red bike.")
    await settle(running)
    assert (await entities(running))["Robert Smith"]["memories"] == 3

    status, split = await post(running, "split", {"name": "BOB SMITH"})
    assert status == 200, split
    assert split["undone"]["id"] == decision["id"]
    after = await entities(running)
    # ...and goes with the alias when it is split out again.
    assert after["Robert Smith"]["memories"] == 1 and after["Robert Smith"]["aliases"] == []
    assert after["Bob Smith"]["memories"] == 2
    assert await named(running, "Robert Smith") == both[1:]
    status, body, _ = await call(running.unix, "GET", f"{NS}/entities/decisions")
    assert status == 200, body
    assert [(d["same"], d["by"], d["undoneAt"] is None) for d in body["decisions"]] == [
        (False, "person", True),
        (True, "person", False),
    ]
    # Once split, the pair is settled: not suggested again.
    status, body, _ = await call(running.unix, "GET", f"{NS}/entities/suggestions")
    assert not any(
        {s["keep"]["name"], s["alias"]["name"]} == {"Robert Smith", "Bob Smith"}
        for s in body["suggestions"]
    )


async def test_a_merge_of_merges_is_split_one_step_at_a_time(running: Running) -> None:
    for text in (
        "Alex Kim runs the lab.",
        "We asked Alex about the centrifuge.",
        "Dr Kim signed it.",
    ):
        await add(running, text)
    await settle(running)
    assert (await post(running, "merge", {"into": "Alex", "names": ["Dr Kim"]}))[0] == 200
    status, merged = await post(running, "merge", {"into": "Alex Kim", "names": ["Alex"]})
    assert status == 200, merged
    assert sorted(merged["entity"]["aliases"]) == ["Alex", "Dr Kim"]
    assert merged["entity"]["memories"] == 3
    # Splitting Alex out takes Dr Kim with it, as it was before the second merge.
    status, split = await post(running, "split", {"name": "Alex"})
    assert status == 200, split
    now = await entities(running)
    assert now["Alex"]["aliases"] == ["Dr Kim"] and now["Alex"]["memories"] == 2
    assert now["Alex Kim"]["aliases"] == [] and now["Alex Kim"]["memories"] == 1
    status, split = await post(running, "split", {"name": "Dr Kim"})
    assert status == 200, split
    assert set(await entities(running)) == {"Alex", "Alex Kim", "Dr Kim"}


async def test_bad_merge_and_split_requests_get_clear_errors(running: Running) -> None:
    await add(running, "Maria Lopez teaches piano.")
    await add(running, "I had dinner with Maria yesterday.")
    await settle(running)
    for body in ({}, {"into": "Maria"}, {"into": "Maria", "names": []}, {"into": "", "names": ["x"]},
                 {"into": "Maria", "names": ["Maria Lopez"], "extra": 1},
                 {"into": "Maria", "names": ["y"] * 21}):  # fmt: skip
        status, reply = await post(running, "merge", body)
        assert_error(status, reply, 400)
    status, reply = await post(running, "merge", {"into": "Maria", "names": ["Nobody"]})
    assert_error(status, reply, 404)
    status, reply = await post(running, "merge", {"into": "Maria", "names": ["maria"]})
    assert_error(status, reply, 409)
    status, reply = await post(running, "split", {"name": "Maria"})
    assert_error(status, reply, 409)
    status, reply = await post(running, "split", {"name": "Nobody"})
    assert_error(status, reply, 404)
    for query in ({"limit": "0"}, {"limit": "101"}, {"limit": "x"}):
        status, reply, _ = await call(
            running.unix, "GET", f"{NS}/entities/suggestions", params=query
        )
        assert_error(status, reply, 400)
    # Nothing was changed by any of it.
    assert {n: e["aliases"] for n, e in (await entities(running)).items()} == {
        "Maria": [],
        "Maria Lopez": [],
    }


async def test_hard_deleting_every_memory_of_an_entity_removes_it(running: Running) -> None:
    doc = await add(running, "My neighbour Quentin repaired the fence.")
    await add(running, "My sister Ruth planted tulips.")
    await settle(running)
    assert "Quentin" in await entities(running)
    status, body, _ = await call(
        running.unix, "DELETE", f"{NS}/document", json={"ids": [doc["id"]]}
    )
    assert status == 200 and body["count"] == 1, body
    await settle(running)
    assert set(await entities(running)) == {"Ruth"}


SMITH = "Robert Smith repaired the old boiler."
BOB = "Bob Smith brought a new boiler valve."
OTHER = "Nora Quinn paints seascapes."
TYPES = {SMITH: ("fact", 0.9), BOB: ("fact", 0.9), OTHER: ("fact", 0.9)}


async def test_the_judge_merges_a_suggestion_and_a_label_splits_it(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    model = JudgeTables(TYPES, aliases={frozenset({"Robert Smith", "Bob Smith"}): 0.93})
    async with fake_pair(model) as fakes:
        await heuristic_store(start_daemon, short_dir, fakes["embed"], [SMITH, BOB, OTHER])
        running = await with_model(start_daemon, short_dir, fakes["embed"], fakes["llm"])
        status = await dreamt(running)
        assert status["aliasesAsked"] == 1 and status["aliasesMerged"] == 1, status
        assert model.asked.count("alias") == 1
        found = await entities(running, DREAMS)
        assert found["Robert Smith"]["aliases"] == ["Bob Smith"]
        call_ = (await judgements(running, "alias"))[0]
        assert call_["probabilities"][0] > 0.9
        _, decided, _ = await call(running.unix, "GET", f"{DREAMS}/entities/decisions")
        made = decided["decisions"][0]
        assert made["by"] == "judge" and made["judgementId"] == call_["id"]
        assert abs(made["probability"] - 0.93) < 1e-3

        # A person says the judge was wrong: the two are split, and stay two.
        status_, label, _ = await call(
            running.unix,
            "POST",
            f"{V1}/labels",
            json={"judgementId": call_["id"], "correct": False},
        )
        assert status_ == 201, label
        found = await entities(running, DREAMS)
        assert found["Robert Smith"]["aliases"] == [] and "Bob Smith" in found
        _, body, _ = await call(running.unix, "GET", f"{DREAMS}/entities/suggestions")
        assert body["suggestions"] == []
        _, calibration, _ = await call(running.unix, "GET", f"{V1}/calibration")
        alias = next(j for j in calibration["judges"] if j["kind"] == "alias")
        assert alias["judgements"] == 1 and alias["labels"] == 1


async def test_an_unsure_judge_merges_nothing_and_asks_once(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    model = JudgeTables(TYPES, aliases={frozenset({"Robert Smith", "Bob Smith"}): 0.6})
    async with fake_pair(model) as fakes:
        await heuristic_store(start_daemon, short_dir, fakes["embed"], [SMITH, BOB, OTHER])
        running = await with_model(start_daemon, short_dir, fakes["embed"], fakes["llm"])
        status = await dreamt(running)
        assert status["aliasesAsked"] == 1 and status["aliasesMerged"] == 0, status
        found = await entities(running, DREAMS)
        assert found["Robert Smith"]["aliases"] == [] and "Bob Smith" in found
        _, decided, _ = await call(running.unix, "GET", f"{DREAMS}/entities/decisions")
        assert [(d["same"], d["by"]) for d in decided["decisions"]] == [(False, "judge")]


async def test_a_moved_namespace_keeps_its_merges_and_joins_names_the_target_has(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path / "s.sqlite3")
    await store.open()
    async with store.write() as writer:
        for i, (ns, name) in enumerate(
            [("a", "Robert Smith"), ("a", "Bob"), ("b", "robert smith")]
        ):
            await writer.ensure_namespace(ns, 1.0)
            new = NewMemory(
                id=f"mem_{i}", namespace=ns, text=f"fact {i}", type="fact", root_id=f"mem_{i}",
                valid_from=float(i), mentions=[Mention(name=name, kind="person")],
            )  # fmt: skip
            await writer.insert_memory(new, np.ones(4, dtype=np.float32), 1.0)
        robert = await writer.entity("a", "Robert Smith")
        bob = await writer.entity("a", "Bob")
        assert robert is not None and bob is not None
        await merge_in(writer, robert.id, bob.id, by="person")
        await writer.move_namespace("a", "b")
    async with store.read() as reader:
        found, _ = await reader.entities("b", q=None, kind=None, limit=10, offset=0)
        # Bob, merged into a's Robert Smith, now belongs to b's: all three memories are one's.
        assert [(e.name, e.aliases, e.memories) for e in found] == [("robert smith", ["Bob"], 3)]
        decisions, total = await reader.alias_decisions("b", limit=10, offset=0)
        assert total == 1 and decisions[0].same
    await store.close()


def test_a_short_name_fitting_several_longer_ones_is_suggested_with_none() -> None:
    def named(i: int, name: str) -> Named:
        return Named(id=f"ent_{i}", namespace="n", names=(name,), kind="person", memories=1)

    alone = suggestions([named(1, "Raj"), named(2, "Raj Patel")], set())
    assert [(s.keep.names[0], s.alias.names[0]) for s in alone] == [("Raj Patel", "Raj")]
    both = [named(1, "Bob"), named(2, "Bob Smith"), named(3, "Bob Jones")]
    assert suggestions(both, set()) == []  # which Bob? the names cannot say
    assert (
        suggestions([named(1, "Raj"), named(2, "Raj Patel")], {frozenset(("ent_1", "ent_2"))}) == []
    )
