"""RowsByKey answers as a dict would, through sets, re-sets, pops, folds and a rebuild from a
key column."""

from __future__ import annotations

import random

import numpy as np
import pytest

from smemd.engine.index import rows_by_key
from smemd.engine.index.rows_by_key import RowsByKey


@pytest.mark.parametrize("fold_at", [4, 1000])
def test_it_answers_as_a_dict_would(monkeypatch: pytest.MonkeyPatch, fold_at: int) -> None:
    monkeypatch.setattr(rows_by_key, "FOLD_AT", fold_at)  # 4: folds all the time
    rng = random.Random(fold_at)
    column = np.array([5, -1, 9, 5, 2], np.int64)  # key 5 twice: its later row counts
    model = {5: 3, 9: 2, 2: 4}
    index = RowsByKey.from_column(column)
    row = 5
    for _ in range(3000):
        key, op = rng.randrange(60), rng.random()
        if op < 0.5:
            index.set(key, row)
            model[key] = row
            row += 1
        elif op < 0.8:
            assert index.pop(key) == model.pop(key, None)
        else:
            assert index.get(key) == model.get(key)
        assert len(index) == len(model)
    asked = np.arange(-2, 64, dtype=np.int64)
    assert index.rows(asked).tolist() == [model.get(k, -1) for k in asked.tolist()]
