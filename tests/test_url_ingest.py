"""Documents given as a URL, and uploaded PDF and HTML files, through the real daemon.

Every page is served on 127.0.0.1 by `PageServer`; `[ingest] allow-hosts` names its port. The
other addresses here (10.0.0.1, 169.254.169.254, …) are refused by the guard before anything
connects, so no test sends a packet beyond loopback.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from smemd.engine.ingest.fetching import url_of
from tests.conftest import Running, StartDaemon
from tests.daemon_process import DaemonProcess, clean_env
from tests.fakes.documents import ARTICLE, ARTICLE_TITLE, BOILERPLATE
from tests.fakes.web_pages import PDF, PDF_TITLE, PageServer
from tests.settling import until_idle
from tests.test_api import assert_error, call

NS = "http://smemd/ns/web"
MB = 1024 * 1024


@pytest.fixture
async def pages() -> AsyncIterator[PageServer]:
    async with PageServer() as server:
        yield server


async def allowing(start_daemon: StartDaemon, pages: PageServer, **settings: Any) -> Running:
    """A daemon that may fetch from the page server (and, like any, from nothing else local)."""
    return await start_daemon(ingest__allow_hosts=[f"127.0.0.1:{pages.port}"], **settings)


async def add(running: Running, content: str, **fields: Any) -> str:
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document", json={"content": content, **fields}
    )
    assert status == 200, body
    assert body["status"] in ("queued", "done"), body
    return str(body["id"])


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


async def document(running: Running, ref: str) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", f"{NS}/document/{ref}")
    assert status == 200, body
    return dict(body)


async def job_of(running: Running, document_id: str) -> dict[str, Any]:
    """The document's latest job, as GET /v1/jobs shows it."""
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/jobs?namespace=web")
    assert status == 200, body
    return next(job for job in body["jobs"] if job["documentId"] == document_id)


