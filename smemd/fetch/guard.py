"""The SSRF guard: which addresses a fetch may connect to, however the URL or DNS spells them."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
from collections.abc import Awaitable, Callable, Sequence

import yarl

from smemd.errors import SmemError

log = logging.getLogger("smemd.fetch")

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolve = Callable[[str, int], Awaitable[list[str]]]  # (host, port) -> address strings
SCHEMES = frozenset({"http", "https"})
# What inet_aton may read as an address: 2130706433, 0177.0.0.1, 0x7f.1, 127.1. Such a host is
# parsed here and never looked up, so DNS has no say in what it means. The character class also
# keeps out "127.0.0.1 x", which glibc's inet_aton accepts by stopping at the space.
_NUMERIC = re.compile(r"[0-9a-fx.]+", re.IGNORECASE)

_v4, _v6 = ipaddress.IPv4Network, ipaddress.IPv6Network
_SHARED = _v4("100.64.0.0/10")  # carrier-grade NAT
_PRIVATE = (_v4("10.0.0.0/8"), _v4("172.16.0.0/12"), _v4("192.168.0.0/16"), _v6("fc00::/7"))
_DOCUMENTATION = (
    _v4("192.0.2.0/24"), _v4("198.51.100.0/24"), _v4("203.0.113.0/24"),
    _v6("2001:db8::/32"), _v6("3fff::/20"),
)  # fmt: skip
_NAT64 = (_v6("64:ff9b::/96"), _v6("64:ff9b:1::/48"))  # the IPv4 address is the last 32 bits
_METADATA = ipaddress.IPv4Address("169.254.169.254")
_BROADCAST = ipaddress.IPv4Address("255.255.255.255")


class Refused(SmemError):
    status = 403
    code = "fetch_refused"


def parse_literal(host: str) -> IP | None:
    """The address a host spells by itself, in any form a resolver would accept; None for a name."""
    host = _normal(host).replace("%25", "%")  # yarl keeps an IPv6 zone percent-encoded
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            return None
    if _NUMERIC.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for: mapped, compatible, 6to4 or NAT64."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if int(ip) >> 32 == 0 and int(ip) > 1:  # ::a.b.c.d, deprecated but still routed by some stacks
        return ipaddress.IPv4Address(int(ip))
    if any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def refusal(ip: IP) -> str | None:
    """Why a fetch may not connect to this address, or None when it is globally routable."""
    v4 = _embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
    if v4 is not None and (reason := refusal(v4)) is not None:
        return f"an IPv6 form of {v4}, {reason}"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip == _METADATA:
        return "the cloud metadata address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:  # is_global is True for much of 224.0.0.0/4 and ff00::/8
        return "a multicast address"
    if ip == _BROADCAST:
        return "the broadcast address"
    if ip in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if any(ip in net for net in _PRIVATE):
        return "a private address"
    if any(ip in net for net in _DOCUMENTATION):
        return "a documentation address"
    if ip.is_reserved:
        return "a reserved address"
    if not ip.is_global:
        return "not a globally routable address"
    return None


async def getaddrinfo(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for a name."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _normal(host: str) -> str:
    return host.rstrip(".").lower()


def _parse_entry(entry: str) -> tuple[str, int | None]:
    """An allow-hosts entry as (host or canonical address, port or None)."""
    text = entry.strip()
    if text.count(":") > 1 and not text.startswith("["):
        text = f"[{text}]"  # a bare IPv6 address, which can have no port
    try:
        url = yarl.URL(f"http://{text}")
    except ValueError as err:
        raise ValueError(f"bad allow-hosts entry {entry!r}: {err}") from None
    host = url.raw_host
    if not host or url.path not in ("", "/") or url.user is not None or url.raw_query_string:
        raise ValueError(f"bad allow-hosts entry {entry!r}: want host or host:port")
    if not re.fullmatch(r"[a-z0-9.:%_-]+", host := _normal(host)):
        raise ValueError(f"bad allow-hosts entry {entry!r}: {host!r} is not a host name or address")
    literal = parse_literal(host)
    return (str(literal) if literal is not None else host), url.explicit_port


class Guard:
    """Checks a URL's scheme and every address its host stands for, before anything connects."""

    def __init__(self, allow_hosts: Sequence[str] = (), *, resolve: Resolve | None = None) -> None:
        self._allowed = frozenset(_parse_entry(entry) for entry in allow_hosts)
        self._resolve = resolve or getaddrinfo

    def is_allowed(self, host: str, port: int) -> bool:
        """Whether allow-hosts names this host (a name or a canonical address) on this port."""
        return (host, None) in self._allowed or (host, port) in self._allowed

    async def check(self, url: yarl.URL) -> list[str]:
        """The addresses to connect to for this URL; Refused if it or any address is not allowed."""
        if url.scheme not in SCHEMES:
            raise Refused(f"{url.scheme or 'no'} scheme: only http and https URLs are fetched")
        if not url.raw_host or url.port is None:
            raise Refused(f"{url} names no host")
        return await self.addresses(url.raw_host, url.port)

    async def addresses(self, host: str, port: int) -> list[str]:
        """Every address `host` stands for, each checked; OSError when a name does not resolve."""
        name = _normal(host)
        literal = parse_literal(name)
        if literal is not None:
            found = [literal]
        else:
            answers = await self._resolve(name, port)
            try:
                found = list(dict.fromkeys(ipaddress.ip_address(a) for a in answers))
            except ValueError as err:
                raise Refused(f"{host} resolved to something not an address: {err}") from None
            if not found:
                raise OSError(f"{host} resolved to no address")
        if not self.is_allowed(name, port):
            for ip in found:
                reason = refusal(ip)
                if reason is not None and not self.is_allowed(str(ip), port):
                    source = "" if str(ip) == name else f" (from {host})"
                    raise Refused(f"{ip}{source} is {reason}")
        log.debug("fetch guard: %s:%d -> %s", host, port, found)
        return [str(ip) for ip in found]
