"""The float16 vectors a graph re-scores on: rows in memory until a save, then read from the
file it wrote; a key added again reads its newest row; a file of the wrong size is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smemd.engine.index.ann import AnnIndex
from smemd.engine.index.flat import FlatIndex
from smemd.engine.index.rescoring import ExactVectors
from tests.test_ann import DIMENSION, clustered


def unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIMENSION)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_rows_move_from_memory_to_the_saved_file_and_the_newest_row_wins(tmp_path: Path) -> None:
    vectors, rows = ExactVectors(DIMENSION), unit_rows(3000, 0)
    keys = np.arange(3000, dtype=np.int64) * 2 + 1
    for start in range(0, 3000, 700):  # pages of a build, past the first doubling
        vectors.add(keys[start : start + 700], rows[start : start + 700])
    rows[0] = unit_rows(1, 2)[0]
    vectors.add(keys[:1], rows[:1])  # added again before any save: two rows in memory
    asked = np.array([keys[5], 4, keys[2999], keys[0]])  # 4 was never added
    expected = np.stack([rows[5], np.zeros(DIMENSION), rows[2999], rows[0]])
    assert vectors.get(asked) == pytest.approx(expected, abs=1e-3)

    vectors.save(tmp_path / "exact", keys)
    assert (tmp_path / "exact").stat().st_size == 3000 * DIMENSION * 2
    assert vectors.get(asked) == pytest.approx(expected, abs=1e-3)  # now read from the file

    again = unit_rows(2, 1)  # after the save: one key added again, one new
    vectors.add(np.array([keys[5], 9001]), again)
    assert vectors.get(np.array([keys[5], 9001, keys[6]])) == pytest.approx(
        np.stack([again[0], again[1], rows[6]]), abs=1e-3
    )
    kept = np.sort(np.concatenate([keys[keys != keys[7]], [9001]]))  # keys[7] removed
    vectors.save(tmp_path / "exact2", kept)  # the second save reads the first file
    reopened = ExactVectors.opened(DIMENSION, tmp_path / "exact2", kept)
    assert reopened.get(np.array([keys[5], 9001, keys[6], keys[7]])) == pytest.approx(
        np.stack([again[0], again[1], rows[6], np.zeros(DIMENSION)]), abs=1e-3
    )
    with pytest.raises(ValueError, match="rows"):
        ExactVectors.opened(DIMENSION, tmp_path / "exact2", kept[:-1])


def test_a_graph_saved_then_written_to_scores_as_the_flat_index_does(tmp_path: Path) -> None:
    rows, queries = clustered(2000, seed=3)
    ann, flat = AnnIndex(DIMENSION), FlatIndex(DIMENSION, exact_up_to=10**9)
    keys = list(range(1, 2001))
    ann.add(keys[:1500], rows[:1500], [True] * 1500)
    ann.save_exact(tmp_path / "exact")  # the first 1500 now come from the file
    ann.add(keys[1500:], rows[1500:], [True] * 500)
    flat.add(keys, rows, [True] * 2000)
    for q in queries[:10]:
        found, exact = ann.search(q, 10), flat.search(q, 10)
        assert len({k for k, _ in found} & {k for k, _ in exact}) >= 9
        assert ann.cosines(q, [k for k, _ in exact]) == pytest.approx(
            [s for _, s in exact], abs=1e-3
        )
