"""Requests crafted to break the HTTP layer: odd header bytes, deep nesting, names that hide a
newline. Each is answered in the error shape (or, where HTTP itself cannot be parsed, refused)
and none leaves a token in the log."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from tests.conftest import Running, StartDaemon
from tests.test_api import ADMIN, TOKEN, assert_error, call


async def raw_request(running: Running, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """Send bytes no HTTP client would send; the status and body of the reply."""
    host, port = running.daemon.state.listeners.tcp.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(head + b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
        writer.write(body)
        await writer.drain()
        reply = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    status_line, _, rest = reply.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


@pytest.fixture
async def guarded(start_daemon: StartDaemon) -> Running:
    return await start_daemon(api__token=TOKEN, api__admin_token=ADMIN)


@pytest.mark.parametrize(
    "token", [b"\xff", b"\xc3\x28", "tökén".encode(), b"a b", b"a\tb", b"=abc"]
)
async def test_a_token_of_odd_bytes_is_no_token(guarded: Running, token: bytes) -> None:
    status, body = await raw_request(
        guarded, b"GET /v1/status HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token
    )
    assert status == 401
    assert json.loads(body)["error"] == "missing or wrong token"
    status, body = await raw_request(
        guarded, b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token
    )
    assert status == 200 and json.loads(body)["status"] == "ok"


async def test_a_header_http_cannot_parse_leaves_no_token_in_the_log(
    guarded: Running, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    status, _ = await raw_request(
        guarded,
        b"GET /v1/status HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\0",
    )
    assert status == 400
    formatted = [logging.Formatter().format(r) for r in caplog.records]
    assert any("malformed request" in line for line in formatted), formatted
    assert not any(TOKEN in line for line in formatted)
    assert not any(r.exc_info for r in caplog.records if r.name == "aiohttp.server")


async def test_json_nested_past_the_limit_is_a_400_not_a_recursion(running: Running) -> None:
    for depth in (40, 1_000, 100_000):
        status, body, _ = await call(
            running.unix, "POST", "http://smemd/ns/x/search",
            data=b'{"query": "q", "filter": ' + b"[" * depth + b"]" * depth + b"}",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        assert_error(status, body, 400)
        assert "32 levels" in body["details"]
    # Brackets inside strings are text, not nesting.
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/ns/x/document", json={"content": "[" * 5000}
    )
    assert status == 200, body


async def test_a_namespace_with_a_trailing_newline_is_refused(running: Running) -> None:
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/ns/evil%0A/document", json={"content": "hello"}
    )
    assert_error(status, body, 400)
    assert body["details"].startswith("$.namespace: ")
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/compress", json={"q": "hi", "namespace": "evil\n"}
    )
    assert_error(status, body, 400)
    assert body["details"].startswith("$.namespace: ")
    status, body, _ = await call(running.unix, "GET", "http://smemd/ns")
    assert status == 200 and body["namespaces"] == []


# --- multipart uploads ------------------------------------------------------------------------

FILE = b'Content-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain'
BOUNDARY = b"XyZ"
FORM = b"Content-Type: multipart/form-data; boundary=XyZ"


def form(*parts: tuple[bytes, bytes], boundary: bytes = BOUNDARY) -> bytes:
    out = b"".join(b"--%s\r\n%s\r\n\r\n%s\r\n" % (boundary, head, data) for head, data in parts)
    return out + b"--%s--\r\n" % boundary


def field(name: str, data: bytes, extra: bytes = b"") -> tuple[bytes, bytes]:
    return b'Content-Disposition: form-data; name="%s"%s' % (name.encode(), extra), data


MALFORMED_FORMS = {
    "metadata not UTF-8": (FORM, form((FILE, b"hi"), field("metadata", b"\xff\xfe")), "$.metadata"),
    "date not UTF-8": (FORM, form((FILE, b"hi"), field("date", b"\xff")), "$.date"),
    "taskType not UTF-8": (FORM, form((FILE, b"hi"), field("taskType", b"\xc3\x28")), "$.taskType"),
    "bad base64": (
        FORM,
        form(field("file", b"!!!not base64", b"\r\nContent-Transfer-Encoding: base64")),
        "$.file",
    ),
    "unknown transfer encoding": (
        FORM,
        form(field("file", b"abc", b"\r\nContent-Transfer-Encoding: rot13")),
        "$.file",
    ),
    "compressed part": (FORM, form(field("file", b"abc", b"\r\nContent-Encoding: gzip")), "$.file"),
    "no boundary": (b"Content-Type: multipart/form-data", form((FILE, b"hi")), "$"),
    "wrong boundary": (
        b"Content-Type: multipart/form-data; boundary=OTHER",
        form((FILE, b"hi")),
        "$",
    ),
    "truncated": (FORM, form((FILE, b"hi"))[:-20], "$"),
    "10,000-character filename": (
        FORM,
        form(
            (b'Content-Disposition: form-data; name="file"; filename="%s"' % (b"a" * 10_000), b"x")
        ),
        "$",
    ),
    "300-character filename": (
        FORM,
        form((b'Content-Disposition: form-data; name="file"; filename="%s"' % (b"a" * 300), b"x")),
        "$.file",
    ),
    "part without a name": (FORM, form((b"Content-Disposition: form-data", b"x")), "$"),
    "repeated field": (FORM, form((FILE, b"hi"), (FILE, b"again")), "$.file"),
    "nested multipart": (
        FORM,
        form(
            field(
                "file",
                b"--QQ\r\n\r\nhi\r\n--QQ--",
                b"\r\nContent-Type: multipart/mixed; boundary=QQ",
            )
        ),
        "$",
    ),
}


@pytest.mark.parametrize("case", MALFORMED_FORMS)
async def test_a_malformed_upload_is_a_400_naming_the_field(running: Running, case: str) -> None:
    content_type, body, path = MALFORMED_FORMS[case]
    status, reply = await raw_request(
        running, b"POST /ns/up/document/file HTTP/1.1\r\nHost: localhost\r\n" + content_type, body
    )
    error = json.loads(reply)
    assert status == 400, error
    assert set(error) == {"error", "details"}
    assert error["details"].startswith(path), error
    status, listed, _ = await call(running.unix, "POST", "http://smemd/ns/up/list/documents")
    assert status == 200 and listed["documents"] == []


async def test_an_upload_that_is_not_form_data_is_415(running: Running) -> None:
    status, reply = await raw_request(
        running,
        b"POST /ns/up/document/file HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Type: multipart/mixed; boundary=XyZ",
        form((FILE, b"hi")),
    )
    error = json.loads(reply)
    assert status == 415, error
    assert "takes multipart/form-data" in error["details"], error


async def test_an_upload_past_the_body_limit_stops_reading(start_daemon: StartDaemon) -> None:
    running = await start_daemon(api__max_body_mb=1)
    big = form((FILE, b"x" * (1024 * 1024 + 1)))
    status, reply = await raw_request(
        running, b"POST /ns/up/document/file HTTP/1.1\r\nHost: localhost\r\n" + FORM, big
    )
    assert status == 413, reply
