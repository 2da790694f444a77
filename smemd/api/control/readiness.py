"""`GET /v1/ready`: whether this daemon can serve now, for a load balancer in front of several
(`/v1/health` says only that it answers). A line per check, `ok store: writable (3 ms)` or
`fail disk: …`; any failing makes it 503. Text, or the Readiness JSON when Accept asks for it."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable

from aiohttp import hdrs, web

from smemd import log
from smemd.api.access import PUBLIC, principal
from smemd.api.state import STATE, ApiState
from smemd.api.wire import reply
from smemd.engine import readiness as probes
from smemd.engine.core import Engine
from smemd.errors import SmemError, TimedOut
from smemd.protocol.readiness import Readiness, ReadinessCheck
from smemd.store import deadline

# Each check's bound: a hung store or model is a failed line, never a hung probe. The checks run
# side by side, so the answer comes within about this long.
CHECK_TIMEOUT_S = 2.0
MB = 1024 * 1024


async def ready(request: web.Request) -> web.Response:
    state = request.app[STATE]
    checks = [
        *await asyncio.gather(
            # A write begun runs to its commit or rollback (smemd.store): never cancelled.
            _check("store", _on_engine(state, probes.write), cancel=False),
            _check("disk", _disk(state)),
            _check("embedder", _on_engine(state, probes.embed)),
        ),
        _indexes(state),
    ]
    if principal(request) is PUBLIC and state.tokens.required:  # no token given: no details
        checks = [ReadinessCheck(name=c.name, ok=c.ok, detail="") for c in checks]
    readiness = Readiness(ready=all(c.ok for c in checks), checks=checks)
    status = 200 if readiness.ready else 503
    if _wants_json(request):
        response = reply(readiness, status)
    else:
        lines = [
            f"{'ok' if c.ok else 'fail'} {c.name}{': ' if c.detail else ''}{c.detail}\n"
            for c in checks
        ]
        response = web.Response(
            text="".join(lines), status=status, content_type="text/plain", charset="utf-8"
        )
    response.headers[hdrs.CACHE_CONTROL] = "no-store"
    return response


async def _check(name: str, probe: Awaitable[str], *, cancel: bool = True) -> ReadinessCheck:
    """`probe`'s line, or a failed one when it raises or takes longer than CHECK_TIMEOUT_S."""
    with deadline.within(CHECK_TIMEOUT_S):  # a wait for the store's writer ends with the check
        task = asyncio.ensure_future(probe)
    try:
        await asyncio.wait({task}, timeout=CHECK_TIMEOUT_S)
    finally:
        if not task.done():
            if cancel:
                task.cancel()
            task.add_done_callback(_drop)
    if not task.done():
        return _failed(name, f"timed out after {CHECK_TIMEOUT_S:g} s")
    try:
        return ReadinessCheck(name=name, ok=True, detail=task.result())
    except TimedOut:  # the store's own wait, at the same bound
        return _failed(name, f"timed out after {CHECK_TIMEOUT_S:g} s")
    except probes.NotReady as err:
        return _failed(name, str(err))
    except SmemError as err:
        return _failed(name, f"{err.message}: {err.details}" if err.details else err.message)
    except Exception as err:  # a driver's error the store did not translate, or a bug
        log.api.warning("readiness check %s failed: %r", name, err)
        return _failed(name, f"{type(err).__name__}: {err}")


def _failed(name: str, detail: str) -> ReadinessCheck:
    return ReadinessCheck(name=name, ok=False, detail=detail)


def _drop(task: asyncio.Future[str]) -> None:
    """The outcome of a probe that outlived its check: nobody asks for it any more."""
    if not task.cancelled():
        task.exception()


async def _on_engine(state: ApiState, probe: Callable[[Engine], Awaitable[str]]) -> str:
    if state.engine is None:  # before the engine is up, or once it has stopped
        raise probes.NotReady("the engine is not up")
    return await probe(state.engine)


async def _disk(state: ApiState) -> str:
    """Free space where the store, the indexes, backups and imports are written."""
    floor = state.config.daemon.min_free_mb
    usage = await asyncio.to_thread(shutil.disk_usage, state.config.state_dir)
    free = usage.free // MB  # what an unprivileged process may still use
    if free < floor:
        raise probes.NotReady(f"{free} MB free, below [daemon] min-free-mb = {floor}")
    return f"{free} MB free, at least {floor} wanted"


def _indexes(state: ApiState) -> ReadinessCheck:
    """Said, but always ok. A namespace's indexes load on its first search, and while they do
    its searches answer 503 with Retry-After; every other namespace, and every write, is served.
    Unready would take the whole daemon out of rotation for one namespace's load, and the
    search that would finish the load might then never come."""
    if state.engine is None:
        return _failed("indexes", "the engine is not up")
    return ReadinessCheck(name="indexes", ok=True, detail=probes.indexes(state.engine))


def _wants_json(request: web.Request) -> bool:
    """Whether Accept names application/json (and not with q=0); anything else gets text."""
    for item in ",".join(request.headers.getall(hdrs.ACCEPT, [])).split(","):
        media, *params = (part.strip().lower() for part in item.split(";"))
        if media == "application/json":
            return not any(_is_zero_quality(p) for p in params)
    return False


def _is_zero_quality(param: str) -> bool:
    name, _, value = param.partition("=")
    try:
        return name.strip() == "q" and float(value) == 0
    except ValueError:
        return False
