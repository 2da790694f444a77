"""`dreaming: "instant"` means process now: such a document is worked before the documents
already queued, within one round of the worker, not after the whole queue."""

from __future__ import annotations

import asyncio
import time

from tests.conftest import StartDaemon
from tests.pace import scaled
from tests.test_api import call

NS = "http://smemd/ns/queue"


async def test_an_instant_document_goes_before_the_queue(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    queued = [{"content": f"Person{i} keeps {i} hens in a shed."} for i in range(300)]
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document/batch", json={"documents": queued}
    )
    assert status == 200 and body["count"] == 300
    status, ref, _ = await call(
        running.unix, "POST", f"{NS}/document",
        json={"content": "Vera rides a red bicycle.", "dreaming": "instant"},
    )  # fmt: skip
    assert status == 200
    deadline = time.monotonic() + scaled(60)
    while True:
        _, doc, _ = await call(running.unix, "GET", f"{NS}/document/{ref['id']}")
        if doc["system"]["status"] == "done":
            break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    _, jobs, _ = await call(running.unix, "GET", "http://smemd/v1/jobs", params={"limit": "1"})
    still_open = sum(n for phase, n in jobs["counts"].items() if phase not in ("done", "failed"))
    assert still_open > 150, jobs["counts"]  # most of the queue had yet to be worked
