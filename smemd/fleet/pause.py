"""The pause file through which the render farm borrows nodes: its checks, its watcher, our writes.

`{"nodes": ["node3"], "until": "2030-01-01T12:00:00+01:00", "by": "farm", "reason": "frame 12"}`.
A bad file is reported and changes nothing: the last valid pause stays in force until it expires.

The rules, the same for the file and for `POST /v1/pause`: `nodes` names 1 to 128 distinct
configured, lendable nodes, each id at most 32 characters; `until` is an ISO-8601 time with a UTC
offset, in the future and at most 30 days ahead (the API's `for`, such as "2h" or "1h30m", is
longer than zero and at most 720h); `by` has at most 200 characters and `reason` at most 1,000 —
a name, and a sentence or two with a ticket link. The file is a regular UTF-8 file of at most
64 KiB; a symbolic link in its place is refused, not followed. An error quotes the file only in
short, escaped excerpts: `GET /v1/lanes` shows it to every token holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import re
import stat
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

import msgspec

from smemd.config import NodeConfig
from smemd.errors import BadRequest, describe_validation_error
from smemd.protocol import PauseBy, PauseNodes, PauseReason, PauseTime
from smemd.tasks import stop

log = logging.getLogger("smemd.fleet")

MAX_FILE_BYTES = 64 * 1024  # a real pause file is a few hundred bytes
# Lending is temporary; a year typo or a "forever" pause should be loud. Keep a node out of
# [[fleet.nodes]] to give it away for good.
MAX_AHEAD = timedelta(days=30)
# A file's mtime may trail the clock that set its `until` by a kernel tick (by 2 s on FAT), so the
# watcher allows this much past MAX_AHEAD: what smemd writes for `for: "720h"` must be accepted.
MTIME_SLACK = 2.0
FILE_MODE = 0o660  # the render farm's group writes the file too
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"
_MID_WRITE = "(a writer may be part-way through it)"
# The farm's group writes the directory: a link put there must not make smemd read, and quote in
# its errors, a file of the link's choosing.
_LINK = "a symbolic link, not a regular file; smem does not follow links"
# O_NOFOLLOW: the link above; O_NONBLOCK: a FIFO put in the file's place must not hang the read.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")
_UNKNOWN_FIELD = "Object contains unknown field `"


class PauseError(BadRequest):
    code = "bad_pause"


class PauseFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The file as written: `until` stays a string so a bad one gets its own message."""

    nodes: PauseNodes
    until: PauseTime
    by: PauseBy = ""
    reason: PauseReason = ""


class Pause(msgspec.Struct, kw_only=True, frozen=True):
    """A checked pause: known, lendable, distinct nodes and an aware `until`."""

    nodes: frozenset[str]
    until: datetime
    by: str = ""
    reason: str = ""

    @property
    def expires_at(self) -> float:
        return self.until.timestamp()

    def is_active(self, now: float) -> bool:
        return now < self.expires_at

    def to_file(self) -> PauseFile:
        return PauseFile(
            nodes=sorted(self.nodes), until=self.until.isoformat(), by=self.by, reason=self.reason
        )


_decoder = msgspec.json.Decoder(PauseFile)
_encoder = msgspec.json.Encoder()


def lendability(nodes: Iterable[NodeConfig]) -> dict[str, bool]:
    """The `known` mapping the checks take: node id → lendable."""
    return {node.id: node.lendable for node in nodes}


def decode_pause_file(raw: bytes) -> PauseFile:
    """Decode the bytes of a pause file, or say precisely why they are not one."""
    if len(raw) > MAX_FILE_BYTES:
        raise PauseError(f"larger than {MAX_FILE_BYTES} bytes; a pause file is a few hundred")
    if raw.startswith(_UTF16_BOMS):
        raise PauseError("UTF-16 text (it starts with a UTF-16 byte-order mark); write UTF-8")
    # Some Windows tools put a BOM before UTF-8; RFC 8259 lets a parser ignore it, so we do.
    raw = raw.removeprefix(_UTF8_BOM)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PauseError(
            f"not UTF-8 text: byte 0x{raw[err.start]:02x} at offset {err.start}"
        ) from None
    if not raw.strip():
        raise PauseError(f"empty file {_MID_WRITE}")
    try:
        return _decoder.decode(raw)
    except msgspec.ValidationError as err:
        text = str(err)
        if text.startswith("Object missing required field `until`"):
            raise PauseError("$.until: missing; a pause must say when it ends") from None
        if text.startswith("Object missing required field `nodes`"):
            raise PauseError("$.nodes: missing; name the nodes to lend") from None
        if text.startswith(_UNKNOWN_FIELD):
            raise PauseError(_unknown_field(text.removeprefix(_UNKNOWN_FIELD)[:-1])) from None
        raise PauseError(_capped(describe_validation_error(err))) from None
    except msgspec.DecodeError as err:
        if str(err) == "Input data was truncated":
            raise PauseError(f"truncated JSON {_MID_WRITE}") from None
        raise PauseError(
            f"not valid JSON: {_capped(str(err).removeprefix('JSON is malformed: '))}"
        ) from None


