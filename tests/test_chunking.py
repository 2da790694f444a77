"""The heading-aware chunker: heading paths, cut points, and that no content is ever lost."""

from __future__ import annotations

import itertools
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smemd.engine.ingest.chunking import CONTEXT_MAX_CHARS, Chunk, chunk_text, context_of


def squeeze(text: str) -> str:
    """Text with all whitespace removed."""
    return "".join(text.split())


def test_headings_nest_and_a_higher_level_resets_the_deeper_ones() -> None:
    doc = "# A\na\n## B\nb\n#### C\nc\n## B2\nb2\n# D\nd\n"
    assert [(c.heading_path, c.text) for c in chunk_text(doc)] == [
        (("A",), "a"),
        (("A", "B"), "b"),
        (("A", "B", "C"), "c"),
        (("A", "B2"), "b2"),
        (("D",), "d"),
    ]


def test_heading_decoration_is_not_title_and_hashes_without_a_space_are_text() -> None:
    doc = "## Install ##\nbody\n\n#hashtag is text\n"
    (chunk,) = chunk_text(doc)
    assert chunk.heading_path == ("Install",)
    assert chunk.text == "body\n\n#hashtag is text"


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_headings_inside_fenced_code_are_code(fence: str) -> None:
    doc = f"# Real\n\nRun:\n\n{fence}sh\n# just a comment\nmake\n{fence}\n\nDone.\n"
    (chunk,) = chunk_text(doc)
    assert chunk.heading_path == ("Real",)
    assert "# just a comment" in chunk.text and chunk.text.endswith("Done.")


def test_embedding_text_prepends_the_heading_path() -> None:
    (chunk,) = chunk_text("# Guide\n## Install\n\npip install smem\n")
    assert chunk == Chunk(0, ("Guide", "Install"), "pip install smem")
    assert chunk.embedding_text() == "Guide > Install\n\npip install smem"
    (plain,) = chunk_text("no headings here")
    assert plain.embedding_text() == "no headings here"


def test_a_turn_s_context_is_the_short_turn_before_and_a_burst_s_turns_while_they_fit() -> None:
    before = ["Ben: His name is Toby.", "Ben: We adopted a puppy.", "Ana: News?", "Ben: Hi."]
    # A message that goes on its speaker's last: the turns before it while it and they fit, in
    # their order, the other speaker's among them.
    assert context_of("Ben: He is tiny.", before, True) == "\n".join(reversed(before))
    # Another speaker's turn: the turn before it alone.
    assert context_of("Ana: What breed?", before, False) == before[0]
    # Small talk alone, none: read with the turn before, it would be found wherever that is.
    assert context_of("Ana: So cute!", before, False) == ""
    assert context_of("Ben: lol", before, True) == ""
    # Longer: the turn before, then only what still fits; an earlier turn is never skipped to.
    turn = "Ben: " + "x" * (CONTEXT_MAX_CHARS - 5 - 22 - 25 - 5)
    assert context_of(turn, before, True) == "\n".join(reversed(before[:2]))
    assert context_of(turn + "x" * 6, before, True) == before[0]
    # A turn as long as the limit is still read with the short turn before it.
    assert context_of("Ben: " + "x" * CONTEXT_MAX_CHARS, before, True) == before[0]
    # A long turn before is no context, however short the turn after it.
    assert context_of("Ben: Hm.", ["Ben: " + "b" * CONTEXT_MAX_CHARS, *before], True) == ""
    assert context_of("Ben: Hm.", [], True) == ""


@pytest.mark.parametrize("text", ["", " ", "\r\n\t \n", "# \n##\n"])
def test_blank_input_or_bare_headings_give_no_chunks(text: str) -> None:
    assert chunk_text(text) == []


def test_crlf_is_normalised() -> None:
    chunks = chunk_text("# T\r\n\r\nline one\r\nline two\r\n\r\nnext\r")
    assert [c.text for c in chunks] == ["line one\nline two\n\nnext"]


def test_cuts_fall_on_paragraph_boundaries() -> None:
    paragraphs = [f"p{i} " + "word " * 58 + "end." for i in range(7)]  # ~300 chars each
    chunks = chunk_text("\n\n".join(paragraphs), target=700)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    # Two ~300-char paragraphs fit in 700, three do not; the last one is not tiny, so it stands.
    assert [c.text.split("\n\n") for c in chunks] == [
        paragraphs[0:2],
        paragraphs[2:4],
        paragraphs[4:6],
        paragraphs[6:7],
    ]


def test_a_tiny_tail_rides_with_the_previous_chunk() -> None:
    big, tail = "a" * 650, "tail " * 20  # 100 chars < 700 / 5
    chunks = chunk_text(f"{big}\n\n{big}\n\n{tail}", target=700)
    assert [c.text for c in chunks] == [big, f"{big}\n\n{tail.strip()}"]


def test_sections_never_merge_across_a_heading_however_small() -> None:
    chunks = chunk_text("# A\nx\n# B\ny\n")
    assert [(c.heading_path, c.text) for c in chunks] == [(("A",), "x"), (("B",), "y")]


