"""The real `smemd` as a child process, isolated from /etc/smem and the caller's environment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.pace import scaled

ISOLATED_ENV_PREFIXES = ("SMEM_", "NOTIFY_SOCKET", "WATCHDOG_", "JOURNAL_STREAM")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(ISOLATED_ENV_PREFIXES)}
    env.update(extra or {})
    return env


class DaemonProcess:
    def __init__(self, state_dir: Path, config: Path | None = None) -> None:
        self.state_dir = state_dir
        self.config = config  # None: no config file at all
        self.socket = state_dir / "smemd.sock"
        self.addr_file = state_dir / "smemd.addr"
        self.log_file = state_dir / "smemd.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def args(self, extra: Sequence[str] = ()) -> list[str]:
        return [
            sys.executable, "-m", "smemd", "--config", str(self.config or os.devnull),
            "--state-dir", str(self.state_dir), "--socket", str(self.socket),
            "--listen", "127.0.0.1:0", *extra,
        ]  # fmt: skip

    def start(
        self, extra: Sequence[str] = (), env: Mapping[str, str] | None = None, wait: bool = True,
        open_files: int | None = None,
    ) -> DaemonProcess:  # fmt: skip
        """`open_files`: the process's limit on open files, soft and hard (`ulimit -n`)."""
        if wait:
            # An addr file left by a daemon killed, or one still running on this state dir,
            # would read as this one ready: a bench would then search the other daemon.
            self.addr_file.unlink(missing_ok=True)
        args = self.args(extra)
        if open_files is not None:
            args = ["prlimit", f"--nofile={open_files}:{open_files}", *args]
        # A file, not a pipe: an unread pipe fills up and blocks the daemon's logging.
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(args, env=clean_env(env), stderr=log)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 20.0) -> None:
        """Until the addr file is written (READY follows the same step) or the process dies."""
        assert self.proc is not None
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"smemd exited {self.proc.returncode}: {self.log()}")
            if self.addr_file.exists():
                return
            time.sleep(0.02)
        raise AssertionError(f"smemd not ready after {timeout} s")

    @property
    def tcp(self) -> str:
        return self.addr_file.read_text().strip()

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signum)
        return self.proc.wait(timeout)

    def wait(self, timeout: float = 20.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def log(self) -> str:
        """What smemd wrote to stderr so far."""
        return self.log_file.read_text() if self.log_file.exists() else ""

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
