"""The pause file on disk: read without following a link or waiting on a FIFO, written whole.

The file is a regular file of at most 64 KiB; a symbolic link in its place is refused, not
followed. smemd replaces it atomically (a temp file beside it, fsynced, renamed over it), so the
render farm never reads half of what smemd writes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import msgspec

from smemd.fleet.pause.rules import (
    MAX_FILE_BYTES,
    Pause,
    PauseError,
    PauseFile,
    decode_pause_file,
    until_instant,
)

FILE_MODE = 0o660  # the render farm's group writes the file too
# The farm's group writes the directory: a link put there must not make smemd read, and quote in
# its errors, a file of the link's choosing.
_LINK = "a symbolic link, not a regular file; smem does not follow links"
# O_NOFOLLOW: the link above; O_NONBLOCK: a FIFO put in the file's place must not hang the read.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW

_encoder = msgspec.json.Encoder()


class Look(NamedTuple):
    """One look at the file: `key` names its version; no data and no error means no file."""

    key: object
    data: bytes | None = None
    error: str | None = None
    mtime: float = 0.0


MISSING = "missing"  # the key of a look that found no file


def look(path: Path, last_key: object) -> Look | None:
    """Stat the file and read it if it changed since `last_key`; None if it did not. Blocking."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None if last_key == MISSING else Look(MISSING)
    except OSError as err:
        message = f"cannot stat: {err.strerror}"
        return None if last_key == message else Look(message, error=message)
    key = _key(st)
    if key == last_key:
        return None
    if stat.S_ISLNK(st.st_mode):
        return Look(key, error=_LINK)
    try:
        fd = _open(path)
    except FileNotFoundError:
        return Look(MISSING)
    except PauseError as err:
        return Look(key, error=err.message)
    except OSError as err:
        return Look(key, error=f"cannot open: {err.strerror}")
    try:
        # Stat before reading: should the file grow while we read, the next look sees a new key.
        st = os.fstat(fd)
        key = _key(st)
        problem = _not_regular(st)
        if problem is not None:
            return Look(key, error=problem)
        try:
            data = _read_at_most(fd, MAX_FILE_BYTES + 1)
        except OSError as err:
            return Look(key, error=f"cannot read: {err.strerror}")
    finally:
        os.close(fd)
    return Look(key, data=data, mtime=st.st_mtime_ns / 1e9)


def _key(st: os.stat_result) -> object:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _open(path: Path) -> int:
    """Open the file to read, not following a link in its place (PauseError) nor waiting on a FIFO."""
    try:
        return os.open(path, _OPEN_FLAGS)
    except OSError as err:
        if err.errno == errno.ELOOP:  # what O_NOFOLLOW answers for a link
            raise PauseError(_LINK) from None
        raise


def _not_regular(st: os.stat_result) -> str | None:
    """Why what `st` describes is no pause file, or None for a regular file."""
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISLNK(st.st_mode):
        return _LINK
    kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a special file"
    return f"{kind}, not a regular file"


def read_regular(path: Path) -> bytes:
    """Up to one byte past MAX_FILE_BYTES of the file; PauseError if it is no regular file."""
    fd = _open(path)
    try:
        problem = _not_regular(os.fstat(fd))
        if problem is not None:
            raise PauseError(problem)
        return _read_at_most(fd, MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)


def _read_at_most(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size < limit and (part := os.read(fd, limit - size)):
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def write_pause(path: str | os.PathLike[str], pause: Pause) -> None:
    """Replace the pause file with `pause`, atomically. Blocking: call it in a thread."""
    _replace(Path(path), _encode(pause.to_file()))


def clear_pause(
    path: str | os.PathLike[str], nodes: Iterable[str] | None = None, *, now: float | None = None
) -> frozenset[str]:
    """Resume `nodes` (all when None) and return the nodes still lent. Blocking.

    Removing some nodes needs a readable file with a valid `until`; an expired one is deleted.
    A link in the file's place is not followed: removing all nodes removes the link itself.
    """
    path = Path(path)
    if nodes is not None:
        try:
            file = decode_pause_file(read_regular(path))
            until = until_instant(file.until).timestamp()
        except FileNotFoundError:
            return frozenset()
        except PauseError as err:
            raise PauseError(
                f"cannot resume only some nodes: the pause file is invalid: {err.message}; "
                "resume all nodes to remove it"
            ) from None
        gone = set(nodes)
        rest = [node for node in dict.fromkeys(file.nodes) if node not in gone]
        expired = until <= (time.time() if now is None else now)
        if rest and not expired:
            if len(rest) < len(file.nodes):
                _replace(path, _encode(msgspec.structs.replace(file, nodes=rest)))
            return frozenset(rest)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
        _fsync_dir(path.parent)
    return frozenset()


def _encode(file: PauseFile) -> bytes:
    return msgspec.json.format(_encoder.encode(file)) + b"\n"


def _replace(path: Path, data: bytes) -> None:
    """Write `data` to a temp file beside `path`, fsync it, rename it over `path`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with open(fd, "wb") as f:
            os.fchmod(f.fileno(), FILE_MODE)  # mkstemp makes 0600; fchmod ignores the umask
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Make a rename or unlink durable; /run is tmpfs, but the path is configurable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
