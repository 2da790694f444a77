"""smemctl's entity commands against the real daemon: list, one entity's story, suggestions,
merge, split and the decisions made."""

from __future__ import annotations

import pytest

from tests.daemon_process import DaemonProcess
from tests.test_smemctl_memory import as_json, smemctl

NS = "smemctl-entities"


def test_entities_entity_merge_and_split(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    for text in (
        "Robert Smith moved to Denver in the spring.",
        "Bob Smith goes hiking near Denver every weekend.",
    ):
        code, out, err = smemctl(daemon, capsys, "remember", text, "-n", NS, "--wait")
        assert code == 0 and out.split()[1:] == ["done"], err
    code, out, err = smemctl(daemon, capsys, "entities", "-n", NS)
    assert code == 0, err
    assert "Robert Smith" in out and "Bob Smith" in out and "Denver" in out

    code, out, err = smemctl(daemon, capsys, "entities", "-n", NS, "suggestions")
    assert code == 0, err
    assert "Bob Smith" in out and "Robert Smith" in out and "smemctl entities merge" in out

    code, out, err = smemctl(
        daemon, capsys, "entities", "-n", NS, "merge", "Robert Smith", "bob smith"
    )
    assert code == 0, err
    assert out.startswith("merged into Robert Smith") and "aliases Bob Smith; 2 memories" in out

    code, out, err = smemctl(daemon, capsys, "entity", "Bob Smith", "-n", NS)
    assert code == 0, err
    head, *rest = out.splitlines()
    assert head.startswith("Robert Smith (person, also Bob Smith): 2 memories"), out
    assert "now:" in rest and "named with: Denver (2)" in out
    profile = as_json(daemon, capsys, "entity", "robert smith", "-n", NS)
    assert profile["entity"]["aliases"] == ["Bob Smith"] and len(profile["current"]) == 2

    code, out, err = smemctl(daemon, capsys, "entities", "-n", NS, "split", "Bob Smith")
    assert code == 0, err
    assert out.strip() == "split: Robert Smith (1 memory); Bob Smith (1 memory)"
    decided = as_json(daemon, capsys, "entities", "-n", NS, "decisions")["decisions"]
    assert [(d["same"], d["by"]) for d in decided] == [(False, "person"), (True, "person")]
    code, out, err = smemctl(daemon, capsys, "entities", "-n", NS, "decisions")
    assert code == 0 and "same as" in out and "undone" in out, err


def test_an_unknown_entity_is_a_clear_error(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = smemctl(daemon, capsys, "entity", "Nobody At All", "-n", NS)
    assert code != 0 and out == ""
    assert "entity not found" in err and "Nobody At All" in err
    code, out, err = smemctl(daemon, capsys, "entities", "-n", NS, "split", "Nobody At All")
    assert code != 0 and "not found" in err
