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
parts side by side (timings alone: see :func:`run_jobs`). Among those jobs it
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
import ast
import copy
import hashlib
import importlib
import inspect
import itertools
import json
import multiprocessing
import os
import platform
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from llmlab.build import cache
from llmlab.checks import check_str
from llmlab.build.course import contents
from llmlab.report import LANGUAGES, Localized, fmt_float, img_tag, label, table

__all__ = ["Call", "compute_experiments", "computation_table", "dependencies", "executed_blocks",
           "experiment_calls", "find_calls", "main", "notebook_jobs", "notebook_markdown", "notebooks", "output_digests",
           "home_contents", "project_root", "write_home_contents", "report_path", "run_jobs", "split_notebook", "stamp",
           "up_to_date"]

NOTEBOOK_COST = 1.0  # rough seconds a notebook takes on one core (a scheduling hint)
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


@dataclass(frozen=True)
class Call:
    """One experiment a page computes: ``module.name(**kwargs)`` shown on ``page``."""

    page: str
    text: str  # as the page writes it, e.g. "multihead.run_why_multihead()"
    module: str
    name: str
    kwargs: dict[str, Any]

    def function(self) -> Any:
        """The experiment called (imports its module)."""
        return _function(self.module, self.name)


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*)$")
_EXECUTED = re.compile(r"""(?:^|\s)exec=["']?(?:on|true|1)["']?(?:\s|$)""")


