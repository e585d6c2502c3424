"""Measure how fast the site builds, side by side, in one run.

    python benchmarks/build.py            # 3 repetitions of each measurement
    python benchmarks/build.py --reps 5 --json out.json
    python benchmarks/build.py --skip-naive --skip-serve

What it measures, each on a private copy of the working tree (so edits made by
the serve measurements never touch your checkout):

* cold build: ``mkdocs build --strict``, both languages, empty experiment cache;
* warm build: the same, nothing changed, cache filled;
* naive: every experiment the pages call, computed the reference way (one model
  after another, single-threaded, no cache), once per language, as a script
  like the seed's would: the yardstick for the cold build;
* serve: after a prose edit (repeated), seconds until the served page shows it; after an
  edit to one function in ``src/llmlab``, seconds until the page is rebuilt,
  and which experiments were recomputed (only those that import the edited
  module should be);
* peak memory of a cold build over its whole process tree: summed PSS (the real
  footprint) and summed RSS (an upper bound that counts shared pages per process).
  These are separate cold builds, not the timed ones: reading a process's PSS
  makes the kernel walk its page tables, about 10 ms of CPU per torch process,
  so sampling a build's six to eight processes five times a second takes a third
  of a core or more, which on two cores slowed the build it watched by 10-20 %.

These machines are shared and noisy: the script reports medians with min and
max, and ratios between numbers taken in the same run.
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


def _copy_tree(dest: Path) -> Path:
    """The tracked and untracked-not-ignored files of the checkout, copied."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            target.symlink_to(os.readlink(src))
        elif src.is_file():
            shutil.copy2(src, target)
    return dest


def _env(tree: Path, cache: Path | None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", NO_MKDOCS_2_WARNING="1",
               PYTHONPATH=str(tree / "src"))
    if cache is None:
        env["LLMLAB_CACHE"] = "0"
    else:
        env["LLMLAB_CACHE_DIR"] = str(cache)
        env.pop("LLMLAB_CACHE", None)
    env.update(extra)
    return env


def _build(tree: Path, cache: Path | None, site: Path,
           sample_memory: bool = False) -> tuple[float, int, int]:
    """Wall seconds, peak summed RSS and peak summed PSS (bytes) of one strict build.

    The peaks are 0 unless ``sample_memory`` (see the module docstring for why a
    timed build does not sample).

    RSS counts the pages that processes share (libtorch's code, mostly) once per
    process, so its sum over the build's processes overstates the memory the
    build holds; PSS splits each shared page between the processes that map it,
    so its sum is the build's real footprint.
    """
    start = time.perf_counter()
    # output to a file: a pipe nobody reads while we sample could fill and block the build
    log_path = site.parent / f"{site.name}.log"
    with log_path.open("wb") as log:
        proc = psutil.Popen(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
            cwd=tree, env=_env(tree, cache), stdout=log, stderr=subprocess.STDOUT,
        )
    peak = peak_pss = 0
    while sample_memory and proc.poll() is None:
        rss = pss = 0
        try:
            for p in [proc, *proc.children(recursive=True)]:
                info = p.memory_full_info()
                rss, pss = rss + info.rss, pss + info.pss
        except psutil.Error:
            pass  # a process ended while we looked: skip this sample's rest
        peak, peak_pss = max(peak, rss), max(peak_pss, pss)
        time.sleep(0.2)
    proc.wait()
    seconds = time.perf_counter() - start
    out = log_path.read_text(encoding="utf-8", errors="replace")
    if proc.returncode:
        raise SystemExit(f"build failed ({proc.returncode}):\n{out[-4000:]}")
    return seconds, peak, peak_pss


