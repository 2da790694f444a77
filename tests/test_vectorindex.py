"""The flat vector index: nearest first, live mask, explicit candidates, removal and growth."""

from __future__ import annotations

import numpy as np

from smemd.engine.vectorindex import FlatIndex


def unit(rng: np.random.Generator, n: int, d: int = 8) -> np.ndarray:
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_search_matches_a_brute_force_ranking() -> None:
    rng = np.random.default_rng(1)
    vectors = unit(rng, 500)
    index = FlatIndex(8, capacity=16)  # grows several times
    index.add(list(range(1000, 1500)), vectors, [True] * 500)
    query = unit(rng, 1)[0]
    expected = np.argsort(-(vectors @ query))[:10] + 1000
    assert [k for k, _ in index.search(query, 10)] == expected.tolist()
    scores = [s for _, s in index.search(query, 10)]
    assert (
        scores == sorted(scores, reverse=True)
        and abs(scores[0] - float(vectors[expected[0] - 1000] @ query)) < 1e-5
    )


def test_live_mask_among_and_removal() -> None:
    rng = np.random.default_rng(2)
    vectors = unit(rng, 4)
    index = FlatIndex(8)
    index.add([1, 2, 3, 4], vectors, [True, True, False, True])
    query = vectors[2]
    assert 3 not in [k for k, _ in index.search(query, 4)]
    assert index.search(query, 1, among={3})[0][0] == 3  # explicit candidates ignore the mask
    index.set_live(3, True)
    assert index.search(query, 1)[0][0] == 3
    index.remove([3])
    assert 3 not in [k for k, _ in index.search(query, 4)] and len(index) == 3
    assert index.search(query, 2, among={3, 99}) == []
    missing, present = index.cosines(query, [3, 1])
    assert missing == 0.0 and abs(present - float(vectors[0] @ query)) < 1e-6


def test_compaction_keeps_what_remains() -> None:
    rng = np.random.default_rng(3)
    vectors = unit(rng, 3000)
    index = FlatIndex(8)
    index.add(list(range(3000)), vectors, [True] * 3000)
    index.remove(set(range(0, 3000, 3)) | set(range(1, 3000, 3)))  # two thirds: compacts
    assert len(index) == 1000
    query = vectors[2999]
    assert index.search(query, 1)[0][0] == 2999
    index.add([5000], vectors[:1], [True])
    assert index.search(vectors[0], 1)[0][0] == 5000
