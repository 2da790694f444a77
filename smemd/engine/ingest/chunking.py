"""Heading-aware chunking: markdown or plain text in, embeddable chunks with their heading path out."""

from __future__ import annotations

import re

import msgspec

from smemd.engine.ingest.sentence_facts import is_chatter
from smemd.engine.transcripts import said_text
from smemd.errors import PayloadTooLarge

# CommonMark ATX heading: up to 3 spaces of indent, 1-6 '#', then a space or the end of the line;
# a closing run of '#' (after a space, or the whole title) is decoration, not title.
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)(.*)$")
_HEADING_CLOSE = re.compile(r"(?:^|[ \t])#+[ \t]*$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
# Cut after . ! ? (and any closing quote or bracket) when whitespace follows; abbreviations may
# cause an early cut, which costs a little context but never loses text.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+")
# The turn before is a chunk's context only when it is short: a conversational turn whose words
# a question about the answer repeats ("What got you into running?"). The opening of a long
# message (an assistant's answer) is mostly words of its own, which drown the turn after it:
# measured on assistant chats, such context cost recall; on chit-chat it gained (README:
# Benchmarks). People send one thought as several messages ("we adopted a puppy!", "he's so
# tiny", "his name is Toby"), and alone the last says little: a message that goes on what its
# speaker said just before takes more of the turns before it, as long as it and they stay within
# those characters. Between turns of two speakers that would only echo the exchange before
# (measured: it cost chit-chat a little recall).
CONTEXT_MAX_CHARS = 300
CONTEXT_MAX_TURNS = 8  # the most turns a context is looked for in
# How much of each turn before is read: enough to tell a long one, whose spaces are squeezed
# first, without reading a whole long document.
CONTEXT_READ_CHARS = 4 * CONTEXT_MAX_CHARS


def context_of(content: str, before: list[str], goes_on: bool) -> str:
    """The context a document's chunks carry of the documents before it in its session (`before`,
    the last first): the one before when it is short; when the document goes on what its speaker
    said in that one (`goes_on`), the ones before that too while the document and its context
    stay within CONTEXT_MAX_CHARS. In their order, a line each. None for small talk alone
    ("omg"): read with the turn before, it would be found wherever that turn is."""
    if is_chatter(said_text(content)):
        return ""
    if not goes_on:
        before = before[:1]
    room = CONTEXT_MAX_CHARS - len(" ".join(content.split()))
    kept: list[str] = []
    for previous in before:
        text = " ".join(previous.split())
        room -= len(text) + (1 if kept else 0)
        if len(text) > CONTEXT_MAX_CHARS or (kept and room < 0):
            break
        kept.append(text)
    return "\n".join(reversed(kept))


class Chunk(msgspec.Struct, frozen=True):
    """One piece of a document: its order, the headings above it, its text, and what came just
    before its document (`context`: the short turns before, in a conversation)."""

    position: int
    heading_path: tuple[str, ...]
    text: str
    context: str = ""

    def embedding_text(self) -> str:
        """The text to embed: the heading path gives a chunk its place ("Guide > Install"), the
        context what it answers."""
        head = " > ".join(self.heading_path)
        if self.context:
            head = f"{self.context}\n\n{head}" if head else self.context
        return f"{head}\n\n{self.text}" if head else self.text

    @classmethod
    def stored(cls, position: int, heading: str, text: str, context: str = "") -> Chunk:
        """A chunk as the store keeps it: its heading path joined by " > "."""
        return cls(position, tuple(heading.split(" > ")) if heading else (), text, context)


class TooManyChunks(PayloadTooLarge):
    """A document past `[ingest] max-chunks`: refused when it is added, or its job fails when its
    text is known only later (a URL). Trying again cannot help."""

    retry = False


def check_count(count: int, limit: int) -> None:
    if count > limit:
        raise TooManyChunks(
            "document too large",
            f"it makes {count} chunks, past [ingest] max-chunks ({limit}); split it, or raise"
            " the limit",
        )


def chunk_text(text: str, *, target: int = 1400) -> list[Chunk]:
    """Split text into chunks of about `target` characters that never straddle a heading."""
    if target < 1:
        raise ValueError(f"chunk target must be at least 1, not {target}")
    chunks: list[Chunk] = []
    for path, blocks in _sections(text.replace("\r\n", "\n").replace("\r", "\n")):
        for piece in _pack(blocks, target):
            chunks.append(Chunk(len(chunks), path, piece))
    return chunks


# A block is (text, is_code): a paragraph, or a fenced code block from fence to fence.
_Block = tuple[str, bool]


def _sections(text: str) -> list[tuple[tuple[str, ...], list[_Block]]]:
    """(heading path, blocks) for each section that has any content."""
    sections: list[tuple[tuple[str, ...], list[_Block]]] = []
    titles: dict[int, str] = {}
    blocks: list[_Block] = []
    lines: list[str] = []  # the block being read
    fence = ""  # the opening fence while inside a code block

    def end_block() -> None:
        if block := "\n".join(lines).strip("\n").rstrip():
            blocks.append((block if fence else block.strip(), bool(fence)))
        lines.clear()

    def end_section() -> None:
        end_block()
        if blocks:
            path = tuple(titles[level] for level in sorted(titles))
            sections.append((path, blocks.copy()))
            blocks.clear()

    for line in text.split("\n"):
        if fence:
            lines.append(line)
            stripped = line.strip()
            # A fence closes with the same character, at least as long, and nothing after it.
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                end_block()
                fence = ""
            continue
        if opening := _FENCE_OPEN.match(line):
            marker, info = opening.groups()
            if not (marker[0] == "`" and "`" in info):  # ```x``` on one line is inline code
                end_block()
                fence = marker
                lines.append(line)
                continue
        if heading := _HEADING.match(line):
            end_section()
            level = len(heading.group(1))
            # A new heading ends every deeper level; an empty "#" just clears its level.
            titles = {lv: title for lv, title in titles.items() if lv < level}
            if title := _HEADING_CLOSE.sub("", heading.group(2).strip()).strip():
                titles[level] = title
            continue
        if line.strip():
            lines.append(line.rstrip())
        else:
            end_block()
    end_section()  # an unclosed fence runs to the end, as in CommonMark
    return sections


def _pack(blocks: list[_Block], target: int) -> list[str]:
    """Greedily join a section's blocks into pieces of up to `target` characters."""
    # Each unit carries the glue that joins it to the unit before it in its block.
    units: list[tuple[str, str]] = []
    for block, is_code in blocks:
        if is_code:
            # A code block stays whole up to 2x target: cutting code loses more than it saves.
            parts = [block] if len(block) <= 2 * target else _split(block, target, "\n")
            glue = "\n"
        else:
            parts = [block] if len(block) <= target else _split_paragraph(block, target)
            glue = " "
        units.extend((part, "\n\n" if i == 0 else glue) for i, part in enumerate(parts))
    units = [(part, glue) for part, glue in units if part.strip()]

    pieces: list[tuple[str, str]] = []  # (glue to the previous piece, text)
    for part, glue in units:
        if pieces and len(pieces[-1][1]) + len(glue) + len(part) <= target:
            pieces[-1] = (pieces[-1][0], pieces[-1][1] + glue + part)
        else:
            pieces.append((glue, part))
    # A tiny tail embeds poorly on its own; it rides with the piece before it.
    if len(pieces) > 1 and len(pieces[-1][1]) < target // 5:
        glue, tail = pieces.pop()
        pieces[-1] = (pieces[-1][0], pieces[-1][1] + glue + tail)
    return [piece for _, piece in pieces]


def _split_paragraph(text: str, target: int) -> list[str]:
    """Sentence-packed pieces of one long paragraph; words, then raw cuts, for huge sentences."""
    parts: list[str] = []
    for sentence in _SENTENCE_BREAK.split(text):
        parts.extend([sentence] if len(sentence) <= target else _split(sentence, target, " "))
    return _join(parts, target, " ")


def _split(text: str, target: int, sep: str) -> list[str]:
    """Cut on words (sep " ") or lines (sep "\\n") into pieces of up to `target` characters."""
    tokens = text.split() if sep == " " else text.split("\n")
    # A token longer than the target (a URL, a base64 line) is the one place we cut mid-token.
    parts = [token[i : i + target] for token in tokens for i in range(0, len(token) or 1, target)]
    return _join(parts, target, sep)


def _join(parts: list[str], target: int, sep: str) -> list[str]:
    """Greedily join parts with `sep` while the result stays within `target`."""
    joined: list[str] = []
    for part in parts:
        if joined and len(joined[-1]) + len(sep) + len(part) <= target:
            joined[-1] += sep + part
        else:
            joined.append(part)
    return joined


def title_of(content: str) -> str:
    """The first non-empty line, without markdown heading marks, cut to 80 characters."""
    for line in content.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= 80 else line[:79] + "…"
    return ""