def _naive_seconds(tree: Path) -> float:
    """One pass over every experiment the pages call, reference path, no cache."""
    script = f"""
import importlib, inspect, os, sys, time
sys.path.insert(0, {str(tree / 'hooks')!r})
os.environ["LLMLAB_CACHE"] = "0"
import torch
torch.set_num_threads(1)
import llmlab_build as hook
from llmlab import cache
calls = []
for page in sorted(__import__("pathlib").Path({str(tree / 'docs' / 'zh')!r}).rglob("*.md")):
    for code in hook._FENCE.findall(page.read_text(encoding="utf-8")):
        calls += hook._experiment_calls(code)
seen, total = set(), 0.0
for module, name, args, kwargs in calls:
    fn = getattr(importlib.import_module(module), name)
    fn = getattr(fn, "uncached", fn)  # timing functions are deliberately not cached
    params = inspect.signature(fn).parameters
    if "fast" in params:
        kwargs = {{**kwargs, "fast": False}}  # the reference path
    key = (module, name, repr(args), repr(sorted(kwargs.items())))
    if key in seen:
        continue  # a page that shows one result twice computes it once
    seen.add(key)
    start = time.perf_counter()
    fn(*args, **kwargs)
    total += time.perf_counter() - start
print(total)
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=tree, env=_env(tree, None),
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"naive run failed:\n{out.stderr[-3000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(url: str, needle: str, timeout: float = 600) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if needle in response.read().decode("utf-8", errors="replace"):
                    return time.perf_counter() - start
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{needle!r} never appeared at {url}")


def _serve(tree: Path, cache: Path, reps: int) -> dict[str, object]:
    """Prose edits (``reps`` of them) and a source edit under ``mkdocs serve`` (cache warm)."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    log = (tree / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "-a", f"127.0.0.1:{port}"],
        cwd=tree, env=_env(tree, cache, SITE_URL=url), stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        _wait(url, "LLM Lab", 900)
        with urllib.request.urlopen(url + "build-report.json", timeout=5) as r:
            first_hash = json.loads(r.read())["source_hash"]
        page = tree / "docs" / "zh" / "index.md"
        original = page.read_text(encoding="utf-8")
        prose = []
        for i in range(reps):
            marker = f"benchmark-prose-edit-{i}-{int(time.time())}"
            page.write_text(original + f"\n{marker}\n", encoding="utf-8")
            prose.append(_wait(url, marker, 300))
            time.sleep(1.0)  # let the reload settle before the next edit
        # Edit one function's module: only experiments importing it may re-run.
        target = tree / "src" / "llmlab" / "feed_forward.py"
        target.write_text(target.read_text(encoding="utf-8") + "\n# benchmark edit\n",
                          encoding="utf-8")
        start = time.perf_counter()
        report: dict = {}
        while time.perf_counter() - start < 600:
            try:
                with urllib.request.urlopen(url + "build-report.json", timeout=5) as r:
                    report = json.loads(r.read())
                if report["source_hash"] != first_hash:
                    break  # the build after the source edit has finished
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        source_edit = time.perf_counter() - start
        # recomputed here, or by the build's worker processes
        recomputed = sorted({e["name"] for e in report.get("experiments", [])
                             if e["source"] == "computed"}
                            | {p["name"] for p in report.get("prefetched", [])
                               if p.get("seconds") is not None})  # not the skipped ones
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
    parser.add_argument("--json", type=Path)
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--skip-builds", action="store_true",
                        help="only the naive and serve measurements")
    args = parser.parse_args()
    if args.mem_reps is None:
        args.mem_reps = args.reps

    results: dict[str, object] = {"cpu_count": os.cpu_count(), "reps": args.reps,
                                  "mem_reps": 0 if args.skip_builds else args.mem_reps}
    with tempfile.TemporaryDirectory(prefix="llmlab-bench-") as tmp_name:
        tmp = Path(tmp_name)
        tree = _copy_tree(tmp / "tree")
        cold, warm, sampled, peaks, peaks_pss = [], [], [], [], []
        for i in range(0 if args.skip_builds else args.reps):
            cache = tmp / f"cache-{i}"
            cold.append(_build(tree, cache, tmp / f"site-cold-{i}")[0])
            warm.append(_build(tree, cache, tmp / f"site-warm-{i}")[0])
        for i in range(0 if args.skip_builds else args.mem_reps):
            seconds, peak, peak_pss = _build(tree, tmp / f"cache-mem-{i}",
                                             tmp / f"site-mem-{i}", sample_memory=True)
            sampled.append(seconds)
            peaks.append(peak / 2**30)
            peaks_pss.append(peak_pss / 2**30)
        if cold:
            results["cold_build_s"] = _stats(cold)
            results["warm_build_s"] = _stats(warm)
            print("cold:", cold, "warm:", warm, flush=True)
        if sampled:
            results["cold_peak_pss_gib"] = _stats(peaks_pss)
            results["cold_peak_rss_gib"] = _stats(peaks)
            results["cold_build_sampling_memory_s"] = _stats(sampled)
            print("peak PSS GiB:", peaks_pss, "peak summed RSS GiB:", peaks,
                  "seconds of these builds:", sampled, flush=True)
        if not args.skip_naive:
            one_pass = _naive_seconds(tree)
            results["naive_one_language_s"] = one_pass
            results["naive_both_languages_s"] = 2 * one_pass
            print("naive, one language:", one_pass, flush=True)
            if cold:
                results["cold_over_naive"] = statistics.median(cold) / (2 * one_pass)
        if not args.skip_serve:
            cache = tmp / "cache-0"
            if not cache.exists():  # fill it first: serve is measured with a warm cache
                _build(tree, cache, tmp / "site-fill")
            results["serve"] = _serve(tree, cache, args.reps)

    rows = [(label, results[key]) for label, key in (
        ("cold build (s)", "cold_build_s"), ("warm build (s)", "warm_build_s"),
        ("cold peak PSS (GiB)", "cold_peak_pss_gib"),
        ("cold peak summed RSS (GiB)", "cold_peak_rss_gib"),
        ("cold, sampling memory (s)", "cold_build_sampling_memory_s")) if key in results]
    print(f"{'measure':<28}{'median':>10}{'min':>10}{'max':>10}")
    for label, st in rows:
        print(f"{label:<28}{st['median']:>10.2f}{st['min']:>10.2f}{st['max']:>10.2f}")
    if "naive_both_languages_s" in results:
        print(f"{'naive, both languages (s)':<28}{results['naive_both_languages_s']:>10.1f}")
        if "cold_over_naive" in results:
            print(f"{'cold / naive':<28}{results['cold_over_naive']:>10.2f}")
    if "serve" in results:
        serve = results["serve"]
        st = serve["prose_edit_s"]
        print(f"{'serve: prose edit (s)':<28}{st['median']:>10.2f}{st['min']:>10.2f}"
              f"{st['max']:>10.2f}")
        print(f"{'serve: src edit (s)':<28}{serve['source_edit_s']:>10.2f}")
        print("serve: recomputed after editing feed_forward.py:",
              ", ".join(serve["recomputed_after_editing_feed_forward"]) or "nothing")
    print(json.dumps(results, indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
