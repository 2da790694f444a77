"""smemd's named loggers and their setup; journald adds timestamps, so they are left out there."""

from __future__ import annotations

import logging
import os
import sys

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


def level_name(logger: str = ROOT) -> str:
    return logging.getLevelName(logging.getLogger(logger).getEffectiveLevel()).lower()


def set_level(logger: str, level: str) -> str:
    """Set a logger's level and return the one it had."""
    previous = level_name(logger)
    logging.getLogger(logger).setLevel(level.upper())
    return previous
