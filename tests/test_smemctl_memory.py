"""smemctl's memory commands against the real daemon, each test in a namespace of its own."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from smemctl.cli import main
from smemctl.client import Client
from smemd.protocol.memory import DocumentOut
from tests.daemon_process import DaemonProcess


@pytest.fixture(autouse=True)
def pipe_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output into a pipe is not cut to a width unless $COLUMNS says so."""
    monkeypatch.delenv("COLUMNS", raising=False)


def smemctl(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    code = main(["--socket", str(daemon.socket), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def as_json(daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = smemctl(daemon, capsys, "--json", *args)
    assert code == 0, err
    return json.loads(out)


def job_count(daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], ns: str) -> int:
    jobs = as_json(daemon, capsys, "jobs", "--limit", "1000")["jobs"]
    return sum(job["namespace"] == ns for job in jobs)


def remembered(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], ns: str, text: str, *options: str
) -> str:
    """Remember the text, wait for it, and return the id of the one memory it became."""
    code, out, err = smemctl(daemon, capsys, "remember", text, "-n", ns, "--wait", *options)
    assert (code, out.split()[1:]) == (0, ["done"]), err
    memories = as_json(daemon, capsys, "list", "-n", ns)["memories"]
    assert [m["memory"] for m in memories] == [text]
    return str(memories[0]["id"])


def test_ingest_directory_skips_binaries_and_is_idempotent(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.md").write_text("My brother Bob plays the cello in Porto.\n")
    (tmp_path / "sub" / "b.md").write_text("# Trips\n\nI love hiking in the Alps every summer.\n")
    (tmp_path / "blob").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    code, out, err = smemctl(daemon, capsys, "ingest", str(tmp_path), "-n", "docs", "--wait")
    assert (code, err) == (0, "")  # no progress line: stderr is not a terminal
    lines = out.splitlines()
    assert lines[:2] == ["2 documents to docs: 2 done", "skipped 1: 1 binary"]
    assert lines[2].startswith("ingest ing_") and len(lines) == 3
    assert job_count(daemon, capsys, "docs") == 2

    doc, _ = Client(daemon.socket).get(
        f"/ns/docs/document/{quote('sub/b.md', safe='')}", DocumentOut
    )
    assert doc.custom_id == "sub/b.md"
    assert doc.metadata == {"source": str(tmp_path / "sub" / "b.md")}

    code, out, _ = smemctl(daemon, capsys, "ingest", str(tmp_path), "-n", "docs", "--wait")
    assert (code, out.splitlines()[0]) == (0, "2 documents to docs: 2 done")
    assert job_count(daemon, capsys, "docs") == 2


def test_ingest_stdin(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("Carol flies planes for TAP.\n"))
    reply = as_json(daemon, capsys, "ingest", "-", "-n", "stdin", "--wait")
    assert (reply["count"], reply["failed"], reply["results"][0]["status"]) == (1, 0, "done")
    memories = as_json(daemon, capsys, "list", "-n", "stdin")["memories"]
    assert [(m["memory"], m["metadata"]) for m in memories] == [
        ("Carol flies planes for TAP.", {"source": "stdin"})
    ]


def test_remember_then_search(daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]) -> None:
    memory_id = remembered(daemon, capsys, "recall", "My favourite colour is teal.")
    reply = as_json(daemon, capsys, "search", "favourite colour", "-n", "recall")
    assert reply["results"][0]["id"] == memory_id
    assert {r.get("memory") or r.get("chunk") for r in reply["results"]} == {
        "My favourite colour is teal."
    }
    code, out, _ = smemctl(daemon, capsys, "search", "teal", "-n", "recall", "--mode", "chunks")
    header, *rows = out.splitlines()
    assert code == 0 and header.split() == ["rank", "similarity", "kind", "text", "id"]
    assert len(rows) == 1 and rows[0].split()[2] == "chunk"


def test_text_is_cut_to_columns(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    remembered(daemon, capsys, "narrow", "I prefer long walks along the river Douro at dawn.")
    monkeypatch.setenv("COLUMNS", "70")
    code, out, _ = smemctl(daemon, capsys, "search", "walks", "-n", "narrow")
    assert code == 0 and "…" in out
    assert max(len(line) for line in out.splitlines()) <= 70


def test_list_history_forget_restore(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    memory_id = remembered(daemon, capsys, "forget", "I love hiking in the Alps every summer.")
    code, out, _ = smemctl(daemon, capsys, "history", memory_id, "-n", "forget")
    header, row = out.splitlines()
    assert code == 0 and "valid until" in header and "forgotten" in header
    assert row.split()[:3] == ["1", memory_id, "yes"]
    assert row.split()[5:7] == ["-", row.split()[3]]  # valid until: -, recorded when it held

    code, out, _ = smemctl(daemon, capsys, "forget", "hiking in the Alps", "-n", "forget")
    assert code == 0 and out.startswith("would forget 1 memory:\n") and memory_id in out
    assert "add --yes" in out
    assert [m["id"] for m in as_json(daemon, capsys, "list", "-n", "forget")["memories"]] == [
        memory_id
    ]

    code, out, _ = smemctl(daemon, capsys, "forget", "hiking in the Alps", "-n", "forget", "--yes")
    assert code == 0 and out.startswith("forgot 1 memory:\n")
    assert as_json(daemon, capsys, "list", "-n", "forget")["memories"] == []
    code, out, _ = smemctl(daemon, capsys, "list", "-n", "forget", "--forgotten")
    assert code == 0 and out.splitlines()[1].split()[:4] == [memory_id, "1", "yes", "yes"]

    code, out, _ = smemctl(daemon, capsys, "restore", memory_id, "-n", "forget")
    assert (code, out) == (
        0,
        f"restored {memory_id} (version 1): I love hiking in the Alps every summer.\n",
    )
    assert [m["id"] for m in as_json(daemon, capsys, "list", "-n", "forget")["memories"]] == [
        memory_id
    ]


def test_forget_unknown_id_is_exit_1(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = smemctl(daemon, capsys, "forget", "--id", "mem_nope", "--reason", "test")
    assert (code, out) == (1, "forgot 0 memories\n")
    assert err == "mem_nope: not found\n1 of 1 memories not forgotten\n"


def test_profile(daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]) -> None:
    memory_id = remembered(daemon, capsys, "profile", "I prefer green tea over coffee.")
    code, out, _ = smemctl(daemon, capsys, "profile", "-n", "profile")
    assert code == 0
    assert out.splitlines() == [
        "static:",
        "id                    text",
        f"{memory_id}  I prefer green tea over coffee.",
        "dynamic:",
        "(none)",
    ]
    reply = as_json(daemon, capsys, "profile", "-n", "profile")
    assert reply["profile"]["static"] == [
        {"id": memory_id, "memory": "I prefer green tea over coffee."}
    ]


def test_history_shows_both_times_and_as_of_reads_either(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    moved = remembered(daemon, capsys, "times", "Alex lives in Portland.", "--date", "2025-03-15")
    # An older diary entry, stored after: it takes its place in the past.
    code, _, err = smemctl(
        daemon, capsys, "remember", "Alex lives in Seattle.", "-n", "times", "--wait",
        "--date", "2024-11-02T00:00:00Z",
    )  # fmt: skip
    assert code == 0, err
    code, out, _ = smemctl(daemon, capsys, "history", moved, "-n", "times")
    header, *rows = out.splitlines()
    assert code == 0 and header.split()[:9] == [
        "version", "id", "latest", "valid", "from", "valid", "until", "recorded", "superseded",
    ]  # fmt: skip
    seattle, portland = (row.split() for row in rows)
    assert (seattle[0], seattle[2], portland[0], portland[1], portland[2]) == (
        "1", "no", "2", moved, "yes",
    )  # fmt: skip
    assert seattle[3] == "2024-11-02" and seattle[5] == portland[3] == "2025-03-15"
    assert seattle[9] == seattle[7]  # never the latest: superseded as it was recorded

    then = as_json(daemon, capsys, "search", "Where did Alex live?", "-n", "times", "--mode", "memories",
                   "--as-of", "2025-01-01T00:00:00Z")  # fmt: skip
    assert [r["memory"] for r in then["results"]] == ["Alex lives in Seattle."]
    profile = as_json(daemon, capsys, "profile", "-n", "times", "--as-of", "2025-01-01T00:00:00Z")
    assert [f["memory"] for f in profile["profile"]["static"]] == ["Alex lives in Seattle."]
    believed = as_json(daemon, capsys, "search", "Where did Alex live?", "-n", "times",
                       "--as-of-recorded", "2020-01-01T00:00:00Z")  # fmt: skip
    assert believed["results"] == []  # nothing was recorded yet


def test_stats_and_jobs(daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]) -> None:
    remembered(daemon, capsys, "stats", "Dana keeps bees on her roof in Lyon.")
    code, out, _ = smemctl(daemon, capsys, "stats", "-n", "stats")
    rows = dict(line.split(None, 1) for line in out.splitlines())
    assert code == 0
    assert (rows["documents"], rows["memories"], rows["jobs"]) == ("1", "1", "done 1")
    assert as_json(daemon, capsys, "stats", "-n", "stats")["jobs"] == {"done": 1}

    code, out, _ = smemctl(daemon, capsys, "stats")
    assert code == 0 and out.splitlines()[0].split() == [
        "namespace",
        "documents",
        "memories",
        "created",
    ]
    assert any(line.split()[:3] == ["stats", "1", "1"] for line in out.splitlines())
    code, _, err = smemctl(daemon, capsys, "stats", "-n", "stat")  # a prefix is not a match
    assert (code, err) == (1, "error 404: namespace not found: no namespace 'stat'\n")

    code, out, _ = smemctl(daemon, capsys, "jobs", "--limit", "5")
    header, *rows_, counts = out.splitlines()
    assert code == 0 and header.split()[:4] == ["id", "namespace", "document", "phase"]
    assert rows_ and len(rows_) <= 5 and counts.startswith("jobs: done ")


@pytest.mark.parametrize(
    "args",
    [
        ["forget"],
        ["forget", "tea", "--id", "mem_x"],
        ["forget", "tea", "--reason", "why"],
        ["search", "tea", "--mode", "fuzzy"],
        ["search", "tea", "--threshold", "2"],
        ["search", "tea", "--as-of", "yesterday"],
        ["search", "tea", "--as-of-recorded", "yesterday"],
        ["profile", "--as-of", "last week"],
        ["remember", "tea", "--date", "today"],
        ["ingest", "/nonexistent/smem"],
    ],
)
def test_usage_errors_are_exit_2(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = smemctl(daemon, capsys, *args)
    assert (code, out) == (2, "")
    assert f"smemctl {args[0]}: error:" in err


def test_export_to_a_file_to_a_gz_file_and_to_stdout(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    remembered(daemon, capsys, "exported", "Kim keeps bees in the garden.")
    code, out, err = smemctl(daemon, capsys, "export", "-n", "exported", str(tmp_path / "e.jsonl"))
    assert code == 0, err
    rows = dict(line.split("  ", 1) for line in out.splitlines())
    assert rows["memory"].strip() == "1" and rows["document"].strip() == "1"
    lines = (tmp_path / "e.jsonl").read_bytes().splitlines()
    assert json.loads(lines[0])["format"] == "smem-export"
    assert json.loads(lines[-1])["record"] == "end"
    assert not (tmp_path / "e.jsonl.partial").exists()
    code, _, err = smemctl(daemon, capsys, "export", "-n", "exported", str(tmp_path / "e.jsonl.gz"))
    assert code == 0, err
    unpacked = gzip.decompress((tmp_path / "e.jsonl.gz").read_bytes()).splitlines()
    assert unpacked[1:] == lines[1:]  # all but the header's moment
    code, out, err = smemctl(daemon, capsys, "export", "-n", "exported")
    assert code == 0 and out.splitlines()[1:] == [line.decode() for line in lines[1:]]
    assert "records" in err
    code, out, err = smemctl(daemon, capsys, "export", "-n", "nobody", str(tmp_path / "n.jsonl"))
    assert (code, out) == (1, "") and "404" in err
    assert not (tmp_path / "n.jsonl").exists() and not (tmp_path / "n.jsonl.partial").exists()


def test_import_puts_an_export_back_and_a_bad_file_changes_nothing(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    remembered(daemon, capsys, "imported", "Ana grows tomatoes on the balcony.")
    packed = tmp_path / "i.jsonl.gz"
    code, _, err = smemctl(daemon, capsys, "export", "-n", "imported", str(packed))
    assert code == 0, err
    code, out, err = smemctl(daemon, capsys, "import", str(packed))
    assert (code, out) == (1, "") and "409" in err and "holds data" in err
    Client(daemon.socket).call("DELETE", "/ns/imported")
    # Cut off: refused, naming why; nothing comes back.
    whole = gzip.decompress(packed.read_bytes())
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(whole.rsplit(b"\n", 2)[0] + b"\n")
    code, out, err = smemctl(daemon, capsys, "import", "-n", "imported", str(cut))
    assert (code, out) == (1, "") and "400" in err and "cut off" in err
    assert as_json(daemon, capsys, "list", "-n", "imported")["memories"] == []
    # The whole file (the namespace from its header) brings back what was there.
    code, out, err = smemctl(daemon, capsys, "import", str(packed))
    assert code == 0, err
    rows = dict(line.split("  ", 1) for line in out.splitlines())
    assert rows["namespace"].strip() == "imported" and rows["memory"].strip() == "1"
    memories = as_json(daemon, capsys, "list", "-n", "imported")["memories"]
    assert [m["memory"] for m in memories] == ["Ana grows tomatoes on the balcony."]
    # Merged into the namespace it came from: every record held, each skipped.
    code, out, err = smemctl(daemon, capsys, "import", "--merge", "skip", str(packed))
    assert code == 0, err
    rows = dict(line.split("  ", 1) for line in out.splitlines())
    assert int(rows["held (skip)"]) >= 3, out  # its document, chunk and memory at least
    code, _, err = smemctl(daemon, capsys, "import", "--merge", "skip", "--from", "texts", str(cut))
    assert code == 1 and "--merge is for an smem export" in err
    code, _, err = smemctl(daemon, capsys, "import", str(tmp_path / "none.jsonl"))
    assert code == 1 and "cannot read" in err


def test_import_from_mem0_and_from_texts_reads_each_afresh(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The shape Mem0's get_all returns (v1.1): its ids go into each document's metadata.
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps({"results": [
        {"id": "a1", "memory": "Likes hiking in the Alps", "user_id": "alice",
         "created_at": "2024-07-20T01:30:00.123456-07:00", "metadata": {"source": "chat", "deep": {"x": 1}},
         "categories": ["hobbies"], "hash": "h1"},
        {"id": "b1", "memory": "Is allergic to peanuts", "user_id": "bob", "agent_id": "nurse",
         "created_at": "2024-07-21T10:00:00Z", "metadata": None},
    ]}))  # fmt: skip
    args = ["import", "--from", "mem0", "-n", "from-mem0", "--wait", str(mem0)]
    code, out, err = smemctl(daemon, capsys, *args)
    assert code == 0, err
    assert out.startswith("2 documents to from-mem0")
    documents = as_json(daemon, capsys, "list", "-n", "from-mem0")["memories"]
    assert sorted(m["memory"] for m in documents) == [
        "Is allergic to peanuts",
        "Likes hiking in the Alps",
    ]
    client = Client(daemon.socket)
    listed = json.loads(client.call("POST", "/ns/from-mem0/list/documents", {}))
    by_id = {d["customId"]: d for d in listed["documents"]}
    assert by_id["mem0-a1"]["metadata"]["userId"] == "alice"
    assert by_id["mem0-a1"]["metadata"]["deep"] == '{"x":1}'
    assert by_id["mem0-b1"]["metadata"] == {"mem0Id": "b1", "userId": "bob", "agentId": "nurse"}
    code, _, err = smemctl(daemon, capsys, *args)  # the same file again adds nothing
    assert code == 0, err
    assert len(as_json(daemon, capsys, "list", "-n", "from-mem0")["memories"]) == 2
    texts = tmp_path / "texts.jsonl"
    texts.write_text(
        '"Ravi bakes sourdough."\n{"text": "Ravi moved to Leeds.", "date": "2025-01-02"}\n'
    )
    code, out, err = smemctl(daemon, capsys, "import", "--from", "texts", "-n", "texts", str(texts))
    assert code == 0 and out.startswith("2 documents to texts"), err
    texts.write_text('"fine"\n{"txt": "a typo"}\n')
    code, out, err = smemctl(daemon, capsys, "import", "--from", "texts", "-n", "texts", str(texts))
    assert (code, out) == (2, "") and "line 2" in err
    mem0.write_text(json.dumps([{"memory": ""}]))
    code, out, err = smemctl(daemon, capsys, "import", "--from", "mem0", str(mem0))
    assert (code, out) == (2, "") and "memory 1" in err


def test_undo_and_redo_an_ingest_by_the_id_it_printed(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "a.md").write_text("Lena keeps three cats.\n")
    (tmp_path / "b.md").write_text("Lena works as a pilot.\n")
    code, out, err = smemctl(daemon, capsys, "ingest", str(tmp_path), "-n", "undone", "--wait")
    assert code == 0, err
    ingest = out.splitlines()[-1].split()[1]
    assert ingest.startswith("ing_")
    before = as_json(daemon, capsys, "list", "-n", "undone")["memories"]
    assert len(before) == 2
    code, out, err = smemctl(daemon, capsys, "undo", ingest, "-n", "undone")
    assert code == 0, err
    rows = dict(line.split("  ", 1) for line in out.splitlines())
    assert rows["documents retracted"].strip() == "2"
    assert as_json(daemon, capsys, "list", "-n", "undone")["memories"] == []
    code, out, err = smemctl(daemon, capsys, "redo", ingest, "-n", "undone")
    assert code == 0, err
    assert len(as_json(daemon, capsys, "list", "-n", "undone")["memories"]) == 2
    code, out, err = smemctl(daemon, capsys, "undo", "ing_unknown", "-n", "undone")
    assert (code, out) == (1, "") and "404" in err


def test_rederive_shows_its_diff_and_applies(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    remembered(daemon, capsys, "again", "Omar teaches chemistry in Cairo.")
    code, out, err = smemctl(daemon, capsys, "rederive", "-n", "again", "--wait")
    assert code == 0, err
    rows = dict(line.split("  ", 1) for line in out.splitlines() if "  " in line)
    assert rows["state"].strip() == "ready" and rows["documents"].strip() == "1"
    assert rows["added"].strip() == "0" and rows["gone"].strip() == "0"
    code, out, err = smemctl(daemon, capsys, "rederive", "-n", "again", "--apply")
    assert code == 0 and "applied" in out, err
    memories = as_json(daemon, capsys, "list", "-n", "again")["memories"]
    assert [m["memory"] for m in memories] == ["Omar teaches chemistry in Cairo."]
    code, out, err = smemctl(daemon, capsys, "rederive", "-n", "again", "--discard")
    assert (code, out) == (1, "") and "404" in err
