"""A content-addressed result cache for experiments.

Experiments (``run_<name>(..., seed=0) -> <Name>Result``) are decorated with
:func:`cached`. A call is looked up under a key that hashes

* the experiment's qualified name,
* the source of the experiment's module and of every ``llmlab`` module it
  imports, directly or not (read from the import statements, see
  :func:`dependency_files`), so an edit to the experiment or to a building block
  it uses gives a new key, while an edit elsewhere in the package (a renderer in
  :mod:`llmlab.report`, say) keeps its cached result,
* the installed torch version and the call's arguments, defaults bound,
* for a ``machine_dependent`` experiment (a timing), the machine it runs on.

Two layers serve a hit: an in-process memo, always on, and an on-disk store,
on when ``LLMLAB_CACHE_DIR`` names a folder and ``LLMLAB_CACHE`` is not ``0``.
Because the key covers the code, a stale result is never served: an edited
function simply misses. With ``LLMLAB_CACHE_MISS=error`` (or ``wait``, while
``python -m llmlab.build.precompute`` is still computing) a miss raises
:class:`NotPrecomputedError` instead of computing: the site's build sets it, so
a page can only show what precompute computed from the manifest. Every call is
recorded in :data:`RUN_LOG`, with the cached call whose body made it: that is how
a test checks that an experiment's declared ``parts`` are the cached calls its
body makes (see :func:`cached`).

This module's own source is not part of any key: it decides where results are
kept, not what they are.

Taught on: the home page ("How the numbers are made").
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import copy
import dataclasses
import functools
import hashlib
import inspect
import json
import os
import pickle
import platform
import time
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "RUN_LOG",
    "NotPrecomputedError",
    "RunRecord",
    "cache_dir",
    "cache_key",
    "cached",
    "clear_memory",
    "code_hash",
    "compute",
    "part_results",
    "dependency_files",
    "package_data",
    "package_stamp",
    "disk_cache_enabled",
    "load_stored",
    "machine_fingerprint",
    "parts_mismatch",
    "plan",
    "snippet_hash",
    "stored_seconds",
    "source_hash",
    "wait_for",
]

F = TypeVar("F", bound=Callable[..., Any])

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # src/llmlab
_THIS_FILE = Path(__file__).resolve()
# What a cached result depends on leaves out the cache itself (and its package's docstring).
_CACHE_FILES = {_THIS_FILE, _THIS_FILE.with_name("__init__.py")}


class NotPrecomputedError(LookupError):
    """A cached experiment was called with ``LLMLAB_CACHE_MISS=error`` and missed."""


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One call of a cached experiment.

    Attributes:
        name: Qualified name, e.g. ``llmlab.experiments.multihead.run_why_multihead``.
        key: The cache key (hex SHA-256).
        seconds: Wall time of the call, lookup included.
        source: ``"computed"``, ``"memory"`` or ``"disk"``.
        compute_seconds: How long computing the result took, where it was computed.
        caller: The key of the cached call whose body made this call; ``None`` for
            a call from outside any cached experiment.
    """

    name: str
    key: str
    seconds: float
    source: str
    compute_seconds: float = 0.0
    caller: str | None = None


RUN_LOG: list[RunRecord] = []
"""Every call of a cached experiment in this process, in order."""

_MEMORY: dict[str, tuple[Any, float]] = {}
# The key of the cached call whose body is running (None outside any).
_CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("_CALLER", default=None)
_PRECOMPUTE: list[Any] = []  # see wait_for


# --------------------------------------------------------------------------
# what a key hashes: source files, found through their imports
# --------------------------------------------------------------------------
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


# Parsed imports by (module name, file digest): an edited file is parsed again.
_IMPORTS_MEMO: dict[tuple[str, bytes], frozenset[str]] = {}


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


def _imported_modules(path: Path, name: str) -> frozenset[str]:
    source = path.read_bytes()
    memo_key = (name, hashlib.sha256(source).digest())
    if memo_key not in _IMPORTS_MEMO:
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        _IMPORTS_MEMO[memo_key] = _llmlab_imports(ast.parse(source), package)
    return _IMPORTS_MEMO[memo_key]


_DEPENDENCIES: dict[str, tuple[tuple, list[Path]]] = {}  # module -> (package stamp, files)


