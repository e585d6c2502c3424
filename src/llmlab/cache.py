"""A content-addressed result cache for experiments.

Experiments (``run_<name>(..., seed=0) -> <Name>Result``) are decorated with
:func:`cached`. A call is looked up under a key that hashes

* the experiment's qualified name,
* the source of the experiment's module and of every ``llmlab`` module it
  imports, directly or not (found by reading the import statements, see
  :func:`dependency_files`), so a change to the experiment or to a building
  block it uses gives a new key, while an edit elsewhere in the package keeps
  its cached result,
* the torch version,
* the call's arguments, after defaults are bound.

Two layers serve a hit:

* an in-process memo, always on: one build of the site runs an experiment once
  even though the zh and en pages both show it;
* an on-disk store, on when ``LLMLAB_CACHE_DIR`` names a folder and
  ``LLMLAB_CACHE`` is not ``0``. The site's build hook sets the folder
  (``.cache/llmlab``) unless ``LLMLAB_CACHE=0``.

Because the key covers the code, a stale result can never be served: an edited
function simply misses. Every lookup is recorded in :data:`RUN_LOG`, which the
site's build report shows (what ran, how long it took, where it came from).

Taught on: the home page ("How the numbers are made").
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import ast
import contextlib
import inspect
import json
import os
import pickle
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "RUN_LOG",
    "RunRecord",
    "cache_dir",
    "cache_key",
    "cached",
    "call_uncached",
    "clear_memory",
    "code_hash",
    "compute_in_worker",
    "dependency_files",
    "disk_cache_enabled",
    "plan",
    "run_log_markdown",
    "set_runner",
    "snippet_hash",
    "source_hash",
]

F = TypeVar("F", bound=Callable[..., Any])

_PACKAGE_DIR = Path(__file__).resolve().parent


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One call of a cached experiment.

    Attributes:
        name: Qualified name of the experiment, e.g. ``llmlab.experiments.x.run_x``.
        key: The cache key (hex SHA-256).
        seconds: Wall time of the call, lookup included.
        source: ``"computed"``, ``"memory"`` or ``"disk"``; the site's build adds
            ``"block"`` for an experiment whose page block was not re-run because
            its saved output was still valid (see ``hooks/llmlab_build.py``).
        compute_seconds: How long computing the result took when it was computed
            (in this process or the one that stored it).
    """

    name: str
    key: str
    seconds: float
    source: str
    compute_seconds: float = 0.0


RUN_LOG: list[RunRecord] = []
"""Every call of a cached experiment in this process, in order."""

_MEMORY: dict[str, Any] = {}

_RUNNER: Callable[[str, str, tuple, dict], Any] | None = None


def set_runner(runner: Callable[[str, str, tuple, dict], Any] | None) -> None:
    """Compute costly experiments elsewhere: ``runner(module, name, args, kwargs)``.

    On a miss in the disk cache, an experiment with a ``cost`` hint (see
    :func:`cached`) is then computed by ``runner``, which returns
    :func:`call_uncached`'s result, in another process, say; this process keeps
    the result's lock meanwhile and stores the result as usual. ``None`` (the
    default) computes in this process. The site's build sets a runner that
    computes in a process forked from its worker server, which has imported
    torch's optimizer machinery once, so the build's main process never
    imports it.
    """
    global _RUNNER
    _RUNNER = runner


def source_hash() -> str:
    """SHA-256 over the path and bytes of every ``.py`` file of ``llmlab``.

    Cheap enough (a few dozen small files) to compute on every call, which is
    what makes a long-lived process (``mkdocs serve``, a notebook) safe.
    """
    return _digest_files(sorted(_PACKAGE_DIR.rglob("*.py")))


def _module_file(name: str) -> Path | None:
    """The file of ``llmlab`` module ``name``, or None if it is not one."""
    parts = name.split(".")
    if parts[0] != "llmlab":
        return None
    base = _PACKAGE_DIR.joinpath(*parts[1:])
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


# Parsed imports by (module name, file content). Parsing is what makes a cache
# key cost anything (a build asks for dozens of keys); the content is part of
# the memo key, so an edited file is parsed again.
_IMPORTS_MEMO: dict[tuple[str, bytes], frozenset[str]] = {}


def _imported_modules(path: Path, name: str) -> frozenset[str]:
    """Names of the ``llmlab`` modules that the file at ``path`` imports."""
    source = path.read_bytes()
    memo_key = (name, hashlib.sha256(source).digest())
    if memo_key not in _IMPORTS_MEMO:
        _IMPORTS_MEMO[memo_key] = _parse_imports(source, path, name)
    return _IMPORTS_MEMO[memo_key]


