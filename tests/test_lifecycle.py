"""The daemon as a process: start, refuse a second copy, replace stale sockets, stop on signals."""

from __future__ import annotations

import os
import signal
import socket
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import can_connect
from tests.daemon_process import DaemonProcess
from tests.pace import scaled


def get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as response:
        status: int = response.status
        return status


def test_start_serves_both_listeners_and_writes_the_bound_address(
    daemon_process: DaemonProcess,
) -> None:
    daemon_process.start()
    host, port = daemon_process.tcp.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    assert get(f"http://{daemon_process.tcp}/v1/health") == 200
    assert can_connect(daemon_process.socket)
    assert oct(daemon_process.socket.stat().st_mode & 0o777) == oct(0o660)
    assert daemon_process.tcp in daemon_process.log()  # the bound address is logged too


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly_and_quickly(daemon_process: DaemonProcess, signum: int) -> None:
    daemon_process.start()
    started = time.monotonic()
    assert daemon_process.stop(signum) == 0
    assert time.monotonic() - started < scaled(2.0)
    assert not daemon_process.socket.exists()
    assert not daemon_process.addr_file.exists()
    assert "stopped" in daemon_process.log()


def test_second_instance_on_the_same_state_dir_is_refused(
    daemon_process: DaemonProcess, short_dir: Path
) -> None:
    daemon_process.start()
    assert daemon_process.proc is not None
    second = DaemonProcess(short_dir)
    second.log_file = short_dir / "second.log"
    second.socket = short_dir / "other.sock"
    second.start(wait=False)
    assert second.wait() == 1
    assert f"pid {daemon_process.proc.pid}" in second.log()
    assert can_connect(daemon_process.socket)  # the first one is untouched
    assert get(f"http://{daemon_process.tcp}/v1/health") == 200


def test_waiting_on_a_second_instance_fails_and_never_finds_the_first(
    daemon_process: DaemonProcess, short_dir: Path
) -> None:
    # The first one's addr file must not read as the second one ready (a bench would then
    # search the first daemon, whatever code it runs).
    daemon_process.start()
    second = DaemonProcess(short_dir)
    second.log_file = short_dir / "second.log"
    second.socket = short_dir / "other.sock"
    with pytest.raises(AssertionError, match="smemd exited 1"):
        second.start()
    assert can_connect(daemon_process.socket)


def test_stale_socket_from_a_crash_is_replaced(daemon_process: DaemonProcess) -> None:
    daemon_process.start()
    assert daemon_process.proc is not None
    daemon_process.proc.kill()  # kill -9: the socket file stays behind
    daemon_process.proc.wait()
    assert daemon_process.socket.exists() and not can_connect(daemon_process.socket)
    daemon_process.addr_file.unlink()
    daemon_process.start()
    assert can_connect(daemon_process.socket)
    assert "replacing stale socket" in daemon_process.log()


def test_live_socket_is_never_stolen(daemon_process: DaemonProcess, short_dir: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as other:
        other.bind(str(daemon_process.socket))
        other.listen()
        daemon_process.start(wait=False)
        assert daemon_process.wait() == 1
        assert "in use" in daemon_process.log()
        assert can_connect(daemon_process.socket)


def test_a_file_that_is_not_a_socket_is_left_alone(daemon_process: DaemonProcess) -> None:
    daemon_process.socket.write_text("precious")
    daemon_process.start(wait=False)
    assert daemon_process.wait() == 1
    assert daemon_process.socket.read_text() == "precious"
    assert "not a socket" in daemon_process.log()


def test_busy_tcp_port_fails_startup_and_cleans_up(daemon_process: DaemonProcess) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        daemon_process.start(["--listen", f"127.0.0.1:{port}"], wait=False)
        assert daemon_process.wait() == 1
    assert f"127.0.0.1:{port}" in daemon_process.log()
    assert not daemon_process.socket.exists()


def test_notify_ready_watchdog_and_stopping(daemon_process: DaemonProcess, short_dir: Path) -> None:
    path = short_dir / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(path))
        listener.settimeout(10)
        daemon_process.start(env={"NOTIFY_SOCKET": str(path), "WATCHDOG_USEC": "100000"})
        messages: list[str] = []

        def receive_until(word: str) -> None:
            while not any(word in m.split("\n") for m in messages):
                messages.append(listener.recv(4096).decode())

        receive_until("READY=1")
        # READY comes once both listeners accept.
        assert get(f"http://{daemon_process.tcp}/v1/health") == 200
        ready = next(m for m in messages if "READY=1" in m.split("\n"))
        assert "STATUS=serving on" in ready
        receive_until("WATCHDOG=1")
        watchdogs_before = sum(m == "WATCHDOG=1" for m in messages)
        time.sleep(0.3)  # pings every 50 ms (half of WATCHDOG_USEC)
        daemon_process.stop()
        receive_until("STOPPING=1")
        assert sum(m == "WATCHDOG=1" for m in messages) >= watchdogs_before + 2


def test_watchdog_meant_for_another_pid_is_ignored(
    daemon_process: DaemonProcess, short_dir: Path
) -> None:
    path = short_dir / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(path))
        listener.settimeout(0.5)
        env = {
            "NOTIFY_SOCKET": str(path),
            "WATCHDOG_USEC": "100000",
            "WATCHDOG_PID": str(os.getpid()),
        }
        daemon_process.start(env=env)
        time.sleep(0.3)
        messages = []
        try:
            while True:
                messages.append(listener.recv(4096).decode())
        except TimeoutError:
            pass
        assert any("READY=1" in m for m in messages)
        assert "WATCHDOG=1" not in messages
