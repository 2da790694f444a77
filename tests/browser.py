"""The console in a real browser: Debian's Chromium driven by Playwright, watched for every console
error and failed request, with screenshots written as test artefacts.

Playwright never downloads a browser here: it is pointed at the system's `chromium`. Where there is
none the browser tests skip, unless SMEM_REQUIRE_BROWSER=1 (CI sets it), where they fail.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.settling import until_idle

if TYPE_CHECKING:
    from tests.conftest import Running

CHROMIUM = os.environ.get("SMEM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("SMEM_ARTIFACTS") or Path(__file__).parent / "artifacts")
THEMES = ("dark", "light")


def require_browser() -> None:
    missing = []
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package")
    if not Path(CHROMIUM).exists():
        missing.append(f"chromium ({CHROMIUM})")
    if missing:
        reason = f"no {' or '.join(missing)}"
        if os.environ.get("SMEM_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason}, and SMEM_REQUIRE_BROWSER=1")
        pytest.skip(reason)


@dataclass
class Watched:
    """A page, and everything that went wrong on it: console errors, uncaught exceptions, requests
    that failed or answered an error status."""

    page: Any  # playwright.async_api.Page
    problems: list[str] = field(default_factory=list)
    expected_statuses: set[int] = field(default_factory=set)  # e.g. the 401 of a wrong token

    def assert_clean(self) -> None:
        assert self.problems == [], "\n".join(self.problems)

    async def screenshot(self, name: str) -> Path:
        path = ARTIFACTS / "console" / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        await self.page.screenshot(path=str(path), full_page=True)
        return path


class Browser:
    def __init__(self, browser: Any) -> None:
        self.browser = browser

    async def open(
        self, url: str, *, theme: str = "dark", token: str | None = None, width: int = 1280
    ) -> Watched:
        """A new tab (its own session storage) at `url`; `token` preset as if entered on Connect."""
        context = await self.browser.new_context(
            color_scheme=theme, viewport={"width": width, "height": 860}
        )
        page = await context.new_page()
        page.set_default_timeout(10_000)
        watched = Watched(page)
        page.on(
            "console",
            lambda m: (
                watched.problems.append(f"console {m.type}: {m.text}")
                if m.type == "error" and not _is_expected(m.text, watched)
                else None
            ),
        )
        page.on("pageerror", lambda e: watched.problems.append(f"uncaught: {e}"))
        page.on(
            "requestfailed",
            lambda r: watched.problems.append(f"failed {r.method} {r.url}: {r.failure}"),
        )
        page.on(
            "response",
            lambda r: (
                watched.problems.append(f"{r.status} {r.request.method} {r.url}")
                if r.status >= 400 and r.status not in watched.expected_statuses
                else None
            ),
        )
        if token is not None:
            await context.add_init_script(f"sessionStorage.setItem('smem.token', {token!r})")
        await page.goto(url)
        return watched


def _is_expected(text: str, watched: Watched) -> bool:
    # Chromium logs each error status as a console error too; the response hook judges those.
    return "Failed to load resource: the server responded with a status of" in text and any(
        f"status of {status}" in text for status in watched.expected_statuses
    )


@contextlib.asynccontextmanager
async def chromium(*args: str) -> AsyncIterator[Browser]:
    """Chromium, with any further command-line `args` (`--host-resolver-rules=…`)."""
    require_browser()
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", *args]
        )
        try:
            yield Browser(browser)
        finally:
            await browser.close()


# --- a namespace worth looking at ---------------------------------------------------------------

PEOPLE = ["Alice", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas"]
CITIES = ["Lisbon", "Oslo", "Kyoto", "Denver", "Nairobi", "Quito", "Perth", "Tallinn"]
PETS = ["a beagle", "two cats", "a parrot", "a tortoise", "no pets"]
FOODS = ["ramen", "tacos", "risotto", "falafel", "dumplings", "paella"]
SPORTS = ["climbing", "rowing", "chess", "cycling", "tennis", "running"]


def seed_documents(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """`count` short documents of plain statements about people, for the ingest pipeline to turn
    into a handful of memories each (facts, preferences, episodes)."""
    rng = random.Random(seed)
    documents = []
    for n in range(count):
        person = PEOPLE[n % len(PEOPLE)]
        lines = [
            f"{person} lives in {rng.choice(CITIES)}.",
            f"{person} has {rng.choice(PETS)}.",
            f"{person} prefers {rng.choice(FOODS)} over anything else.",
            f"{person} went {rng.choice(SPORTS)} with a friend last weekend.",
            f"{person} works as a {rng.choice(['nurse', 'pilot', 'teacher', 'chef'])}.",
        ]
        documents.append({"content": " ".join(lines), "id": f"doc-{n:03d}"})
    return documents


async def seed(running: Running, namespace: str = "people", documents: int = 120) -> int:
    """Ingest `documents` of `seed_documents` into `namespace` through the API (over the socket) and
    wait until the worker is idle; the number of memories made."""
    url = f"http://smemd/ns/{namespace}/document/batch"
    async with running.unix.post(url, json={"documents": seed_documents(documents)}) as response:
        assert response.status in (200, 202), await response.text()
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    async with running.unix.post(
        f"http://smemd/ns/{namespace}/list/memories?limit=1", json={}
    ) as r:
        return int((await r.json())["pagination"]["totalItems"])
