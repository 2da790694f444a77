"""Identifiers and clocks shared by the engine."""

from __future__ import annotations

import hashlib
import secrets
import time


def new_id(prefix: str) -> str:
    """`doc_`, `mem_`, `chk_`, `job_` + 16 hex chars: unique enough per store, short on the wire."""
    return f"{prefix}_{secrets.token_hex(8)}"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def now() -> float:
    return time.time()
