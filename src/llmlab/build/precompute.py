"""Compute what the course's pages show, before the site is rendered.

    python -m llmlab.build.precompute                 # what the pages' blocks compute
    python -m llmlab.build.precompute --workers 1     # one process
    python -m llmlab.build.precompute --list          # the calls, by page; compute nothing

It runs from any folder of the course's checkout (:func:`project_root`). It
reads, from every page's executed blocks and every notebook, the experiments
they call (:func:`find_calls`: the pages are the manifest, nothing lists them a
second time). This program computes every missing result into the
content-addressed cache (``llmlab.build.cache``, folder ``LLMLAB_CACHE_DIR``, default
``.cache/llmlab`` in the checkout) in worker processes, costliest first, each split experiment's
parts side by side (timings each on cores of their own: see
:func:`llmlab.build.scheduler.run_jobs`). Among those jobs it
executes every notebook in ``examples/`` (the jupytext files; plain scripts such
as ``train_ddp.py`` are left alone) once, in IPython, in a fresh process each,
as soon as what it calls is stored. Then it writes, per
language, the notebook page's Markdown and its ``.ipynb`` and ``.py`` downloads
under ``<cache>/site/<lang>/notebooks/``. The
site's pages read the results from the cache; a call this reading cannot
find misses there and fails the build. A run whose inputs (``llmlab``'s
source, the calls found, the notebooks, the versions) have not changed since the
last successful one, and whose outputs are all still in the cache as that run
left them, does nothing (:func:`stamp`, :func:`up_to_date`); a deleted or
damaged output is made again.

Taught on: the home page ("How the numbers are made").
"""


from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any
from llmlab.build import cache
from llmlab.checks import check_str
from llmlab.build.course import contents, notebook_contents
from llmlab.report import LANGUAGES, Localized, fmt_float, label, table
from llmlab.build.manifest import Call, find_calls
from llmlab.build.notebooks import notebooks, run_notebooks
from llmlab.build.scheduler import compute_experiments

__all__ = ["REPORT", "computation_table", "home_contents", "main", "output_digests", "project_root", "report_path", "stamp", "up_to_date", "write_home_contents"]


REPORT = "precompute.json"  # the latest run's report; each run's is also kept by its stamp


def report_path(folder: str | Path, stamp: str) -> Path:
    """Where the run with inputs ``stamp`` keeps its report (checkouts may share a cache)."""
    return Path(folder) / "precompute" / f"{stamp[:32]}.json"


def project_root(start: str | Path | None = None) -> Path | None:
    """The course's checkout: the first folder at or above ``start`` (default:
    the working folder) that holds ``mkdocs.yml`` and ``docs/``, else the checkout
    ``llmlab`` is installed from (an editable install), else None."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    installed = Path(__file__).resolve().parents[3]  # <checkout>/src/llmlab/build/precompute.py
    for folder in (here, *here.parents, installed):
        if (folder / "mkdocs.yml").is_file() and (folder / "docs").is_dir():
            return folder
    return None


def output_digests(folder: str | Path, files: list[str]) -> dict[str, str]:
    """SHA-256 of each of ``files`` (paths relative to the cache ``folder``)."""
    return {name: hashlib.sha256((Path(folder) / name).read_bytes()).hexdigest()
            for name in files}


def up_to_date(folder: str | Path, current: str) -> bool:
    """Whether the run with inputs ``current`` (:func:`stamp`) has nothing to do.

    True when that run finished and every result, executed notebook and page it
    wrote is still in the cache as it left them. A file that is missing or
    changed makes it False; a changed one is removed, so the next run makes it
    again instead of reading it.
    """
    path = report_path(folder, current)
    try:
        digests = json.loads(path.read_text(encoding="utf-8"))["outputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    fresh = True
    for name, digest in digests.items():
        file = Path(folder) / name
        try:
            same = hashlib.sha256(file.read_bytes()).hexdigest() == digest
        except OSError:
            same = False
        if not same:
            file.unlink(missing_ok=True)
            fresh = False
    return fresh


def home_contents(docs: str | Path) -> dict[str, str]:
    """What the home pages include, by path under the cache's ``site/``: per language
    the list of lectures (``<lang>/contents.md``, :func:`llmlab.build.course.contents`)
    and of notebooks (``<lang>/notebooks.md``,
    :func:`llmlab.build.course.notebook_contents`), when ``docs`` sits beside the
    site's ``mkdocs.yml``; else nothing."""
    root = Path(docs).parent
    if not (root / "mkdocs.yml").is_file():
        return {}
    lists = {"contents.md": contents(root), "notebooks.md": notebook_contents(root)}
    return {f"{lang}/{name}": listed.render(lang) + "\n"
            for lang in LANGUAGES for name, listed in lists.items()}