def package_stamp() -> tuple:
    """Path, size and modification time of every ``.py`` file of ``llmlab``.

    Taken for every key a build computes: ``os.walk`` and ``os.stat`` take half
    the time of ``Path.rglob`` and ``Path.stat``.
    """
    found = [os.path.join(root, name) for root, _, files in os.walk(_PACKAGE_DIR)
             for name in files if name.endswith(".py")]
    return tuple((path, st.st_size, st.st_mtime_ns) for path in sorted(found)
                 for st in [os.stat(path)])


def dependency_files(module: str) -> list[Path]:
    """Files of ``module`` and of every ``llmlab`` module it imports, transitively.

    Importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py`` too, so
    parent packages count. Imports are read from the source (``ast``), so an
    import inside a function counts as well. This module is left out. The list
    is kept per module until a file of the package changes (size or time):
    reading the imports of every call's modules again costs more than the call.
    """
    return _files_of([module])


def _files_of(modules: Iterable[str], stamp: tuple | None = None) -> list[Path]:
    """:func:`dependency_files` of several modules together (the package read once;
    ``stamp``: its :func:`package_stamp`, if the caller has taken it)."""
    stamp = package_stamp() if stamp is None else stamp
    files: set[Path] = set()
    for module in modules:
        kept = _DEPENDENCIES.get(module)
        if kept is None or kept[0] != stamp:
            kept = _DEPENDENCIES[module] = (stamp, _dependency_files(module))
        files.update(kept[1])
    return sorted(files)


def _dependency_files(module: str) -> list[Path]:
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen or (path := _module_file(name)) is None:
            continue
        seen[name] = path
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(_imported_modules(path, name))
    files = set(seen.values()) - _CACHE_FILES
    for path in list(files):
        if path.name == "__init__.py":
            files.update(package_data(path.parent))
    return sorted(files)


def package_data(package: Path) -> list[Path]:
    """The data files a package ships: its files other than Python sources, and
    those of its folders that are not packages (``llmlab/pretrained/tang/``, say).

    They count with the package's ``__init__.py``: a retrained base model changes
    the key of every result computed from it.
    """
    found: list[Path] = []
    for root, dirs, names in os.walk(package):
        here = Path(root)
        dirs[:] = [d for d in dirs if d != "__pycache__"
                   and not (here / d / "__init__.py").exists()]
        found.extend(here / n for n in names if not n.endswith((".py", ".pyc"))
                     and not n.startswith("."))
    return sorted(found)


_FILE_DIGESTS: dict[Path, tuple[int, int, bytes]] = {}  # path -> (size, mtime, sha256)


def _file_digest(path: Path) -> bytes:
    """SHA-256 of a file's bytes, kept while its size and modification time hold."""
    st = path.stat()
    kept = _FILE_DIGESTS.get(path)
    if kept is None or kept[:2] != (st.st_size, st.st_mtime_ns):
        kept = _FILE_DIGESTS[path] = (st.st_size, st.st_mtime_ns,
                                      hashlib.sha256(path.read_bytes()).digest())
    return kept[2]


