"""The console as a browser sees it, on a namespace of 10k memories.

A real smemd on a store filled as `search_latency` fills it (10k synthetic memories in one
namespace), then Chromium (Debian's, driven by Playwright):

- first_load_kb: bytes transferred (compressed, headers included) to open the console on Home in
  a fresh tab, until the network is idle; the median of the runs.
- first_paint_ms: the first contentful paint of that load (the browser's own figure); ready_ms:
  until Home's content (its first panel) is on screen.
- search_to_results_ms: in the Memories view, from the last keystroke of a query to its results
  on screen (the results list says which query it shows), debounce included; the median over
  the queries, and the p95.

    python3 -m tests.bench.console [--memories 10000] [--runs 5] [--queries 30]

Targets (issue 14): first load <= 300 KB, results on screen <= 150 ms after typing stops.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from tests.bench.search_latency import NS, fill, p
from tests.browser import chromium
from tests.daemon_process import DaemonProcess

_TRANSFERRED = """() => {
  const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  return { bytes: entries.reduce((sum, e) => sum + e.transferSize, 0), fcp: paint ? paint.startTime : null };
}"""
# Types the query into the page's search as a user's last keystroke would land, then waits for
# the results of exactly that query.
_SEARCH = """async (query) => {
  const input = document.querySelector("[data-search]");
  input.focus();
  const shown = () => [...document.querySelectorAll("[data-results-for]")].some((e) => e.dataset.resultsFor === query);
  const started = performance.now();
  input.value = query;
  input.dispatchEvent(new Event("input", { bubbles: true }));
  await new Promise((resolve) => {
    if (shown()) return resolve();
    const observer = new MutationObserver(() => { if (shown()) { observer.disconnect(); resolve(); } });
    observer.observe(document.body, { subtree: true, childList: true, attributes: true });
  });
  await new Promise((resolve) => requestAnimationFrame(() => resolve()));
  return performance.now() - started;
}"""


async def first_loads(base: str, runs: int) -> tuple[list[float], list[float], list[float]]:
    kb, fcp, ready = [], [], []
    async with chromium() as browser:
        for _ in range(runs):
            context = await browser.browser.new_context(viewport={"width": 1280, "height": 860})
            page = await context.new_page()
            await page.goto(f"{base}/#/home?ns={NS}")
            await page.locator("main .panel").first.wait_for()
            ready.append(await page.evaluate("performance.now()"))
            await page.wait_for_load_state("networkidle")
            figures: dict[str, Any] = await page.evaluate(_TRANSFERRED)
            kb.append(figures["bytes"] / 1024)
            fcp.append(figures["fcp"] or float("nan"))
            await context.close()
    return kb, fcp, ready


async def searches(base: str, queries: list[str]) -> list[float]:
    async with chromium() as browser:
        context = await browser.browser.new_context(viewport={"width": 1280, "height": 860})
        page = await context.new_page()
        await page.goto(f"{base}/#/memories?ns={NS}")
        await page.locator("[data-search]").wait_for()
        samples = []
        for n, query in enumerate(queries):
            elapsed = await page.evaluate(_SEARCH, query)
            if n >= 3:  # the first few warm the daemon's index and the page's code paths
                samples.append(elapsed)
        await context.close()
        return samples


async def measure(memories: int, runs: int, count: int) -> str:
    state_dir = Path(tempfile.mkdtemp(prefix="smem-console-"))
    try:
        queries = (await fill(state_dir, memories, seed=14))[: count + 3]
        daemon = DaemonProcess(state_dir).start(["--log-level", "warning"])
        try:
            base = f"http://{daemon.tcp}"
            kb, fcp, ready = await first_loads(base, runs)
            results = await searches(base, queries)
        finally:
            daemon.stop()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    return (
        f"console n={memories} first_load_kb={statistics.median(kb):.1f}"
        f" first_paint_ms={statistics.median(fcp):.0f} ready_ms={statistics.median(ready):.0f}"
        f" search_to_results_ms={statistics.median(results):.0f}"
        f" search_p95_ms={p(results, 0.95):.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    print(asyncio.run(measure(args.memories, args.runs, args.queries)))


if __name__ == "__main__":
    main()
