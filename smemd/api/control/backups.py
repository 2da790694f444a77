"""`POST /v1/backup`: a consistent backup of the store while the daemon serves (smemd.backup)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from smemd.api.state import STATE
from smemd.api.wire import decode, reply
from smemd.config import render_config
from smemd.errors import StorageUnavailable
from smemd.http.route import Route
from smemd.protocol.backups import BackupReply, BackupRequest
from smemd.store import deadline


async def backup(request: web.Request) -> web.Response:
    state = request.app[STATE]
    asked = await decode(request, BackupRequest)
    engine = state.engine
    if engine is None:
        raise StorageUnavailable("storage unavailable", "the store is not open yet")
    with deadline.lifted():  # minutes for a large store: the wait is the caller's to bound
        done = await engine.backups.write(render_config(state.config), Path(asked.to))
    return reply(done)


ROUTES = [
    Route(
        method="POST", path="/v1/backup", handler=backup, role="admin", namespace_from="every",
        body=BackupRequest, reply=BackupReply,
        summary="Back the whole store up into a new directory on the daemon's host",
        description="The database as of one moment (writes go on meanwhile), the saved index"
        " files, the config with its secrets masked, and a manifest of sizes and digests;"
        " `smemd --restore` puts it back. On a PostgreSQL store (its server backs the database"
        " up) it writes every namespace's export instead, for `smemctl import`.",
    ),
]  # fmt: skip
