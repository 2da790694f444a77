"""smemd's log as a machine reads it, from the real daemon's stderr: JSON lines with time, level,
logger and message; one access line per request (route template, status, duration, listener, the
token's name); every line written during a request marked with its id; and never a token's
secret, a document's text or a search's words."""

from __future__ import annotations

import http.client
import io
import json
import logging
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from smemctl.client import UnixConnection
from smemd import log
from tests.conftest import StartDaemon, token_table
from tests.daemon_process import DaemonProcess
from tests.dreams import HONEY, TEA, JudgeTables, dreamt, fake_pair, heuristic_store, with_model
from tests.pace import scaled

SECRET = "s3cret-Token-of-alice"
MARKER = "quokkamarker7f3a"  # a document's word and a search's: never in the log
TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def start(state_dir: Path, log_format: str, env: dict[str, str] | None = None) -> DaemonProcess:
    config = state_dir / "smemd.toml"
    config.write_text(
        f'[daemon]\nlog-format = "{log_format}"\nlog-level = "info"\n'
        + token_table("alice", SECRET)
    )
    return DaemonProcess(state_dir, config).start(env=env)


@pytest.fixture(scope="module")
def json_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    process = start(tmp_path_factory.mktemp("logs"), "json")
    yield process
    process.kill()


def call(
    daemon: DaemonProcess, method: str, path: str, body: Any = None, *, rid: str = "",
    token: str = SECRET, unix: bool = False,
) -> tuple[int, Any]:  # fmt: skip
    """One request over TCP with `token` (or over the socket), sending `rid` as X-Request-Id."""
    conn: http.client.HTTPConnection
    headers = {"Content-Type": "application/json"}
    if unix:
        conn = UnixConnection(daemon.socket, timeout=30)
    else:
        host, port = daemon.tcp.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        headers["Authorization"] = f"Bearer {token}"
    if rid:
        headers["X-Request-Id"] = rid
    try:
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        reply = conn.getresponse()
        raw = reply.read()
        return reply.status, json.loads(raw) if raw else None
    finally:
        conn.close()


def lines(daemon: DaemonProcess) -> list[str]:
    """The whole lines written so far (a line still being written is left for later)."""
    text = daemon.log()
    return text[: text.rfind("\n") + 1].splitlines()


def records(daemon: DaemonProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines(daemon)]


def test_every_line_is_a_json_object_with_time_level_logger_and_message(
    json_daemon: DaemonProcess,
) -> None:
    assert call(json_daemon, "GET", "/v1/status")[0] == 200
    found = records(json_daemon)
    assert len(found) >= 3, found  # the start's lines, and the access line
    for record in found:
        assert TS.fullmatch(record["ts"]), record
        assert record["level"] in {"debug", "info", "warning", "error", "critical"}, record
        assert isinstance(record["logger"], str) and isinstance(record["msg"], str), record
    listening = next(r for r in found if r["msg"].startswith("listening on"))
    assert listening["logger"] == "smemd.daemon" and listening["level"] == "info"
    assert "request_id" not in listening  # written outside any request


def test_one_access_line_per_request_with_route_status_duration_and_token_name(
    json_daemon: DaemonProcess,
) -> None:
    search = {"query": "where do the tiles come from", "threshold": 0}
    assert call(json_daemon, "POST", "/ns/access/search", search, rid="access-search")[0] == 200
    status, _ = call(json_daemon, "GET", "/v1/status", rid="access-refused", token="not-a-token")
    assert status == 401
    assert call(json_daemon, "GET", "/v1/health", rid="access-socket", unix=True)[0] == 200
    access = [r for r in records(json_daemon) if r["logger"] == "smemd.access"]

    def line_of(rid: str) -> dict[str, Any]:
        [line] = [r for r in access if r.get("request_id") == rid]  # one per request
        return line

    searched = line_of("access-search")
    assert {k: searched[k] for k in ("route", "method", "status", "listener", "token")} == {
        "route": "/ns/{ns}/search", "method": "POST", "status": 200, "listener": "127.0.0.1",
        "token": "alice",
    }  # fmt: skip
    assert isinstance(searched["duration_ms"], float) and searched["duration_ms"] >= 0
    assert searched["msg"].startswith('127.0.0.1 "POST /ns/{ns}/search" 200 ')
    assert searched["msg"].endswith("ms token=alice")
    refused = line_of("access-refused")
    assert (refused["route"], refused["status"], refused["token"]) == ("/v1/status", 401, None)
    unix = line_of("access-socket")
    assert (unix["listener"], unix["token"]) == ("unix", "socket")
    text = json_daemon.log()
    assert SECRET not in text and "not-a-token" not in text