def _parse_imports(source: bytes, path: Path, name: str) -> frozenset[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return _llmlab_imports(ast.parse(source), package)


def _llmlab_imports(tree: ast.AST, package: str) -> frozenset[str]:
    """``llmlab`` modules named by the import statements of ``tree``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            # "from llmlab.x import y" may import the submodule llmlab.x.y
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(m for m in found if m.split(".")[0] == "llmlab")


def dependency_files(module: str) -> list[Path]:
    """Files of ``module`` and of every ``llmlab`` module it imports, transitively.

    Importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py`` too, so
    parent packages count as dependencies. Imports are read from the source
    (``ast``), so an import inside a function counts as well.
    """
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            continue
        seen[name] = path
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(_imported_modules(path, name))
    return sorted(set(seen.values()))


def _digest_files(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        try:
            name = path.relative_to(_PACKAGE_DIR).as_posix()
        except ValueError:
            name = path.name
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def snippet_hash(code: str) -> str:
    """SHA-256 over the ``llmlab`` source that the Python ``code`` can run.

    That is the files of every ``llmlab`` module ``code`` imports, transitively
    (:func:`dependency_files`), so the output of a page's code block is known
    to be unchanged after an edit to a module it never imports. Where the
    imports cannot be read from the text (a syntax error, ``importlib`` or
    ``__import__``), the whole package counts.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        tree = None
    if tree is None or "import_module" in code or "__import__" in code:
        return source_hash()
    files: set[Path] = set()
    for module in _llmlab_imports(tree, ""):
        files.update(dependency_files(module))
    return _digest_files(sorted(files))


def code_hash(module: str) -> str:
    """SHA-256 over :func:`dependency_files` of ``module`` (path and bytes).

    For a module outside ``llmlab`` (a notebook's or a test's function) the
    whole package counts, plus that module's own file when it has one.
    """
    files = dependency_files(module)
    if files:
        return _digest_files(files)
    files = sorted(_PACKAGE_DIR.rglob("*.py"))
    own = getattr(sys.modules.get(module), "__file__", None)
    if own and Path(own).is_file():
        files.append(Path(own))
    return _digest_files(files)


def _canonical(value: Any, where: str) -> Any:
    """Turn an argument into JSON-able data, refusing what has no stable form."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return repr(value)  # repr round-trips exactly; json would too, but be explicit
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_canonical(v, where) for v in value]]
    if isinstance(value, dict):
        return {str(k): _canonical(v, where) for k, v in sorted(value.items())}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return [type(value).__qualname__, _canonical(fields, where)]
    raise TypeError(
        f"cached experiment argument {where!r} has type {type(value).__name__}; "
        "expected None, bool, int, float, str, or lists/tuples/dicts/dataclasses "
        "of those, so that it can be part of a cache key"
    )


def cache_key(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The key under which ``fn(*args, **kwargs)`` is cached."""
    import torch  # imported here so that importing llmlab.cache stays light

    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    arguments = {name: _canonical(v, name) for name, v in bound.arguments.items()}
    payload = {
        "fn": f"{fn.__module__}.{fn.__qualname__}",
        "code": code_hash(fn.__module__),
        "torch": torch.__version__,
        "args": arguments,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=True).encode()
    return hashlib.sha256(blob).hexdigest()


def disk_cache_enabled() -> bool:
    """True when results are also stored on disk (see the module docstring)."""
    flag = os.environ.get("LLMLAB_CACHE", "1").strip().lower()
    return flag not in {"0", "off", "false", "no"} and bool(
        os.environ.get("LLMLAB_CACHE_DIR")
    )


def cache_dir() -> Path | None:
    """The on-disk cache folder, or ``None`` when the disk layer is off."""
    if not disk_cache_enabled():
        return None
    return Path(os.environ["LLMLAB_CACHE_DIR"]).expanduser()


def clear_memory() -> None:
    """Forget the in-process memo and the run log (the disk store is kept)."""
    _MEMORY.clear()
    RUN_LOG.clear()


@contextlib.contextmanager
def _key_lock(path: Path, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive lock on ``<key>.lock`` next to ``path``; yield whether held.

    Several processes (a build's workers, two terminals) asking for the same
    result at once then compute it once: the others wait, then read it. With
    ``wait=False`` a lock another process holds is not waited for: the block
    runs at once with ``False``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows: no cross-process single flight, still correct
        yield True
        return
    with open(path.with_suffix(".lock"), "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _store(path: Path, value: Any) -> None:
    """Pickle ``value`` to ``path`` atomically: a reader never sees half a file."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)


def _compute(fn: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def cached(
    fn: F | None = None, *, parts: Callable[..., list] | None = None, cost: float = 0.0
) -> F:
    """Decorate an experiment so that its results are content-addressed.

    The wrapped function returns a deep copy of the stored result, so a caller
    that mutates what it gets cannot change what the next caller sees.

    Args:
        fn: The experiment.
        parts: Optional ``parts(**bound_arguments) -> [(cached_fn, kwargs), ...]``
            naming the independent cached experiments ``fn`` calls. A build can
            compute them side by side (see :func:`plan`) before ``fn`` itself.
        cost: Rough seconds one call takes with its default arguments on one
            core. Only a scheduling hint: a build hands the costliest calls to
            its workers first, so that no long call starts last and runs alone.
            It is written in the module's source, which is part of the key, so
            changing it recomputes that module's cached results.
    """
    if fn is None:
        return functools.partial(cached, parts=parts, cost=cost)  # type: ignore[return-value]

    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        key = cache_key(fn, *args, **kwargs)
        compute_seconds = 0.0
        if key in _MEMORY:
            (result, compute_seconds), source = _MEMORY[key], "memory"
        else:
            folder = cache_dir()
            if folder is None:
                (result, compute_seconds), source = _compute(fn, args, kwargs), "computed"
            else:
                path = folder / f"{key}.pkl"
                with _key_lock(path):
                    if path.exists():
                        with path.open("rb") as fh:
                            result, compute_seconds = pickle.load(fh)
                        source = "disk"
                    else:
                        if cost > 0 and _RUNNER is not None:  # elsewhere: see set_runner
                            call = (_RUNNER, (fn.__module__, fn.__qualname__, args, kwargs), {})
                        else:
                            call = (fn, args, kwargs)
                        (result, compute_seconds), source = _compute(*call), "computed"
                        _store(path, (result, compute_seconds))
            _MEMORY[key] = (result, compute_seconds)
        RUN_LOG.append(
            RunRecord(name, key, time.perf_counter() - start, source, compute_seconds)
        )
        return copy.deepcopy(result)

    wrapper.uncached = fn  # type: ignore[attr-defined]
    wrapper.parts = parts  # type: ignore[attr-defined]
    wrapper.cost = cost  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def plan(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[tuple[Callable, dict]]:
    """The cached calls that ``fn(*args, **kwargs)`` makes, parts first, itself last.

    Each entry is ``(cached_function, keyword_arguments)``. Calls in the list
    before their parent are independent of each other, so a build may compute
    them in parallel processes; the parent then finds them in the cache.
    """
    target = getattr(fn, "__wrapped__", fn)
    bound = inspect.signature(target).bind(*args, **kwargs)
    bound.apply_defaults()
    calls: list[tuple[Callable, dict]] = []
    parts = getattr(fn, "parts", None)
    if parts is not None:
        for part, part_kwargs in parts(**bound.arguments):
            calls.extend(plan(part, **part_kwargs))
    calls.append((fn, dict(bound.arguments)))
    return calls


def _experiment(module: str, name: str) -> Callable[..., Any]:
    """``module.name`` as imported in this process, single-threaded (a build's child)."""
    import importlib

    import torch

    torch.set_num_threads(1)
    return getattr(importlib.import_module(module), name)


def call_uncached(module: str, name: str, args: tuple, kwargs: dict[str, Any]) -> Any:
    """``module.name(*args, **kwargs)`` computed, not looked up: what a runner runs.

    See :func:`set_runner`.
    """
    fn = _experiment(module, name)
    return getattr(fn, "uncached", fn)(*args, **kwargs)


def compute_in_worker(module: str, name: str, kwargs: dict[str, Any]) -> float | None:
    """Compute ``module.name(**kwargs)`` into the disk cache; return the seconds, or None.

    Used by the site build to compute independent experiments in worker
    processes (single-threaded each) while it renders pages. Returns ``None``,
    computing nothing, when the result is already stored or another process
    (the page, a notebook's kernel) holds its lock: waiting for that process
    would leave this worker idle while other jobs are queued. The lock is
    taken without waiting and held while computing, so the page that asks for
    this result meanwhile waits for it instead of computing it again.
    """
    fn = _experiment(module, name)
    folder = cache_dir()
    if folder is None:
        raise ValueError("compute_in_worker needs the disk cache (LLMLAB_CACHE_DIR) to "
                         "hand its result back")
    path = folder / f"{cache_key(fn, **kwargs)}.pkl"
    with _key_lock(path, wait=False) as held:
        if not held or path.exists():
            return None
        result, seconds = _compute(getattr(fn, "uncached", fn), (), kwargs)
        _store(path, (result, seconds))
    return seconds


def run_log_markdown(prefix: str = "llmlab.experiments") -> str:
    """What this process computed or fetched, as a Markdown table.

    One row per distinct experiment call whose name starts with ``prefix``:
    how long computing it took (when it was computed, here or in the process
    that stored it) and where this process got it. Pages show it at the end
    of a lecture; the numbers are machine- and build-dependent.
    """
    from llmlab.report import markdown_table

    first: dict[str, RunRecord] = {}
    for record in RUN_LOG:
        if record.name.startswith(prefix):
            first.setdefault(record.key, record)
    if not first:
        return "_No experiment ran._\n"
    where = {"computed": "computed now", "disk": "result cache", "memory": "this build",
             "block": "saved page output"}
    rows = [
        [f"`{r.name.rsplit('.', 1)[-1]}`", f"{r.compute_seconds:.2f}", where[r.source]]
        for r in first.values()
    ]
    return markdown_table(["experiment", "compute time (s)", "served from"], rows)
