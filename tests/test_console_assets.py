"""The console's files as smemd serves them: at `/` and `/console/…`, without a token, under a
strict Content-Security-Policy, revalidated by ETag, compressed, and nothing outside the set."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import aiohttp

from smemd.console.assets import STATIC
from smemd.console.pages import CSP
from tests.conftest import StartDaemon
from tests.test_api import ADMIN, TOKEN, call


async def test_the_page_and_its_assets_are_served_under_a_strict_policy(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon(api__token=TOKEN, api__admin_token=ADMIN)
    status, body, response = await call(running.tcp, "GET", running.url("/"))
    assert status == 200 and response.content_type == "text/html"
    assert '<script type="module" src="/console/app.js">' in body
    policy = response.headers["Content-Security-Policy"]
    assert policy == CSP and "script-src 'self'" in policy and "unsafe" not in policy
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    # Every script, style and icon the page names is served, with its type.
    for path in re.findall(r'(?:src|href)="(/console/[^"]+)"', body):
        status, _, asset = await call(running.tcp, "GET", running.url(path))
        assert status == 200, path
        assert asset.content_type in ("text/javascript", "text/css", "image/svg+xml"), path


async def test_no_inline_script_or_remote_origin_anywhere_in_the_console() -> None:
    for path in STATIC.rglob("*"):
        if path.suffix not in (".html", ".js", ".css"):
            continue
        text = path.read_text()
        assert (
            not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text) or "vendor" in path.parts
        ), path
        if path.suffix == ".html":
            assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), f"inline script in {path}"
            assert not re.search(r"\son[a-z]+\s*=", text, re.I), f"inline handler in {path}"


async def test_an_asset_revalidates_by_etag_and_is_gzipped_when_asked(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    url = running.url("/console/app.js")
    async with running.tcp.get(
        url, headers={"Accept-Encoding": "gzip"}, auto_decompress=False
    ) as r:
        assert r.status == 200 and r.headers["Content-Encoding"] == "gzip"
        assert r.headers["Cache-Control"] == "no-cache"
        etag = r.headers["ETag"]
    async with running.tcp.get(url, headers={"If-None-Match": etag}) as r:
        assert r.status == 304 and await r.read() == b""
    async with running.tcp.get(url, headers={"Accept-Encoding": "identity"}) as r:
        assert r.status == 200 and "Content-Encoding" not in r.headers
        assert await r.read() == (STATIC / "app.js").read_bytes()


async def test_a_path_outside_the_console_is_404_in_every_spelling(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    for path in [
        "/console/nothing.js", "/console/../smemd.sock", "/console/%2e%2e/%2e%2e/etc/passwd",
        "/console/vendor/licenses/htm.txt", "/console/views/", "/console/..%2fassets.py",
        "/console/vendor/README.md",
    ]:  # fmt: skip
        async with running.tcp.get(running.url(path)) as r:
            assert r.status == 404, path
            assert (await r.json())["error"] in ("no such console file", "not found"), path


async def test_whoami_tells_a_client_whether_to_ask_for_a_token(start_daemon: StartDaemon) -> None:
    running = await start_daemon(api__token=TOKEN, api__admin_token=ADMIN)
    url = running.url("/v1/whoami")
    status, body, _ = await call(running.tcp, "GET", url)
    assert status == 200
    assert body == {"name": "public", "role": None, "namespaces": [], "tokenRequired": True}
    status, body, _ = await call(running.tcp, "GET", url, headers={"Authorization": "Bearer nope"})
    assert body["role"] is None
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    status, body, _ = await call(running.tcp, "GET", url, headers=bearer)
    assert body == {"name": "token", "role": "write", "namespaces": ["*"], "tokenRequired": True}
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/whoami")
    assert body["name"] == "socket" and body["role"] == "admin"


async def test_whoami_without_tokens_configured_is_anonymous(start_daemon: StartDaemon) -> None:
    open_daemon = await start_daemon()
    _status, body, _ = await call(open_daemon.tcp, "GET", open_daemon.url("/v1/whoami"))
    assert body == {
        "name": "anonymous",
        "role": "write",
        "namespaces": ["*"],
        "tokenRequired": False,
    }


def test_vendored_files_are_the_pinned_releases() -> None:
    """The vendor README pins each file by SHA-256; a changed file must change the pin."""
    vendor = STATIC / "vendor"
    pins = dict(
        re.findall(
            r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$", (vendor / "README.md").read_text(), re.M
        )
    )
    served = {p.name for p in vendor.glob("*.js")}
    assert served == set(pins)
    for name, digest in pins.items():
        assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == digest, name
        licence = vendor / "licenses" / f"{Path(name).stem}.txt"
        assert licence.exists() or name == "htm-preact.js", name
    assert (vendor / "licenses" / "htm.txt").exists() and (
        vendor / "licenses" / "preact.txt"
    ).exists()


async def test_the_api_is_unchanged_behind_the_console(start_daemon: StartDaemon) -> None:
    running = await start_daemon(api__token=TOKEN)
    status, _, _ = await call(running.tcp, "GET", running.url("/v1/status"))
    assert status == 401  # the console's routes are public; the API's are not
    doc = await (await running.tcp.get(running.url("/v1/openapi.json"))).json()
    assert "/" not in doc["paths"] and not any(p.startswith("/console") for p in doc["paths"])
    assert "/v1/whoami" in doc["paths"]
    async with aiohttp.ClientSession() as fresh, fresh.head(running.url("/")) as r:
        assert r.status == 200


def _themes() -> dict[str, dict[str, str]]:
    """The colour variables of style.css: the dark default, and the light theme over it."""
    css = (STATIC / "style.css").read_text()
    dark_block = css[css.index(":root {") : css.index("}", css.index(":root {"))]
    light_start = css.index("@media (prefers-color-scheme: light)")
    light_block = css[light_start : css.index("}", css.index(":root {", light_start))]
    dark = dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-f]{6})", dark_block))
    return {
        "dark": dark,
        "light": dark | dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-f]{6})", light_block)),
    }


def _contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two sRGB colours."""

    def luminance(colour: str) -> float:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_text_has_at_least_4_5_to_1_contrast_in_both_themes() -> None:
    texts = ["text", "muted", "accent", "good", "warn", "bad", "fact", "preference", "episode"]
    texts += ["person", "place", "organisation", "thing"]  # entity kinds (the graph's badges)
    for theme, colours in _themes().items():
        for surface in ("bg", "panel", "raised"):
            for text in texts:
                ratio = _contrast(colours[text], colours[surface])
                assert ratio >= 4.5, f"{theme}: --{text} on --{surface} is {ratio:.2f}:1"
        assert _contrast(colours["accent-text"], colours["accent"]) >= 4.5, theme
        assert _contrast(colours["focus"], colours["bg"]) >= 3, theme  # a focus ring: 3:1


def test_each_views_styles_apply_inside_that_view_only() -> None:
    """Every view's stylesheet is loaded on every page: its rules are scoped to the view's root
    (`.view-<id>`), so two views may use the same class name without restyling each other."""
    for sheet in (STATIC / "views").glob("*.css"):
        css = re.sub(r"/\*.*?\*/", "", sheet.read_text(), flags=re.S)
        css = re.sub(r"@keyframes[^{]*\{(?:[^{}]*\{[^}]*\})*\s*\}", "", css)
        selectors = re.findall(r"([^{}@;]+)\{[^{}]*\}", css)
        assert selectors, sheet
        for group in selectors:
            for selector in group.split(","):
                assert selector.strip().startswith(f".view-{sheet.stem}"), (
                    f"{sheet.name}: {selector}"
                )