def test_a_request_http_cannot_parse_is_one_json_line_without_its_token(
    json_daemon: DaemonProcess,
) -> None:
    """aiohttp's own record of it goes through smemd's handler too: JSON, not a bare line."""
    host, port = json_daemon.tcp.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(
            b"GET /v1/status HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
            + SECRET.encode()
            + b"\0\r\nConnection: close\r\n\r\n"
        )
        assert conn.recv(100).split(b" ")[1] == b"400"
    deadline = time.monotonic() + scaled(10)
    while not (found := [r for r in records(json_daemon) if r["logger"] == "aiohttp.server"]):
        assert time.monotonic() < deadline, json_daemon.log()
        time.sleep(0.05)
    [malformed] = found
    assert malformed["level"] == "warning" and malformed["msg"].startswith("malformed request")
    assert SECRET not in json_daemon.log()


def test_lines_written_during_a_request_carry_its_id(
    json_daemon: DaemonProcess, tmp_path: Path
) -> None:
    backup = {"to": str(tmp_path / "backup")}
    status, _ = call(json_daemon, "POST", "/v1/backup", backup, rid="backup-1", unix=True)
    assert status == 200
    found = records(json_daemon)
    # The engine's line, written while the request ran: the id reaches below the api.
    [done] = [r for r in found if r["logger"] == "smemd.backup"]
    assert done["msg"].startswith("backup of ") and done["request_id"] == "backup-1", done
    [access] = [r for r in found if r["logger"] == "smemd.access" and "backup" in r["route"]]
    assert access["request_id"] == "backup-1"
    assert all("request_id" not in r for r in found if r["logger"] == "smemd.daemon")


def test_a_documents_text_and_a_searchs_words_are_never_logged(json_daemon: DaemonProcess) -> None:
    content = f"The {MARKER} sleeps in the attic; every {MARKER} eats blackberries at dusk."
    status, added = call(json_daemon, "POST", "/ns/secrets/document", {"content": content})
    assert status == 200, added
    search = {"query": f"{MARKER} attic", "threshold": 0, "searchMode": "memories"}
    deadline = time.monotonic() + scaled(30)
    while MARKER not in json.dumps(call(json_daemon, "POST", "/ns/secrets/search", search)[1]):
        assert time.monotonic() < deadline, "the document never became searchable"
        time.sleep(0.2)
    # A search whose words are in the query string, and a legacy one.
    assert call(json_daemon, "GET", f"/ns/secrets/graph?q={MARKER}")[0] == 200
    legacy = {"q": MARKER, "containerTags": ["secrets"]}
    assert call(json_daemon, "POST", "/v3/search", legacy)[0] == 200
    text = json_daemon.log()
    assert '"route": "/ns/{ns}/graph"' in text  # the requests were logged, and at info
    assert MARKER not in text.lower()


