"""The worker processes that compute what the pages call.

Each call is planned into jobs (its cached parts first, :func:`llmlab.build.cache.plan`);
:func:`run_jobs` runs them costliest first, each part side by side, each parent as
soon as its parts are stored, timings where each of their processes has a core
of its own (:func:`compute_experiments`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any
from llmlab.build import cache
from llmlab.build.manifest import Call, import_experiment
from llmlab.build.notebooks import notebook_key, notebooks, process_context, run_notebook
from llmlab.distributed import start_fork_server
from llmlab.report import load_fonts

__all__ = ["NOTEBOOK_COST", "compute_experiments", "dependencies", "notebook_jobs", "plan_jobs", "render_rank", "run_jobs"]


NOTEBOOK_COST = 1.0  # rough seconds a notebook takes on one core (a scheduling hint)


def plan_jobs(call: Call) -> list[dict[str, Any]]:
    """The cached calls ``call`` makes, parts first, with what scheduling needs."""
    jobs = []
    for fn, kwargs in cache.plan(call.function(), **call.kwargs):
        if not hasattr(fn, "uncached"):
            raise ValueError(f"{call.text} (page {call.page}) is not a @cached experiment")
        jobs.append({"module": fn.__module__, "name": fn.__name__, "kwargs": kwargs,
                     "key": cache.cache_key(fn, **kwargs), "cost": fn.cost,
                     "machine": fn.machine_dependent, "parent": fn.parts is not None,
                     "processes": (kwargs[fn.processes] if isinstance(fn.processes, str)
                                   else fn.processes)})
    return jobs


def _compute(job: dict[str, Any]) -> tuple[str, float | None]:
    if "notebook" in job:
        return job["key"], run_notebook(job["notebook"], job["out"], job["source"])
    import torch

    torch.set_num_threads(1)
    return job["key"], cache.compute(import_experiment(job["module"], job["name"]), **job["kwargs"])




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

    At most ``workers`` jobs run at once. A timing (``machine``) runs in a fresh
    process of its own (``pool(1)``), and only where each process it keeps busy
    (``processes``, 1 unless a job says more) has a core to itself: it starts when the
    processes busy beside it leave enough of the ``workers`` cores (or nothing runs, if
    it needs more), and while it runs no job starts that would take its cores. A
    timing that is ready but waits for cores holds them: no job behind it starts
    unless it fits beside it too.

    Among the jobs ready to start, cost-free ones go first, then by ``rank`` (the
    first page that shows it, :func:`render_rank`: MkDocs renders page by page and
    waits at the first result missing), then the ones heading the longest chain of
    estimated ``cost`` (:func:`_longest_paths`), so that none is left to run alone
    at the end.
    """
    todo = {j["key"]: j for j in jobs}
    deps = {k: deps.get(k, set()) & todo.keys() for k in todo}
    paths = _longest_paths(todo, deps)
    priority = {k: (paths[k] > 0, todo[k].get("rank", 0), -paths[k]) for k in todo}
    workers = max(1, workers)
    done: list[dict[str, Any]] = []
    finished: set[str] = set()
    pending = set(todo)
    running: dict[Any, tuple[dict[str, Any], Any]] = {}  # future: (job, its own pool)

    def busy() -> int:
        return sum(job.get("processes", 1) for job, _ in running.values())

    def fits(job: dict[str, Any], held: int) -> bool:
        if len(running) >= workers:
            return False
        timing_beside = any(j["machine"] for j, _ in running.values())
        if job["machine"]:
            return not running or busy() + job.get("processes", 1) <= workers
        return (not (timing_beside or held)
                or busy() + job.get("processes", 1) + held <= workers)

    with pool(workers) as shared:
        try:
            while pending or running:
                ready = sorted((todo[k] for k in pending if deps[k] <= finished),
                               key=lambda j: priority[j["key"]])
                held = 0  # cores a waiting timing holds
                for job in ready:
                    if not fits(job, held):
                        if job["machine"] and not held:
                            held = min(job.get("processes", 1), workers)
                        continue
                    pending.discard(job["key"])
                    own = pool(1) if job["machine"] else None  # a fresh process
                    running[(own or shared).submit(compute, job)] = (job, own)
                if not running:
                    raise RuntimeError(f"jobs wait on each other: {sorted(pending)}")
                finished_now, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished_now:
                    job, own = running.pop(future)
                    if own is not None:
                        own.shutdown()
                    done.append({**job, "seconds": future.result()[1]})
                    finished.add(job["key"])
                    if on_done is not None:
                        on_done(done[-1])
        finally:  # on an error, the timings' own processes end too
            for _, own in running.values():
                if own is not None:
                    own.shutdown()
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
        source = path.read_text(encoding="utf-8")  # read once: the key is of what runs
        out = folder / f"{notebook_key(source)}.ipynb"
        if out.exists():
            continue
        key = f"notebook:{path.name}"
        jobs.append({"module": "notebook", "name": path.name, "notebook": str(path.resolve()),
                     "source": source, "out": str(out), "key": key, "cost": NOTEBOOK_COST,
                     "machine": False, "parent": True,
                     "rank": render_rank(f"examples/{path.name}")})
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
    planned = [plan_jobs(call) for call in calls]  # imports every experiment module here
    folder = cache.cache_dir()
    todo: dict[str, dict[str, Any]] = {}
    for jobs in planned:
        for job in jobs:
            if job["key"] not in todo and cache.load_stored(folder / f"{job['key']}.pkl") is None:
                todo[job["key"]] = job  # missing, or unreadable (then removed)
    if any(job["processes"] > 1 for job in todo.values()):  # it may launch processes:
        start_fork_server()  # one server for every worker, its torch imported meanwhile
    # what torch imports lazily, on first use, in every process that uses it
    # (optimizers import torch._dynamo: about a second each): once, here,
    # before the workers and each timing's process are forked from this one
    import torch._dynamo  # noqa: F401
    import torch.utils.benchmark  # noqa: F401

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
        load_fonts()  # once, here: each notebook's process starts with the fonts loaded
        (folder / "notebooks").mkdir(parents=True, exist_ok=True)
    if on_start is not None:
        on_start(list(todo.values()))
    done = run_jobs(list(todo.values()), deps, workers, _compute,
                    lambda n: ProcessPoolExecutor(n, mp_context=process_context()), on_done)
    return done, planned