def _digest_files(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        try:
            name = path.relative_to(_PACKAGE_DIR).as_posix()
        except ValueError:
            name = path.name
        digest.update(name.encode() + b"\0" + _file_digest(path) + b"\0")
    return digest.hexdigest()


def _package_files() -> list[Path]:
    """Every ``.py`` file of ``llmlab`` and the data it ships (:func:`package_data`)."""
    files = set(_PACKAGE_DIR.rglob("*.py"))
    for init in _PACKAGE_DIR.rglob("__init__.py"):
        files.update(package_data(init.parent))
    return sorted(files)


def source_hash() -> str:
    """SHA-256 over the path and bytes of every ``.py`` file of ``llmlab`` and of
    the data it ships (:func:`package_data`)."""
    return _digest_files(_package_files())


def code_hash(module: str) -> str:
    """SHA-256 over :func:`dependency_files` of ``module``.

    For a module outside ``llmlab`` (a test's function, say) the whole package
    counts, plus that module's own file when it has one.
    """
    files = dependency_files(module)
    if files:
        return _digest_files(files)
    import sys

    files = _package_files()
    own = getattr(sys.modules.get(module), "__file__", None)
    if own and Path(own).is_file():
        files.append(Path(own))
    return _digest_files(files)


def snippet_hash(code: str, stamp: tuple | None = None) -> str:
    """SHA-256 over the ``llmlab`` source that the Python ``code`` can run.

    The files of every ``llmlab`` module ``code`` imports, transitively. Where
    the imports cannot be read from the text (a syntax error, ``importlib``,
    ``__import__``), the whole package counts. ``stamp``: the package's
    :func:`package_stamp`, taken once by a caller that hashes many snippets of one
    version of the source (a build).
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return source_hash()
    if "import_module" in code or "__import__" in code:
        return source_hash()
    return _digest_files(_files_of(_llmlab_imports(tree, ""), stamp))


def machine_fingerprint() -> list[str]:
    """What a timing depends on besides the code: host, processor, cores, threads."""
    return [platform.node(), platform.machine(), platform.processor(),
            str(os.cpu_count()), os.environ.get("OMP_NUM_THREADS", "")]


# --------------------------------------------------------------------------
# keys
# --------------------------------------------------------------------------
def _canonical(value: Any, where: str) -> Any:
    """Turn an argument into JSON-able data, refusing what has no stable form."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return repr(value)  # round-trips exactly
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


@functools.lru_cache(maxsize=1)
def _torch_version() -> str:
    return metadata.version("torch")  # without importing torch


def _bound_arguments(fn: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, Any]:
    target = getattr(fn, "uncached", fn)
    bound = inspect.signature(target).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def cache_key(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The key under which ``fn(*args, **kwargs)`` is cached."""
    target = getattr(fn, "uncached", fn)
    arguments = {k: _canonical(v, k) for k, v in _bound_arguments(fn, args, kwargs).items()}
    payload = {
        "fn": f"{target.__module__}.{target.__qualname__}",
        "code": code_hash(target.__module__),
        "torch": _torch_version(),
        "args": arguments,
    }
    if getattr(fn, "machine_dependent", False):
        payload["machine"] = machine_fingerprint()
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=True).encode()
    return hashlib.sha256(blob).hexdigest()


# --------------------------------------------------------------------------
# the store
# --------------------------------------------------------------------------
def disk_cache_enabled() -> bool:
    """True when results are also stored on disk (see the module docstring)."""
    flag = os.environ.get("LLMLAB_CACHE", "1").strip().lower()
    return flag not in {"0", "off", "false", "no"} and bool(os.environ.get("LLMLAB_CACHE_DIR"))


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

    Processes asking for the same result at once then compute it once: the
    others wait, then read it. With ``wait=False`` a lock held elsewhere is not
    waited for: the block runs at once with ``False``.
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


def load_stored(path: Path) -> tuple[Any, float] | None:
    """The ``(result, seconds)`` stored at ``path``; None when there is none.

    A file that cannot be read back (cut short, overwritten by something else)
    is removed and counts as missing, so it is computed again: a cache entry
    is never trusted more than a missing one.
    """
    try:
        with path.open("rb") as fh:
            stored = pickle.load(fh)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - any unreadable entry: pickle raises many kinds
        path.unlink(missing_ok=True)
        return None
    if not (isinstance(stored, tuple) and len(stored) == 2):
        path.unlink(missing_ok=True)
        return None
    return stored


def _timed(fn: Callable[..., Any], kwargs: dict[str, Any], key: str) -> tuple[Any, float]:
    """Run the body of the cached call ``key`` (``fn`` decorated by :func:`cached`);
    its result and seconds, once the body has called exactly its declared parts."""
    first = len(RUN_LOG)
    token = _CALLER.set(key)
    try:
        start = time.perf_counter()
        result = fn.uncached(**kwargs)
        seconds = time.perf_counter() - start
    finally:
        _CALLER.reset(token)
    unplanned, uncalled = parts_mismatch(fn, kwargs, RUN_LOG[first:], key)
    if unplanned or uncalled:
        call = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise ValueError(
            f"{fn.__module__}.{fn.__qualname__}({call}): its body called "
            f"{unplanned or 'no other'} cached experiment(s) its parts do not name, and "
            f"did not call {uncalled or 'no'} declared part(s): a build computes the "
            "parts first, side by side, so @cached(parts=...) must name the cached "
            "calls the body makes (read them with part_results(parts, ...))")
    return result, seconds


def parts_mismatch(fn: Callable[..., Any], kwargs: dict[str, Any],
                   records: list[RunRecord], key: str) -> tuple[list[str], list[str]]:
    """``(called but not planned, declared but not called)`` for the body of the cached
    call ``key`` = ``fn(**kwargs)``, whose run left ``records`` in :data:`RUN_LOG`.

    A call the body makes counts as planned when it is anywhere in
    :func:`plan` (a part's own parts are computed before it too); every part
    ``fn`` declares must be called by the body itself.
    """
    called = {r.key: r.name for r in records if r.caller == key}
    planned = {cache_key(f, **kw) for f, kw in plan(fn, **kwargs)[:-1]}
    parts = getattr(fn, "parts", None)
    declared = {cache_key(f, **kw): f"{f.__module__}.{f.__qualname__}"
                for f, kw in (parts(**kwargs) if parts is not None else [])}
    return (sorted(name for k, name in called.items() if k not in planned),
            sorted(name for k, name in declared.items() if k not in called))


def wait_for(process: Any) -> None:
    """Let a miss under ``LLMLAB_CACHE_MISS=wait`` wait while ``process`` (the build's
    ``python -m llmlab.build.precompute``, a :class:`subprocess.Popen`) runs; ``None``: none does."""
    _PRECOMPUTE[:] = [process] if process is not None else []


def _miss(name: str, kwargs: dict[str, Any], path: Path | None) -> None:
    """A result is missing: ``LLMLAB_CACHE_MISS`` says whether this process computes it.

    Unset: it does. ``error``: raise :class:`NotPrecomputedError`. ``wait``: while
    the process given to :func:`wait_for` runs, wait for it to store the result at
    ``path``; raise if it ends first.
    """
    policy = os.environ.get("LLMLAB_CACHE_MISS", "").strip().lower()
    if policy == "wait" and path is not None:
        while not path.exists() and _PRECOMPUTE and _PRECOMPUTE[0].poll() is None:
            time.sleep(0.05)
        if path.exists():
            return
    if policy in ("error", "wait"):
        call = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise NotPrecomputedError(
            f"{name}({call}) is not in the result cache {path.parent if path else ''} "
            f"(LLMLAB_CACHE_MISS={policy}): run `python -m llmlab.build.precompute` in the "
            "course's folder; if it still misses, precompute did not find the call in the "
            "page's blocks (call the experiment there, with literal arguments)")


def cached(
    fn: F | None = None,
    *,
    parts: Callable[..., list] | None = None,
    cost: float = 0.0,
    machine_dependent: bool = False,
    processes: int | str = 1,
) -> F:
    """Decorate an experiment so that its results are content-addressed.

    The wrapped function returns a deep copy of the stored result, so a caller
    that mutates what it gets cannot change what the next caller sees.

    Args:
        fn: The experiment.
        parts: Optional ``parts(**bound_arguments) -> [(cached_fn, kwargs), ...]``
            naming the independent cached experiments ``fn`` calls, which a
            build may compute side by side (:func:`plan`) before ``fn`` itself.
            The body gets those results from the same function (through
            :func:`part_results`), so that what is planned is what is called;
            a cached call the body makes besides must be planned inside one of
            the parts (``tests/test_parts.py`` checks every experiment).
        cost: Rough seconds one call takes on one core: a scheduling hint (the
            costliest calls start first, so that no long one runs alone at the end).
        machine_dependent: The result describes the machine (a timing): the key
            includes :func:`machine_fingerprint`, and a build runs it only where
            each of its processes has a core of its own
            (:func:`llmlab.build.scheduler.run_jobs`).
        processes: How many processes one call keeps busy: a number, or the name of
            the argument that says it (``"world_size"``). A scheduling fact, like ``cost``.
    """
    if fn is None:
        return functools.partial(  # type: ignore[return-value]
            cached, parts=parts, cost=cost, machine_dependent=machine_dependent,
            processes=processes)
    if isinstance(processes, str):
        if processes not in inspect.signature(fn).parameters:
            raise ValueError(f"processes must name an argument of {fn.__qualname__}, "
                             f"got {processes!r}")
    elif isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be a positive int or an argument's name, "
                         f"got {processes!r}")

    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        key = cache_key(wrapper, *args, **kwargs)
        source = None
        if key in _MEMORY:
            source = "memory"
        else:
            folder = cache_dir()
            bound = _bound_arguments(fn, args, kwargs)
            if folder is None:
                _miss(name, bound, None)
                _MEMORY[key], source = _timed(wrapper, bound, key), "computed"
            else:
                path = folder / f"{key}.pkl"
                stored = load_stored(path)
                if stored is None:
                    _miss(name, bound, path)  # raises, or waits for precompute to store it
                    stored = load_stored(path)
                if stored is None:
                    with _key_lock(path):  # one process computes it, the others read it
                        stored = load_stored(path)
                        if stored is None:
                            stored = _timed(wrapper, bound, key)
                            _store(path, stored)
                            source = "computed"
                _MEMORY[key] = stored
                source = "disk" if source is None else source
        result, compute_seconds = _MEMORY[key]
        RUN_LOG.append(RunRecord(name, key, time.perf_counter() - start, source,
                                 compute_seconds, _CALLER.get()))
        return copy.deepcopy(result)

    wrapper.uncached = fn  # type: ignore[attr-defined]
    wrapper.parts = parts  # type: ignore[attr-defined]
    wrapper.cost = cost  # type: ignore[attr-defined]
    wrapper.machine_dependent = machine_dependent  # type: ignore[attr-defined]
    wrapper.processes = processes  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def plan(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[tuple[Callable, dict]]:
    """The cached calls ``fn(*args, **kwargs)`` makes, parts first, itself last.

    Each entry is ``(cached_function, keyword_arguments)``. The calls before
    their parent are independent of each other, so they may be computed in
    parallel processes; the parent then finds them in the cache.
    """
    bound = _bound_arguments(fn, args, kwargs)
    calls: list[tuple[Callable, dict]] = []
    parts = getattr(fn, "parts", None)
    if parts is not None:
        for part, part_kwargs in parts(**bound):
            calls.extend(plan(part, **part_kwargs))
    calls.append((fn, bound))
    return calls


def part_results(parts: Callable[..., list], *args: Any, **kwargs: Any) -> list:
    """The results of the cached calls ``parts(*args, **kwargs)`` names, in order.

    For an experiment's body: ``parts`` is the function given to :func:`cached`
    as ``parts=``, so the body calls exactly what :func:`plan` schedules.
    """
    return [part(**part_kwargs) for part, part_kwargs in parts(*args, **kwargs)]


def stored_seconds(fn: Callable[..., Any], **kwargs: Any) -> float | None:
    """How long computing the stored result of ``fn(**kwargs)`` took; None if none is stored.

    Reads the disk store only (it computes nothing). A result not stored yet is
    waited for, or refused, as ``LLMLAB_CACHE_MISS`` says (see :func:`cached`).
    """
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / f"{cache_key(fn, **kwargs)}.pkl"
    stored = load_stored(path)
    if stored is None:
        _miss(f"{fn.__module__}.{fn.__qualname__}", _bound_arguments(fn, (), kwargs), path)
        stored = load_stored(path)
    return None if stored is None else stored[1]


def compute(fn: Callable[..., Any], **kwargs: Any) -> float | None:
    """Compute ``fn(**kwargs)`` into the disk cache; the seconds it took, or None.

    None, computing nothing, when the result is stored already or another
    process holds its lock (and is computing it). For a build's worker
    processes (see :mod:`llmlab.build.precompute`).
    """
    folder = cache_dir()
    if folder is None:
        raise ValueError("compute() needs the disk cache: set LLMLAB_CACHE_DIR to a folder")
    path = folder / f"{cache_key(fn, **kwargs)}.pkl"
    with _key_lock(path, wait=False) as held:
        if not held or load_stored(path) is not None:
            return None
        result, seconds = _timed(fn, _bound_arguments(fn, (), kwargs), path.stem)
        _store(path, (result, seconds))
    return seconds
