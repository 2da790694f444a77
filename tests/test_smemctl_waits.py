"""smemctl waits for a reply as long as its command's work may take: a command whose work grows
with the store (here a re-derivation, which walks its namespace whole) is not cut by the reply
wait meant for quick ones. Against a real HTTP server on a Unix socket that answers late."""

from __future__ import annotations

import http.server
import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from smemctl.cli import main
from smemd.protocol.retraction import Rederived

LATE_S = 1.0  # how long the server takes to answer
WAIT_S = 0.3  # the reply wait smemctl is given, shorter than that


class LateHandler(http.server.BaseHTTPRequestHandler):
    """Answers every request after LATE_S: a re-derivation's state for its path, else 200 {}."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def _answer(self) -> None:
        time.sleep(LATE_S)
        body: Any = {}
        if self.path.endswith("/rederive"):
            body = Rederived(
                namespace="big", shadow="big:rederive", state="running", documents=100_000,
                pending=99_000, counts={}, examples={}, not_carried=[],
            )  # fmt: skip
        payload = msgspec.json.encode(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # a Unix peer has no address
        pass


class LateServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@pytest.fixture
def late_socket(short_dir: Path) -> Iterator[Path]:
    path = short_dir / "late.sock"
    server = LateServer(str(path), LateHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield path
    server.shutdown()
    server.server_close()


def test_a_rederivation_is_waited_for_past_the_reply_wait(
    late_socket: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A quick command is cut at the wait it was given...
    code = main(["--socket", str(late_socket), "--timeout", str(WAIT_S), "status"])
    assert code != 0 and f"did not answer within {WAIT_S:g} s" in capsys.readouterr().err
    # ...a re-derivation's reply is waited for.
    code = main(["--socket", str(late_socket), "--timeout", str(WAIT_S), "rederive", "-n", "big"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = dict(line.split("  ", 1) for line in out.splitlines() if "  " in line)
    assert rows["state"].strip() == "running" and rows["documents"].strip() == "100000"
