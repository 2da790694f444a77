"""The pause file through which the render farm borrows nodes: its rules (`rules`), the file on
disk (`disk`), and the watcher that follows it (`watcher`).

`{"nodes": ["node3"], "until": "2030-01-01T12:00:00+01:00", "by": "farm", "reason": "frame 12"}`.
A bad file is reported and changes nothing: the last valid pause stays in force until it expires.
The rules are the same for the file and for `POST /v1/pause`.
"""

from smemd.fleet.pause.disk import clear_pause, write_pause
from smemd.fleet.pause.rules import (
    MAX_AHEAD,
    MAX_FILE_BYTES,
    Pause,
    PauseError,
    PauseFile,
    decode_pause_file,
    lendability,
    parse_pause,
    validate_pause,
)
from smemd.fleet.pause.watcher import PauseWatcher

__all__ = [
    "MAX_AHEAD",
    "MAX_FILE_BYTES",
    "Pause",
    "PauseError",
    "PauseFile",
    "PauseWatcher",
    "clear_pause",
    "decode_pause_file",
    "lendability",
    "parse_pause",
    "validate_pause",
    "write_pause",
]
