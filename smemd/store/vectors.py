"""Vectors on disk: little-endian float32 BLOBs, behind exactly these two functions."""

from __future__ import annotations

import numpy as np

_DTYPE = np.dtype("<f4")


def to_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=_DTYPE).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=_DTYPE)


def stack(blobs: list[bytes], dimension: int) -> np.ndarray:
    """Many BLOBs into one (n, dimension) native float32 matrix, in one copy."""
    if not blobs:
        return np.zeros((0, dimension), dtype=np.float32)
    joined = np.frombuffer(b"".join(blobs), dtype=_DTYPE).reshape(len(blobs), dimension)
    return joined.astype(np.float32)
