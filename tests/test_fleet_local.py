"""The `local` fleet: smemd starts the real llama-server itself, restarts it, and stops it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import msgspec
import pytest

from smemctl.client import Client
from tests.daemon_process import DaemonProcess
from tests.llama_tools import llama_server_binary, smollm2_model
from tests.pace import scaled

pytestmark = pytest.mark.llama


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[1][0] != "Z"


def test_local_fleet_serves_restarts_and_stops_its_llama_server(short_dir: Path) -> None:
    config = short_dir / "smemd.toml"
    config.write_text(
        f"""
[fleet]
kind = "local"
[fleet.local]
llama-server = "{llama_server_binary()}"
embed-model = "{smollm2_model()}"
threads = 1
context = 512
parallel = 1
pooling = "mean"
"""
    )
    daemon = DaemonProcess(short_dir, config).start()
    try:
        client = Client(daemon.socket)
        client.call("POST", "/ns/local/document", {"content": "Alex lives in Seattle."})
        deadline = time.monotonic() + scaled(60)
        while msgspec.json.decode(client.call("GET", "/v1/jobs"))["counts"] != {"done": 1}:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        status = msgspec.json.decode(client.call("GET", "/v1/status"))
        assert status["fleetKind"] == "local" and status["embedder"].endswith(".gguf")

        assert daemon.proc is not None
        (server,) = children(daemon.proc.pid)
        os.kill(server, signal.SIGKILL)  # the model server dies
        deadline = time.monotonic() + scaled(60)
        while True:  # restarted: search works again
            try:
                found = msgspec.json.decode(
                    client.call(
                        "POST",
                        "/ns/local/search",
                        {"query": "Where does Alex live?", "threshold": 0},
                    )
                )
                break
            except Exception:
                assert time.monotonic() < deadline, "llama-server was not restarted"
                time.sleep(0.2)
        assert found["results"]
        (restarted,) = children(daemon.proc.pid)
        assert restarted != server
        assert daemon.stop() == 0
        assert not alive(restarted)  # stopped with the daemon
    finally:
        daemon.kill()
