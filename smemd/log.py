"""smemd's named loggers and their setup; journald adds timestamps, so they are left out there."""

from __future__ import annotations

import logging
import os
import sys

from aiohttp.http_exceptions import HttpProcessingError

daemon = logging.getLogger("smemd.daemon")
api = logging.getLogger("smemd.api")
access = logging.getLogger("smemd.access")

ROOT = "smemd"
_HANDLER_NAME = "smemd-stderr"


def setup(level: str) -> None:
    """Send smemd's records to stderr once, at `level`."""
    root = logging.getLogger(ROOT)
    root.setLevel(level.upper())
    if not any(h.get_name() == _HANDLER_NAME for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(_HANDLER_NAME)
        under_journald = bool(os.environ.get("JOURNAL_STREAM"))
        fmt = "%(levelname)s %(name)s: %(message)s"
        handler.setFormatter(logging.Formatter(fmt if under_journald else "%(asctime)s " + fmt))
        root.addHandler(handler)
        root.propagate = False
    # asyncssh logs every connection and channel at INFO.
    logging.getLogger("asyncssh").setLevel(logging.WARNING)


class _MalformedRequests(logging.Filter):
    """aiohttp's own record of a request it cannot parse, cut to one line.

    Its parser error quotes the offending header line (a token in `Authorization: Bearer …\\x00`
    included) and comes with a traceback that says nothing about smem: what stays is who sent it
    and what kind of fault it was.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        fault = record.exc_info[1] if record.exc_info else None
        if isinstance(fault, HttpProcessingError):
            reason = str(fault.message).split("\n", 1)[0].rstrip(": ")
            record.msg, record.args = (
                "malformed request from %s: %s",
                (
                    record.args[0] if isinstance(record.args, tuple) and record.args else "?",
                    reason[:120],
                ),
            )
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info = record.exc_text = None
        return True


def quiet_malformed_requests() -> None:
    """Install the filter above on aiohttp's server log, once."""
    server = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, _MalformedRequests) for f in server.filters):
        server.addFilter(_MalformedRequests())


def level_name(logger: str = ROOT) -> str:
    return logging.getLevelName(logging.getLogger(logger).getEffectiveLevel()).lower()


def set_level(logger: str, level: str) -> str:
    """Set a logger's level and return the one it had."""
    previous = level_name(logger)
    logging.getLogger(logger).setLevel(level.upper())
    return previous
