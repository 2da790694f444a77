"""A saved lexical index loads back whole and searches alike, or loading says why it cannot."""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import numpy as np
import pytest

from smemd.engine.index import files
from smemd.engine.index.bm25 import LexicalIndex
from smemd.engine.index.lexical_files import IndexFileError

WORDS = """alex moved portland seattle running runs ran hiking trail coffee morning painted
painting sister brother dog cats adopted adoption guitar lessons lesson concert tickets camping
lake mountains bakery baking bread café naïve zoë 東京 2024""".split()


def corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(n)]


def queries(index: LexicalIndex) -> list[list[str]]:
    terms = sorted(index._term_ids)
    return [[term] for term in terms] + [terms[i : i + 3] for i in range(0, len(terms), 2)]


def results(index: LexicalIndex, among: set[int] | None = None) -> list[list[tuple[int, float]]]:
    return [index.search(terms, 50, among) for terms in queries(index)]


def assert_alike(
    ours: list[list[tuple[int, float]]], theirs: list[list[tuple[int, float]]]
) -> None:
    assert [[key for key, _ in hits] for hits in ours] == [
        [key for key, _ in hits] for hits in theirs
    ]
    for a, b in zip(ours, theirs, strict=True):
        assert [score for _, score in a] == pytest.approx([score for _, score in b], rel=1e-6)


def busy_index(seed: int = 1) -> LexicalIndex:
    """Compressed postings, removed rows (holes not yet closed), rows not live, recent postings."""
    texts = corpus(3000, seed)
    index = LexicalIndex()
    index.add(range(1, 2801), texts[:2800], [key % 7 != 0 for key in range(1, 2801)])
    index.remove(range(1, 2801, 5))
    index.set_live(2, False)
    index.add(range(5001, 5201), texts[2800:], [True] * 200)  # too few postings to fold in
    assert index._recent and len(index) < index._size
    return index


def test_a_loaded_index_searches_as_the_saved_one(tmp_path: Path) -> None:
    index = busy_index()
    among = set(range(0, 6000, 3))
    before, before_among = results(index), results(index, among)
    index.save(tmp_path / "words")
    assert index._recent and len(index) < index._size  # saving leaves the index as it was
    loaded = LexicalIndex.load(tmp_path / "words")
    assert len(loaded) == len(index) == 2800 - 560 + 200
    assert_alike(results(index), before)
    assert_alike(results(loaded), before)
    assert_alike(results(loaded, among), before_among)


def test_a_loaded_index_takes_further_changes(tmp_path: Path) -> None:
    index = busy_index(seed=2)
    index.save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    more = corpus(5000, seed=3)
    for changing in (index, loaded):
        changing.add(range(10_000, 15_000), more, [True] * 5000)  # enough to fold in
        changing.set_live(10_001, False)
        changing.set_live(2, True)
        changing.remove([10_002, 3, 5001])
    assert_alike(results(loaded), results(index))
    loaded.save(tmp_path)  # a second save replaces the first, and its files
    assert len(list(tmp_path.iterdir())) == 1 + 7
    assert_alike(results(LexicalIndex.load(tmp_path)), results(index))


def test_an_empty_index_round_trips(tmp_path: Path) -> None:
    LexicalIndex().save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    assert len(loaded) == 0 and loaded.search(["alex"], 5) == []
    loaded.add([1], ["alex moved"], [True])
    assert loaded.search(["alex"], 5)[0][0] == 1


def small_save(directory: Path) -> dict[str, Path]:
    index = LexicalIndex()
    index.add(
        [3, 9, 4], ["alex moved to portland", "café lessons", "guitar guitar lake"], [True] * 3
    )
    index.save(directory)
    header = json.loads((directory / "header.json").read_text())
    files = {name: directory / entry["file"] for name, entry in header["files"].items()}
    return files | {"header": directory / "header.json"}


