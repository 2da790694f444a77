"""The console's files, read once: served from memory, so a request never touches the disk and no
path a client sends can name a file outside the set."""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

STATIC = Path(__file__).parent / "static"
# What a browser needs to know about each kind of file; anything else is not served.
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".json": "application/json",
}
_COMPRESSIBLE = {".html", ".js", ".css", ".svg", ".json"}


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes | None  # None: not worth it (images are compressed already)
    content_type: str
    etag: str  # quoted, as the header carries it


def _asset(path: Path) -> Asset:
    body = path.read_bytes()
    gzipped = gzip.compress(body, 9, mtime=0) if path.suffix in _COMPRESSIBLE else None
    if gzipped is not None and len(gzipped) >= len(body):
        gzipped = None
    digest = hashlib.sha256(body).hexdigest()[:20]
    return Asset(body, gzipped, _TYPES[path.suffix], f'"{digest}"')


def load(root: Path = STATIC) -> dict[str, Asset]:
    """Every servable file under `root`, by its path relative to it ("views/home.js")."""
    mimetypes.init()
    return {
        path.relative_to(root).as_posix(): _asset(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.suffix in _TYPES and not path.name.startswith(".")
    }
