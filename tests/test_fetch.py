"""Fetching from real servers on 127.0.0.0/8: redirects, size and time limits, DNS rebinding.

No test here sends a packet beyond loopback: every server is on 127.0.0.x, and every address
the guard would refuse is refused before anything connects.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator

import pytest

from smemd import __version__
from smemd.fetch.client import (
    FetchError,
    FetchLimits,
    FetchRefused,
    FetchStatus,
    FetchTimeout,
    FetchTooLarge,
    FetchUnreachable,
    fetch,
)
from smemd.fetch.convert import convert
from smemd.fetch.guard import Guard
from tests.fakes.documents import ARTICLE_TITLE, BOILERPLATE
from tests.fakes.web_pages import BIG, PDF_TITLE, PageServer
from tests.pace import scaled

LIMITS = FetchLimits(connect_timeout_s=2, read_timeout_s=2, total_timeout_s=5)


@pytest.fixture
async def pages() -> AsyncIterator[PageServer]:
    async with PageServer() as server:
        yield server


@pytest.fixture
def guard(pages: PageServer) -> Guard:
    return Guard([f"127.0.0.1:{pages.port}"])


async def test_an_allowed_page_is_fetched_and_its_main_text_kept(
    pages: PageServer, guard: Guard
) -> None:
    fetched = await fetch(pages.url("/article"), guard, LIMITS)
    assert (fetched.status, fetched.url) == (200, pages.url("/article"))
    assert fetched.content_type == "text/html; charset=utf-8"
    converted = convert(fetched.body, fetched.content_type, fetched.url)
    assert converted.kind == "webpage"
    assert converted.title == ARTICLE_TITLE
    assert "tidal forces slow the moon's spin" in converted.text
    assert not any(junk in converted.text for junk in BOILERPLATE)


async def test_a_pdf_is_fetched_and_read(pages: PageServer, guard: Guard) -> None:
    fetched = await fetch(pages.url("/doc.pdf"), guard, LIMITS)
    converted = convert(fetched.body, fetched.content_type, fetched.url)
    assert converted.kind == "pdf"
    assert converted.title == PDF_TITLE
    assert "The Moon keeps one face toward the Earth." in converted.text


async def test_a_name_allowed_by_name_is_fetched_saying_who_asks(pages: PageServer) -> None:
    async def lookup(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    guard = Guard(["pages.example"], resolve=lookup)  # any port
    await fetch(f"http://Pages.Example.:{pages.port}/article", guard, LIMITS)
    [seen] = pages.requests
    assert (seen.host, seen.peer) == (f"pages.example:{pages.port}", "127.0.0.1")
    assert seen.user_agent == f"smem/{__version__}"
    assert all(kind in seen.accept for kind in ("text/html", "application/pdf", "text/plain"))


async def test_localhost_goes_through_the_system_resolver(pages: PageServer) -> None:
    url = f"http://localhost:{pages.port}/article"
    with pytest.raises(FetchRefused, match=re.escape("(from localhost) is a loopback address")):
        await fetch(url, Guard(), LIMITS)
    assert pages.requests == []
    fetched = await fetch(url, Guard([f"localhost:{pages.port}"]), LIMITS)
    assert fetched.status == 200
    assert [seen.peer for seen in pages.requests] == ["127.0.0.1"]


async def test_three_redirects_are_followed(pages: PageServer, guard: Guard) -> None:
    fetched = await fetch(pages.url("/hops/3"), guard, LIMITS)
    assert fetched.url == pages.url("/hops/0")
    assert pages.paths == ["/hops/3", "/hops/2", "/hops/1", "/hops/0"]


async def test_six_redirects_are_too_many(pages: PageServer, guard: Guard) -> None:
    with pytest.raises(FetchError, match="more than 5 redirects"):
        await fetch(pages.url("/hops/6"), guard, LIMITS)
    assert len(pages.requests) == 6  # the sixth Location was never asked for


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("http://127.0.0.2:{other}/article", "127.0.0.2 is a loopback address"),
        ("http://127.0.0.1:{other}/article", "127.0.0.1 is a loopback address"),  # other port
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("http://[::ffff:169.254.169.254]/", "169.254.169.254, the cloud metadata address"),
        ("file:///etc/passwd", "file scheme"),
        ("gopher://127.0.0.1:{port}/", "gopher scheme"),
    ],
)
async def test_a_redirect_to_a_refused_place_is_not_followed(
    pages: PageServer, guard: Guard, target: str, reason: str
) -> None:
    async with PageServer(host="127.0.0.2") as other:
        to = target.format(port=pages.port, other=other.port)
        with pytest.raises(FetchRefused, match=f"redirected to .*refused: .*{re.escape(reason)}"):
            await fetch(pages.url(f"/redirect?to={to}"), guard, LIMITS)
        assert other.requests == []
    assert len(pages.requests) == 1


@pytest.mark.parametrize("with_length", [True, False])
async def test_a_body_over_the_cap_stops_the_download(pages: PageServer, with_length: bool) -> None:
    guard = Guard([f"127.0.0.1:{pages.port}"])
    limits = FetchLimits(max_bytes=256 * 1024, read_timeout_s=2, total_timeout_s=5)
    with pytest.raises(FetchTooLarge, match=r"over 262144|more than 262144 bytes"):
        await fetch(pages.url(f"/big?length={int(with_length)}"), guard, limits)
    await asyncio.wait_for(pages.streamed_done.wait(), 5)
    assert not pages.streamed.completed
    assert pages.streamed.sent < BIG // 2


async def test_a_server_that_does_not_answer_times_out_quickly(
    pages: PageServer, guard: Guard
) -> None:
    limits = FetchLimits(read_timeout_s=0.2, total_timeout_s=5)
    started = time.monotonic()
    with pytest.raises(FetchTimeout, match=r"nothing read for 0.2 s"):
        await fetch(pages.url("/slow"), guard, limits)
    assert time.monotonic() - started < scaled(2)


async def test_a_body_that_stalls_times_out(pages: PageServer, guard: Guard) -> None:
    limits = FetchLimits(read_timeout_s=0.2, total_timeout_s=5)
    with pytest.raises(FetchTimeout):
        await fetch(pages.url("/slow-body"), guard, limits)


async def test_the_total_timeout_bounds_the_whole_fetch(pages: PageServer, guard: Guard) -> None:
    limits = FetchLimits(read_timeout_s=5, total_timeout_s=0.3)
    with pytest.raises(FetchTimeout, match=r"not done within 0.3 s"):
        await fetch(pages.url("/slow"), guard, limits)


async def test_an_error_status_names_it(pages: PageServer, guard: Guard) -> None:
    with pytest.raises(FetchStatus, match="HTTP 404 Not Found") as caught:
        await fetch(pages.url("/nothing-here"), guard, LIMITS)
    assert caught.value.http_status == 404


async def test_a_server_that_is_gone_is_unreachable(pages: PageServer, guard: Guard) -> None:
    url = pages.url("/article")
    await pages.__aexit__(None, None, None)  # the port is allowed, and nothing listens on it now
    with pytest.raises(FetchUnreachable, match="ClientConnectorError"):
        await fetch(url, guard, LIMITS)


async def test_dns_rebinding_connects_to_the_address_that_was_checked(pages: PageServer) -> None:
    """The name answers 127.0.0.1 (allowed by address) once, then 10.0.0.1."""
    answers = [["127.0.0.1"], ["10.0.0.1"]]
    asked: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]

    guard = Guard([f"127.0.0.1:{pages.port}"], resolve=rebinding)
    url = f"http://rebind.example:{pages.port}/article"
    fetched = await fetch(url, guard, LIMITS)
    assert fetched.status == 200
    assert asked == ["rebind.example"]  # looked up once, by the guard, and never again
    [seen] = pages.requests
    assert (seen.host, seen.peer) == (f"rebind.example:{pages.port}", "127.0.0.1")
    # The next connection asks again, gets the private address, and is refused.
    with pytest.raises(
        FetchRefused, match=re.escape("10.0.0.1 (from rebind.example) is a private")
    ):
        await fetch(url, guard, LIMITS)
    assert asked == ["rebind.example", "rebind.example"]
    assert len(pages.requests) == 1


async def test_a_name_that_does_not_resolve_is_a_fetch_error() -> None:
    async def nowhere(host: str, port: int) -> list[str]:
        raise OSError(f"no such host {host}")

    with pytest.raises(FetchUnreachable, match=re.escape("cannot resolve nowhere.example")):
        await fetch("http://nowhere.example/", Guard(resolve=nowhere), LIMITS)


async def test_a_malformed_url_is_a_fetch_error() -> None:
    with pytest.raises(FetchError, match="not a URL"):
        await fetch("http://[::1/", Guard(), LIMITS)
