"""The longest main-thread task of each page load, in headless Chromium, unthrottled.

    python benchmarks/page_tasks.py --site site            # every page, 3 loads each
    python benchmarks/page_tasks.py --site site --runs 5 --pages lectures/training/

The browser tests check what a page loads and how many elements it has, never how
long it takes (a busy machine would fail them). This measures it: each page is
opened twice in one browser context (the second load is measured: Material's
script is compiled by then, as for a reader going from page to page), ``--runs``
times, and the longest task of the measured load (Long Tasks API: tasks over 50 ms)
is printed as median, min and max, beside the budget it was once a test of: 200 ms
(``--budget``). Lighthouse's phone is about four times slower
(``benchmarks/lighthouse.py`` simulates it and prints the total blocking time).
Machines are shared and noisy: compare runs side by side, quote medians.
"""

from __future__ import annotations

import argparse
import http.server
import importlib.util
import statistics
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_MS = 200.0

# recorded from before the page's own scripts run
LONG_TASKS = ("window.__llmlabLongTasks = []; new PerformanceObserver(list => list.getEntries()"
              ".forEach(e => window.__llmlabLongTasks.push(e.duration)))"
              ".observe({type: 'longtask', buffered: true});")


def _lighthouse_module():
    """benchmarks/lighthouse.py: its static server and page list (one of each)."""
    spec = importlib.util.spec_from_file_location("benchmark_lighthouse",
                                                  Path(__file__).with_name("lighthouse.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def summary(longest_ms: list[float], budget_ms: float = BUDGET_MS) -> dict:
    """One page's loads as one row: median, min and max of the longest task, and
    how many loads went over ``budget_ms``."""
    if not longest_ms:
        raise ValueError("summary needs at least one load, got none")
    return {"median_ms": statistics.median(longest_ms), "min_ms": min(longest_ms),
            "max_ms": max(longest_ms), "over_budget": sum(t > budget_ms for t in longest_ms),
            "loads": len(longest_ms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, required=True, help="a built site")
    parser.add_argument("--runs", type=int, default=3, help="measured loads per page")
    parser.add_argument("--pages", nargs="*", help="pages relative to the site root")
    parser.add_argument("--budget", type=float, default=BUDGET_MS, help="ms (%(default)s)")
    parser.add_argument("--port", type=int, default=8000,
                        help="where to serve; the port of the address the site was built for")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs must be a positive number of loads, got {args.runs}")
    from playwright.sync_api import sync_playwright

    lighthouse = _lighthouse_module()
    handler = type("Site", (lighthouse._Quiet,), {})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", args.port),
        lambda *a, **k: handler(*a, directory=str(args.site), **k))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{args.port}/"
    print(f"{'page':<48}{'median ms':>10}{'min':>8}{'max':>8}  over {args.budget:g} ms",
          flush=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=lighthouse._chromium(), headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        for page_rel in args.pages or lighthouse._pages(args.site):
            longest = []
            for _ in range(args.runs):
                context = browser.new_context(viewport={"width": 390, "height": 844},
                                              is_mobile=True)
                context.add_init_script(LONG_TASKS)
                page = context.new_page()
                for _load in range(2):  # the second load is measured
                    page.goto(base + page_rel, wait_until="networkidle")
                longest.append(max(page.evaluate("window.__llmlabLongTasks"), default=0.0))
                context.close()
            row = summary(longest, args.budget)
            print(f"{page_rel or '/':<48}{row['median_ms']:>10.0f}{row['min_ms']:>8.0f}"
                  f"{row['max_ms']:>8.0f}  {row['over_budget']}/{row['loads']}", flush=True)
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main()
