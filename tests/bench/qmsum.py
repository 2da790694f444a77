"""QMSum (Zhong et al., NAACL 2021; MIT) as a development set in the LoCoMo format: meetings as
people talk in them, transcribed (a product team's design meetings, a research group's weekly
ones, a parliament's committee), turns of a word ("Yeah .") among turns of a page, and questions
about what was said on a subject, or what someone thought of it.

SRC is one or more of the repository's directories of meetings (`data/ALL/val`, `test`, `train`),
one `<meeting>.json` each. A series' meetings, from every directory, make one conversation, each meeting a session, in their names' order and
dated a day apart: AMI's four meetings of one design project (`ES2006a` to `ES2006d`), ICSI's
meetings of one group (`Bed…`, `Bmr…`, `Bro…`), a committee's meetings on one subject (`covid_…`,
`education_…`). A turn is its speaker ("Project Manager", "Grad E", "Vaughan Gething AM") and
what they said, without the transcript's marks (`{vocalsound}`, `{disfmarker}`) and with its
tokens' spaces closed ("it 's" is "it's"); a turn left empty is dropped.

Each specific query makes a question whose evidence is the turns of its relevant spans, when they
hold at most E of them: a query over a third of a meeting ("Summarize the discussion about the
remote's buttons", 100 turns and more) is a summary, not something one recalls, and any turn of
it would count. The general queries ("Summarize the whole meeting") have no spans and are left
out. A question's category is the word it opens with: `what`, `why`, `how`, `summarize` or
`other`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.bench.locomo_format import day_of, put_session

_AMI_MEETING = re.compile(r"[A-Z]{2}\d{4}[a-d]")  # ES2006a: project ES2006, its first meeting
_MARK = re.compile(r"\{\w+\}")  # {vocalsound}, {disfmarker}, {gap}
# The transcripts' tokens stand apart ("it 's", "right .", "Mm - hmm"): closed up as written.
_SPACED = [
    (re.compile(r" +([.,?!;:])"), r"\1"),
    (re.compile(r"(\w) +(n't|'s|'re|'ve|'ll|'d|'m)\b"), r"\1\2"),
    (re.compile(r"(\w) - (\w)"), r"\1-\2"),
]
CATEGORIES = ("what", "why", "how", "summarize")


def series_of(meeting: str) -> str:
    """The series a meeting belongs to, by its name: `ES2006a` → `ES2006`, `Bro011` → `Bro`,
    `covid_2` → `covid`."""
    if _AMI_MEETING.fullmatch(meeting):
        return meeting[:-1]
    return re.sub(r"_?\d+$", "", meeting)


def said(content: str) -> str:
    """A transcribed turn as text: its marks out, its spaces closed, its whitespace squeezed."""
    text = " ".join(_MARK.sub(" ", content).split())
    for spaced, closed in _SPACED:
        text = spaced.sub(closed, text)
    return text.strip(" ,")


def qmsum(sources: list[Path], max_evidence: int) -> list[dict[str, Any]]:
    series: dict[str, list[Path]] = {}
    for path in sorted((p for s in sources for p in s.glob("*.json")), key=lambda p: p.stem):
        series.setdefault(series_of(path.stem), []).append(path)
    return [
        _sample(f"qm-{name}", [json.loads(p.read_text()) for p in paths], max_evidence)
        for name, paths in series.items()
    ]


def _sample(name: str, meetings: list[dict[str, Any]], max_evidence: int) -> dict[str, Any]:
    speakers = sorted({t["speaker"] for m in meetings for t in m["meeting_transcripts"]})
    conversation: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[-1]}
    qa: list[dict[str, Any]] = []
    for number, meeting in enumerate(meetings, start=1):
        turns: list[tuple[str, str]] = []
        where: dict[int, str] = {}  # the transcript's index of a turn kept -> its dia_id
        for index, turn in enumerate(meeting["meeting_transcripts"]):
            if text := said(turn["content"]):
                turns.append((turn["speaker"], text))
                where[index] = f"D{number}:{len(turns)}"
        put_session(conversation, number, day_of(number), turns)
        for query in meeting["specific_query_list"]:
            spanned = {
                index
                for first, last in query["relevant_text_span"]
                for index in range(int(first), int(last) + 1)
            }
            evidence = [where[i] for i in sorted(spanned) if i in where]
            if evidence and len(spanned) <= max_evidence:
                opening = query["query"].split(maxsplit=1)[0].lower()
                qa.append({
                    "question": query["query"], "answer": query["answer"], "evidence": evidence,
                    "category": opening if opening in CATEGORIES else "other",
                })  # fmt: skip
    return {"sample_id": name, "conversation": conversation, "qa": qa}
