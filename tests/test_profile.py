"""The profile over HTTP: preferences before facts, connected first, buckets and filters."""

from __future__ import annotations

from typing import Any

from tests.conftest import Running
from tests.test_api import call
from tests.test_memory_api import add, settle

NS = "http://smemd/ns/people"


async def profile(running: Running, **body: Any) -> dict[str, Any]:
    status, reply, _ = await call(running.unix, "POST", f"{NS}/profile", json=body)
    assert status == 200, reply
    return dict(reply["profile"])


async def test_preferences_come_first_and_buckets_hold_what_they_name(running: Running) -> None:
    await add(running, "Alex lives in Seattle.", metadata={"person": "alex"})
    await add(running, "Alex loves hiking in the mountains.", metadata={"person": "alex"})
    await add(running, "Sam works at the harbour.", metadata={"person": "sam"})
    await settle(running)
    built = await profile(running, buckets=["preferences", "seattle"])
    static = [f["memory"] for f in built["static"]]
    assert static[0] == "Alex loves hiking in the mountains."  # the preference leads
    assert set(static[1:]) == {"Alex lives in Seattle.", "Sam works at the harbour."}
    assert [f["memory"] for f in built["buckets"]["preferences"]] == [static[0]]
    assert [f["memory"] for f in built["buckets"]["seattle"]][:1] == ["Alex lives in Seattle."]
    only_sam = {
        "operator": "and",
        "operands": [{"field": "person", "operator": "eq", "value": "sam"}],
    }
    narrowed = await profile(running, filter=only_sam, buckets=["preferences"])
    assert [f["memory"] for f in narrowed["static"]] == ["Sam works at the harbour."]
    assert narrowed["buckets"] == {"preferences": []}


async def test_a_namespace_bucket_holds_what_its_description_says(running: Running) -> None:
    await add(running, "Zed keeps a parrot called Kiwi.")
    await add(running, "Zed works night shifts as a welder.")
    await settle(running)
    status, _, _ = await call(
        running.unix, "PUT", f"{NS}/profile/buckets",
        json={"buckets": {"b1": "The pets someone keeps"}},  # its name alone finds the welder
    )  # fmt: skip
    assert status == 200
    built = await profile(running, buckets=["b1"])
    assert [f["memory"] for f in built["buckets"]["b1"]][:1] == ["Zed keeps a parrot called Kiwi."]