def executed_blocks(markdown: str) -> list[tuple[int, str]]:
    """The Python blocks of a page that markdown-exec runs (```` ```python exec="on" ````),
    as (the page's line of the block's first line, the code without the fence's indent)."""
    blocks, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info")
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        if info.split()[:1] in (["python"], ["py"]) and _EXECUTED.search(info):
            body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                    for line in lines[i + 1:j]]
            blocks.append((i + 2, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def experiment_calls(code: str, page: str, line: int = 1) -> list[Call]:
    """The calls of ``@cached`` experiments (``llmlab.experiments.*``) in ``code``.

    An experiment is called by a name imported from its module (``from
    llmlab.experiments.training import run_training_run``) or through the module
    (``from llmlab.experiments import training as exp``; ``exp.run_...``). Its
    arguments must be literals, or names the code binds once to a literal
    (``d_ks = (4, 16)``), so that this reading finds what the page will compute;
    a call whose arguments are not raises ValueError naming it.
    """
    tree = ast.parse(code)
    names: dict[str, tuple[str, str]] = {}  # local name -> (module, function)
    modules: dict[str, str] = {}  # local name -> experiments module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                local = alias.asname or alias.name
                if node.module.startswith("llmlab.experiments."):
                    names[local] = (node.module, alias.name)
                elif node.module == "llmlab.experiments":
                    modules[local] = f"llmlab.experiments.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("llmlab.experiments.") and alias.asname:
                    modules[alias.asname] = alias.name
    constants: dict[str, Any] = {}  # NAME = literal, bound once at the top of the code
    assigned: dict[str, int] = {}
    for node in ast.walk(tree):
        for target in getattr(node, "targets", []) + [getattr(node, "target", None)]:
            for name in ast.walk(target) if target is not None else ():
                if isinstance(name, ast.Name):
                    assigned[name.id] = assigned.get(name.id, 0) + 1
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and assigned[node.targets[0].id] == 1):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                pass

    def literal(value: ast.expr, env: dict[str, Any]) -> Any:
        if isinstance(value, ast.Name) and value.id in env:
            return env[value.id]
        if isinstance(value, ast.Name) and value.id in constants:
            return constants[value.id]
        return ast.literal_eval(value)

    loops: list[tuple[list[str], list[tuple]]] = []  # for A, B in <literal>: (A, B), values
    for node in ast.walk(tree):
        if not isinstance(node, (ast.For, ast.comprehension)):
            continue
        target = node.target
        names_ = [target] if isinstance(target, ast.Name) else list(getattr(target, "elts", []))
        if (not names_ or not all(isinstance(n, ast.Name) and assigned[n.id] == 1
                                  for n in names_)):
            continue
        try:
            values = [v if len(names_) > 1 else (v,) for v in literal(node.iter, {})]
        except (ValueError, TypeError, SyntaxError):
            continue
        if all(len(v) == len(names_) for v in values):
            loops.append(([n.id for n in names_], values))

    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in names:
            module, name = names[func.id]
        elif (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
              and func.value.id in modules):
            module, name = modules[func.value.id], func.attr
        else:
            continue
        fn = _function(module, name)
        if not hasattr(fn, "uncached"):
            continue  # a helper the page calls as it stands, not a stored experiment
        where = f"{page}:{line + node.lineno - 1}"
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        groups = [(names_, values) for names_, values in loops if used & set(names_)]
        source = " ".join(ast.get_source_segment(code, node).split())
        named = any(isinstance(n, ast.Name) for a in [*node.args, *node.keywords]
                    for n in ast.walk(a))  # shown with the values the names stand for
        try:
            for choice in itertools.product(*(values for _, values in groups)):
                env = {n: v for (names_, _), values in zip(groups, choice)
                       for n, v in zip(names_, values)}
                args = [literal(a, env) for a in node.args]
                kwargs = {k.arg: literal(k.value, env) for k in node.keywords}
                bound = inspect.signature(fn.uncached).bind(*args, **kwargs).arguments
                text = (f"{module.removeprefix('llmlab.experiments.')}.{name}("
                        + ", ".join([repr(a) for a in args]
                                    + [f"{k}={v!r}" for k, v in kwargs.items()]) + ")"
                        if named else
                        f"{module.removeprefix('llmlab.experiments.')}.{name}"
                        + source[source.index("("):].replace("( ", "(").replace(" )", ")"))
                calls.append(((node.lineno, node.col_offset),
                              Call(page, text, module, name, dict(bound))))
        except (ValueError, TypeError, SyntaxError):
            raise ValueError(
                f"{where}: {ast.unparse(node)}: precompute reads what a page computes from "
                "its blocks, so an experiment's arguments must be literals (numbers, "
                "strings, tuples...) or names bound once to one, and match its parameters") from None
    return [call for _, call in sorted(calls, key=lambda c: c[0])]  # walk: breadth-first


def find_calls(docs: str | Path, examples: str | Path | None = None,
               page: str | None = None) -> list[Call]:
    """What the course computes: every experiment call of every page's executed
    blocks (``docs/<language>/**.md``; a page's path relative to its language
    folder, both languages read, each call once per page) and of every notebook in
    ``examples`` (its path ``examples/<name>.py``), in the order they appear;
    with ``page``, that page's alone."""
    calls: list[Call] = []
    seen: set[tuple[str, str, str]] = set()
    sources: list[tuple[str, int, str]] = []
    for lang in LANGUAGES:
        base = Path(docs) / lang
        for path in sorted(base.rglob("*.md")):
            rel = path.relative_to(base).as_posix()
            if page is None or rel == page:
                for line, code in executed_blocks(path.read_text(encoding="utf-8")):
                    sources.append((rel, line, code))
    if examples is not None:
        for path in notebooks(examples):
            rel = f"examples/{path.name}"
            if page is None or rel == page:
                sources.append((rel, 1, path.read_text(encoding="utf-8")))
    for rel, line, code in sources:
        try:
            found = experiment_calls(code, rel, line)
        except SyntaxError:
            continue  # a block that cannot run fails the build where it runs, with its error
        for call in found:
            key = (rel, call.module + "." + call.name, repr(sorted(call.kwargs.items())))
            if key not in seen:
                seen.add(key)
                calls.append(call)
    return calls


def notebooks(examples: str | Path) -> list[Path]:
    """The jupytext notebooks in ``examples`` (``.py`` files with a ``jupyter:`` header)."""
    return [path for path in sorted(Path(examples).glob("*.py"))
            if path.read_text(encoding="utf-8").startswith("# ---\n# jupyter:")]


def home_contents(docs: str | Path) -> dict[str, str]:
    """Per language, the home page's list of lectures (:func:`llmlab.build.course.contents`)
    when ``docs`` sits beside the site's ``mkdocs.yml``; else nothing."""
    root = Path(docs).parent
    if not (root / "mkdocs.yml").is_file():
        return {}
    listed = contents(root)
    return {lang: listed.render(lang) + "\n" for lang in LANGUAGES}


def write_home_contents(folder: str | Path, home: dict[str, str]) -> None:
    """Write :func:`home_contents` where the home pages include it
    (``<cache>/site/<lang>/contents.md``, pymdownx.snippets), each file whole."""
    for lang, text in home.items():
        path = Path(folder) / "site" / lang / "contents.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


def stamp(calls: list[Call], examples: str | Path, docs: str | Path | None = None) -> str:
    """Hash of everything a run depends on; equal to the last run's: nothing to do."""
    digest = hashlib.sha256(cache.source_hash().encode())
    if docs is not None:
        digest.update(json.dumps(home_contents(docs), sort_keys=True).encode())
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

    One row per call: the seconds computing it took (its parts included), as
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
        for fn, kwargs in cache.plan(call.function(), **call.kwargs):
            key = cache.cache_key(fn, **kwargs)
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
# experiments, in worker processes
# --------------------------------------------------------------------------
def _function(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


def _plan(call: Call) -> list[dict[str, Any]]:
    """The cached calls ``call`` makes, parts first, with what scheduling needs."""
    jobs = []
    for fn, kwargs in cache.plan(call.function(), **call.kwargs):
        if not hasattr(fn, "uncached"):
            raise ValueError(f"{call.text} (page {call.page}) is not a @cached experiment")
        jobs.append({"module": fn.__module__, "name": fn.__name__, "kwargs": kwargs,
                     "key": cache.cache_key(fn, **kwargs), "cost": fn.cost,
                     "machine": fn.machine_dependent, "parent": fn.parts is not None})
    return jobs


def _compute(job: dict[str, Any]) -> tuple[str, float | None]:
    if "notebook" in job:
        return job["key"], _run_notebook(job["notebook"], job["out"])
    import torch

    torch.set_num_threads(1)
    return job["key"], cache.compute(_function(job["module"], job["name"]), **job["kwargs"])


def _context() -> multiprocessing.context.BaseContext:
    # Fork on Linux: the workers start with torch and the experiments imported
    # once, here. macOS and Windows spawn fresh interpreters (fork is unsafe there).
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def dependencies(planned: list[list[dict[str, Any]]]) -> dict[str, set[str]]:
    """Per job key, the keys of the jobs it reads from the cache (its parts, theirs...).

    Each plan lists a call's parts before the call (:func:`llmlab.build.cache.plan`); a
    parent depends on what comes before it in a plan (at worst a sibling's part
    too, which only makes it wait a little longer).
    """
    deps: dict[str, set[str]] = {}
    for jobs in planned:
        for i, job in enumerate(jobs):
            mine = deps.setdefault(job["key"], set())
            if job["parent"]:
                mine.update(j["key"] for j in jobs[:i])
    return deps


def _longest_paths(jobs: dict[str, dict[str, Any]], deps: dict[str, set[str]]
                   ) -> dict[str, float]:
    """Per job, its cost plus the costliest chain of jobs that wait on it.

    A cheap part that a long experiment reads (a tokenizer before a training
    run) then starts early, and the long run does not end up alone at the end.
    """
    waiting: dict[str, set[str]] = {k: set() for k in jobs}
    for key, parts in deps.items():
        for part in parts:
            waiting[part].add(key)
    paths: dict[str, float] = {}

    def path(key: str) -> float:
        if key not in paths:
            paths[key] = jobs[key]["cost"] + max((path(w) for w in waiting[key]), default=0.0)
        return paths[key]

    for key in jobs:
        path(key)
    return paths


def run_jobs(jobs: list[dict[str, Any]], deps: dict[str, set[str]], workers: int,
             compute: Callable[[dict[str, Any]], tuple[str, float | None]],
             pool: Callable[[int], Any],
             on_done: Callable[[dict[str, Any]], None] | None = None
             ) -> list[dict[str, Any]]:
    """Run ``jobs`` side by side in ``pool(workers)``, each once what it reads is done;
    ``on_done(job)`` (its ``seconds`` added) as each one ends.

    Timings (``machine``) run alone, each with no other job beside it: first the
    parts they read, the cost-free jobs and those of the pages up to the first
    timing's, then every timing (page by page), then everything else as soon as
    its own parts are stored (no stage waits for a whole other stage). Among the jobs
    ready to start, cost-free ones go first, then by ``rank`` (the first page
    that shows it, :func:`render_rank`), then the ones heading the longest chain
    of estimated ``cost`` (:func:`_longest_paths`).
    """
    todo = {j["key"]: j for j in jobs}
    deps = {k: deps.get(k, set()) & todo.keys() for k in todo}
    paths = _longest_paths(todo, deps)
    # cheap ones first, then page by page in the order MkDocs renders them (it
    # waits at the first block whose result is missing), the longest chains
    # first within a page (none left to run alone at the end)
    priority = {k: (paths[k] > 0, todo[k].get("rank", 0), -paths[k]) for k in todo}
    timings = sorted((j for j in jobs if j["machine"]), key=lambda j: j.get("rank", 0))
    # before the timings, besides what they read: the cost-free jobs and those of
    # the pages up to the first timing's, so that MkDocs renders those pages on
    # the core that a timing leaves free
    stack = [k for j in timings for k in deps[j["key"]]]
    stack += [j["key"] for j in jobs if not j["machine"] and (
        (j["cost"] == 0 and not deps[j["key"]])  # a parent of costly parts is not free
        or (timings and j.get("rank", 0) <= timings[0].get("rank", 0)))]
    first: set[str] = set()
    while stack:  # those, and what they read
        key = stack.pop()
        if key not in first and not todo[key]["machine"]:
            first.add(key)
            stack.extend(deps[key])
    done: list[dict[str, Any]] = []
    finished: set[str] = set()

    def record(job: dict[str, Any], seconds: float | None) -> None:
        done.append({**job, "seconds": seconds})
        finished.add(job["key"])
        if on_done is not None:
            on_done(done[-1])

    def side_by_side(keys: set[str]) -> None:
        pending = set(keys)
        with pool(max(1, workers)) as executor:
            running: dict[Any, dict[str, Any]] = {}
            while pending or running:
                ready = sorted((todo[k] for k in pending if deps[k] <= finished),
                               key=lambda j: priority[j["key"]])
                for job in ready[:max(1, workers) - len(running)]:
                    pending.discard(job["key"])
                    running[executor.submit(compute, job)] = job
                if not running:
                    raise RuntimeError(f"jobs wait on each other: {sorted(pending)}")
                finished_now, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished_now:
                    record(running.pop(future), future.result()[1])

    side_by_side(first)
    for job in timings:  # alone: nothing else runs beside a timing
        with pool(1) as executor:
            record(job, executor.submit(compute, job).result()[1])
    side_by_side(set(todo) - first - {j["key"] for j in timings})
    return done


def render_rank(page: str) -> tuple[str, str]:
    """Where ``page`` (a page that computes something) comes in the order MkDocs renders pages.

    MkDocs reads the docs folder in sorted path order, one page after another;
    a notebook ``examples/<name>.py`` is shown as ``notebooks/<name>.md``.
    """
    if page.endswith(".py"):
        page = f"notebooks/{Path(page).stem}.md"
    return (page.rsplit("/", 1)[0] if "/" in page else "", page)


def notebook_jobs(calls: list[Call], planned: list[list[dict[str, Any]]], examples: Path
                  ) -> tuple[list[dict[str, Any]], dict[str, set[str]]]:
    """A job per notebook in ``examples`` not executed yet, and what each reads.

    A notebook reads the experiments its own code calls (found under the page
    ``examples/<name>.py``), so it runs once those are stored.
    """
    folder = cache.cache_dir() / "notebooks"
    jobs, deps = [], {}
    for path in notebooks(examples):
        out = folder / f"{_notebook_key(path)}.ipynb"
        if out.exists():
            continue
        key = f"notebook:{path.name}"
        jobs.append({"module": "notebook", "name": path.name, "notebook": str(path.resolve()),
                     "out": str(out), "key": key, "cost": NOTEBOOK_COST, "machine": False,
                     "parent": True, "rank": render_rank(f"examples/{path.name}")})
        deps[key] = {j["key"] for call, call_jobs in zip(calls, planned)
                     if call.page.endswith(".py") and Path(call.page).name == path.name
                     for j in call_jobs}
    return jobs, deps


def compute_experiments(calls: list[Call], workers: int, examples: Path | None = None,
                        on_start: Callable[[list[dict]], None] | None = None,
                        on_done: Callable[[dict], None] | None = None
                        ) -> tuple[list[dict], list[dict]]:
    """Fill the cache with every call's result and execute every notebook in
    ``examples`` not executed yet, each once the experiments it calls
    are stored; (jobs run, each call's planned jobs). ``on_start(jobs)``
    gets the jobs to run before the first starts, ``on_done(job)`` each as it ends."""
    import torch

    torch.set_num_threads(1)
    planned = [_plan(call) for call in calls]  # imports every experiment module here
    # and what torch imports lazily, on first use, in every process that uses it
    # (optimizers import torch._dynamo: about half a second each): once, here,
    # before the workers and each timing's process are forked from this one
    import torch._dynamo  # noqa: F401
    import torch.utils.benchmark  # noqa: F401

    folder = cache.cache_dir()
    todo: dict[str, dict[str, Any]] = {}
    for jobs in planned:
        for job in jobs:
            if job["key"] not in todo and cache.load_stored(folder / f"{job['key']}.pkl") is None:
                todo[job["key"]] = job  # missing, or unreadable (then removed)
    ranks: dict[str, tuple[str, str]] = {}  # each job: the first page that shows it
    for call, jobs in zip(calls, planned):
        for job in jobs:
            ranks[job["key"]] = min(ranks.get(job["key"], render_rank(call.page)),
                                    render_rank(call.page))
    for key, job in todo.items():
        job["rank"] = ranks[key]
    deps = dependencies(planned)
    if examples is not None:
        jobs, parts = notebook_jobs(calls, planned, examples)
        todo.update((job["key"], job) for job in jobs)
        deps.update(parts)
    if any("notebook" in job for job in todo.values()):
        import IPython.core.interactiveshell  # noqa: F401 - imported here once, before forking
        import matplotlib

        matplotlib.use("Agg")
        (folder / "notebooks").mkdir(parents=True, exist_ok=True)
    if on_start is not None:
        on_start(list(todo.values()))
    done = run_jobs(list(todo.values()), deps, workers, _compute,
                    lambda n: ProcessPoolExecutor(n, mp_context=_context()), on_done)
    return done, planned


# --------------------------------------------------------------------------
# notebooks: executed once, shown per language
# --------------------------------------------------------------------------
def split_notebook(nb: Any, lang: str) -> Any:
    """The notebook for one language: markdown cells marked ``lang`` (or unmarked),
    and every :class:`llmlab.report.Localized` output in ``lang`` (its metadata
    holds every language's). Cell ids follow the cells' order, so the same
    notebook gives the same file whichever run executed it.
    """
    out = copy.deepcopy(nb)
    out.cells = [c for c in out.cells if c.metadata.get("lang", lang) == lang]
    for i, cell in enumerate(out.cells):
        cell.metadata.pop("lang", None)
        cell.id = f"cell-{i + 1}"
        for output in cell.get("outputs", []):
            if output.output_type != "display_data":
                continue
            if "llmlab" in output.metadata:
                _localize_output(output, lang)
            elif "text/markdown" in output.data and _OBJECT_REPR.fullmatch(
                    output.data.get("text/plain", "")):  # e.g. IPython's Markdown
                output.data["text/plain"] = output.data["text/markdown"]
    return out


# what IPython shows as text for an object without a text repr of its own
_OBJECT_REPR = re.compile(r"<[\w.]+ object(?: at 0x[0-9a-f]+)?>")


def _localize_output(output: Any, lang: str) -> None:
    """A Localized output in ``lang`` only: its data, text and alt in that language."""
    meta = output.metadata
    own = meta.pop("llmlab")[lang]
    if "image/svg+xml" in output.data:  # a figure: its alt text in every language too
        meta["alt"] = meta["alt"][lang]
        output.data["image/svg+xml"] = own
        output.data["text/plain"] = meta["alt"]
    else:
        output.data["text/markdown"] = output.data["text/plain"] = own


def _output_markdown(output: Any) -> str:
    """One output of a notebook already split for a language (:func:`split_notebook`)."""
    if output.output_type == "stream":
        return f"```text\n{output.text.rstrip()}\n```"
    data, meta = output.get("data", {}), output.get("metadata", {})
    if "image/svg+xml" in data:

        return img_tag(data["image/svg+xml"], str(meta.get("alt", "")),
                       digest=meta.get("digest") or None)
    if "text/markdown" in data:
        return data["text/markdown"]
    if "text/html" in data:
        return data["text/html"]
    return f"```text\n{data.get('text/plain', '').rstrip()}\n```"


def notebook_markdown(nb: Any, name: str, lang: str) -> str:
    """The site page of an executed notebook ``name`` in ``lang``."""
    label = {"zh": ("下载：", "运行："), "en": ("Download: ", "Run it: ")}[lang]
    parts = []
    for i, cell in enumerate(split_notebook(nb, lang).cells):
        if cell.cell_type == "markdown":
            parts.append(cell.source)
        elif cell.cell_type == "code":
            parts.append(f"```python\n{cell.source}\n```")
            parts += [_output_markdown(o) for o in cell.get("outputs", [])]
        if i == 0:  # under the title: the downloads, in this language
            parts.append(
                f'{label[0]}<a href="{name}.ipynb" download><code>{name}.ipynb</code></a>'
                f' · <a href="{name}.py" download><code>{name}.py</code></a> · '
                f"{label[1]}`python {name}.py`")
    return "\n\n".join(parts) + "\n"


def _execute(path: str, out: str) -> None:
    """Run the notebook at ``path`` cell by cell in IPython; write it with its outputs.

    Runs in a process of its own (forked on Linux from this one, with torch,
    IPython and matplotlib imported once), in the notebook's folder, as a kernel
    would. A cell's printed text is shown before what it displays.
    """
    import jupytext
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    os.chdir(Path(path).parent)
    os.environ["LLMLAB_OUTPUT"] = "markdown"  # print(a table): as the pages print it
    nb = jupytext.read(path)
    shell = InteractiveShell.instance()
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        with capture_output() as captured:
            result = shell.run_cell(cell.source, store_history=False)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            raise RuntimeError(f"{Path(path).name}, code cell {i + 1}: "
                               f"{type(error).__name__}: {error}") from error
        cell.outputs = [nbformat.v4.new_output("stream", name=name, text=text)
                        for name, text in (("stdout", captured.stdout),
                                           ("stderr", captured.stderr)) if text]
        cell.outputs += [nbformat.v4.new_output("display_data", data=o.data,
                                                metadata=o.metadata)
                         for o in captured.outputs]
    tmp = Path(f"{out}.{os.getpid()}.tmp")
    tmp.write_text(nbformat.writes(nb), encoding="utf-8")
    tmp.replace(out)


def _notebook_key(path: Path) -> str:
    source = path.read_text(encoding="utf-8")
    versions = [metadata.version(p) for p in ("torch", "ipython", "jupytext")]
    return hashlib.sha256(json.dumps([source, cache.snippet_hash(source), versions])
                          .encode()).hexdigest()


def _run_notebook(path: str, out: str) -> float:
    """Execute the notebook at ``path`` into ``out`` in a fresh process; the seconds."""
    start = time.perf_counter()
    proc = _context().Process(target=_execute, args=(path, out))
    proc.start()
    proc.join()
    if proc.exitcode:
        raise RuntimeError(f"notebook {path} failed: see its traceback above")
    return time.perf_counter() - start


def run_notebooks(examples: Path, seconds: dict[str, float]) -> list[dict[str, Any]]:
    """Write each executed notebook's pages and downloads per language.

    ``seconds``: per notebook file name, how long executing it took (this run's).
    """
    import jupytext
    import nbformat

    executed = cache.cache_dir() / "notebooks"
    paths = notebooks(examples)
    report = []
    for path in paths:
        key = _notebook_key(path)
        nb = nbformat.read(executed / f"{key}.ipynb", as_version=4)
        for lang in LANGUAGES:
            site = cache.cache_dir() / "site" / lang / "notebooks"
            site.mkdir(parents=True, exist_ok=True)
            own = split_notebook(nb, lang)
            files = {f"{path.stem}.md": notebook_markdown(nb, path.stem, lang),
                     f"{path.stem}.ipynb": nbformat.writes(own),
                     f"{path.stem}.py": jupytext.writes(own, fmt="py:percent")}
            for file, text in files.items():
                if not (site / file).is_file() or (site / file).read_text("utf-8") != text:
                    (site / file).write_text(text, encoding="utf-8")
        report.append({"notebook": path.name, "key": key[:16], "file": f"{key}.ipynb",
                       "seconds": seconds.get(path.name)})
    return report


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
    current = stamp(calls, examples, docs)
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
    books = run_notebooks(examples, {job["name"]: job["seconds"]
                                     for job in done if "notebook" in job})
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
                     | {f"site/{lang}/contents.md" for lang in home})
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
