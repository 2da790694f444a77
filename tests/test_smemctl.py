"""smemctl against the real daemon: tables, --json, and its exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smemctl.cli import main, parse_prometheus
from smemd import __version__
from tests.daemon_process import DaemonProcess, clean_env


def smemctl(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    code = main(["--socket", str(daemon.socket), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_status_table(daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = smemctl(daemon, capsys, "status")
    assert code == 0
    rows = {key: value.strip() for key, value in (line.split("  ", 1) for line in out.splitlines())}
    assert rows["version"] == __version__
    assert daemon.proc is not None and rows["pid"] == str(daemon.proc.pid)
    assert rows["state dir"] == str(daemon.state_dir)
    assert daemon.tcp in out and str(daemon.socket) in out


def test_status_json_is_the_daemons_reply(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = smemctl(daemon, capsys, "--json", "status")
    assert code == 0
    body = json.loads(out)
    assert body["listeners"]["tcp"] == daemon.tcp and body["fleetKind"] == "builtin"


def test_health(daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]) -> None:
    assert smemctl(daemon, capsys, "health")[:2] == (0, f"ok (smemd {__version__})\n")
    code, out, _ = smemctl(daemon, capsys, "--json", "health")
    assert (code, json.loads(out)) == (0, {"status": "ok", "version": __version__, "store": "ok"})


def test_metrics_text_and_json(daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = smemctl(daemon, capsys, "metrics")
    assert code == 0 and "# TYPE smem_http_requests_total counter" in out
    code, out, _ = smemctl(daemon, capsys, "--json", "metrics")
    samples = json.loads(out)
    assert code == 0
    assert any(
        s["name"] == "smem_http_requests_total" and s["labels"]["route"] == "/v1/metrics"
        for s in samples
    )


def test_parse_prometheus_handles_escaped_labels() -> None:
    samples = parse_prometheus('# HELP x\nm{a="1,2",b="q\\"x"} 3\nup 1.5\n')
    assert samples == [
        {"name": "m", "labels": {"a": "1,2", "b": 'q"x'}, "value": 3.0},
        {"name": "up", "labels": {}, "value": 1.5},
    ]


def test_activity(daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]) -> None:
    smemctl(daemon, capsys, "health")
    code, out, _ = smemctl(daemon, capsys, "activity")
    assert code == 0 and "/v1/health" in out and "p95 ms" in out


def test_log_level_change_and_error_reply(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = smemctl(daemon, capsys, "log-level", "DEBUG")
    assert (code, out) == (0, "smemd: info -> debug\n")
    code, out, _ = smemctl(daemon, capsys, "--json", "log-level", "info")
    assert code == 0 and json.loads(out) == {
        "logger": "smemd",
        "level": "info",
        "previous": "debug",
    }
    code, out, err = smemctl(daemon, capsys, "log-level", "shouty")
    assert (code, out) == (1, "")
    assert err.startswith("error 400: invalid request body: $.level")


def test_backup_into_a_new_directory_and_refused_into_one_that_holds_files(
    daemon: DaemonProcess, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = smemctl(daemon, capsys, "backup", str(tmp_path / "b"))
    assert code == 0, out
    rows = dict(line.split("  ", 1) for line in out.splitlines())
    assert rows["backup"].strip() == str(tmp_path / "b")
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert int(rows["files"]) == len(manifest["files"]) and int(rows["bytes"]) > 0
    code, out, err = smemctl(daemon, capsys, "backup", str(tmp_path / "b"))
    assert (code, out) == (1, "") and err.startswith("error 409: the backup's destination exists")


def test_not_running_is_exit_3_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.sock"
    assert main(["--socket", str(missing), "status"]) == 3
    assert capsys.readouterr().err == f"smemd is not running (no socket at {missing})\n"


def test_usage_errors_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert main([]) == 2


def test_socket_from_env(daemon: DaemonProcess) -> None:
    env = clean_env({"SMEM_SOCKET": str(daemon.socket)})
    result = subprocess.run(
        [sys.executable, "-m", "smemctl", "health"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (result.returncode, result.stdout) == (0, f"ok (smemd {__version__})\n")


def test_cli_import_stays_light() -> None:
    """`smemctl status` must start fast: the CLI never loads the daemon's heavy dependencies."""
    heavy = ["aiohttp", "aiosqlite", "numpy", "asyncssh", "smemd.daemon", "smemd.config"]
    code = f"import sys, smemctl.cli; print([m for m in {heavy!r} if m in sys.modules])"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
