"""Fetching one document over HTTP(S): every hop guarded, bounded in redirects, size and time."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Sequence

import aiohttp
import msgspec
import yarl
from aiohttp.abc import AbstractResolver, ResolveResult

from smemd import __version__
from smemd.errors import SmemError
from smemd.fetch.guard import SCHEMES, Guard, Refused, parse_literal

log = logging.getLogger("smemd.fetch")

HEADERS = {
    "User-Agent": f"smem/{__version__}",
    "Accept": "text/html,application/xhtml+xml,application/pdf,text/plain;q=0.9,text/*;q=0.8",
}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024


class FetchError(SmemError):
    status = 502
    code = "fetch_failed"


class FetchRefused(FetchError):
    status = 403
    code = "fetch_refused"


class FetchTimeout(FetchError):
    status = 504
    code = "fetch_timeout"


class FetchTooLarge(FetchError):
    status = 413
    code = "fetch_too_large"


class FetchUnreachable(FetchError):
    """The server could not be reached or dropped the connection: it may work a moment later."""


class FetchStatus(FetchError):
    """The server answered with an error status, kept in `http_status` (a 5xx may pass, a 4xx
    will not)."""

    def __init__(self, message: str, http_status: int) -> None:
        super().__init__(message)
        self.http_status = http_status


class FetchLimits(msgspec.Struct, frozen=True, kw_only=True):
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0  # the longest wait for the next bytes
    total_timeout_s: float = 60.0  # the whole fetch, redirects included
    max_bytes: int = 20 * 1024 * 1024
    max_redirects: int = 5


class Fetched(msgspec.Struct, frozen=True, kw_only=True):
    url: str  # after redirects
    content_type: str  # as sent, parameters included ("" when the server sent none)
    body: bytes
    status: int


class GuardedResolver(AbstractResolver):
    """Answers aiohttp with the guard's checked addresses only.

    aiohttp then connects to an address that was checked, and never asks DNS a second time
    (which could answer differently: DNS rebinding). It skips the resolver for IP literals.
    """

    def __init__(self, guard: Guard) -> None:
        self._guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self._guard.addresses(host, port)
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                proto=0,
                flags=socket.AI_NUMERICHOST,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        pass


async def fetch(
    url: str,
    guard: Guard,
    limits: FetchLimits,
    *,
    trace_configs: Sequence[aiohttp.TraceConfig] | None = None,
) -> Fetched:
    """GET a document, following redirects by hand so that each hop passes the guard first."""
    try:
        start = yarl.URL(url)
    except ValueError as err:
        raise FetchError(f"{url}: not a URL: {err}") from None
    timeout = aiohttp.ClientTimeout(
        total=limits.total_timeout_s,
        connect=limits.connect_timeout_s,
        sock_read=limits.read_timeout_s,
    )
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(guard), use_dns_cache=False)
    try:
        async with (
            asyncio.timeout(limits.total_timeout_s),
            aiohttp.ClientSession(
                connector=connector,
                timeout=timeout,
                headers=HEADERS,
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                trace_configs=list(trace_configs or ()),
            ) as session,
        ):
            return await _follow(session, start, guard, limits)
    except TimeoutError as err:  # aiohttp's own timeouts are TimeoutErrors too
        raise FetchTimeout(f"{shown(start)}: timed out ({_which_timeout(err, limits)})") from err
    except aiohttp.ClientConnectorDNSError as err:
        raise FetchUnreachable(
            f"{shown(start)}: cannot resolve {err.host}: {err.os_error}"
        ) from err
    except aiohttp.ClientError as err:
        raise FetchUnreachable(f"{shown(start)}: {type(err).__name__}: {err}") from err


def shown(url: yarl.URL) -> str:
    """The URL as errors and the log give it: without its user, password, query and fragment,
    which may be secrets (basic auth, a signed link) that a failed job's warning would print."""
    if url.absolute:  # a URL without a host has no user to drop
        url = url.with_user(None)
    return str(url.with_query(None).with_fragment(None))


def _which_timeout(err: TimeoutError, limits: FetchLimits) -> str:
    if isinstance(err, aiohttp.ConnectionTimeoutError):
        return f"no connection within {limits.connect_timeout_s:g} s"
    if isinstance(err, aiohttp.SocketTimeoutError):
        return f"nothing read for {limits.read_timeout_s:g} s"
    return f"not done within {limits.total_timeout_s:g} s"


async def _follow(
    session: aiohttp.ClientSession, url: yarl.URL, guard: Guard, limits: FetchLimits
) -> Fetched:
    start = url
    for hop in range(limits.max_redirects + 1):
        try:
            if parse_literal(url.raw_host or "") is not None or url.scheme not in SCHEMES:
                await guard.check(url)  # aiohttp connects to a literal without asking the resolver
            resp = await session.get(url, allow_redirects=False)
        except Refused as err:
            via = "" if url == start else f" (redirected to {shown(url)})"
            log.info("fetch %s%s: refused: %s", shown(start), via, err)
            raise FetchRefused(f"{shown(start)}{via}: refused: {err}") from err
        async with resp:
            if resp.status in _REDIRECTS and "Location" in resp.headers:
                try:
                    url = url.join(yarl.URL(resp.headers["Location"]))
                except ValueError as err:
                    raise FetchError(f"{shown(url)}: bad redirect: {err}") from None
                log.debug("fetch: hop %d redirected to %s", hop + 1, url)
                continue
            if not 200 <= resp.status < 300:
                reason = f"{shown(url)}: HTTP {resp.status} {resp.reason or ''}".rstrip()
                raise FetchStatus(reason, resp.status)
            body = await _read(resp, limits.max_bytes)
            content_type = resp.headers.get("Content-Type", "")
            return Fetched(url=str(url), content_type=content_type, body=body, status=resp.status)
    raise FetchError(f"{shown(start)}: more than {limits.max_redirects} redirects")


async def _read(resp: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    """The body, stopping as soon as it passes max_bytes (the connection is then dropped)."""
    if resp.content_length is not None and resp.content_length > max_bytes:
        resp.close()
        raise FetchTooLarge(f"{shown(resp.url)}: {resp.content_length} bytes is over {max_bytes}")
    body = bytearray()
    async for chunk in resp.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > max_bytes:
            resp.close()
            raise FetchTooLarge(f"{shown(resp.url)}: more than {max_bytes} bytes")
    return bytes(body)
