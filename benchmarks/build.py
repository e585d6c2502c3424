"""Measure how fast the site builds, side by side with the lecture-7 seed script.

    python benchmarks/build.py                  # 3 repetitions of each measurement
    python benchmarks/build.py --reps 5 --json bench.json
    python benchmarks/build.py --skip-serve --skip-memory

Each measurement runs on a private copy of the working tree (the serve edits
never touch your checkout):

* cold build: ``mkdocs build --strict`` of both languages with an empty cache
  (the build runs ``python -m llmlab.build.precompute`` itself), alternating with
* the seed script: ``../shared/seeds/000_6097f6583093305d.txt`` (lecture 7's
  six demos), run with ``benchmarks/seed_lecture7/transformer.py`` over
  ``llmlab.models.gpt2``, single-threaded; the ratio cold / seed is taken pair
  by pair;
* warm build: the same build again, nothing changed;
* build efficiency: the CPU seconds the experiments took (each computed on one
  thread) ÷ cores ÷ the cold build's wall time; 1.0 would be no overhead at all;
* per page: the CPU seconds of the experiments each page calls, a part that several
  of its calls share counted once (the total of the page's "Computation on this
  page" table), the figure a lecture's budget is written in;
* serve: seconds until a prose edit shows (repeated), and after an edit to
  ``src/llmlab/feed_forward.py`` which experiments were recomputed (only those
  that import it should be);
* peak memory of a cold build, summed over its processes: PSS (the real
  footprint) and RSS (counts shared pages once per process). In separate cold
  builds: reading PSS costs enough CPU to slow the build it watches.

The machines are shared and noisy: medians with min and max, ratios of numbers
taken side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT.parent / "shared" / "seeds" / "000_6097f6583093305d.txt"


def _copy_tree(dest: Path) -> Path:
    """The tracked and untracked-not-ignored files of the checkout, copied."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


def _env(tree: Path, cache: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(tree / "src"),
           "LLMLAB_CACHE_DIR": str(cache)}
    env.pop("LLMLAB_CACHE", None)
    return {**env, **extra}


def _build(tree: Path, cache: Path, site: Path, sample_memory: bool = False) -> dict:
    """One strict build: wall seconds, its report and (if sampled) peak PSS and RSS."""
    log_path = site.parent / f"{site.name}.log"
    start = time.perf_counter()
    with log_path.open("wb") as log:  # a file: an unread pipe could fill and block it
        proc = psutil.Popen([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                             "-d", str(site)], cwd=tree, env=_env(tree, cache),
                            stdout=log, stderr=subprocess.STDOUT)
    peak_rss = peak_pss = 0
    while sample_memory and proc.poll() is None:
        rss = pss = 0
        try:
            for p in [proc, *proc.children(recursive=True)]:
                info = p.memory_full_info()
                rss, pss = rss + info.rss, pss + info.pss
        except psutil.Error:
            pass  # a process ended while we looked
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        time.sleep(0.2)
    proc.wait()
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"build failed:\n{log_path.read_text(errors='replace')[-4000:]}")
    report = json.loads((site / "build-report.json").read_text(encoding="utf-8"))
    return {"seconds": seconds, "report": report, "rss": peak_rss, "pss": peak_pss}


