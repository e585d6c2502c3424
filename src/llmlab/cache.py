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
import inspect
import json
import os
import pickle
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "RUN_LOG",
    "RunRecord",
    "cache_dir",
    "cache_key",
    "cached",
    "clear_memory",
    "code_hash",
    "dependency_files",
    "disk_cache_enabled",
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
        source: ``"computed"``, ``"memory"`` or ``"disk"``.
    """

    name: str
    key: str
    seconds: float
    source: str


RUN_LOG: list[RunRecord] = []
"""Every call of a cached experiment in this process, in order."""

_MEMORY: dict[str, Any] = {}


def source_hash() -> str:
    """SHA-256 over the path and bytes of every ``.py`` file of ``llmlab``.

    Cheap enough (a few dozen small files) to compute on every call, which is
    what makes a long-lived process (``mkdocs serve``, a notebook) safe.
    """
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE_DIR.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE_DIR).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


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


def _imported_modules(path: Path, name: str) -> set[str]:
    """Names of the ``llmlab`` modules that the file at ``path`` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
    return {m for m in found if m.split(".")[0] == "llmlab"}


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


def cached(fn: F) -> F:
    """Decorate an experiment so that its results are content-addressed.

    The wrapped function returns a deep copy of the stored result, so a caller
    that mutates what it gets cannot change what the next caller sees.
    """

    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        key = cache_key(fn, *args, **kwargs)
        if key in _MEMORY:
            result, source = _MEMORY[key], "memory"
        else:
            folder = cache_dir()
            path = folder / f"{key}.pkl" if folder is not None else None
            if path is not None and path.exists():
                with path.open("rb") as fh:
                    result, source = pickle.load(fh), "disk"
            else:
                result, source = fn(*args, **kwargs), "computed"
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    tmp = path.with_suffix(f".{os.getpid()}.tmp")
                    with tmp.open("wb") as fh:
                        pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
                    tmp.replace(path)  # atomic: a reader never sees half a file
            _MEMORY[key] = result
        RUN_LOG.append(RunRecord(name, key, time.perf_counter() - start, source))
        return copy.deepcopy(result)

    wrapper.uncached = fn  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
