"""smemd's named loggers and their setup: a line of text or a JSON object per record on stderr,
each written during a request marked with its id.

A record's structured fields ride in `extra={"fields": {...}}`: the JSON line carries them as
keys of its own, the text line only its message.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import sys
import time
from typing import Any

from aiohttp.http_exceptions import HttpProcessingError

daemon = logging.getLogger("smemd.daemon")
api = logging.getLogger("smemd.api")
access = logging.getLogger("smemd.access")

ROOT = "smemd"
_HANDLER_NAME = "smemd-stderr"

# The id of the request being handled, "" outside one; the api's observe middleware sets it in
# the request's task, which the engine and the store run in too (and tasks and threads it starts
# copy it), so their lines carry it as well.
request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")


def setup(level: str, log_format: str = "text") -> None:
    """Send smemd's records to stderr once, at `level`, as `text` or `json` lines."""
    root = logging.getLogger(ROOT)
    root.setLevel(level.upper())
    if not any(h.get_name() == _HANDLER_NAME for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(_HANDLER_NAME)
        handler.addFilter(RequestIds())
        if log_format == "json":
            handler.setFormatter(JsonLines())
        else:  # journald stamps each line itself
            handler.setFormatter(TextLines(timestamps=not os.environ.get("JOURNAL_STREAM")))
        root.addHandler(handler)
        root.propagate = False
        # Other libraries' warnings (aiohttp's, asyncio's) in the same form, rather than as
        # Python's last resort writes them: bare, and never JSON.
        logging.getLogger().addHandler(handler)
    # asyncssh logs every connection and channel at INFO.
    logging.getLogger("asyncssh").setLevel(logging.WARNING)


class RequestIds(logging.Filter):
    """Puts the id of the request being handled on each record (`request_id`, "" outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


class TextLines(logging.Formatter):
    """`[time] LEVEL logger: message`, then ` rid=<id>` when written during a request."""

    def __init__(self, *, timestamps: bool) -> None:
        fmt = "%(levelname)s %(name)s: %(message)s"
        super().__init__("%(asctime)s " + fmt if timestamps else fmt)

    def formatMessage(self, record: logging.LogRecord) -> str:
        # The first line only: a traceback follows the id, not the other way round.
        line = super().formatMessage(record)
        rid = getattr(record, "request_id", "")
        return f"{line} rid={rid}" if rid else line


class JsonLines(logging.Formatter):
    """One JSON object a line: `ts` (UTC, milliseconds), `level`, `logger`, `msg`, then
    `request_id`, `exc` and the record's fields when it has them."""

    def format(self, record: logging.LogRecord) -> str:
        seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        line: dict[str, Any] = {
            "ts": f"{seconds}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if rid := getattr(record, "request_id", ""):
            line["request_id"] = rid
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exc"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        for key, value in getattr(record, "fields", {}).items():
            line.setdefault(key, value)  # never in place of the keys above
        return json.dumps(line, default=str)


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
