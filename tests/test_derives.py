"""Inferences made by dreaming, through the daemon: with a model, a fact that follows from two
memories together is stored with `isInference`, a `derives` link to each source and the judge's
probability; a judge that is not sure enough stores nothing; without a model nothing is
inferred and the status says so; retracting the sources withdraws the inference."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from smemd.engine.dreaming.inference_prompt import inference_schema, read_inference
from smemd.engine.judgement.questions import DERIVES_THRESHOLD
from tests.conftest import Running, StartDaemon
from tests.dreams import (
    NS,
    V1,
    JudgeTables,
    dreamt,
    fake_pair,
    heuristic_store,
    judgements,
    memories,
    with_model,
)
from tests.settling import until_idle
from tests.test_api import call

HOSPITAL = "Alex works at a hospital."
NIGHTS = "Alex's shifts are at night."
BOILER = "The boiler in the flat broke down last week."
NIGHT_SHIFTS = "Alex works night shifts at a hospital."
TYPES = {
    HOSPITAL: ("fact", 0.9), NIGHTS: ("fact", 0.9), BOILER: ("episode", 0.9),
    NIGHT_SHIFTS: ("fact", 0.9),
}  # fmt: skip


@contextlib.asynccontextmanager
async def dream_with(
    start_daemon: StartDaemon, short_dir: Path, texts: Sequence[str], p: float
) -> AsyncIterator[tuple[Running, JudgeTables, dict[str, Any]]]:
    """`texts` stored without a model, then dreamt over by one that infers the night shifts
    from the hospital and the nights, judged to follow with probability `p`."""
    model = JudgeTables(TYPES, inferences={NIGHT_SHIFTS: ((HOSPITAL, NIGHTS), p)})
    async with fake_pair(model) as fakes:
        await heuristic_store(start_daemon, short_dir, fakes["embed"], texts)
        running = await with_model(start_daemon, short_dir, fakes["embed"], fakes["llm"])
        yield running, model, await dreamt(running)


async def test_an_inference_is_stored_with_derives_links_and_its_probability(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    async with dream_with(start_daemon, short_dir, [HOSPITAL, NIGHTS, BOILER], 0.95) as dream:
        running, model, status = dream
        assert status["inference"] == "on"
        # Each memory looked at once, beside the older ones: only the nights had a companion.
        assert status["inferenceLooked"] == 3 and status["inferenceAsked"] == 1, status
        assert status["inferred"] == 1, status
        assert model.shown == [[HOSPITAL, NIGHTS]]
        found = await memories(running)
        inferred = found[NIGHT_SHIFTS]
        assert inferred["isInference"] is True and inferred["type"] == "fact"
        assert inferred["metadata"]["inferenceProbability"] == pytest.approx(0.95, abs=1e-4)
        assert "documentId" not in inferred
        # Valid from the latest of its sources.
        assert inferred["validFrom"] == max(
            found[HOSPITAL]["validFrom"], found[NIGHTS]["validFrom"]
        )
        assert all(m["isInference"] is False for t, m in found.items() if t != NIGHT_SHIFTS)

        status_, body, _ = await call(
            running.unix, "GET", f"{NS}/memories/{inferred['id']}?include=related"
        )
        assert status_ == 200, body
        siblings = body["included"]["related"]["siblings"]
        assert sorted((m["memory"], m["relation"], m["outgoing"]) for m in siblings) == [
            (HOSPITAL, "derives", True),
            (NIGHTS, "derives", True),
        ]
        engine = running.daemon.state.engine
        assert engine is not None
        async with engine.store.read() as reader:
            links = await reader.relations_of([inferred["id"]])
        assert {(r.to_id, r.kind) for r in links} == {
            (found[HOSPITAL]["id"], "derives"),
            (found[NIGHTS]["id"], "derives"),
        }
        assert {round(r.score, 4) for r in links} == {0.95}

        (call_,) = await judgements(running, "derives")
        assert call_["subjectId"] == inferred["id"] and call_["text"] == NIGHT_SHIFTS
        assert call_["options"] == ["derives", "none"] and call_["decided"] is True
        assert call_["applied"] == "derives" and call_["fallback"] == "none"
        # The inference is a memory like any other: found by search, marked as inferred.
        status_, hits, _ = await call(
            running.unix, "POST", f"{NS}/search", json={"query": NIGHT_SHIFTS, "limit": 5}
        )
        assert status_ == 200, hits
        hit = next(h for h in hits["results"] if h.get("memory") == NIGHT_SHIFTS)
        assert hit["isInference"] is True and hit["similarity"] == pytest.approx(1.0)
        # The calibration report has a judge for inferences, with its own bar.
        status_, report, _ = await call(running.unix, "GET", f"{V1}/calibration")
        assert status_ == 200, report
        derives = next(j for j in report["judges"] if j["kind"] == "derives")
        assert derives["threshold"] == DERIVES_THRESHOLD and derives["judgements"] == 1


async def test_an_inference_the_judge_is_not_sure_of_is_not_stored(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    async with dream_with(start_daemon, short_dir, [HOSPITAL, NIGHTS], 0.7) as dream:
        running, model, status = dream
        assert status["inferenceAsked"] == 1 and status["inferred"] == 0, status
        assert model.asked.count("derives") == 1
        assert NIGHT_SHIFTS not in await memories(running)
        (call_,) = await judgements(running, "derives")
        # The judge picked "it follows", under the bar: logged for calibration, nothing applied.
        assert call_["proposal"] == "derives" and call_["decided"] is False
        assert call_["applied"] == "none"


async def test_an_inference_a_memory_already_states_is_neither_judged_nor_stored(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    async with dream_with(start_daemon, short_dir, [HOSPITAL, NIGHTS, NIGHT_SHIFTS], 0.95) as dream:
        running, model, status = dream
        assert status["inferenceAsked"] == 2 and status["inferred"] == 0, status
        assert "derives" not in model.asked
        found = await memories(running)
        assert found[NIGHT_SHIFTS]["isInference"] is False
        assert await judgements(running, "derives") == []


async def test_without_a_model_nothing_is_inferred_and_the_status_says_so(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon(engine__dreaming_quiet_s=0.2)
    for text in (HOSPITAL, NIGHTS):
        status, body, _ = await call(running.unix, "POST", f"{NS}/document", json={"content": text})
        assert status == 200, body
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    done = await dreamt(running)
    assert done["inference"] == "off: no model"
    assert done["uninferred"] == 0 and done["inferenceAsked"] == done["inferred"] == 0
    status, whole, _ = await call(running.unix, "GET", f"{V1}/status")
    assert status == 200 and whole["dreaming"]["inference"] == "off: no model"
    assert not any(m["isInference"] for m in (await memories(running)).values())


async def test_retracting_both_sources_withdraws_the_inference(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    async with dream_with(start_daemon, short_dir, [HOSPITAL, NIGHTS], 0.95) as dream:
        running, _, status = dream
        assert status["inferred"] == 1, status
        found = await memories(running)
        inferred = found[NIGHT_SHIFTS]["id"]
        hospital, nights = found[HOSPITAL]["documentId"], found[NIGHTS]["documentId"]

        # One source left: the inference keeps a live source (a memory lives while one does).
        one = await retract(running, hospital)
        assert inferred not in one["withdrawn"]
        assert NIGHT_SHIFTS in await memories(running)
        both = await retract(running, nights)
        assert inferred in both["withdrawn"]
        assert NIGHT_SHIFTS not in await memories(running)
        status_, body, _ = await call(running.unix, "GET", f"{NS}/memories/{inferred}")
        assert status_ == 200 and body["isForgotten"] is True, body
        # Undone, the inference is back with its source.
        await retract(running, nights, undo=True)
        assert NIGHT_SHIFTS in await memories(running)


async def retract(running: Running, document_id: str, *, undo: bool = False) -> dict[str, Any]:
    verb = "unretract" if undo else "retract"
    status, body, _ = await call(running.unix, "POST", f"{NS}/document/{document_id}/{verb}")
    assert status == 200, body
    return dict(body)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"inference": "Alex works nights at a hospital.", "uses": [2, 1]}', (0, 1)),
        ('{"inference": "Alex works nights.", "uses": [2]}', None),  # one memory is no inference
        ('{"inference": "Alex works nights.", "uses": [1, 7]}', None),  # 7 names no memory
        ('{"inference": null, "uses": []}', None),
        ('{"inference": "Alex works at a hospital.", "uses": [1, 2]}', None),  # says [1] again
        ("[]", None),
        ("not json", None),
    ],
)
def test_a_reply_is_an_inference_only_when_it_is_new_and_uses_two_memories(
    reply: str, expected: tuple[int, ...] | None
) -> None:
    inference = read_inference(reply, [HOSPITAL, NIGHTS])
    assert (inference.uses if inference else None) == expected


def test_the_schema_allows_only_numbers_of_memories_given() -> None:
    uses = inference_schema(3)["properties"]["uses"]
    assert uses["items"] == {"type": "integer", "minimum": 1, "maximum": 3}
    assert uses["maxItems"] == 3
