"""The official SDK 5.0.1 over the calls of reference §2 beyond the P0 ones: files, buckets,
namespaces (delete and move), memory counts, the organisation, and the hosted-only calls, which
raise the documented `NotFoundError` with an error that says a self-hosted smem does not offer
them."""

from __future__ import annotations

import io
import time
from typing import Any

import httpx
import pytest
import supermemory
from supermemory import Supermemory

from tests import test_sdk
from tests.pace import scaled

TOKEN = test_sdk.TOKEN
client = test_sdk.client  # the same fixture: a daemon and an SDK client for this module


def settle(client: Supermemory, ns: str, ref: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + scaled(timeout)
    while (doc := client.documents.get(ns, ref, include=["memories"])).system.status != "done":
        assert doc.system.status != "failed", doc
        assert time.monotonic() < deadline, f"{ref} not done"
        time.sleep(0.05)
    return doc


def test_file_routes_add_replace_and_patch(client: Supermemory) -> None:
    ns = "files"
    ref = client.documents.upload_file(
        ns, file=("notes.txt", io.BytesIO(b"Noor keeps bees."), "text/plain"),
        metadata='{"kind": "notes"}',
    )  # fmt: skip
    settle(client, ns, ref.id)
    client.documents.replace_with_file(
        ns, ref.id, file=("notes.txt", io.BytesIO(b"Noor keeps goats."), "text/plain")
    )
    doc = settle(client, ns, ref.id)
    assert doc.content == "Noor keeps goats."
    # PATCH without a file changes the fields and keeps the content.
    client.documents.update_file(ns, ref.id, metadata='{"kind": "diary"}')
    doc = settle(client, ns, ref.id)
    assert doc.content == "Noor keeps goats." and doc.metadata["kind"] == "diary"
    client.documents.update_file(
        ns, ref.id, file=("notes.txt", io.BytesIO(b"Noor keeps llamas."), "text/plain")
    )
    assert settle(client, ns, ref.id).content == "Noor keeps llamas."
    with pytest.raises(supermemory.NotFoundError):
        client.documents.update_file(ns, "no-such-doc", metadata='{"kind": "x"}')


def test_buckets_add_change_and_remove_but_never_the_built_in_ones(client: Supermemory) -> None:
    ns = "buckets"
    assert client.profiles.get_buckets(ns).buckets.keys() == {"preferences"}
    made = client.profiles.set_buckets(ns, buckets={"pets": "Animals the subject keeps"})
    assert made.buckets["pets"] == "Animals the subject keeps" and "preferences" in made.buckets
    client.profiles.set_buckets(ns, buckets={"pets": "Animals, and their names"})
    assert client.profiles.get_buckets(ns).buckets["pets"] == "Animals, and their names"
    with pytest.raises(supermemory.ConflictError):
        client.profiles.set_buckets(ns, buckets={"preferences": "mine now"})
    with pytest.raises(supermemory.ConflictError):
        client.profiles.delete_buckets(ns, buckets=["preferences"])
    left = client.profiles.delete_buckets(ns, buckets=["pets", "never-made"])
    assert left.buckets.keys() == {"preferences"}
    with pytest.raises(supermemory.BadRequestError):
        client.profiles.set_buckets(ns, buckets={"Not A Slug": "x"})


def test_namespaces_update_only_what_exists_and_delete_everything(client: Supermemory) -> None:
    with pytest.raises(supermemory.NotFoundError):
        client.namespaces.update("never-written", supporting_context="x")
    names = [n.namespace for n in client.namespaces.list(limit=100).namespaces]
    assert "never-written" not in names
    ns = "doomed"
    ref = client.add(ns, content="Ola rows on Tuesdays.", id="ola")
    settle(client, ns, ref.id)
    updated = client.namespaces.update(ns, supporting_context="Track hobbies.")
    assert updated.supporting_context == "Track hobbies."
    gone = client.namespaces.delete(ns)
    assert gone.status == "deleted"
    assert (gone.deleted_documents_count, gone.deleted_memories_count) == (1, 1)
    with pytest.raises(supermemory.NotFoundError):
        client.namespaces.get(ns)
    with pytest.raises(supermemory.NotFoundError):
        client.documents.get(ns, "ola")
    assert client.search(ns, query="rowing").results == []
    with pytest.raises(supermemory.NotFoundError):
        client.namespaces.delete(ns)


def test_a_namespace_moves_into_another_whole(client: Supermemory) -> None:
    client.add("move-from", content="Pia paints murals.", id="pia")
    client.add("move-into", content="Quinn plays cello.", id="quinn")
    settle(client, "move-from", "pia")
    settle(client, "move-into", "quinn")
    moved = client.namespaces.delete("move-from", move_to="move-into")
    assert moved.status == "queued" and moved.move_to == "move-into"
    doc = settle(client, "move-into", "pia")
    assert [m.memory for m in doc.memories or []] == ["Pia paints murals."]
    found = client.search("move-into", query="who paints murals?", search_mode="memories")
    assert found.results and found.results[0].memory == "Pia paints murals."
    with pytest.raises(supermemory.NotFoundError):
        client.namespaces.get("move-from")
    # A caller id in both would be ambiguous: refused, nothing moved.
    client.add("clash", content="Quinn plays viola.", id="quinn")
    settle(client, "clash", "quinn")
    with pytest.raises(supermemory.ConflictError):
        client.namespaces.delete("clash", move_to="move-into")
    assert client.documents.get("clash", "quinn").content == "Quinn plays viola."


def test_memory_counts_and_the_organisation(client: Supermemory) -> None:
    ns = "counted"
    ref = client.add(ns, content="Rui sails. Rui fishes.", id="rui")
    doc = settle(client, ns, ref.id)
    counts = client.content_management.post_ns_by_namespace_list_documents_memory_counts(
        ns, ids=["rui", doc.id, "nobody"]
    )
    assert [(c.id, c.memory_count) for c in counts.counts] == [
        ("rui", len(doc.memories)), (doc.id, len(doc.memories))
    ]  # fmt: skip
    org = client.organization.get()
    assert org.namespace_count >= 1 and org.organizational_context is None
    org = client.organization.update(organizational_context="A household's shared memory.")
    assert org.organizational_context == "A household's shared memory."
    assert client.organization.get().organizational_context == "A household's shared memory."


def test_hosted_only_calls_raise_not_found_saying_so(client: Supermemory) -> None:
    calls = [
        lambda: client.feedback.post_feedback(type="bug", title="t", description="d"),
        lambda: client.connectors.list_all(),
        lambda: client.connectors.list("any"),
        lambda: client.connectors.create("any", request={"provider": "notion"}),
        lambda: client.connectors.get("any", "c1"),
        lambda: client.connectors.update("any", "c1", document_limit=10),
        lambda: client.connectors.delete("any", "c1"),
        lambda: client.connectors.sync("any", "c1"),
    ]
    for call in calls:
        with pytest.raises(supermemory.NotFoundError) as raised:
            call()
        body: dict[str, str] = raised.value.body  # type: ignore[assignment]
        assert body["error"] == "not offered"
        assert "self-hosted smem does not offer" in body["details"]


def test_the_profile_in_markdown_when_asked(client: Supermemory) -> None:
    ns = "markdown"
    settle(client, ns, client.add(ns, content="Sol prefers green tea.", id="sol").id)
    base = str(client._client_wrapper.get_base_url()).rstrip("/")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    asked = httpx.post(
        f"{base}/ns/{ns}/profile", json={}, headers={**headers, "Accept": "text/markdown"}
    )
    assert asked.status_code == 200 and asked.headers["content-type"].startswith("text/markdown")
    assert (
        asked.text.startswith(f"# Profile of {ns}\n") and "- Sol prefers green tea." in asked.text
    )
    either = httpx.post(
        f"{base}/ns/{ns}/profile", json={},
        headers={**headers, "Accept": "application/json, text/markdown;q=0.5"},
    )  # fmt: skip
    assert either.json()["profile"]["static"][0]["memory"] == "Sol prefers green tea."