async def failed_with(running: Running, url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Add `url`, let it fail, and return its job and document."""
    doc_id = await add(running, url)
    await settle(running)
    job, doc = await job_of(running, doc_id), await document(running, doc_id)
    assert (job["phase"], doc["system"]["status"]) == ("failed", "failed"), job
    assert job["error"].startswith("fetching: "), job
    return job, doc


@pytest.mark.parametrize(
    ("content", "url"),
    [
        ("https://example.com/a?b=c#d", "https://example.com/a?b=c#d"),
        ("  http://Example.com:8080/x\n", "http://Example.com:8080/x"),
        ("http://10.0.0.1/", "http://10.0.0.1/"),  # a URL still; the guard refuses it later
        ("see https://example.com/", None),
        ("https://example.com/ and more", None),
        ("ftp://example.com/file", None),
        ("file:///etc/passwd", None),
        ("https://", None),
        ("http:///path-only", None),
        ("example.com", None),
        ("https://[::1", None),
    ],
)
def test_what_counts_as_a_url(content: str, url: str | None) -> None:
    assert url_of(content) == url


async def test_an_allowed_page_becomes_its_main_text_and_its_memories(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages)
    url = pages.url("/article")
    doc_id = await add(running, url, id="tides", metadata={"source": "web"})
    await settle(running)
    doc = await document(running, "tides")
    assert doc["system"]["status"] == "done"
    assert (doc["id"], doc["url"], doc["type"], doc["title"]) == (
        doc_id, url, "webpage", ARTICLE_TITLE
    )  # fmt: skip
    assert "tidal forces slow the moon's spin" in doc["content"]
    assert not any(junk in doc["content"] for junk in BOILERPLATE)
    assert (await job_of(running, doc_id))["attempts"] == 0

    status, body, _ = await call(
        running.unix, "POST", f"{NS}/search",
        json={"query": "Why do we always see the same side of the Moon?", "searchMode": "memories",
              "threshold": 0},
    )  # fmt: skip
    assert status == 200, body
    hits = [r for r in body["results"] if r["documentId"] == doc_id]
    assert hits and any("near side" in r["memory"] for r in hits), body["results"]
    assert hits[0]["metadata"] == {"source": "web"}

    # The same id and URL again is the no-op it is for text: nothing is fetched again.
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document", json={"content": url, "id": "tides"}
    )
    assert (status, body) == (200, {"id": doc_id, "status": "done"})
    await settle(running)
    assert pages.paths == ["/article"]

    # Another URL under the same id is a new revision, fetched in its turn.
    await add(running, pages.url("/doc.pdf"), id="tides")
    await settle(running)
    doc = await document(running, "tides")
    assert (doc["type"], doc["title"], doc["url"]) == ("pdf", PDF_TITLE, pages.url("/doc.pdf"))
    assert pages.paths == ["/article", "/doc.pdf"]

    # Text in its place is text again: no URL, nothing fetched.
    status, body, _ = await call(
        running.unix, "PATCH", f"{NS}/document/tides", json={"content": "Tides are slow."}
    )
    assert status == 200, body
    await settle(running)
    doc = await document(running, "tides")
    assert (doc["content"], doc["type"], doc.get("url")) == ("Tides are slow.", "text", None)
    assert len(pages.requests) == 2


async def test_a_pdf_by_url_gives_its_text_and_title(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages)
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document/batch",
        json={"documents": [{"content": pages.url("/doc.pdf")}, {"content": "Plain words."}]},
    )  # fmt: skip
    assert status == 200 and body["count"] == 2, body
    assert body["results"][0]["url"] == pages.url("/doc.pdf")
    assert "url" not in body["results"][1]
    await settle(running)
    doc = await document(running, body["results"][0]["id"])
    assert (doc["system"]["status"], doc["type"], doc["title"]) == ("done", "pdf", PDF_TITLE)
    assert doc["content"] == "The Moon keeps one face toward the Earth.\nIo does the same."


async def test_a_slow_fetch_holds_up_no_other_document(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages)
    slow_id = await add(running, pages.url("/slow"))
    await _wait(lambda: pages.paths == ["/slow"])
    text_id = await add(running, "Sam flies a red kite on Sundays.")
    async with asyncio.timeout(5):  # the page would answer (500) after 10 s
        while (await document(running, text_id))["system"]["status"] != "done":
            await asyncio.sleep(0.02)
    assert (await job_of(running, slow_id))["phase"] == "fetching"
    pages.release.set()
    await settle(running)
    doc = await document(running, slow_id)
    assert (doc["system"]["status"], doc["content"], doc["type"]) == ("done", "late", "text")


async def test_text_that_holds_a_url_is_not_fetched(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages)
    doc_id = await add(running, f"Read {pages.url('/article')} later.")
    await settle(running)
    doc = await document(running, doc_id)
    assert (doc["system"]["status"], doc["type"], doc.get("url")) == ("done", "text", None)
    assert pages.requests == []


async def test_with_fetch_urls_off_a_url_is_only_text(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages, ingest__fetch_urls=False)
    doc_id = await add(running, pages.url("/article"))
    await settle(running)
    doc = await document(running, doc_id)
    assert (doc["system"]["status"], doc["type"], doc.get("url")) == ("done", "text", None)
    assert doc["content"] == pages.url("/article") and pages.requests == []


async def test_three_redirects_are_followed_and_six_are_too_many(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages)
    doc_id = await add(running, pages.url("/hops/3"))
    await settle(running)
    doc = await document(running, doc_id)
    assert (doc["system"]["status"], doc["title"]) == ("done", ARTICLE_TITLE)
    assert doc["url"] == pages.url("/hops/3")  # the URL given, not where it led

    job, doc = await failed_with(running, pages.url("/hops/6"))
    assert "more than 5 redirects" in job["error"] and job["attempts"] == 1
    assert doc["content"] == pages.url("/hops/6")  # nothing fetched replaced it


async def test_a_redirect_to_a_refused_address_is_not_followed(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages)
    job, _ = await failed_with(running, pages.url("/redirect?to=http://169.254.169.254/latest/"))
    assert "refused" in job["error"] and "metadata address" in job["error"], job
    assert job["attempts"] == 1


async def test_a_page_over_max_fetch_mb_fails_at_once(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages, ingest__max_fetch_mb=1)
    job, _ = await failed_with(running, pages.url(f"/sized/{2 * MB}"))
    assert "too large" in job["error"] and "max-fetch-mb = 1" in job["error"], job
    assert job["attempts"] == 1
    assert pages.paths == [f"/sized/{2 * MB}"]


async def test_a_client_error_fails_at_once_and_a_server_error_is_retried(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages)
    job, _ = await failed_with(running, pages.url("/status/404"))
    assert ("HTTP 404 Not Found" in job["error"], job["attempts"]) == (True, 1), job
    job, _ = await failed_with(running, pages.url("/status/503"))
    assert ("HTTP 503 Service Unavailable" in job["error"], job["attempts"]) == (True, 3), job
    assert pages.paths.count("/status/503") == 3


async def test_a_page_too_slow_times_out_after_the_retries(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages, ingest__fetch_timeout_s=0.3)
    job, _ = await failed_with(running, pages.url("/slow"))
    assert "timed out" in job["error"] and "0.3 s" in job["error"], job
    assert job["attempts"] == 3 and pages.paths == ["/slow"] * 3


async def test_content_that_does_not_convert_fails_at_once(
    start_daemon: StartDaemon, pages: PageServer
) -> None:
    running = await allowing(start_daemon, pages)
    job, _ = await failed_with(running, pages.url("/blob"))
    assert "cannot convert no content type to text" in job["error"], job
    assert job["attempts"] == 1 and pages.paths == ["/blob"]


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/article",  # loopback, and no allow-hosts entry for it
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]:{port}/article",
        "http://2130706433:{port}/article",  # 127.0.0.1 spelled as one number
    ],
)
async def test_private_addresses_are_refused_before_any_connection(
    start_daemon: StartDaemon, pages: PageServer, target: str
) -> None:
    running = await start_daemon()  # no allow-hosts
    job, _ = await failed_with(running, target.format(port=pages.port))
    assert "refused" in job["error"] and job["attempts"] == 1, job
    assert pages.requests == []


def test_a_bad_allow_hosts_entry_exits_2_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "smemd.toml"
    config.write_text('[ingest]\nallow-hosts = ["wiki.lan", "http://wiki.lan/"]\n')
    result = subprocess.run(
        [sys.executable, "-m", "smemd", "--config", str(config), "--check-config"],
        capture_output=True, text=True, env=clean_env(), timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert "bad config: $.ingest.allow-hosts[1]: bad allow-hosts entry" in result.stderr


def upload_form(data: bytes, filename: str, content_type: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("file", data, filename=filename, content_type=content_type)
    return form


async def upload(running: Running, data: bytes, filename: str, content_type: str) -> Any:
    form = upload_form(data, filename, content_type)
    status, body, _ = await call(running.unix, "POST", f"{NS}/document/file", data=form)
    return status, body


async def test_pdf_and_html_uploads_are_converted(running: Running) -> None:
    status, body = await upload(running, PDF, "moons.pdf", "application/pdf")
    assert status == 200, body
    pdf_id = body["id"]
    status, body = await upload(running, ARTICLE, "tides.html", "text/html")
    assert status == 200, body
    html_id = body["id"]
    await settle(running)

    pdf = await document(running, pdf_id)
    assert (pdf["system"]["status"], pdf["type"], pdf["title"]) == ("done", "pdf", PDF_TITLE)
    assert pdf["content"] == "The Moon keeps one face toward the Earth.\nIo does the same."
    assert pdf["metadata"] == {"filename": "moons.pdf"} and "url" not in pdf
    html = await document(running, html_id)
    assert (html["type"], html["title"]) == ("webpage", ARTICLE_TITLE)
    assert "tidally locked to the Earth" in html["content"]
    assert not any(junk in html["content"] for junk in BOILERPLATE)


async def test_an_uploaded_text_file_is_taken_as_it_is(running: Running) -> None:
    status, body = await upload(running, b"https://example.com/\n", "link.txt", "text/plain")
    assert status == 200, body
    await settle(running)
    doc = await document(running, body["id"])
    # An uploaded file says what it is: a text file that holds a URL is that text.
    assert (doc["system"]["status"], doc["type"], doc.get("url")) == ("done", "text", None)


@pytest.mark.parametrize(
    ("data", "filename", "content_type", "expected", "details"),
    [
        (b"%PDF-1.4\nnot a PDF at all\n%%EOF\n", "junk.pdf", "application/pdf", 422,
         "junk.pdf: not a readable PDF"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff", "photo.png", "image/png", 415,
         "photo.png (image/png) is binary"),
        (b"\xff\xfe\x00\x01", "blob", "application/octet-stream", 415, "blob"),
        ("Grüße".encode("latin-1"), "notes.txt", "text/plain", 415, "notes.txt is not UTF-8"),
    ],
)  # fmt: skip
async def test_an_upload_that_cannot_be_read_is_a_4xx_and_stores_nothing(
    running: Running, data: bytes, filename: str, content_type: str, expected: int, details: str
) -> None:
    status, body = await upload(running, data, filename, content_type)
    assert_error(status, body, expected)
    assert details in body["details"], body
    status, listed, _ = await call(running.unix, "POST", f"{NS}/list/documents")
    assert status == 200 and listed["documents"] == []


async def test_a_fetch_cut_by_kill_9_resumes_after_a_restart(
    short_dir: Path, pages: PageServer
) -> None:
    config = short_dir / "smemd.toml"
    config.write_text(f'[ingest]\nallow-hosts = ["127.0.0.1:{pages.port}"]\n')
    daemon = DaemonProcess(short_dir, config)
    await asyncio.to_thread(daemon.start)
    try:
        async with aiohttp.ClientSession(
            connector=aiohttp.UnixConnector(path=str(daemon.socket))
        ) as unix:
            status, body, _ = await call(
                unix, "POST", f"{NS}/document", json={"content": pages.url("/slow"), "id": "late"}
            )
            assert status == 200, body
            job = await _wait_for_job(unix, lambda j: j["phase"] == "fetching")
            status, doc, _ = await call(unix, "GET", f"{NS}/document/late")
            assert doc["system"]["status"] == "extracting"  # how v5 says fetching
            await _wait(lambda: pages.paths == ["/slow"])
        await asyncio.to_thread(daemon.kill)  # SIGKILL, mid-fetch: the page never answered
        os.unlink(daemon.addr_file)
        pages.release.set()  # the page answers from now on

        await asyncio.to_thread(daemon.start)
        async with aiohttp.ClientSession(
            connector=aiohttp.UnixConnector(path=str(daemon.socket))
        ) as unix:
            done = await _wait_for_job(unix, lambda j: j["phase"] in ("done", "failed"))
            assert (done["id"], done["phase"], done["attempts"]) == (job["id"], "done", 0), done
            status, doc, _ = await call(unix, "GET", f"{NS}/document/late")
            assert (doc["content"], doc["type"], doc["url"]) == ("late", "text", pages.url("/slow"))
        assert pages.paths == ["/slow", "/slow"]  # fetched again from the start
    finally:
        await asyncio.to_thread(daemon.kill)


async def _wait(predicate: Any) -> None:
    async with asyncio.timeout(20):
        while not predicate():
            await asyncio.sleep(0.02)


async def _wait_for_job(unix: aiohttp.ClientSession, predicate: Any) -> dict[str, Any]:
    async with asyncio.timeout(30):
        while True:
            status, body, _ = await call(unix, "GET", "http://smemd/v1/jobs?namespace=web")
            assert status == 200, body
            if body["jobs"] and predicate(body["jobs"][0]):
                return dict(body["jobs"][0])
            await asyncio.sleep(0.02)