@pytest.mark.parametrize(
    "name", ["header", "keys", "live", "length", "start", "rows", "tf", "terms"]
)
def test_every_flipped_bit_and_every_cut_is_caught(tmp_path: Path, name: str) -> None:
    path = small_save(tmp_path)[name]
    original = path.read_bytes()
    bits = (0x01,) if name == "header" else (0x01, 0x80)  # in JSON a high bit is bad UTF-8
    for at in range(len(original)):
        for bit in bits:
            flipped = bytearray(original)
            flipped[at] ^= bit
            path.write_bytes(flipped)
            with pytest.raises(IndexFileError):
                LexicalIndex.load(tmp_path)
    for length in range(len(original)):
        path.write_bytes(original[:length])
        with pytest.raises(IndexFileError):
            LexicalIndex.load(tmp_path)
    path.write_bytes(original)
    assert len(LexicalIndex.load(tmp_path)) == 3


@pytest.mark.parametrize("name", ["header", "keys", "rows", "terms"])
def test_a_missing_file_is_caught(tmp_path: Path, name: str) -> None:
    small_save(tmp_path)[name].unlink()
    with pytest.raises(IndexFileError):
        LexicalIndex.load(tmp_path)


def test_no_directory_is_caught(tmp_path: Path) -> None:
    with pytest.raises(IndexFileError):
        LexicalIndex.load(tmp_path / "never-saved")


def test_another_format_is_refused(tmp_path: Path) -> None:
    header_path = small_save(tmp_path)["header"]
    header = json.loads(header_path.read_text())
    header["format"] = files.FORMAT + 1
    header_path.write_text(json.dumps(header))
    with pytest.raises(IndexFileError, match="format"):
        LexicalIndex.load(tmp_path)


def test_a_consistent_but_wrong_shape_is_refused(tmp_path: Path) -> None:
    """Files whose digests match but which disagree with the header's counts."""
    files = small_save(tmp_path)
    with files["keys"].open("wb") as file:
        np.save(file, np.array([3, 9], dtype=np.int64), allow_pickle=False)
    header = json.loads(files["header"].read_text())
    header["files"]["keys"]["blake2b"] = hashlib.blake2b(files["keys"].read_bytes()).hexdigest()
    files["header"].write_text(json.dumps(header))
    with pytest.raises(IndexFileError, match="shape"):
        LexicalIndex.load(tmp_path)


@pytest.mark.parametrize("failing", ["replace", "save", "fsync"])
def test_an_interrupted_save_leaves_the_last_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    first = busy_index(seed=4)
    first.save(tmp_path)
    expected = results(first)
    saved_files = sorted(path.name for path in tmp_path.iterdir())
    second = LexicalIndex()
    second.add(range(100), corpus(100, seed=5), [True] * 100)
    calls = 0

    def fail(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 3 or failing == "replace":  # part-way through the data files, or at the end
            raise OSError("disk gone")
        return original(*args, **kwargs)

    owner = {"replace": os, "save": np, "fsync": os}[failing]
    original = getattr(owner, failing)
    monkeypatch.setattr(owner, failing, fail)
    with pytest.raises(OSError, match="disk gone"):
        second.save(tmp_path)
    monkeypatch.undo()
    assert sorted(path.name for path in tmp_path.iterdir()) == saved_files  # no litter
    assert_alike(results(LexicalIndex.load(tmp_path)), expected)


def test_a_crashed_saves_files_are_ignored_then_removed(tmp_path: Path) -> None:
    """A crash runs no clean-up: its files stay beside the last save until the next one."""
    small_save(tmp_path)
    litter = ["keys.0badf00d.npy", "terms.0badf00d.txt", "header.json.tmp-0badf00d"]
    for name in litter:
        (tmp_path / name).write_bytes(b"half written")
    (tmp_path / "notes.txt").write_text("not the index's")
    assert len(LexicalIndex.load(tmp_path)) == 3
    index = LexicalIndex.load(tmp_path)
    index.save(tmp_path)
    names = {path.name for path in tmp_path.iterdir()}
    assert not names & set(litter) and "notes.txt" in names and len(names) == 1 + 7 + 1
