"""tests/bench/memorybench.py, small: the first sessions of one LoCoMo conversation added as
memorybench adds them (v3), a few of their questions asked through v4 with memorybench's body and
through v5; the two rank the same turns. Skips where the LoCoMo file is absent (it is not shipped).
"""

from __future__ import annotations

import pytest

from tests.bench.memorybench import run
from tests.bench.retrieval import DEFAULT_PATH, KS, Http
from tests.daemon_process import DaemonProcess


def test_v4_search_recalls_what_v5_does(daemon_process: DaemonProcess) -> None:
    if not DEFAULT_PATH.is_file():
        pytest.skip(f"no LoCoMo file at {DEFAULT_PATH}")
    daemon_process.start(["--log-level", "warning"])
    http = Http(daemon_process.socket)
    try:
        got = run(http, DEFAULT_PATH, conversations=1, sessions=2, questions=6)
    finally:
        http.conn.close()
    v4, v5 = got.v4.scores, got.v5.scores
    assert v4.n == v5.n == 6
    assert got.v4.results and got.v4.unmapped == got.v5.unmapped == 0
    assert v5.hits[10] >= 3, got.line(1)  # the comparison means something: v5 finds turns
    assert [v4.hits[k] for k in KS] == [v5.hits[k] for k in KS], got.line(1)
    assert v4.reciprocal == pytest.approx(v5.reciprocal), got.line(1)
