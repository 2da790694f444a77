"""Origins and Host names as the browser rules compare them: parsed, lower-cased, default ports
made explicit, so `http://LOCALHOST:80` and `http://localhost` are one origin.

Pure functions over strings: the config checks its `allow-origins` and `allow-hosts` with them,
and `browsers` applies them to each request.
"""

from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
# A DNS name (letters, digits, hyphens between dots) or an IPv4 address; IPv6 comes in brackets.
_NAME = re.compile(
    r"(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*"
)


class Origin(NamedTuple):
    scheme: str
    host: str  # lower case; an IPv6 address without brackets
    port: int


class HostHeader(NamedTuple):
    host: str  # lower case, no trailing dot; an IPv6 address without brackets
    port: int | None  # None when the header names none


def parse_origin(text: str) -> Origin:
    """`scheme://host[:port]`, nothing more; ValueError says what is wrong."""
    parts = urlsplit(text.strip())
    if parts.scheme not in DEFAULT_PORTS:
        raise ValueError(f"expected an http:// or https:// origin, got {text[:100]!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(f"an origin is scheme://host[:port] alone, got {text[:100]!r}")
    host = _host_of(parts.netloc)
    return Origin(parts.scheme, host.host, host.port or DEFAULT_PORTS[parts.scheme])


def parse_host(text: str) -> HostHeader:
    """A Host header's value: `name[:port]`, `address[:port]` or `[v6][:port]`."""
    return _host_of(text.strip())


def check_host_name(text: str) -> str:
    """An `allow-hosts` entry: a name or address without a port, lower-cased."""
    host = parse_host(text)
    if host.port is not None:
        raise ValueError(f"a host name without a port, got {text[:100]!r}")
    return host.host


def is_loopback_name(host: str) -> bool:
    """`localhost` and names under `.localhost`, which resolve to this host alone (RFC 6761) and
    which browsers never ask DNS for, so no page can rebind them."""
    return host == "localhost" or host.endswith(".localhost")


def same_address(host: str, address: str) -> bool:
    """Whether a Host's name is the IP address a connection reached (an IPv4-mapped IPv6 address
    is its IPv4 address)."""
    try:
        given, local = ipaddress.ip_address(host), ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    return _unmapped(given) == _unmapped(local)


def _host_of(netloc: str) -> HostHeader:
    host, port = netloc, None
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise ValueError(f"an IPv6 host without its closing bracket: {netloc[:100]!r}")
        host, rest = netloc[1:end], netloc[end + 1 :]
        try:
            ipaddress.IPv6Address(host.split("%")[0])
        except ValueError:
            raise ValueError(f"not an IPv6 address: {host[:100]!r}") from None
        if rest:
            port = _port(rest.removeprefix(":"), netloc) if rest.startswith(":") else _bad(netloc)
    else:
        if ":" in netloc:
            host, _, port_text = netloc.rpartition(":")
            port = _port(port_text, netloc)
        host = host.lower().removesuffix(".")
        if not _NAME.fullmatch(host):
            raise ValueError(f"not a host name: {netloc[:100]!r}")
    return HostHeader(host.lower(), port)


def _port(text: str, netloc: str) -> int:
    if not text.isdigit() or not 0 < int(text) <= 65535:
        raise ValueError(f"not a port in {netloc[:100]!r}")
    return int(text)


def _bad(netloc: str) -> int:
    raise ValueError(f"not a host: {netloc[:100]!r}")


def _unmapped(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> object:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip
