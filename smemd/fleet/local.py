"""The `local` fleet's processes: one llama-server per model, started, restarted, stopped.

A server that exits is started again after a backoff (1 s, doubling to 30 s, back to 1 s once
one has run for a minute); on shutdown each gets SIGTERM, then SIGKILL after a grace period.
Each server's output goes to `<state-dir>/llama-<role>.log`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import socket
import time
from pathlib import Path

from smemd.config import LocalConfig

log = logging.getLogger("smemd.fleet")

ROLE_FLAGS = {"embed": ["--embeddings"], "rerank": ["--reranking"], "llm": []}
HOST = "127.0.0.1"
STOP_GRACE_S = 5.0
STEADY_S = 60.0  # a server that ran this long resets the backoff


class LocalServerError(Exception):
    pass


class ServerProcess:
    def __init__(self, role: str, model: str, config: LocalConfig, log_dir: Path) -> None:
        binary = shutil.which(config.llama_server)
        if binary is None:
            raise LocalServerError(
                f"$.fleet.local.llama-server: {config.llama_server!r} is not an executable"
            )
        if not Path(model).is_file():
            raise LocalServerError(f"$.fleet.local.{role}-model: no file {model!r}")
        self.role = role
        self.port = _free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.args = [
            binary, "-m", model, "--host", HOST, "--port", str(self.port), "-c", str(config.context),
            "-np", str(config.parallel), "-t", str(config.threads), *ROLE_FLAGS[role],
        ]  # fmt: skip
        if role == "embed" and config.pooling:
            self.args += ["--pooling", config.pooling]
        self.log_path = log_dir / f"llama-{role}.log"
        self.process: asyncio.subprocess.Process | None = None
        self.starts = 0
        self._stopping = False

    async def supervise(self) -> None:
        """Keep the server running until `stop()`."""
        backoff = 1.0
        while not self._stopping:
            started = time.monotonic()
            with self.log_path.open("ab") as output:
                self.process = await asyncio.create_subprocess_exec(
                    *self.args, stdin=asyncio.subprocess.DEVNULL, stdout=output, stderr=output
                )
            self.starts += 1
            code = await self.process.wait()
            if self._stopping:
                return
            backoff = 1.0 if time.monotonic() - started > STEADY_S else backoff
            log.warning(
                "llama-server (%s) exited with %s; again in %.0f s (see %s)",
                self.role,
                code,
                backoff,
                self.log_path,
            )
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 30.0)

    async def stop(self) -> None:
        self._stopping = True
        process = self.process
        if process is None or process.returncode is not None:
            return
        process.terminate()
        try:
            async with asyncio.timeout(STOP_GRACE_S):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


def _free_port() -> int:
    # The port is free now; llama-server binds it a moment later (a race only a busy host loses).
    with contextlib.closing(socket.socket()) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port
