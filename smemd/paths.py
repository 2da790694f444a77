"""Default locations of the state dir and the control socket; stdlib only, shared with smemctl."""

from __future__ import annotations

import os
from pathlib import Path

SYSTEM_STATE_DIR = Path("/var/lib/smem")
SYSTEM_RUNTIME_DIR = Path("/run/smem")
SOCKET_NAME = "smemd.sock"
PAUSE_FILE_NAME = "paused.json"
INDEX_DIR_NAME = "indexes"  # in the state dir: the saved HNSW graphs and BM25 postings
# sun_path is 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107


def is_system() -> bool:
    return os.geteuid() == 0


def default_state_dir() -> Path:
    if is_system():
        return SYSTEM_STATE_DIR
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "smem"


def default_runtime_dir(state_dir: Path) -> Path:
    """Where the socket and pause file live: /run/smem, $XDG_RUNTIME_DIR/smem or the state dir."""
    if is_system():
        return SYSTEM_RUNTIME_DIR
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "smem" if runtime else state_dir


def default_socket() -> Path:
    """The socket smemd listens on when neither config nor flags say otherwise."""
    env = os.environ.get("SMEM_SOCKET")
    if env:
        return Path(env)
    env_state = os.environ.get("SMEM_STATE_DIR")
    state_dir = Path(env_state) if env_state else default_state_dir()
    return default_runtime_dir(state_dir) / SOCKET_NAME