def _unknown_field(name: str) -> str:
    """The message for a key PauseFile lacks: the key is the file's own text, so only an excerpt."""
    # PauseFile is flat: msgspec names the key verbatim, with no `- at` path after it.
    if _PLAIN_NAME.fullmatch(name):
        return f"$.{name}: unknown field"
    return f"$: unknown field {_short(name)}"


def _capped(text: str, limit: int = 200) -> str:
    """msgspec's own words: they quote no input today, and are capped should a later one."""
    return text if len(text) <= limit else text[:limit] + "…"


def validate_pause(
    file: PauseFile, *, known: Mapping[str, bool], now: float, slack: float = 0.0
) -> Pause:
    """Check a decoded pause against the configured nodes and the time `now` (Unix seconds).

    `until` may be up to `slack` seconds beyond MAX_AHEAD.
    """
    until = _parse_until(file.until, now, slack)
    if not file.nodes:
        raise PauseError("$.nodes: empty; name at least one node")
    counts = Counter(file.nodes)
    repeated = sorted(node for node, count in counts.items() if count > 1)
    if repeated:
        raise PauseError(f"$.nodes: listed more than once: {_names(repeated)}")
    seen = set(counts)
    problems: list[str] = []
    unknown = sorted(seen - known.keys())
    if unknown:
        problems.append(
            f"unknown node ids {_names(unknown)} (configured: {_names(sorted(known)) or 'none'})"
        )
    kept = sorted(node for node in seen if known.get(node) is False)
    if kept:
        problems.append(f"not lendable (lendable = false in config): {_names(kept)}")
    if problems:
        raise PauseError("$.nodes: " + "; ".join(problems))
    return Pause(nodes=frozenset(seen), until=until, by=file.by, reason=file.reason)


def parse_pause(raw: bytes, *, known: Mapping[str, bool], now: float, slack: float = 0.0) -> Pause:
    """Bytes of a pause file → a checked `Pause`, or `PauseError` saying what is wrong."""
    return validate_pause(decode_pause_file(raw), known=known, now=now, slack=slack)


def _parse_until(text: str, now: float, slack: float = 0.0) -> datetime:
    until = _to_datetime(text)
    expires = until.timestamp()
    if expires <= now:
        raise PauseError(f"$.until: {_short(text)} has already passed (now {_iso(now)})")
    if expires - now > MAX_AHEAD.total_seconds() + slack:
        raise PauseError(f"$.until: {_short(text)} is more than {MAX_AHEAD.days} days ahead")
    return until


