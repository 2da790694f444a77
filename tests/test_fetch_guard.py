"""The SSRF guard: every refused address class, in every spelling, refused before anything connects.

Names are answered by an injected resolver, never by DNS (but "localhost", from /etc/hosts).
Each refusal is checked at the guard and through `fetch` with a tripwire that fails the test if a
request to an IP literal starts or a name is resolved to addresses: both come before a connection,
so a broken guard fails here without a packet leaving the machine.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import aiohttp
import pytest
import yarl

from smemd.fetch.client import FetchLimits, FetchRefused, fetch
from smemd.fetch.guard import Guard, Refused, parse_literal

NAMES: Mapping[str, Sequence[str]] = {
    "evil.example": ["10.0.0.5"],
    "mixed.example": ["93.184.216.34", "10.0.0.5"],
    "v6loop.example": ["::1"],
    "metadata.example": ["169.254.169.254"],
    "public.example": ["93.184.216.34"],
    "public6.example": ["2606:4700:4700::1111"],
    "intranet.example": ["10.1.1.1"],
}


async def fake_dns(host: str, port: int) -> list[str]:
    if host == "localhost":
        return ["127.0.0.1", "::1"]
    if host not in NAMES:
        raise socket.gaierror(socket.EAI_NONAME, f"{host} unknown here")
    return list(NAMES[host])


REFUSED = [
    ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://localhost/", "127.0.0.1 (from localhost) is a loopback address"),
    ("http://LOCALHOST./", "127.0.0.1 (from localhost.) is a loopback address"),
    ("http://127.0.0.1./", "127.0.0.1 is a loopback address"),
    ("http://10.1.2.3/", "10.1.2.3 is a private address"),
    ("http://172.16.0.1/", "172.16.0.1 is a private address"),
    ("http://172.31.255.254/", "172.31.255.254 is a private address"),
    ("http://192.168.1.1/", "192.168.1.1 is a private address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is the cloud metadata address"),
    ("http://169.254.1.1/", "169.254.1.1 is a link-local address"),
    ("http://100.64.0.1/", "100.64.0.1 is a shared (carrier-grade NAT) address"),
    ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
    ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
    ("http://255.255.255.255/", "255.255.255.255 is the broadcast address"),
    ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ("http://192.0.2.7/", "192.0.2.7 is a documentation address"),
    ("http://198.18.0.1/", "198.18.0.1 is not a globally routable address"),
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://[::]/", ":: is an unspecified address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://[fc00::1]/", "fc00::1 is a private address"),
    ("http://[fd12:3456::1]/", "fd12:3456::1 is a private address"),
    ("http://[ff02::1]/", "ff02::1 is a multicast address"),
    ("http://[2001:db8::1]/", "2001:db8::1 is a documentation address"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1 is an IPv6 form of 127.0.0.1, a loopback"),
    ("http://[::ffff:7f00:1]/", "::ffff:7f00:1 is an IPv6 form of 127.0.0.1, a loopback"),
    ("http://[0:0:0:0:0:ffff:127.0.0.1]/", "an IPv6 form of 127.0.0.1, a loopback"),
    ("http://[::ffff:10.0.0.1]/", "::ffff:a00:1 is an IPv6 form of 10.0.0.1, a private"),
    ("http://[::127.0.0.1]/", "::7f00:1 is an IPv6 form of 127.0.0.1, a loopback"),
    ("http://[64:ff9b::a00:1]/", "64:ff9b::a00:1 is an IPv6 form of 10.0.0.1, a private"),
    ("http://[2002:0a00:0001::]/", "2002:a00:1:: is an IPv6 form of 10.0.0.1, a private"),
    ("http://2130706433/", "127.0.0.1 (from 2130706433) is a loopback address"),
    ("http://0177.0.0.1/", "127.0.0.1 (from 0177.0.0.1) is a loopback address"),
    ("http://0x7f000001/", "127.0.0.1 (from 0x7f000001) is a loopback address"),
    ("http://0x7f.0.0.1/", "127.0.0.1 (from 0x7f.0.0.1) is a loopback address"),
    ("http://127.1/", "127.0.0.1 (from 127.1) is a loopback address"),
    ("http://0xA9.0xFE.0xA9.0xFE/", "169.254.169.254 (from 0xa9.0xfe.0xa9.0xfe) is the cloud"),
    ("http://167772161/", "10.0.0.1 (from 167772161) is a private address"),
    ("http://evil.example/", "10.0.0.5 (from evil.example) is a private address"),
    ("http://Evil.Example./", "10.0.0.5 (from evil.example.) is a private address"),
    ("http://mixed.example/", "10.0.0.5 (from mixed.example) is a private address"),
    ("http://v6loop.example/", "::1 (from v6loop.example) is a loopback address"),
    ("http://metadata.example/", "169.254.169.254 (from metadata.example) is the cloud"),
    ("file:///etc/passwd", "file scheme"),
    ("ftp://93.184.216.34/", "ftp scheme"),
    ("gopher://127.0.0.1:70/_GET", "gopher scheme"),
    ("example.com/page", "no scheme"),
    ("http://user:secret@10.0.0.1:22/", "10.0.0.1 is a private address"),
    ("http://public.example@10.0.0.1/", "10.0.0.1 is a private address"),
    ("http://127.0.0.1:8080@evil.example:65535/", "10.0.0.5 (from evil.example) is a private"),
    ("https://[::ffff:10.0.0.1]:1/", "an IPv6 form of 10.0.0.1, a private"),
]


def tripwire(passed: list[str]) -> aiohttp.TraceConfig:
    """Records and stops what only a guard that let the URL through would reach."""

    async def request_start(
        session: aiohttp.ClientSession,
        ctx: SimpleNamespace,
        params: aiohttp.TraceRequestStartParams,
    ) -> None:
        # A name is checked when aiohttp resolves it, after this; an IP literal before it.
        if parse_literal(params.url.raw_host or "") is not None:
            passed.append(f"request to {params.url}")
            raise AssertionError(f"the guard let {params.url} through")

    async def resolved(
        session: aiohttp.ClientSession,
        ctx: SimpleNamespace,
        params: aiohttp.TraceDnsResolveHostEndParams,
    ) -> None:
        passed.append(f"resolved {params.host}")
        raise AssertionError(f"the guard let {params.host} through")

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(request_start)
    trace.on_dns_resolvehost_end.append(resolved)
    return trace


@pytest.mark.parametrize(("url", "reason"), REFUSED)
async def test_refused_at_the_guard(url: str, reason: str) -> None:
    with pytest.raises(Refused) as refused:
        await Guard(resolve=fake_dns).check(yarl.URL(url))
    assert reason in str(refused.value)


@pytest.mark.parametrize(("url", "reason"), REFUSED)
async def test_refused_before_anything_connects(url: str, reason: str) -> None:
    passed: list[str] = []
    with pytest.raises(FetchRefused) as refused:
        await fetch(url, Guard(resolve=fake_dns), FetchLimits(), trace_configs=[tripwire(passed)])
    assert reason in str(refused.value)
    assert passed == []


@pytest.mark.parametrize(
    ("url", "addresses"),
    [
        ("http://public.example/", ["93.184.216.34"]),
        ("https://PUBLIC.example.:8443/x", ["93.184.216.34"]),
        ("http://public6.example/", ["2606:4700:4700::1111"]),
        ("http://93.184.216.34/", ["93.184.216.34"]),
        ("http://1572395042/", ["93.184.216.34"]),  # the same, as one number
        ("http://[2606:4700:4700::1111]/", ["2606:4700:4700::1111"]),
        ("http://[2002:5db8:d822::1]/", ["2002:5db8:d822::1"]),  # 6to4 of a public address
    ],
)
async def test_public_addresses_pass(url: str, addresses: list[str]) -> None:
    """Checked only: these are never fetched, so no test sends traffic beyond loopback."""
    assert await Guard(resolve=fake_dns).check(yarl.URL(url)) == addresses


@pytest.mark.parametrize(
    ("allow", "url", "addresses"),
    [
        (["127.0.0.1:8080"], "http://127.0.0.1:8080/", ["127.0.0.1"]),
        (["127.0.0.1"], "http://0x7f.1:9/", ["127.0.0.1"]),  # by address, any spelling, any port
        (["0177.0.0.1:80"], "http://127.0.0.1/", ["127.0.0.1"]),
        (["[::1]:8080"], "http://[::1]:8080/", ["::1"]),
        (["::1"], "http://[0:0::1]:1/", ["::1"]),
        (["LocalHost."], "http://localhost:3000/", ["127.0.0.1", "::1"]),  # by name
        (["intranet.example:443"], "https://INTRANET.example/", ["10.1.1.1"]),
        (["10.0.0.5"], "http://evil.example/", ["10.0.0.5"]),  # the resolved address
        (["10.0.0.5"], "http://mixed.example/", ["93.184.216.34", "10.0.0.5"]),
    ],
)
async def test_allow_hosts_lets_a_host_or_address_through(
    allow: list[str], url: str, addresses: list[str]
) -> None:
    assert await Guard(allow, resolve=fake_dns).check(yarl.URL(url)) == addresses


@pytest.mark.parametrize(
    ("allow", "url", "reason"),
    [
        (["127.0.0.1:8080"], "http://127.0.0.1:8081/", "127.0.0.1 is a loopback"),
        (["localhost:3000"], "http://127.0.0.1:3000/", "127.0.0.1 is a loopback"),
        (["intranet.example"], "http://evil.example/", "10.0.0.5 (from evil.example)"),
        (["10.0.0.6"], "http://evil.example/", "10.0.0.5 (from evil.example)"),
        (["127.0.0.1"], "file://127.0.0.1/etc/passwd", "file scheme"),
    ],
)
async def test_allow_hosts_lets_nothing_else_through(
    allow: list[str], url: str, reason: str
) -> None:
    with pytest.raises(Refused, match=re.escape(reason)):
        await Guard(allow, resolve=fake_dns).check(yarl.URL(url))


@pytest.mark.parametrize(
    "entry",
    [
        "",
        "host:99999",
        "http://example.com",
        "a b",
        "example.com/path",
        "*.example.com",
        "user@host",
    ],
)
def test_a_bad_allow_hosts_entry_is_named(entry: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"bad allow-hosts entry {entry!r}")):
        Guard([entry])


async def test_a_name_is_looked_up_once_per_check_with_its_port() -> None:
    asked: list[tuple[str, int]] = []

    async def counting(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return ["93.184.216.34", "93.184.216.34"]

    assert await Guard(resolve=counting).check(yarl.URL("https://Public.Example./")) == [
        "93.184.216.34"
    ]
    assert asked == [("public.example", 443)]


async def test_numeric_hosts_never_reach_the_resolver() -> None:
    async def no_dns(host: str, port: int) -> list[str]:
        raise AssertionError(f"asked DNS about {host}")

    guard = Guard(["2130706433"], resolve=no_dns)
    assert await guard.check(yarl.URL("http://0x7f000001/")) == ["127.0.0.1"]