def write_home_contents(folder: str | Path, home: dict[str, str]) -> None:
    """Write :func:`home_contents` where the home pages include it
    (``<cache>/site/<lang>/contents.md`` and ``notebooks.md``, pymdownx.snippets),
    each file whole."""
    for name, text in home.items():
        path = Path(folder) / "site" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


def stamp(calls: list[Call], examples: str | Path,
          home: dict[str, str] | None = None) -> str:
    """Hash of everything a run depends on (``home``: :func:`home_contents`, as the
    caller wrote it); equal to the last run's: nothing to do."""
    digest = hashlib.sha256(cache.source_hash().encode())
    if home:
        digest.update(json.dumps(home, sort_keys=True).encode())
    for call in calls:
        digest.update(f"{call.page}\0{call.text}\0{sorted(call.kwargs.items())!r}\n".encode())
    for path in notebooks(examples):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for package in ("torch", "ipython", "jupytext"):
        digest.update(metadata.version(package).encode())
    digest.update(sys.version.encode() + json.dumps(cache.machine_fingerprint()).encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------
# what a page computed, shown on it
# --------------------------------------------------------------------------
def computation_table(page: str) -> Localized:
    """The experiments ``page``'s blocks call and what they cost.

    One row per call: the seconds computing it took (its parts included, each
    once, however many of its parts share it), as
    stored with the results in the cache, on the machine that computed them; then
    the total, in which a part that several calls share counts once. The page
    is read from ``$LLMLAB_DOCS`` (the build sets it), else the checkout's
    ``docs/`` (:func:`find_calls`). A result that is not stored yet is waited for
    as ``LLMLAB_CACHE_MISS`` says (:func:`llmlab.build.cache.stored_seconds`), so the
    build shows this table without waiting for every other page's experiments.
    Without a filled cache (a block copied elsewhere) the table says so.
    """
    check_str("page", page, nonempty=True)
    root = project_root()
    docs = Path(os.environ.get("LLMLAB_DOCS") or (root / "docs" if root else "docs"))
    if cache.cache_dir() is None or not docs.is_dir():
        return table([label("实验", "experiment")],
                     [[label("没有找到结果缓存：先运行 python -m llmlab.build.precompute",
                             "no result cache found: run python -m llmlab.build.precompute")]])
    rows, every = [], {}
    calls = find_calls(docs, page=page)
    for call in calls:
        seconds: float | None = 0.0
        mine = set()  # a plan may list a part twice (parts of parts): count it once
        for fn, kwargs in cache.plan(call.function(), **call.kwargs):
            key = cache.cache_key(fn, **kwargs)
            if key in mine:
                continue
            mine.add(key)
            if key not in every:
                every[key] = cache.stored_seconds(fn, **kwargs)
            seconds = None if seconds is None or every[key] is None else seconds + every[key]
        rows.append([f"`{call.text}`", _seconds(seconds)])
    if len(calls) > 1:  # two calls may share a part (one launch, two checks)
        total = None if None in every.values() else sum(every.values())
        rows.append([label("合计（共用的部分只算一次）", "total (a shared part counted once)"),
                     _seconds(total)])
    headers = [label("实验", "experiment"),
               label(f"计算用时（秒，{platform.machine()}，单线程）",
                     f"compute time (s, {platform.machine()}, one thread)")]
    return table(headers, rows)


def _seconds(value: float | None) -> str | Localized:
    if value is None:
        return label("尚未计算", "not computed yet")
    return fmt_float(value, 2)


# --------------------------------------------------------------------------
# the program
# --------------------------------------------------------------------------
def _say(line: str) -> None:
    """A line of the program's progress, shown at once (also in a pipe or a log)."""
    print(f"precompute: {line}", flush=True)


def _job_name(job: dict[str, Any]) -> str:
    return job["name"] if "notebook" in job else (
        f"{job['module'].rsplit('.', 1)[-1]}.{job['name']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmlab.build.precompute",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path,
                        help="folder of the pages (default: the checkout's docs/)")
    parser.add_argument("--examples", type=Path,
                        help="folder of notebooks (default: the checkout's examples/)")
    parser.add_argument("--cache-dir", type=Path,
                        help="default: $LLMLAB_CACHE_DIR, else the checkout's .cache/llmlab")
    parser.add_argument("--workers", type=int,
                        default=int(os.environ.get("LLMLAB_BUILD_WORKERS", os.cpu_count() or 1)),
                        help="worker processes (default: %(default)s, one per core)")
    parser.add_argument("--list", action="store_true", help="print the calls and stop")
    args = parser.parse_args(argv)
    root = project_root()
    if root is None and (args.docs is None or args.examples is None):
        parser.exit(2, f"{parser.prog}: error: no mkdocs.yml and docs/ in {Path.cwd()} or "
                       "above it: run this in the course's folder, or pass --docs and "
                       "--examples\n")
    docs = (args.docs or root / "docs").resolve()
    examples = (args.examples or root / "examples").resolve()
    if args.workers < 1:
        parser.exit(2, f"{parser.prog}: error: --workers must be at least 1, got "
                       f"{args.workers}\n")
    for name, path in (("--docs", docs), ("--examples", examples)):
        if not path.is_dir():
            parser.exit(2, f"{parser.prog}: error: {name} {path} is not a folder\n")
    # absolute: the notebooks run in their own folder, and the build reads the same one
    folder = Path(args.cache_dir or os.environ.get("LLMLAB_CACHE_DIR")
                  or (root or Path.cwd()) / ".cache" / "llmlab").expanduser().resolve()
    os.environ["LLMLAB_CACHE_DIR"] = str(folder)
    os.environ.pop("LLMLAB_CACHE", None)  # results go to disk: the pages read them there
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ["LLMLAB_CACHE_MISS"] = "error"  # notebooks too: only what was found
    try:
        calls = find_calls(docs, examples)
        home = home_contents(docs)
    except (ValueError, SyntaxError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if args.list:
        for call in calls:
            print(f"{call.page}: {call.text}")
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    write_home_contents(folder, home)  # first: it needs no result, and is the first page's
    current = stamp(calls, examples, home)
    if up_to_date(folder, current):
        _say(f"up to date ({folder})")
        return 0
    start, cpu = time.perf_counter(), time.process_time()
    count = {"done": 0, "total": 0}

    def started(jobs: list[dict[str, Any]]) -> None:
        count["total"] = len(jobs)
        books = sum("notebook" in job for job in jobs)
        cost = sum(job["cost"] for job in jobs)
        if jobs:
            _say(f"{len(jobs) - books} experiments and {books} notebooks to run in "
                 f"{folder} on {args.workers} worker process(es) (their cost hints add "
                 f"up to {cost:.0f} CPU-seconds)")

    def finished(job: dict[str, Any]) -> None:
        count["done"] += 1
        state = "stored already" if job["seconds"] is None else f"{job['seconds']:.1f} s"
        width = len(str(count["total"]))
        _say(f"[{count['done']:{width}}/{count['total']}] {_job_name(job)} ({state}; "
             f"{time.perf_counter() - start:.0f} s in)")

    done, planned = compute_experiments(calls, args.workers, examples, started, finished)
    try:
        books = run_notebooks(examples, {job["name"]: job["seconds"]
                                         for job in done if "notebook" in job})
    except ValueError as error:  # an example edited meanwhile: one line, and no report
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    done = [job for job in done if "notebook" not in job]
    seconds = {job["key"]: job["seconds"] for job in done}
    pages: dict[str, list[dict[str, Any]]] = {}
    for call, jobs in zip(calls, planned):
        pages.setdefault(call.page, []).append(
            {"call": call.text, "name": f"{call.module}.{call.name}", "key": jobs[-1]["key"],
             "keys": [j["key"] for j in jobs], "computed": {j["key"]: seconds[j["key"]]
                                                           for j in jobs if j["key"] in seconds}})
    outputs = sorted({f"{j['key']}.pkl" for jobs in planned for j in jobs}
                     | {f"notebooks/{b['file']}" for b in books}
                     | {f"site/{lang}/notebooks/{Path(b['notebook']).stem}{suffix}"
                        for b in books for lang in LANGUAGES for suffix in (".md", ".ipynb", ".py")}
                     | {f"site/{name}" for name in home})
    report = {"stamp": current, "wall_seconds": time.perf_counter() - start,
              "main_cpu_seconds": time.process_time() - cpu, "workers": args.workers,
              "jobs": done, "notebooks": books, "pages": pages,
              "outputs": output_digests(folder, outputs)}
    report_path(folder, current).parent.mkdir(exist_ok=True)
    for path in (folder / REPORT, report_path(folder, current)):
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
    _say(f"{len(done)} results, {len(books)} notebooks in {report['wall_seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