def _to_datetime(text: str) -> datetime:
    try:
        until = datetime.fromisoformat(text)
        offset = until.utcoffset()
        until.timestamp()
    except (ValueError, OverflowError):
        raise PauseError(f"$.until: {_short(text)} is not an ISO-8601 time") from None
    # A time without an offset is ambiguous between the farm's and smemd's zones (systemd units
    # often run in UTC): guessing would move the pause by hours, so it is refused.
    if offset is None:
        raise PauseError(
            f"$.until: {_short(text)} has no UTC offset; add 'Z' or one such as '+02:00'"
        )
    return until


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _names(ids: Iterable[str], limit: int = 8) -> str:
    ids = list(ids)
    shown = ", ".join(_short(node) for node in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


class _Look(NamedTuple):
    """One look at the file: `key` names its version; no data and no error means no file."""

    key: object
    data: bytes | None = None
    error: str | None = None
    mtime: float = 0.0


_MISSING = "missing"


def _look(path: Path, last_key: object) -> _Look | None:
    """Stat the file and read it if it changed since `last_key`; None if it did not. Blocking."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None if last_key == _MISSING else _Look(_MISSING)
    except OSError as err:
        message = f"cannot stat: {err.strerror}"
        return None if last_key == message else _Look(message, error=message)
    key = _key(st)
    if key == last_key:
        return None
    if stat.S_ISLNK(st.st_mode):
        return _Look(key, error=_LINK)
    try:
        fd = _open(path)
    except FileNotFoundError:
        return _Look(_MISSING)
    except PauseError as err:
        return _Look(key, error=err.message)
    except OSError as err:
        return _Look(key, error=f"cannot open: {err.strerror}")
    try:
        # Stat before reading: should the file grow while we read, the next look sees a new key.
        st = os.fstat(fd)
        key = _key(st)
        problem = _not_regular(st)
        if problem is not None:
            return _Look(key, error=problem)
        try:
            data = _read_at_most(fd, MAX_FILE_BYTES + 1)
        except OSError as err:
            return _Look(key, error=f"cannot read: {err.strerror}")
    finally:
        os.close(fd)
    return _Look(key, data=data, mtime=st.st_mtime_ns / 1e9)


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


def _read_regular(path: Path) -> bytes:
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


class PauseWatcher:
    """Follows the pause file by polling; as an async context manager it runs the poll task.

    A file is checked as of when it was written (its mtime), so a pause that simply ran out is
    no error after a restart, while a file written with a past `until` is one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        known: Mapping[str, bool],
        period: float = 0.5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not 0 < period <= 1:
            raise ValueError(f"poll period must be in (0, 1] seconds, got {period}")
        self.path = Path(path)
        self.known = dict(known)
        self.period = period
        self.pause: Pause | None = None  # the last valid pause, expired or not
        self.error: str | None = None  # why the file as it stands was rejected
        self._clock = clock
        self._key: object = None  # matches no look, so the first one reads the file
        self._announced: Pause | None = None
        self._changed = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    def active(self, now: float | None = None) -> Pause | None:
        now = self._clock() if now is None else now
        return self.pause if self.pause is not None and self.pause.is_active(now) else None

    def paused(self, now: float | None = None) -> frozenset[str]:
        pause = self.active(now)
        return pause.nodes if pause is not None else frozenset()

    async def changed(self) -> None:
        """Return at the next change of the active pause: a new file, a removal or an expiry."""
        await self._changed.wait()

    async def refresh(self) -> None:
        """Look at the file now rather than at the next poll (after smemd writes it, say)."""
        async with self._lock:
            try:
                seen = await asyncio.to_thread(_look, self.path, self._key)
                if seen is not None:
                    self._take(seen)
            except Exception as err:  # a bug here must not stop the watching
                message = f"internal error while checking the file: {err!r}"
                if message != self.error:
                    log.exception("pause file %s: %s", self.path, message)
                self.error = message
            self._announce()

    async def __aenter__(self) -> PauseWatcher:
        await self.refresh()
        self._task = asyncio.create_task(self._run(), name="pause-watcher")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            await stop(self._task)
            self._task = None

    async def _run(self) -> None:
        while True:
            delay = self.period
            pause = self.active()
            if pause is not None:  # wake at the expiry, not up to a period after it
                delay = min(delay, max(0.0, pause.expires_at - self._clock()))
            await asyncio.sleep(delay)
            await self.refresh()

    def _take(self, seen: _Look) -> None:
        self._key = seen.key
        if seen.data is None:
            if seen.error is None:  # no file: nothing lent
                self.pause = None
            self._set_error(seen.error)
            return
        try:
            now = min(self._clock(), seen.mtime)
            pause = parse_pause(seen.data, known=self.known, now=now, slack=MTIME_SLACK)
        except PauseError as err:
            self._set_error(err.message)
            return
        self.pause = pause
        self._set_error(None)

    def _set_error(self, error: str | None) -> None:
        if error is not None and error != self.error:
            kept = _describe(self.active())
            log.warning("pause file %s rejected: %s; still in force: %s", self.path, error, kept)
        elif error is None and self.error is not None:
            log.info("pause file %s is valid again", self.path)
        self.error = error

    def _announce(self) -> None:
        current = self.active()
        if current == self._announced:
            return
        self._announced = current
        log.info("pause: %s", _describe(current))
        event, self._changed = self._changed, asyncio.Event()
        event.set()


def _describe(pause: Pause | None) -> str:
    if pause is None:
        return "no nodes lent"
    # repr: the farm's group writes these strings, and a newline in them must not forge a log line
    who = f" by {pause.by!r}" if pause.by else ""
    why = f" for {pause.reason!r}" if pause.reason else ""
    return f"{', '.join(sorted(pause.nodes))} lent until {pause.until.isoformat()}{who}{why}"


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
            file = decode_pause_file(_read_regular(path))
            until = _to_datetime(file.until).timestamp()
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
