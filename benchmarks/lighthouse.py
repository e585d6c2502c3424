"""Lighthouse scores of every page of a built site, in both languages.

    python benchmarks/lighthouse.py                 # builds the site first (make build)
    python benchmarks/lighthouse.py --site site     # an existing build
    python benchmarks/lighthouse.py --site site --pages lectures/building-blocks/
    python benchmarks/lighthouse.py --site after --against before --runs 3

Lighthouse 12 (installed from npm into ``.cache/lighthouse`` on first use) runs
with its default mobile profile against the site served on 127.0.0.1 (text
gzip-compressed, as GitHub Pages serves it), driving
Chromium (``LLMLAB_CHROMIUM``, else ``chromium`` on the PATH). For each page it
prints the four category scores (performance, accessibility, best practices,
SEO), the bytes transferred, the DOM size, the total blocking time and the
largest contentful paint, and the audits that cost points. Scores move between
runs on a shared machine (a page's performance by 20 points and more, when its
simulated LCP jumps from about 1.4 s to 3.5 s): ``--runs N`` audits each page N
times and prints the medians, and ``--against OTHER`` audits a second build of
the site too, alternating the two page by page (and which goes first, run by run),
so that a before/after comparison is made side by side.
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIGHTHOUSE = ROOT / ".cache" / "lighthouse"
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """Serves the site as a static host such as GitHub Pages does: text gzip-compressed."""

    COMPRESS = (".html", ".css", ".js", ".json", ".svg", ".xml", ".map", ".txt")

    def log_message(self, *args: object) -> None:
        pass

    def send_head(self):  # noqa: ANN201 - the http.server method this overrides
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        wants = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (wants and path.suffix in self.COMPRESS and path.is_file()):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


def _lighthouse() -> Path:
    binary = LIGHTHOUSE / "node_modules" / ".bin" / "lighthouse"
    if not binary.exists():
        LIGHTHOUSE.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--prefix", str(LIGHTHOUSE),
                        "lighthouse@12"], check=True)
    return binary


def _chromium() -> str:
    found = os.environ.get("LLMLAB_CHROMIUM") or shutil.which("chromium") or shutil.which(
        "google-chrome")
    if not found:
        raise SystemExit("no Chromium: install it or set LLMLAB_CHROMIUM")
    return found


def _pages(site: Path) -> list[str]:
    """Every page's address relative to the site root, zh (root) first, then en."""
    pages = []
    for index in sorted(site.rglob("index.html")):
        rel = index.parent.relative_to(site).as_posix()
        if rel.split("/")[0] in {"assets", "search", "en"}:
            continue
        pages.append("" if rel == "." else rel + "/")
    return pages + [f"en/{p}" for p in pages]  # "en/" is the English home page


def _audit(binary: Path, url: str, out: Path) -> dict:
    env = {**os.environ, "CHROME_PATH": _chromium()}
    subprocess.run([str(binary), url, "--quiet", "--output=json", f"--output-path={out}",
                    "--chrome-flags=--headless=new --no-sandbox --disable-gpu"],
                   check=True, env=env, timeout=300)
    report = json.loads(out.read_text(encoding="utf-8"))
    audits = report["audits"]
    costly = sorted((a for a in audits.values()
                     if a.get("score") is not None and a["score"] < 1
                     and a.get("scoreDisplayMode") in ("binary", "numeric", "metricSavings")),
                    key=lambda a: a["score"])
    return {
        **{c: round(100 * (report["categories"][c]["score"] or 0)) for c in CATEGORIES},
        "kib": round(audits["total-byte-weight"]["numericValue"] / 1024),
        "dom": int(audits["dom-size"]["numericValue"]),
        "tbt_ms": round(audits["total-blocking-time"]["numericValue"]),
        "lcp_s": round(audits["largest-contentful-paint"]["numericValue"] / 1000, 2),
        "failing": [a["id"] for a in costly[:6]],
    }


NUMERIC = (*CATEGORIES, "kib", "dom", "tbt_ms", "lcp_s")


def median_result(runs: list[dict]) -> dict:
    """One page's audits as one row: the median of each figure, the performance range,
    and the failing audits of the run whose performance is the median."""
    if not runs:
        raise ValueError("median_result needs at least one run, got none")
    middle = sorted(runs, key=lambda r: r["performance"])[(len(runs) - 1) // 2]
    row = {k: statistics.median(r[k] for r in runs) for k in NUMERIC}
    perf = [r["performance"] for r in runs]
    return {**row, "runs": len(runs), "performance_range": [min(perf), max(perf)],
            "failing": middle["failing"]}


class _Sites(_Quiet):
    """Serves whichever build ``root`` names now (both are built for the same address)."""

    root = ""

    def __init__(self, *args, **kwargs):  # noqa: ANN002, ANN003
        super().__init__(*args, directory=type(self).root, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build one)")
    parser.add_argument("--against", type=Path,
                        help="a second build, audited alternately with --site")
    parser.add_argument("--runs", type=int, default=1, help="audits per page (medians)")
    parser.add_argument("--pages", nargs="*", help="pages relative to the site root")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--port", type=int, default=8000,
                        help="where to serve; the port of the address the site was built for")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs must be a positive number of audits, got {args.runs}")
    binary = _lighthouse()
    with tempfile.TemporaryDirectory(prefix="llmlab-lh-") as tmp_name:
        tmp = Path(tmp_name)
        site = args.site
        base = f"http://127.0.0.1:{args.port}/"  # the site's links name this address
        if site is None:
            site = tmp / "site"
            subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d",
                            str(site)], cwd=ROOT, check=True, env={**os.environ, "SITE_URL": base})
        sites = {"site": site} if args.against is None else {"site": site,
                                                              "against": args.against}
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), _Sites)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        results: dict[str, dict] = {name: {} for name in sites}
        width = 44 if len(sites) == 1 else 54
        print(f"{'page':<{width}}{'perf':>5}{'a11y':>5}{'bp':>5}{'seo':>5}{'KiB':>6}{'DOM':>6}"
              f"{'TBT':>6}{'LCP':>6}  failing audits", flush=True)
        for page in args.pages or _pages(site):
            runs: dict[str, list[dict]] = {name: [] for name in sites}
            for run in range(args.runs):
                # alternately, side by side in time, and each site first every other run
                for name, root in list(sites.items())[::1 if run % 2 == 0 else -1]:
                    _Sites.root = str(root)
                    runs[name].append(_audit(binary, base + page, tmp / "report.json"))
            for name in sites:
                r = results[name][page or "/"] = median_result(runs[name])
                label = (page or "/") + ("" if len(sites) == 1 else f" [{name}]")
                spread = "" if args.runs == 1 else " (perf {}-{})".format(
                    *r["performance_range"])
                print(f"{label:<{width}}{r['performance']:>5g}{r['accessibility']:>5g}"
                      f"{r['best-practices']:>5g}{r['seo']:>5g}{r['kib']:>6g}{r['dom']:>6g}"
                      f"{r['tbt_ms']:>6g}{r['lcp_s']:>6g}  {' '.join(r['failing'])}{spread}",
                      flush=True)
        server.shutdown()
    if args.json:
        out = results["site"] if len(sites) == 1 else results
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
