"""kill -9 in the middle of a backup, a re-derivation and its apply: after the restart the
namespace is whole — as before, or as after, never between — the re-derivation goes on with the
model it was started with, and nothing partial is left on disk."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from smemctl.client import Client
from tests.daemon_process import DaemonProcess
from tests.fakes.llama_server import FakeLlamaServer, Reply
from tests.pace import scaled
from tests.test_crash import doc, job_counts

NS = "moves"
DOCUMENTS = 24


def model_reads(body: Mapping[str, Any]) -> str | Reply:
    """A chat model whose facts say which document it read."""
    prompt = body["messages"][-1]["content"]
    if "json_schema" in body:
        town = re.search(r"Town(\d+)", prompt.split("<document")[-1])
        facts: list[dict[str, Any]] = [{"text": f"The model read town {town.group(1)}.", "type": "fact",
                  "eventDate": None, "entities": []}] if town else []  # fmt: skip
        return json.dumps(facts)
    other = re.search(r"^([A-Z])\. [^\n]*something else", prompt, re.MULTILINE)
    return Reply(probs={other.group(1) if other else "A": 0.9})


def memories(client: Client, namespace: str = NS) -> set[str]:
    found: set[str] = set()
    for page in range(1, 50):
        listing = msgspec.json.decode(
            client.call("POST", f"/ns/{namespace}/list/memories?limit=100&page={page}", {})
        )
        found |= {m["memory"] for m in listing["memories"]}
        if page >= listing["pagination"]["totalPages"]:
            return found
    raise AssertionError("more pages than a test makes")


def rederivation(client: Client) -> dict[str, Any]:
    found: dict[str, Any] = msgspec.json.decode(client.call("GET", f"/ns/{NS}/rederive"))
    return found


async def until(check: Callable[[], bool], within: float = 120) -> None:
    """Polls `check` off the event loop, which serves the fake model meanwhile."""
    deadline = time.monotonic() + scaled(within)
    while not await asyncio.to_thread(check):
        assert time.monotonic() < deadline, "never got there"
        await asyncio.sleep(0.05)


def restart(daemon: DaemonProcess) -> Client:
    daemon.kill()  # SIGKILL: no shutdown code runs
    daemon.addr_file.unlink(missing_ok=True)
    daemon.start()
    return Client(daemon.socket)


async def test_kill_9_mid_rederivation_and_mid_apply(short_dir: Path) -> None:
    daemon = DaemonProcess(short_dir).start()
    try:
        client = Client(daemon.socket)
        batch = {"documents": [doc(i) for i in range(DOCUMENTS)]}
        client.call("POST", f"/ns/{NS}/document/batch", batch)
        await until(lambda: job_counts(client).get("done", 0) == DOCUMENTS)
        before = memories(client)
        model_made = {f"The model read town {i}." for i in range(DOCUMENTS)}
        async with FakeLlamaServer(roles=(), chat=model_reads, latency=0.15) as model:
            body = {"llamaUrl": model.url}
            await asyncio.to_thread(client.call, "POST", f"/ns/{NS}/rederive", body)
            # Killed while the shadow is part read: the namespace is as it was, and the rest of
            # the shadow is read by the model it was started with.
            await until(lambda: 0 < rederivation(client)["pending"] < DOCUMENTS - 2)
            client = await asyncio.to_thread(restart, daemon)
            assert memories(client) == before
            await until(lambda: rederivation(client)["state"] == "ready")
            assert rederivation(client)["model"] == model.url
            assert memories(client, f"{NS}:rederive") == model_made
        # Killed as the apply runs: one transaction, so before or after it.
        landed = set()
        for delay in (0.0, 0.002, 0.01, 0.03, 0.1):
            applying = threading.Thread(target=_apply_quietly, args=(daemon,), daemon=True)
            applying.start()
            await asyncio.sleep(delay)
            client = await asyncio.to_thread(restart, daemon)
            now = memories(client)
            assert now in (before, model_made), "the apply was cut in the middle"
            landed.add("after" if now == model_made else "before")
            if now == model_made:
                break
        assert "after" in landed or memories(client) == before
        if "after" not in landed:
            client.call("POST", f"/ns/{NS}/rederive/apply")
        assert memories(client) == model_made
        assert rederivation(client)["state"] == "none"  # the shadow went with its apply
    finally:
        daemon.kill()


def _apply_quietly(daemon: DaemonProcess) -> None:
    with contextlib.suppress(Exception):  # cut by the kill
        Client(daemon.socket).call("POST", f"/ns/{NS}/rederive/apply")


def test_kill_9_mid_backup_leaves_no_partial_backup(short_dir: Path, tmp_path: Path) -> None:
    daemon = DaemonProcess(short_dir).start()
    try:
        client = Client(daemon.socket)
        batch = {"documents": [doc(i) for i in range(200)]}
        client.call("POST", f"/ns/{NS}/document/batch", batch)
        deadline = time.monotonic() + scaled(120)
        while job_counts(client).get("done", 0) < 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        cut = 0
        for attempt in range(5):  # until a kill lands while the backup is being written
            dest = tmp_path / f"b{attempt}"
            partial = dest.with_name(dest.name + ".partial")
            backing = threading.Thread(target=_backup_quietly, args=(daemon, dest), daemon=True)
            backing.start()
            while backing.is_alive() and not partial.exists():
                time.sleep(0.0005)
            if not partial.exists():
                continue  # done before it was seen: a whole backup, and another try
            client = restart(daemon)
            cut += 1
            assert not partial.exists() and not dest.exists()
            assert not (short_dir / "backup.partial").exists()
            break
        assert cut, "no kill landed while a backup was being written"
        assert len(memories(client)) >= 200  # the store serves, whole
        client.call("POST", "/v1/backup", {"to": str(tmp_path / "whole")})
        assert (tmp_path / "whole" / "manifest.json").exists()
    finally:
        daemon.kill()


def _backup_quietly(daemon: DaemonProcess, dest: Path) -> None:
    with contextlib.suppress(Exception):  # cut by the kill
        Client(daemon.socket).call("POST", "/v1/backup", {"to": str(dest)})
