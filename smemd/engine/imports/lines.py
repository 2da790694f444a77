"""The lines of a JSON Lines body as it streams in: each whole, none longer than the format's
limit, the body gunzipped on the way when it is gzip'd (a .jsonl.gz file sent as it is)."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterable, AsyncIterator

from smemd.errors import BadRequest
from smemd.protocol.exports import MAX_LINE_BYTES

GZIP_MAGIC = b"\x1f\x8b"
GZIP_WBITS = 31
PIECE = 1 << 20  # what one step of gunzipping makes at most


async def lines_of(
    blocks: AsyncIterable[bytes], limit: int = MAX_LINE_BYTES
) -> AsyncIterator[bytes]:
    """Each line without its newline (a last line without one too); BadRequest naming the line
    that is longer than `limit` bytes, or a gzip stream that is damaged or cut off."""
    parts: list[bytes] = []  # the line begun and not yet ended
    size = 0
    number = 0
    async for piece in _unpacked(blocks):
        start = 0
        while (end := piece.find(b"\n", start)) >= 0:
            number += 1
            if size + end - start > limit:
                raise _too_long(number, limit)
            yield b"".join([*parts, piece[start:end]])
            parts, size, start = [], 0, end + 1
        if start < len(piece):
            parts.append(piece[start:])
            size += len(piece) - start
            if size > limit:
                raise _too_long(number + 1, limit)
    rest = b"".join(parts)
    if rest.strip():
        yield rest


async def _unpacked(blocks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """The body's bytes; gunzipped, a piece at a time, when it begins as gzip does."""
    unpacker: zlib._Decompress | None = None
    first = True
    async for block in blocks:
        if not block:
            continue
        if first:
            first = False
            if block.startswith(GZIP_MAGIC):
                unpacker = zlib.decompressobj(wbits=GZIP_WBITS)
        if unpacker is None:
            yield block
            continue
        pending = block
        while pending:
            try:
                # Bounded steps, so that a small bomb of zeros never fills memory at once.
                yield unpacker.decompress(pending, PIECE)
            except zlib.error as err:
                raise BadRequest("invalid export", f"the gzip stream is damaged ({err})") from None
            pending = unpacker.unconsumed_tail
    if unpacker is not None and not unpacker.eof:
        raise BadRequest("invalid export", "the gzip stream is cut off; nothing was imported")


def _too_long(number: int, limit: int) -> BadRequest:
    return BadRequest(
        "invalid export",
        f"line {number}: longer than {limit} bytes, the format's limit; nothing was imported",
    )
