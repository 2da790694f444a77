"""Bytes to text: choosing the reader, what each gives, and the child process that runs them."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from pathlib import Path

import pytest

from smemd.fetch.convert import Converted, Unconvertible, convert, convert_isolated
from tests.fakes.documents import ARTICLE, ARTICLE_TITLE, BOILERPLATE, make_pdf
from tests.pace import scaled

PDF = make_pdf(["Io is locked to Jupiter.", "So is Europa (mostly)."], title="Jovian moons")


def test_a_web_page_gives_its_main_text_without_boilerplate() -> None:
    converted = convert(ARTICLE, "text/html; charset=utf-8", "https://example.com/tides")
    assert converted.kind == "webpage"
    assert converted.title == ARTICLE_TITLE
    assert converted.text.startswith(ARTICLE_TITLE)
    assert "the large moons of Jupiter" in converted.text
    assert not any(junk in converted.text for junk in BOILERPLATE)


def test_a_short_page_keeps_its_text_and_its_title_tag() -> None:
    page = b"<html><head><title>Opening hours</title></head><body><p>Mon-Fri 9-5.</p></body></html>"
    assert convert(page, "text/html") == Converted(
        text="Mon-Fri 9-5.", title="Opening hours", kind="webpage"
    )


def test_a_page_in_its_declared_charset() -> None:
    page = "<html><body><p>Déjà vu in Zürich, a café at noon.</p></body></html>".encode("cp1252")
    assert "Déjà vu in Zürich" in convert(page, "text/html; charset=windows-1252").text


def test_a_pdf_gives_every_page_and_its_title() -> None:
    converted = convert(PDF, "application/pdf", "moons.pdf")
    assert converted == Converted(
        text="Io is locked to Jupiter.\nSo is Europa (mostly).", title="Jovian moons", kind="pdf"
    )


def test_a_pdf_without_metadata_has_no_title() -> None:
    assert convert(make_pdf(["Just text."]), "application/pdf").title is None


def test_a_pdf_without_text_has_nothing_to_give() -> None:
    with pytest.raises(Unconvertible, match=re.escape("no text found in scan.pdf")):
        convert(make_pdf([]), "application/pdf", "scan.pdf")


def test_plain_text_in_its_charset() -> None:
    body = "Grüße aus Köln".encode("latin-1")
    assert convert(body, 'text/plain; charset="ISO-8859-1"') == Converted(
        text="Grüße aus Köln", kind="text"
    )


def test_text_without_a_charset_is_utf8_and_loses_its_bom() -> None:
    assert (
        convert("\ufeff# Notes\n\n- Ärger".encode(), "text/markdown").text == "# Notes\n\n- Ärger"
    )


@pytest.mark.parametrize(
    ("body", "content_type", "problem"),
    [
        (
            "Köln".encode("latin-1"),
            "text/plain",
            "not UTF-8 (invalid start byte at byte 1) and no charset",
        ),
        (b"abc", "text/plain; charset=klingon", "unknown charset 'klingon'"),
        ("Köln".encode("latin-1"), "text/plain; charset=utf-8", "not utf-8"),
    ],
)
def test_text_that_does_not_decode_says_why(body: bytes, content_type: str, problem: str) -> None:
    with pytest.raises(Unconvertible, match=re.escape(f"notes.txt: {problem}")):
        convert(body, content_type, "notes.txt")


@pytest.mark.parametrize(
    ("body", "content_type", "name", "kind"),
    [
        (PDF, "application/octet-stream", "download", "pdf"),  # by its first bytes
        (PDF, "", "", "pdf"),
        (ARTICLE, "", "", "webpage"),
        (b"  <!DOCTYPE HTML><p>Hello there.</p>", "application/octet-stream", "", "webpage"),
        (PDF, "", "paper.PDF", "pdf"),
        (b"# Title\n\nSome notes.", "application/octet-stream", "notes.md", "text"),
        (b"plain words", "", "https://example.com/readme.txt?raw=1#top", "text"),
        (b'{"a": 1}', "application/json", "", "text"),
        (b'{"a": 1}', "application/ld+json", "", "text"),
        (ARTICLE, "application/xhtml+xml", "", "webpage"),
    ],
)
def test_the_kind_comes_from_type_then_bytes_then_name(
    body: bytes, content_type: str, name: str, kind: str
) -> None:
    assert convert(body, content_type, name).kind == kind


@pytest.mark.parametrize(
    ("body", "content_type", "name", "problem"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png", "cat.png", "cat.png: cannot convert image/png"),
        (b"\x00\x01\x02\x03", "application/octet-stream", "", "cannot convert no content type"),
        (b"PK\x03\x04", "application/zip", "a.zip", "cannot convert application/zip"),
        (b"", "text/plain", "empty.txt", "no text found in empty.txt"),
        (b"", "", "", "cannot convert no content type"),
        (b"<html><body>  \n </body></html>", "text/html", "", "no text found in the document"),
        (b"not a pdf at all", "application/pdf", "x.pdf", "x.pdf: not a readable PDF"),
        (PDF[: len(PDF) // 2], "application/pdf", "cut.pdf", "cut.pdf: not a readable PDF"),
    ],
)
def test_what_cannot_be_converted_says_why(
    body: bytes, content_type: str, name: str, problem: str
) -> None:
    with pytest.raises(Unconvertible, match=problem):
        convert(body, content_type, name)


async def test_isolated_conversion_of_a_pdf() -> None:
    converted = await convert_isolated(PDF, "application/pdf", "moons.pdf")
    assert converted == convert(PDF, "application/pdf", "moons.pdf")


async def test_isolated_conversion_of_a_web_page() -> None:
    converted = await convert_isolated(ARTICLE, "text/html", "https://example.com/tides")
    assert converted.title == ARTICLE_TITLE


async def test_isolated_conversion_of_garbage_is_unconvertible() -> None:
    with pytest.raises(Unconvertible, match=re.escape("junk.pdf: not a readable PDF")):
        await convert_isolated(
            b"%PDF-1.7\n\xff\xfe garbage \x00" * 50, "application/pdf", "junk.pdf"
        )


def _children() -> set[int]:
    tasks = Path("/proc/self/task").glob("*/children")
    return {int(pid) for task in tasks for pid in task.read_text().split()}


async def test_a_conversion_past_its_time_is_killed() -> None:
    before = _children()
    started = time.monotonic()
    with pytest.raises(
        Unconvertible, match=re.escape("converting big.pdf took longer than 0.01 s")
    ):
        await convert_isolated(PDF, "application/pdf", "big.pdf", timeout_s=0.01)
    assert time.monotonic() - started < scaled(2)
    assert _children() == before  # killed and reaped


async def test_a_converter_that_dies_fails_in_a_few_words() -> None:
    before = _children()
    converting = asyncio.create_task(convert_isolated(PDF, "application/pdf", "moons.pdf"))
    async with asyncio.timeout(5):
        while not (new := _children() - before):  # the child is still starting Python
            await asyncio.sleep(0.002)
    os.kill(new.pop(), signal.SIGKILL)
    with pytest.raises(
        Unconvertible, match=re.escape("converting moons.pdf failed: killed by SIGKILL")
    ):
        await converting


async def test_a_converter_that_runs_out_of_memory_fails_in_a_few_words() -> None:
    with pytest.raises(Unconvertible, match=re.escape("converting moons.pdf")) as failed:
        await convert_isolated(PDF, "application/pdf", "moons.pdf", memory_mb=1)
    assert "Traceback" not in str(failed.value)
    assert len(str(failed.value)) < 300