def test_a_code_block_up_to_twice_the_target_stays_whole() -> None:
    code = "```py\n" + "\n\n".join(f"x_{i} = {i}" for i in range(140)) + "\n```"
    assert 1000 < len(code) < 2000
    chunks = chunk_text(f"before\n\n{code}\n\nafter", target=1000)
    assert [c.text for c in chunks] == ["before", code + "\n\nafter"]


def test_a_huge_code_block_is_cut_between_lines() -> None:
    lines = [f"line_{i:04} = {i}" for i in range(300)]  # ~5000 chars
    chunks = chunk_text("```\n" + "\n".join(lines) + "\n```", target=1000)
    assert len(chunks) > 4 and all(len(c.text) <= 1000 for c in chunks)
    assert [line for c in chunks for line in c.text.split("\n")] == ["```", *lines, "```"]


def test_a_long_paragraph_is_cut_between_sentences() -> None:
    text = " ".join(f"Sentence {i} says something mildly useful." for i in range(80))
    chunks = chunk_text(text, target=300)
    assert len(chunks) > 5
    assert all(len(c.text) <= 300 and c.text.endswith("useful.") for c in chunks)


def test_text_without_spaces_is_cut_hard() -> None:
    chunks = chunk_text("x" * 2500, target=1000)
    assert [len(c.text) for c in chunks] == [1000, 1000, 500]


def test_a_target_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        chunk_text("text", target=0)


# No deadline: a slow CI box should not fail a correctness property; the per-test timeout
# still catches a hang.
_settings = settings(deadline=None)

# Markdown-ish documents built from parts whose role we know, so the expected output is exact.
_word = st.one_of(
    st.text(string.ascii_letters + string.digits + ".,!?'\"()-*:", min_size=1, max_size=12),
    st.text(string.ascii_lowercase, min_size=50, max_size=400),  # forces word and hard cuts
)
_line = st.lists(_word, min_size=1, max_size=12).map(" ".join)
# Each part is (level, title, source): level 0 for body text, 1-6 for a heading.
Part = tuple[int, str, str]
_paragraph = st.lists(_line, min_size=1, max_size=6).map(lambda lines: (0, "", "\n".join(lines)))
_title = st.lists(st.text(string.ascii_letters, min_size=1, max_size=8), max_size=3).map(" ".join)
_heading = st.tuples(st.integers(1, 6), _title, st.booleans()).map(
    lambda h: (h[0], h[1], "#" * h[0] + (" " + h[1] if h[1] else "") + (" ##" * h[2]))
)
_code_line = st.one_of(_line, st.just(""), _title.map(lambda t: "# " + t))
_code = st.tuples(st.sampled_from(["```", "~~~"]), st.lists(_code_line, max_size=8)).map(
    lambda c: (0, "", "\n".join([c[0] + "py", *c[1], c[0]]))
)
_document = st.lists(st.one_of(_paragraph, _heading, _code), max_size=12)


@_settings
@given(
    parts=_document,
    separators=st.lists(st.sampled_from(["\n", "\n\n", "\n \n\n"]), min_size=12, max_size=12),
    crlf=st.booleans(),
    target=st.integers(20, 400),
)
def test_markdown_content_is_never_lost_and_keeps_its_heading_path(
    parts: list[Part], separators: list[str], crlf: bool, target: int
) -> None:
    """Exact invariant: group consecutive chunks by heading path and consecutive sections by the
    path in force; per group, the chunks' text without whitespace equals the section bodies'
    non-heading lines without whitespace. So no character outside heading lines is lost, moved
    to another section, or invented, and each chunk carries its section's heading path."""
    text = "".join(source + sep for (_, _, source), sep in zip(parts, separators, strict=False))
    if crlf:
        text = text.replace("\n", "\r\n")

    titles: dict[int, str] = {}
    expected: list[tuple[tuple[str, ...], str]] = []
    for level, title, source in parts:
        if level:
            titles = {lv: t for lv, t in titles.items() if lv < level} | (
                {level: title} if title else {}
            )
        elif body := squeeze(source):
            expected.append((tuple(titles[lv] for lv in sorted(titles)), body))

    chunks = chunk_text(text, target=target)
    got = [
        (path, "".join(squeeze(c.text) for c in group))
        for path, group in itertools.groupby(chunks, key=lambda c: c.heading_path)
    ]
    want = [
        (path, "".join(body for _, body in group))
        for path, group in itertools.groupby(expected, key=lambda e: e[0])
    ]
    assert got == want
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert all(c.text.strip() and "\r" not in c.text for c in chunks)
    # A chunk exceeds the target only by a code block (up to 2x) plus a tiny merged tail.
    assert all(len(c.text) <= 2 * target + 2 + target // 5 for c in chunks)


@_settings
@given(text=st.text(st.characters(blacklist_characters="#")), target=st.integers(1, 300))
def test_text_without_headings_loses_nothing(text: str, target: int) -> None:
    """Exact invariant: with no '#' there are no headings, so the chunks' concatenated text
    without whitespace equals the input without whitespace, whatever fences or junk it holds."""
    chunks = chunk_text(text, target=target)
    assert "".join(squeeze(c.text) for c in chunks) == squeeze(text)
    assert all(c.heading_path == () and c.text.strip() for c in chunks)
