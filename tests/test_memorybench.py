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
    assert got.v4.n == got.v5.n == 6
    assert got.results and got.unmapped_v4 == got.unmapped_v5 == 0
    assert got.v5.hits[10] >= 3, got.line(1)  # the comparison means something: v5 finds turns
    assert [got.v4.hits[k] for k in KS] == [got.v5.hits[k] for k in KS], got.line(1)
    assert got.v4.reciprocal == pytest.approx(got.v5.reciprocal), got.line(1)