def _seed(tree: Path, work: Path, seed: Path) -> float:
    """Wall seconds of the lecture-7 seed script, single-threaded, over llmlab."""
    script = work / "seed_lecture7.py"
    shutil.copyfile(seed, script)
    env = _env(tree, work / "unused-cache")
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "benchmarks" / "seed_lecture7"),
                                         env["PYTHONPATH"]])
    start = time.perf_counter()
    subprocess.run([sys.executable, str(script)], cwd=work, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _experiment_seconds(report: dict) -> tuple[float, float]:
    """CPU seconds of the experiments and of the notebooks one build computed."""
    pre = report["precompute"]
    return (sum(j["seconds"] or 0.0 for j in pre["jobs"]),
            sum(n["seconds"] or 0.0 for n in pre["notebooks"]))


def _page_seconds(report: dict) -> dict[str, float]:
    """Per page, the CPU seconds of the experiments its calls computed in this build,
    each once: the page's whole cost on a cold cache (the benchmark's), a part of it
    when other results were already stored."""
    out = {}
    for page, calls in report["precompute"]["pages"].items():
        jobs: dict[str, float] = {}
        for call in calls:
            jobs.update(call["computed"])
        out[page] = sum(seconds or 0.0 for seconds in jobs.values())
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode("utf-8", errors="replace")


def _wait(check, timeout: float = 600) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            if check():
                return time.perf_counter() - start
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    raise SystemExit("serve: timed out")


def _serve(tree: Path, cache: Path, reps: int) -> dict:
    """Prose edits (``reps``) and a source edit under ``mkdocs serve``, cache warm."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    log = (tree.parent / "serve.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "mkdocs", "serve", "-a",
                             f"127.0.0.1:{port}"], cwd=tree,
                            env=_env(tree, cache, SITE_URL=url), stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        _wait(lambda: "LLM Lab" in _get(url), 900)
        stamp = json.loads(_get(url + "build-report.json"))["precompute"]["stamp"]
        page = tree / "docs" / "zh" / "index.md"
        original = page.read_text(encoding="utf-8")
        prose = []
        for i in range(reps):
            marker = f"benchmark-prose-edit-{i}-{time.time_ns()}"
            page.write_text(original + f"\n{marker}\n", encoding="utf-8")
            prose.append(_wait(lambda m=marker: m in _get(url), 300))
            time.sleep(1.0)  # let the reload settle
        target = tree / "src" / "llmlab" / "feed_forward.py"
        target.write_text(target.read_text(encoding="utf-8") + "\n# benchmark edit\n",
                          encoding="utf-8")
        report: dict = {}

        def rebuilt() -> bool:
            report.update(json.loads(_get(url + "build-report.json")))
            return report["precompute"]["stamp"] != stamp

        source_edit = _wait(rebuilt, 600)
        recomputed = sorted({j["name"] for j in report["precompute"]["jobs"]
                             if j["seconds"] is not None})
        return {"prose_edit_s": _stats(prose), "source_edit_s": source_edit,
                "recomputed_after_editing_feed_forward": recomputed}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _stats(xs: list[float]) -> dict[str, float]:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--mem-reps", type=int, default=None,
                        help="cold builds that sample memory (default: --reps)")
    parser.add_argument("--seed", type=Path, default=SEED, help="the lecture-7 seed script")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-builds", action="store_true",
                        help="no timed builds or seed runs: only memory and serve")
    args = parser.parse_args()
    mem_reps = 0 if args.skip_memory else (args.reps if args.mem_reps is None else args.mem_reps)
    cores = os.cpu_count() or 1
    results: dict = {"cpu_count": cores, "reps": args.reps}
    rows: list[tuple[str, dict]] = []
    with tempfile.TemporaryDirectory(prefix="llmlab-bench-") as name:
        tmp = Path(name)
        tree = _copy_tree(tmp / "tree")
        cold, warm, seed, ratios, efficiency, experiments, notebooks = [], [], [], [], [], [], []
        pages: dict[str, list[float]] = {}
        for i in range(0 if args.skip_builds else args.reps):
            build = _build(tree, tmp / f"cache-{i}", tmp / f"site-cold-{i}")
            cold.append(build["seconds"])
            exp, nb = _experiment_seconds(build["report"])
            experiments.append(exp)
            notebooks.append(nb)
            efficiency.append(exp / cores / build["seconds"])
            for page, seconds in _page_seconds(build["report"]).items():
                pages.setdefault(page, []).append(seconds)
            if args.seed.is_file():
                seed.append(_seed(tree, tmp, args.seed))
                ratios.append(cold[-1] / seed[-1])
            warm.append(_build(tree, tmp / f"cache-{i}", tmp / f"site-warm-{i}")["seconds"])
            print(f"rep {i + 1}: cold {cold[-1]:.1f} s, warm {warm[-1]:.1f} s"
                  + (f", seed {seed[-1]:.1f} s" if seed else ""), flush=True)
        if cold:
            rows += [("cold build (s)", _stats(cold)), ("warm build (s)", _stats(warm))]
            if seed:
                rows += [("seed script (s)", _stats(seed)), ("cold / seed", _stats(ratios))]
            else:
                print(f"no seed script at {args.seed}: the ratio is not measured")
            rows += [("experiments, CPU (s)", _stats(experiments)),
                     ("notebooks, CPU (s)", _stats(notebooks)),
                     ("build efficiency", _stats(efficiency))]
        pss, rss = [], []
        for i in range(mem_reps):
            build = _build(tree, tmp / f"cache-mem-{i}", tmp / f"site-mem-{i}",
                           sample_memory=True)
            pss.append(build["pss"] / 2**30)
            rss.append(build["rss"] / 2**30)
        if pss:
            rows += [("cold peak PSS (GiB)", _stats(pss)), ("cold peak RSS (GiB)", _stats(rss))]
        if not args.skip_serve:
            if not (tmp / "cache-0").exists():  # serve is measured with a filled cache
                _build(tree, tmp / "cache-0", tmp / "site-fill")
            results["serve"] = _serve(tree, tmp / "cache-0", args.reps)
            rows.append(("serve: prose edit (s)", results["serve"]["prose_edit_s"]))
    results.update({label: stats for label, stats in rows})
    print(f"\n{'measure':<26}{'median':>10}{'min':>10}{'max':>10}")
    for label, st in rows:
        print(f"{label:<26}{st['median']:>10.2f}{st['min']:>10.2f}{st['max']:>10.2f}")
    if pages:
        results["pages, experiments CPU (s)"] = {p: _stats(xs) for p, xs in pages.items()}
        print(f"\n{'page: experiments, CPU (s)':<44}{'median':>10}{'min':>10}{'max':>10}")
        for page, xs in sorted(pages.items(), key=lambda item: -statistics.median(item[1])):
            st = _stats(xs)
            print(f"{page:<44}{st['median']:>10.2f}{st['min']:>10.2f}{st['max']:>10.2f}")
    if "serve" in results:
        serve = results["serve"]
        print(f"{'serve: src edit (s)':<26}{serve['source_edit_s']:>10.2f}")
        print("serve: recomputed after editing feed_forward.py:",
              ", ".join(serve["recomputed_after_editing_feed_forward"]) or "nothing")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
