"""Readers for each kind of document: a web page, a PDF, plain text. Each returns text and a title.

The parsers are imported inside the readers: the daemon itself never loads them, only the child
process that converts (see `convert_isolated`), after it has capped its own memory.
"""

from __future__ import annotations

import contextlib
import html
import io
import re

from smemd.errors import SmemError

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)


class Unconvertible(SmemError):
    status = 422
    code = "unconvertible"


def read_text(body: bytes, charset: str | None, name: str) -> str:
    """Text in the charset it names, else UTF-8 (a BOM is dropped)."""
    if charset:
        try:
            return body.decode(charset)
        except LookupError:
            raise Unconvertible(f"{name}: unknown charset {charset!r}") from None
        except UnicodeDecodeError as err:
            raise Unconvertible(
                f"{name}: not {charset}: {err.reason} at byte {err.start}"
            ) from None
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise Unconvertible(
            f"{name}: not UTF-8 ({err.reason} at byte {err.start}) and no charset given"
        ) from None


def read_webpage(body: bytes, charset: str | None, url: str) -> tuple[str, str | None]:
    """The main text of a page, without navigation, footers and comments."""
    import trafilatura

    page: str | bytes = body
    if charset:  # else trafilatura reads <meta charset> or guesses
        with contextlib.suppress(LookupError, UnicodeDecodeError):
            page = body.decode(charset)
    doc = trafilatura.bare_extraction(
        page, url=url if url.startswith(("http://", "https://")) else None,
        include_comments=False, include_tables=True, with_metadata=True,
    )  # fmt: skip
    text = title = None
    if doc is not None and not isinstance(doc, dict):
        text, title = doc.text, doc.title
    if not text or not text.strip():
        # trafilatura wants a page with an article in it; a short page is still worth its text.
        text = trafilatura.html2txt(page)
    return text, title or _html_title(body)


def _html_title(body: bytes) -> str | None:
    match = _TITLE.search(body, 0, 64 * 1024)
    if match is None:
        return None
    title = " ".join(html.unescape(match.group(1).decode("utf-8", "replace")).split())
    return title or None


def read_pdf(body: bytes, name: str) -> tuple[str, str | None]:
    """The text of every page, and the title from the document's metadata."""
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(body))
        if reader.is_encrypted:
            reader.decrypt("")  # many PDFs are encrypted with an empty user password
        pages = [page.extract_text() for page in reader.pages]
        title = reader.metadata.title if reader.metadata is not None else None
    # A crafted or broken PDF makes pypdf raise nearly anything (KeyError, struct.error, ...).
    except Exception as err:
        raise Unconvertible(f"{name}: not a readable PDF: {type(err).__name__}: {err}") from None
    return "\n\n".join(page.strip() for page in pages if page.strip()), _clean(title)


def _clean(title: object) -> str | None:
    text = " ".join(str(title).split()) if title is not None else ""
    return text or None
