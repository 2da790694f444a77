"""QMSum's meetings as a retrieval development set (tests/bench/qmsum.py): a series' meetings one
conversation across directories, turns without the transcript's marks, and each narrow query a
question whose evidence is its spans' turns."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.qmsum import qmsum, said, series_of
from tests.bench.retrieval import load


def _meeting(turns: list[tuple[str, str]], queries: list[tuple[str, list[list[str]]]]) -> str:
    return json.dumps({
        "topic_list": [],
        "general_query_list": [{"query": "Summarize the whole meeting.", "answer": "…"}],
        "specific_query_list": [
            {"query": q, "answer": "…", "relevant_text_span": spans} for q, spans in queries
        ],
        "meeting_transcripts": [{"speaker": s, "content": c} for s, c in turns],
    })  # fmt: skip


def test_a_series_of_meetings_becomes_one_conversation_of_dated_sessions(tmp_path: Path) -> None:
    (tmp_path / "val").mkdir()
    (tmp_path / "test").mkdir()
    (tmp_path / "val" / "ES2006b.json").write_text(_meeting(
        [("Marketing", "Is that only gonna be within our range then ?"),
         ("Project Manager", "{vocalsound} {disfmarker}"),
         ("Industrial Designer", "Oh yeah I think that 's very doable .")],
        [("What did Marketing ask about the range?", [["0", "2"]]),
         ("Summarize the discussion about the design.", [["0", "1"], ["2", "2"]])],
    ))  # fmt: skip
    (tmp_path / "test" / "ES2006a.json").write_text(_meeting(
        [("Project Manager", "Mm - hmm . Let 's begin .")],
        [("Why did the Project Manager begin?", [["0", "0"]])],
    ))  # fmt: skip
    (tmp_path / "test" / "covid_4.json").write_text(_meeting(
        [("The Chair", "I call the meeting to order.")] * 5,
        [("What did the Chair say?", [["0", "4"]])],  # five turns: past max_evidence
    ))  # fmt: skip
    samples = qmsum([tmp_path / "val", tmp_path / "test"], max_evidence=3)
    assert [s["sample_id"] for s in samples] == ["qm-ES2006", "qm-covid"]
    conversation = samples[0]["conversation"]
    # ES2006a opens the project, whichever directory holds it; a meeting a day.
    assert conversation["session_1"] == [
        {"speaker": "Project Manager", "dia_id": "D1:1", "text": "Mm-hmm. Let's begin."}
    ]
    assert conversation["session_2_date_time"] == "10:00 AM on 02 January, 2024"
    # The turn of marks alone is dropped; the evidence names the turns kept.
    assert [t["text"] for t in conversation["session_2"]] == [
        "Is that only gonna be within our range then?", "Oh yeah I think that's very doable.",
    ]  # fmt: skip
    assert [(q["category"], q["evidence"]) for q in samples[0]["qa"]] == [
        ("why", ["D1:1"]), ("what", ["D2:1", "D2:2"]), ("summarize", ["D2:1", "D2:2"]),
    ]  # fmt: skip
    assert samples[1]["qa"] == []
    path = tmp_path / "qm.json"
    path.write_text(json.dumps(samples))
    read = load(path)
    assert [len(c.documents) for c in read] == [3, 5]
    assert read[0].questions[1].evidence == frozenset({"D2:1", "D2:2"})


def test_meetings_are_grouped_by_their_series_name() -> None:
    assert series_of("ES2006a") == series_of("ES2006d") == "ES2006"
    assert series_of("Bro011") == series_of("Bro027") == "Bro"
    assert series_of("education_10") == "education"
    assert said(" , {gap} uh , we 're here , aren't we ? ") == "uh, we're here, aren't we?"
