"""Bytes to text: choosing a document's reader, and running it where it cannot hurt the daemon.

HTML and PDF parsers can loop or swell on crafted input while holding the GIL, so input from
outside goes through `convert_isolated`: `convert` in a child (`python -m smemd.fetch.convert`)
that caps its own memory, is killed at a timeout, and answers in JSON on stdout.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path, PurePosixPath
from typing import Literal

import msgspec

from smemd.fetch.formats import Unconvertible, read_pdf, read_text, read_webpage

__all__ = ["Converted", "Unconvertible", "convert", "convert_isolated"]

log = logging.getLogger("smemd.fetch")

Kind = Literal["webpage", "pdf", "text"]
_HTML = frozenset({"text/html", "application/xhtml+xml"})
_TEXT = frozenset({"application/json", "application/x-ndjson", "application/yaml"})
_UNSAID = frozenset({"", "application/octet-stream", "binary/octet-stream"})
_SUFFIXES: dict[str, Kind] = {
    ".html": "webpage", ".htm": "webpage", ".xhtml": "webpage", ".pdf": "pdf",
    ".txt": "text", ".text": "text", ".md": "text", ".markdown": "text", ".rst": "text",
    ".json": "text", ".csv": "text", ".log": "text", ".yaml": "text", ".yml": "text",
}  # fmt: skip
# The package root: the child imports the same code as the daemon that started it.
_ROOT = Path(__file__).resolve().parents[2]


class Converted(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    title: str | None = None
    kind: Kind


class _Job(msgspec.Struct, frozen=True):
    content_type: str
    name: str


class _Reply(msgspec.Struct, frozen=True, omit_defaults=True):
    converted: Converted | None = None
    error: str | None = None


def _media_type(content_type: str) -> tuple[str, str | None]:
    """("text/html", "latin-1") from "text/html; charset=latin-1"."""
    media, _, params = content_type.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip(" \"'"):
            charset = value.strip(" \"'")
    return media.strip().lower(), charset


def kind_of(body: bytes, media: str, name: str) -> Kind | None:
    """By the content type; then by the first bytes; then by the file's extension."""
    if media in _HTML:
        return "webpage"
    if media == "application/pdf":
        return "pdf"
    if media.startswith("text/") or media in _TEXT or media.endswith("+json"):
        return "text"
    head = body[:1024].lstrip()
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head[:14].lower().startswith((b"<!doctype html", b"<html")):
        return "webpage"
    path = name.partition("?")[0].partition("#")[0]
    return _SUFFIXES.get(PurePosixPath(path).suffix.lower())


def convert(body: bytes, content_type: str, url_or_filename: str = "") -> Converted:
    """The text of a document; Unconvertible when it has none or is of a kind not read."""
    media, charset = _media_type(content_type)
    name = url_or_filename or "the document"
    kind = kind_of(body, media, url_or_filename)
    if kind is None:
        said = "no content type" if media in _UNSAID else media
        raise Unconvertible(f"{name}: cannot convert {said} to text")
    title = None
    if kind == "webpage":
        text, title = read_webpage(body, charset, url_or_filename)
    elif kind == "pdf":
        text, title = read_pdf(body, name)
    else:
        text = read_text(body, charset, name)
    if not text.strip():
        raise Unconvertible(f"no text found in {name}")
    return Converted(text=text.strip(), title=title, kind=kind)


async def convert_isolated(
    body: bytes, content_type: str, name: str = "", *, timeout_s: float = 60, memory_mb: int = 1024
) -> Converted:
    """`convert` in a child process, under a memory cap and a timeout."""
    job = msgspec.json.encode(_Job(content_type, name)) + b"\n"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "smemd.fetch.convert", str(memory_mb), cwd=_ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    what = name or content_type or "the document"
    try:
        async with asyncio.timeout(timeout_s):
            out, err = await proc.communicate(job + body)
    except TimeoutError:
        raise Unconvertible(f"converting {what} took longer than {timeout_s:g} s") from None
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if proc.returncode != 0:
        raise Unconvertible(f"converting {what} failed: {_why(proc.returncode, err)}")
    try:
        reply = msgspec.json.decode(out, type=_Reply)
    except msgspec.DecodeError:
        raise Unconvertible(
            f"converting {what} failed: the converter's answer was garbled"
        ) from None
    if reply.converted is None:
        raise Unconvertible(reply.error or f"converting {what} failed")
    return reply.converted


def _why(returncode: int | None, stderr: bytes) -> str:
    """A short reason for a child's failure: the signal, or the last line it wrote."""
    if returncode is not None and returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    last = lines[-1][:200] if lines else "no message"
    log.info("converter exited %s: %s", returncode, last)
    return f"exit {returncode}: {last}"


def main(memory_mb: int) -> int:
    """The child: read a job line and the body on stdin, answer a _Reply on stdout."""
    import resource

    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    job = msgspec.json.decode(sys.stdin.buffer.readline(), type=_Job)
    body = sys.stdin.buffer.read()
    what = job.name or "the document"
    try:
        reply = _Reply(converted=convert(body, job.content_type, job.name))
    except Unconvertible as err:
        reply = _Reply(error=err.message)
    except MemoryError:
        reply = _Reply(error=f"converting {what} needed more than {memory_mb} MB")
    except RecursionError:
        reply = _Reply(error=f"converting {what} failed: nested too deeply")
    sys.stdout.buffer.write(msgspec.json.encode(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