def test_a_urls_password_and_query_are_never_logged(json_daemon: DaemonProcess) -> None:
    # Loopback: refused by the fetch guard before anything connects, so the job fails at once.
    url = "http://alice:pw-marker@127.0.0.1:9/page?sig=sig-marker#frag-marker"
    status, added = call(json_daemon, "POST", "/ns/urls/document", {"content": url})
    assert status == 200, added
    deadline = time.monotonic() + scaled(30)
    while call(json_daemon, "GET", "/v1/jobs?namespace=urls")[1]["jobs"][0]["phase"] != "failed":
        assert time.monotonic() < deadline, "the job never failed"
        time.sleep(0.1)
    failed = [r for r in records(json_daemon) if added["id"] in r["msg"]]
    assert failed and "http://127.0.0.1:9/page: refused" in failed[0]["msg"], failed
    text = json_daemon.log()
    assert not any(secret in text for secret in ("pw-marker", "sig-marker", "frag-marker"))


@pytest.mark.parametrize("journald", [False, True])
def test_text_lines_end_with_the_request_id_and_journald_stamps_them(
    short_dir: Path, journald: bool
) -> None:
    env = {"JOURNAL_STREAM": "8:12345"} if journald else None
    daemon = start(short_dir, "text", env)
    try:
        assert call(daemon, "GET", "/v1/status", rid="text-1")[0] == 200
        written = lines(daemon)
    finally:
        daemon.kill()
    [access] = [line for line in written if "smemd.access" in line]
    assert re.search(r' "GET /v1/status" 200 \d+\.\d\dms token=alice rid=text-1$', access), access
    [listening] = [line for line in written if "listening on" in line]
    assert "rid=" not in listening
    stamp = "" if journald else r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "
    assert all(re.match(stamp + r"(INFO|WARNING) smemd\.", line) for line in written), written


def test_a_json_line_carries_the_exception_and_the_records_fields() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(log.RequestIds())
    handler.setFormatter(log.JsonLines())
    logger = logging.getLogger("smemd.test_logs")
    logger.addHandler(handler)
    token = log.request_id.set("exc-1")
    try:
        try:
            raise ValueError("the disk said no")
        except ValueError:
            logger.exception("it failed: %s", "why", extra={"fields": {"size": 3, "msg": "no"}})
    finally:
        log.request_id.reset(token)
        logger.removeHandler(handler)
    [line] = out.getvalue().splitlines()
    record = json.loads(line)
    assert record["msg"] == "it failed: why"  # a field never takes the place of the message
    assert (record["level"], record["request_id"], record["size"]) == ("error", "exc-1", 3)
    assert record["exc"].startswith("Traceback") and "ValueError: the disk said no" in record["exc"]


HOSPITAL, NIGHTS = "Alex works at a hospital.", "Alex's shifts are at night."
SMITH, BOB = "Robert Smith repaired the old boiler.", "Bob Smith brought a new boiler valve."
INFERRED = "Alex works night shifts at a hospital."


async def test_dreaming_logs_ids_never_the_words_of_memories_or_names(
    short_dir: Path, start_daemon: StartDaemon, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="smemd")
    texts = [TEA, HONEY, HOSPITAL, NIGHTS, SMITH, BOB]
    model = JudgeTables(
        {text: ("fact", 0.9) for text in [*texts, INFERRED]}, links={HONEY: TEA},
        inferences={INFERRED: ((HOSPITAL, NIGHTS), 0.95)},
        aliases={frozenset({"Robert Smith", "Bob Smith"}): 0.93},
    )  # fmt: skip
    async with fake_pair(model) as fakes:
        await heuristic_store(start_daemon, short_dir, fakes["embed"], texts)
        running = await with_model(start_daemon, short_dir, fakes["embed"], fakes["llm"])
        status = await dreamt(running)
    assert (status["linked"], status["inferred"], status["aliasesAsked"]) == (1, 1, 1), status
    written = caplog.text
    for line in ("type mem_", "link mem_", "inference mem_", "alias ent_"):
        assert line in written, written  # each kind of line was written, naming ids
    for words in [*texts, INFERRED, "Robert Smith", "Bob Smith", "hospital"]:
        assert words not in written, words
