"""What a pause is, and the rules it must keep, the same for the pause file and `POST /v1/pause`.

`nodes` names 1 to 128 distinct configured, lendable nodes, each id at most 32 characters;
`until` is an ISO-8601 time with a UTC offset, in the future and at most 30 days ahead (the API's
`for`, such as "2h" or "1h30m", is longer than zero and at most 720h); `by` has at most 200
characters and `reason` at most 1,000 — a name, and a sentence or two with a ticket link. A
file's bytes are UTF-8 JSON, at most 64 KiB. An error quotes what it was given only in short,
escaped excerpts: `GET /v1/lanes` shows it to every token holder.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

import msgspec

from smemd.config import NodeConfig
from smemd.errors import BadRequest, describe_validation_error
from smemd.protocol import PauseBy, PauseNodes, PauseReason, PauseTime

MAX_FILE_BYTES = 64 * 1024  # a real pause file is a few hundred bytes
# Lending is temporary; a year typo or a "forever" pause should be loud. Keep a node out of
# [[fleet.nodes]] to give it away for good.
MAX_AHEAD = timedelta(days=30)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"
_MID_WRITE = "(a writer may be part-way through it)"
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
    until = until_instant(text)
    expires = until.timestamp()
    if expires <= now:
        raise PauseError(f"$.until: {_short(text)} has already passed (now {_iso(now)})")
    if expires - now > MAX_AHEAD.total_seconds() + slack:
        raise PauseError(f"$.until: {_short(text)} is more than {MAX_AHEAD.days} days ahead")
    return until


def until_instant(text: str) -> datetime:
    """The instant an `until` names, or PauseError: it must be ISO-8601 with a UTC offset."""
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
