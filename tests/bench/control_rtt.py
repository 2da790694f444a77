"""Control-path round trip: GET /v1/status over the socket and TCP, and `smemctl status` whole.

Prints one line: median and p95 in ms of 1,000 requests on each listener (one keep-alive
connection, after a warm-up), and the median wall time of 20 `smemctl status` processes.
Targets: socket p95 <= 2 ms; smemctl status <= 150 ms.
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smemctl.client import UnixConnection
from tests.daemon_process import DaemonProcess, clean_env


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(samples: list[float], digits: int) -> str:
    return f"p50={statistics.median(samples):.{digits}f} p95={percentile(samples, 0.95):.{digits}f}"


def time_requests(conn: http.client.HTTPConnection, count: int) -> list[float]:
    for _ in range(50):  # warm-up
        _get(conn)
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        _get(conn)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _get(conn: http.client.HTTPConnection) -> None:
    conn.request("GET", "/v1/status")
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise SystemExit(f"/v1/status answered {response.status}")


def time_cli(socket: Path, runs: int) -> list[float]:
    script = shutil.which("smemctl")
    command = [script] if script else [sys.executable, "-m", "smemctl"]
    env = clean_env()
    samples = []
    for _ in range(runs + 2):
        started = time.perf_counter()
        subprocess.run(
            [*command, "--socket", str(socket), "status"], env=env, check=True, capture_output=True
        )
        samples.append((time.perf_counter() - started) * 1000)
    return samples[2:]  # the first runs warm the page cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--cli-runs", type=int, default=20)
    args = parser.parse_args()
    state_dir = Path(tempfile.mkdtemp(prefix="smem-bench-"))
    daemon = DaemonProcess(state_dir).start(["--log-level", "warning"])
    try:
        host, port = daemon.tcp.rsplit(":", 1)
        unix = time_requests(UnixConnection(daemon.socket, timeout=10), args.requests)
        tcp = time_requests(http.client.HTTPConnection(host, int(port), timeout=10), args.requests)
        cli = time_cli(daemon.socket, args.cli_runs)
    finally:
        daemon.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
    print(
        f"control_rtt status_ms socket {summary(unix, 3)} tcp {summary(tcp, 3)} n={args.requests}"
        f" | smemctl_status_ms {summary(cli, 1)} runs={args.cli_runs}"
    )


if __name__ == "__main__":
    main()
