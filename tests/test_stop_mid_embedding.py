"""Stopping always stops: the real smemd, its builtin model busy with a large document, ends
within its deadline on SIGTERM, and at once on a second signal however much the stop still waits
for."""

from __future__ import annotations

import http.client
import json
import signal
import threading
import time
from pathlib import Path

from smemctl.client import UnixConnection
from tests.daemon_process import DaemonProcess
from tests.pace import scaled
from tests.test_large_documents import prose

DEADLINE_S = 3.0


def request(
    process: DaemonProcess, method: str, path: str, body: object = None
) -> tuple[int, dict]:
    conn = UnixConnection(process.socket, timeout=120)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def embedding(process: DaemonProcess, shutdown_timeout_s: float, **extra: str) -> DaemonProcess:
    """smemd with a large document in its embedding phase."""
    settings = "".join(f"{line}\n" for line in extra.values())
    toml = process.state_dir / "smemd.toml"
    toml.write_text(
        f"[daemon]\nshutdown-timeout-s = {shutdown_timeout_s}\n[engine]\ndreaming = false\n{settings}"
    )
    process.config = toml
    process.start()
    status, body = request(
        process, "POST", "/ns/big/document", {"content": prose(3_000), "id": "big"}
    )
    assert status == 200, body
    deadline = time.monotonic() + scaled(60)
    while time.monotonic() < deadline:
        _, doc = request(process, "GET", "/ns/big/document/big")
        if doc["system"]["status"] == "embedding":
            return process
        time.sleep(0.05)
    raise AssertionError(f"never embedding: {doc}")


def test_sigterm_mid_embedding_exits_within_the_deadline(daemon_process: DaemonProcess) -> None:
    process = embedding(daemon_process, DEADLINE_S)
    time.sleep(1.0)  # batches under way, in threads
    started = time.monotonic()
    assert process.stop(signal.SIGTERM, timeout=DEADLINE_S + 10) == 0
    assert time.monotonic() - started <= DEADLINE_S + 2, process.log()[-2000:]
    assert "stopped" in process.log()


def test_a_second_signal_exits_at_once(daemon_process: DaemonProcess, short_dir: Path) -> None:
    # A request the stop waits for: a v4 add answers once its job is done, and its job is queued
    # behind the large document.
    process = embedding(
        daemon_process, 60.0, api="[api]\nrequest-timeout-s = 120",
    )  # fmt: skip
    waiting: list[int | str] = []

    def add() -> None:
        try:
            status, _ = request(
                process, "POST", "/v4/memories",
                {"memories": [{"content": "Alex keeps bees."}], "containerTag": "small"},
            )  # fmt: skip
            waiting.append(status)
        except (OSError, http.client.HTTPException) as err:
            waiting.append(repr(err))

    thread = threading.Thread(target=add)
    thread.start()
    time.sleep(0.5)
    assert process.proc is not None
    process.proc.send_signal(signal.SIGTERM)
    time.sleep(1.0)
    assert process.proc.poll() is None  # the first stop waits for the request, up to 60 s
    started = time.monotonic()
    process.proc.send_signal(signal.SIGTERM)
    process.wait(timeout=10)
    assert time.monotonic() - started < scaled(2.5), process.log()[-2000:]
    thread.join(timeout=5)
    assert waiting and waiting[0] != 200, waiting
    assert "SIGTERM again: stopping now" in process.log()
