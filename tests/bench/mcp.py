"""What an MCP tool call costs over the plain HTTP call it makes.

A real smemd with 200 short facts; then the same search `n` times (after a warm-up) two ways:
the HTTP route through smemctl's client over the Unix socket (a connection per call, as the
MCP server makes them), and the `search_memories` tool through the official SDK's client over
stdio to `smemctl mcp`. Prints one line: the medians in ms and their difference (target: at
most 5 ms).

    python3 -m tests.bench.mcp [--n 200]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from smemctl.client import Client
from smemd.protocol.memory import Search, SearchResponse
from tests.daemon_process import DaemonProcess

REPO = Path(__file__).resolve().parents[2]
NS = "bench"
QUERY = "Where does person 42 live?"


def store(client: Client) -> None:
    documents = [{"content": f"Person {i} lives in city {i % 17}."} for i in range(200)]
    client.call("POST", f"/ns/{NS}/document/batch", {"documents": documents})
    deadline = time.monotonic() + 120
    while client.post(f"/ns/{NS}/search", Search(query=QUERY), SearchResponse)[0].results == []:
        assert time.monotonic() < deadline, "the facts were not stored in time"
        time.sleep(0.2)
    time.sleep(2)  # the rest of the batch


def http_ms(client: Client, n: int) -> list[float]:
    body = Search(query=QUERY, limit=5)
    samples = []
    for _ in range(n + 10):
        started = time.perf_counter()
        client.post(f"/ns/{NS}/search", body, SearchResponse)
        samples.append((time.perf_counter() - started) * 1000)
    return samples[10:]


async def mcp_ms(socket: Path, n: int) -> list[float]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "smemctl", "--socket", str(socket), "mcp", "-n", NS],
        cwd=str(REPO),
    )  # fmt: skip
    samples = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(n + 10):
            started = time.perf_counter()
            result = await session.call_tool("search_memories", {"query": QUERY, "limit": 5})
            samples.append((time.perf_counter() - started) * 1000)
            assert not result.is_error
    return samples[10:]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="calls each way")
    args = parser.parse_args()
    state_dir = Path(tempfile.mkdtemp(prefix="smem-bench-mcp-"))
    daemon = DaemonProcess(state_dir).start(["--log-level", "warning"])
    try:
        client = Client(daemon.socket)
        store(client)
        http = statistics.median(http_ms(client, args.n))
        tool = statistics.median(anyio.run(mcp_ms, daemon.socket, args.n))
    finally:
        daemon.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
    print(f"mcp n={args.n} tool_p50_ms={tool:.2f} http_p50_ms={http:.2f} diff_ms={tool - http:.2f}")


if __name__ == "__main__":
    main()
