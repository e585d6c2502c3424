"""MkDocs hooks: glue for the known gaps of our toolchain.

Each piece says which gap it covers. In short:

1. markdown-exec has no cache and runs each page once per language. We memoise
   a block's output, keyed by its code, the ``llmlab`` modules it imports
   (transitively) and the torch version, so the zh and en pages show the
   *same* output from *one* run (and a long-lived ``mkdocs serve`` re-renders a
   prose edit without re-running blocks). The outputs are also kept on disk,
   so a build where nothing changed runs no block at all (and imports no
   torch) except the per-page computation reports; heavy experiments are
   cached across builds by ``llmlab.cache``. The HTML markdown-exec makes of
   an output, and the search entries Material makes of a page, are kept too:
   neither tool reuses its work when nothing changed, which is most of what
   a ``serve`` rebuild after a prose edit would otherwise cost.
2. markdown-exec's ``session=`` state is shared across pages, languages and
   ``serve`` rebuilds: we clear it per page. A long-lived ``mkdocs serve`` would
   also keep a stale ``llmlab`` import: we drop ``llmlab`` from ``sys.modules``
   before each build so that the new code is imported.
3. mkdocs-static-i18n rebuilds every ``File`` and so drops mkdocs-jupyter's
   notebook wrapper (static-i18n issue #198): notebooks would be copied as
   downloads. We turn them back into pages after i18n has run.
4. mkdocs-jupyter's own cache ignores changes to ``src/`` (we switch it off);
   we memoise its ``nb2html`` under a key that includes the ``llmlab`` source.
5. Material's language selector looks for a sitemap in each language folder;
   static-i18n writes one at the root, without the notebooks: we add them and
   copy it. jupytext's random cell ids are numbered so builds reproduce.
6. Material's JavaScript fetches ``sitemap.xml`` next to every
   ``<link rel="alternate">`` in the page head, expecting language roots there;
   static-i18n points them at the page's translation, so every page would
   request a missing ``<page>/sitemap.xml``. We point the head links at the
   language roots and leave the visible language switcher per page.
7. Nothing in the toolchain runs a page's experiments in parallel: worker
   processes compute them (forked, on Linux, from a server that has imported
   torch once) while the pages render, and a costly part that a page must
   compute itself runs in such a child too. A build report (which block or
   experiment ran, for how long, from where) is written to
   ``build-report.json`` in the site folder.
8. Browsers other than Firefox render a line break between two Chinese
   characters as a space (CSS Text 3's segment-break rule for CJK is not
   implemented there), so Markdown wrapped mid-sentence shows stray spaces. We
   drop such line breaks from each page's HTML, outside ``<pre>``, scripts and
   styles.
9. nbconvert starts each notebook's kernel as a fresh interpreter, which
   imports torch again (about 2 s of CPU each). On Linux the kernels are
   forked from the server the experiment workers fork from (see 7), which has
   imported torch once.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path, PurePosixPath
from typing import Any

# Tiny models run several times faster single-threaded on small shared CPUs;
# set before torch is imported anywhere in this process or its kernels.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from mkdocs.plugins import event_priority  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LANGUAGES = ("zh", "en")
NOTEBOOK_DIR = "examples"

# Default on-disk cache for experiments and notebooks. LLMLAB_CACHE=0 still
# switches it off: llmlab.cache.cache_dir() reads both variables.
os.environ.setdefault("LLMLAB_CACHE_DIR", str(ROOT / ".cache" / "llmlab"))


# Outputs of blocks and notebooks, keyed by their code and the llmlab source
# they import. They outlive one build so that `mkdocs serve` re-renders a prose
# edit without re-running anything, and an edit to one module re-runs only the
# blocks that import it (an old entry is never hit again once its code changed).
_BLOCK_MEMO: dict[str, str] = {}
_NOTEBOOK_MEMO: dict[str, str] = {}


_BUILDS = itertools.count()
_CODE_HASHES: dict[tuple[str, str], str] = {}


class _State:
    """What one outer build (all languages) has seen so far."""

    def __init__(self) -> None:
        self.blocks: list[dict[str, Any]] = []
        self.notebooks: list[dict[str, Any]] = []
        self.notebook_locks: dict[str, threading.Lock] = {}
        self.pool: Any = None
        self.submitter: Any = None
        self.threads: Any = None
        self.runner: Any = None
        self.prefetched: list[dict[str, Any]] = []
        self.source_hash = ""
        self.torch_version = ""
        self.language = ""
        self.page = ""
        self.started = time.perf_counter()
        self.config: Any = None
        self.experiments_planned = False
        self.serial = next(_BUILDS)
        self.git_head = ""
        self.markdown_exec_version = ""
        self.markdown_settings = ""


STATE = _State()


def _i18n_nested(config: Any) -> bool:
    """True inside the extra-language builds that static-i18n starts itself."""
    plugin = config.plugins.get("i18n")
    return bool(plugin is not None and getattr(plugin, "building", False))


def _current_language(config: Any) -> str:
    plugin = config.plugins.get("i18n")
    return getattr(plugin, "current_language", None) or LANGUAGES[0]


def _fresh_llmlab() -> None:
    """Forget every imported ``llmlab`` module so the next import reads the disk."""
    for name in list(sys.modules):
        if name == "llmlab" or name.startswith("llmlab."):
            del sys.modules[name]


def _clear_exec_sessions() -> None:
    from markdown_exec._internal.formatters import python as exec_python

    exec_python._sessions_globals.clear()


# --------------------------------------------------------------------------
# 1. one run per block per build, shared by both languages
# --------------------------------------------------------------------------
def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# Blocks whose id starts with this print what *this* build computed (the
# per-page computation report): they always run, after the page's other blocks
# have been served, so they are never stored on disk.
_BUILD_REPORT_ID = "machine-dependent-compute-"


def _code_source_hash(code: str) -> str:
    """Hash of the ``llmlab`` source that ``code`` imports (see ``llmlab.cache``).

    Keys of block and notebook outputs use it instead of the whole package, so
    an edit to one module re-runs only the blocks that can reach it.
    """
    # it reads only llmlab's source, so it holds until that changes (a serve
    # rebuild after a prose edit hashes nothing)
    key = (STATE.source_hash, code)
    if key not in _CODE_HASHES:
        from llmlab.cache import snippet_hash

        _CODE_HASHES[key] = snippet_hash(code)
    return _CODE_HASHES[key]


def _git_head() -> str:
    """The commit being built, as the provenance block shows it (asked once per build)."""
    if not STATE.git_head:
        from llmlab.provenance import git_commit

        STATE.git_head = git_commit()
    return STATE.git_head


@functools.lru_cache(maxsize=1)
def _environment_key() -> list[str]:
    """What a machine-dependent block's output may also depend on."""
    import platform

    return [platform.node(), platform.machine(), platform.processor(), str(os.cpu_count()),
            os.environ.get("OMP_NUM_THREADS", ""), platform.python_version()]


def _block_disk_path(code: str, block_id: str) -> Path | None:
    """Where the output of a block is kept between builds, or None if it is not.

    The key covers the code, the block's id, the source of the ``llmlab``
    modules it imports (transitively), the versions of torch, markdown-exec and
    Python; a ``machine-dependent-*`` block (timings, the build's provenance)
    also keys on the machine and the commit, so a timing shown is one measured
    on this machine for this code.
    """
    if block_id.startswith(_BUILD_REPORT_ID):
        return None
    from llmlab.cache import cache_dir

    folder = cache_dir()
    if folder is None:
        return None
    parts = [code, block_id, _code_source_hash(code), STATE.torch_version,
             STATE.markdown_exec_version, sys.version]
    if block_id.startswith("machine-dependent"):
        parts += [*_environment_key(), _git_head()]
    key = hashlib.sha256(json.dumps(parts).encode()).hexdigest()
    return folder / "blocks" / f"{key}.json"


def _read_block(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a damaged entry is recomputed


def _write_block(path: Path | None, output: str, runs: list[dict[str, Any]]) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"output": output, "runs": runs}, ensure_ascii=False),
                   encoding="utf-8")
    tmp.replace(path)  # atomic


def _run_log_length() -> int:
    cache = sys.modules.get("llmlab.cache")
    return len(cache.RUN_LOG) if cache is not None else 0


def _run_log_since(start: int) -> list[dict[str, Any]]:
    """The experiments a block just called (it may have imported llmlab itself)."""
    import dataclasses

    cache = sys.modules.get("llmlab.cache")
    return [dataclasses.asdict(r) for r in cache.RUN_LOG[start:]] if cache is not None else []


def _replay_runs(runs: list[dict[str, Any]]) -> None:
    """Tell this build's run log which experiments a saved block output shows.

    The page's computation report (a block that always runs) then lists them as
    served with the page output, with the time they took when computed.
    """
    if not runs:
        return
    from llmlab import cache

    cache.RUN_LOG.extend(
        cache.RunRecord(r["name"], r["key"], 0.0, "block", r["compute_seconds"]) for r in runs)


def _single_threaded_torch() -> None:
    # Tiny models run several times faster single-threaded on small shared CPUs.
    import torch

    torch.set_num_threads(1)


def _install_block_memo() -> None:
    from markdown_exec._internal.formatters import python as exec_python

    if getattr(exec_python._run_python, "_llmlab_memo", False):
        return
    original = exec_python._run_python

    @functools.wraps(original)
    def run_python(code: str, returncode: int | None = None, session: str | None = None,
                   id: str | None = None, **extra: str) -> str:  # noqa: A002
        # a computation report describes this build: shared by both languages,
        # never by two builds
        this_build = STATE.serial if (id or "").startswith(_BUILD_REPORT_ID) else None
        # machine-dependent output may name the commit (a long `serve` sees commits)
        commit = _git_head() if (id or "").startswith("machine-dependent") else None
        key_src = json.dumps([code, session, _code_source_hash(code), STATE.torch_version,
                              this_build, commit])
        key = hashlib.sha256(key_src.encode()).hexdigest()
        record = {"page": STATE.page, "language": STATE.language, "key": key[:16],
                  "session": session or None}
        # Blocks in a session depend on what ran before them on the page, so
        # they always run (and the style guide asks pages not to use sessions).
        record["id"] = id or None
        if not session and key in _BLOCK_MEMO:
            output = _BLOCK_MEMO[key]
            STATE.blocks.append({**record, "seconds": 0.0, "source": "memo",
                                 "output": _sha(output)})
            return output
        start = time.perf_counter()
        disk = None if session else _block_disk_path(code, id or "")
        saved = _read_block(disk)
        if saved is not None:
            output = saved["output"]
            _replay_runs(saved["runs"])
            source = "disk"
        else:
            if disk is not None:  # the first saveable block that runs starts the workers
                _start_experiment_prefetch()
            _single_threaded_torch()
            runs_before = _run_log_length()
            output = original(code, returncode=returncode, session=session, id=id, **extra)
            source = "executed"
            _write_block(disk, output, _run_log_since(runs_before))
        STATE.blocks.append({**record, "seconds": time.perf_counter() - start,
                             "source": source, "output": _sha(output)})
        if (id or "").startswith("machine-dependent"):
            import platform

            # machine-dependent output must say which machine produced it
            STATE.blocks[-1]["names_machine"] = platform.machine() in output
        if not session:
            _BLOCK_MEMO[key] = output
        return output

    run_python._llmlab_memo = True  # type: ignore[attr-defined]
    exec_python._run_python = run_python


_CONVERT_MEMO: dict[str, str] = {}
_HEADING_TAG = re.compile(r"<h[1-6][\s>]")


def _install_conversion_memo() -> None:
    """Keep the HTML that markdown-exec makes of a block's source and output.

    markdown-exec turns each block's (memoised) output, with its source, into
    HTML by a Markdown conversion of its own, Pygments highlighting included:
    the larger part of what a ``mkdocs serve`` rebuild after a prose edit
    costs, for blocks that did not change, and done once per language. That
    conversion uses the site's Markdown settings, not the page's, so the same
    text converts to the same HTML on any page: it is kept under the text
    (markdown-exec's random stash placeholders replaced by their contents'
    digests), the id prefix and the settings. Not kept: HTML with a heading
    (markdown-exec also hands those to the page's table of contents) or with
    an id numbered by markdown-exec's per-build counter (``exec-N--``).
    """
    from markdown_exec._internal.rendering import MarkdownConverter

    if getattr(MarkdownConverter.convert, "_llmlab_memo", False):
        return
    original = MarkdownConverter.convert

    @functools.wraps(original)
    def convert(self: Any, text: str, stash: dict[str, str] | None = None,
                id_prefix: str | None = None) -> Any:
        canonical = text
        for placeholder, stashed in (stash or {}).items():
            canonical = canonical.replace(placeholder, f"\0stash:{_sha(stashed)}\0")
        key = _sha(json.dumps([canonical, id_prefix, self._update_toc,
                               STATE.markdown_settings]))
        if key in _CONVERT_MEMO:
            from markupsafe import Markup

            return Markup(_CONVERT_MEMO[key])  # noqa: S704 - markdown-exec's own HTML
        markup = original(self, text, stash=stash, id_prefix=id_prefix)
        if not _HEADING_TAG.search(markup) and 'id="exec-' not in markup:
            _CONVERT_MEMO[key] = str(markup)
        return markup

    convert._llmlab_memo = True  # type: ignore[attr-defined]
    MarkdownConverter.convert = convert


_SEARCH_MEMO: dict[str, list[dict[str, Any]]] = {}


def _toc_key(toc: Any) -> list[Any]:
    return [[item.id, item.url, item.title, _toc_key(item.children)] for item in toc]


def _install_search_memo() -> None:
    """Keep the search entries Material makes of each page.

    Material's search plugin parses every page's HTML on every build (its
    highlighted code is tens of thousands of tags) and cuts the Chinese text
    with jieba: after a prose edit, most of what a ``mkdocs serve`` rebuild
    costs besides Markdown. A page's entries depend only on its HTML, address,
    title, metadata and table of contents and on the index settings, so they
    are kept under those and appended again when none of them changed.
    """
    from material.plugins.search.plugin import SearchIndex

    if getattr(SearchIndex.add_entry_from_context, "_llmlab_memo", False):
        return
    original = SearchIndex.add_entry_from_context

    @functools.wraps(original)
    def add_entry_from_context(self: Any, page: Any) -> None:
        key = _sha(json.dumps([page.content, page.url, str(page.title), page.meta,
                               _toc_key(page.toc), self.config], sort_keys=True, default=repr))
        if key in _SEARCH_MEMO:
            self.entries.extend(copy.deepcopy(_SEARCH_MEMO[key]))
            return
        start = len(self.entries)
        original(self, page)
        _SEARCH_MEMO[key] = copy.deepcopy(self.entries[start:])

    add_entry_from_context._llmlab_memo = True  # type: ignore[attr-defined]
    SearchIndex.add_entry_from_context = add_entry_from_context


# --------------------------------------------------------------------------
# 4. notebooks: one conversion per build, cached under a key that sees src/
# --------------------------------------------------------------------------
_MERMAID_LOADER = re.compile(
    r'<script type="module">(?:(?!</script>).)*?cdnjs\.cloudflare\.com(?:(?!</script>).)*</script>',
    re.S,
)
_CELL_ID = re.compile(r'id="cell-id=([0-9a-f]+)"')
_MATHJAX = re.compile(
    r'<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->', re.S
)


def _offline_notebook_html(body: str) -> str:
    """Drop what nbconvert's template would fetch from a CDN.

    The template always ships a MathJax loader (with an empty ``src`` here) and
    a mermaid loader that imports from cdnjs. Our pages typeset math with the
    bundled KaTeX and have no mermaid diagrams, so both go.
    """
    body = _MATHJAX.sub("", body)
    body = _MERMAID_LOADER.sub("", body)
    # jupytext gives every cell of a .py notebook a random id on each read; number
    # them instead, so that two builds of the same notebook are byte-identical.
    numbers: dict[str, int] = {}
    return _CELL_ID.sub(
        lambda m: f'id="nb-cell-{numbers.setdefault(m.group(1), len(numbers) + 1)}"', body)


def _install_notebook_memo() -> None:
    import mkdocs_jupyter
    import nbconvert
    from mkdocs_jupyter import convert

    if getattr(convert.nb2html, "_llmlab_memo", False):
        return
    original = convert.nb2html

    @functools.wraps(original)
    def nb2html(nb_path: str, **kwargs: Any) -> str:
        digest = hashlib.sha256()
        source = Path(nb_path).read_bytes()
        digest.update(source)
        digest.update(json.dumps([_code_source_hash(source.decode("utf-8")),
                                  STATE.torch_version,
                                  mkdocs_jupyter.__version__, nbconvert.__version__,
                                  sorted((k, repr(v)) for k, v in kwargs.items())]).encode())
        key = digest.hexdigest()
        resolved = Path(nb_path).resolve()
        rel = (resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT)
               else resolved.name)
        record = {"notebook": rel, "language": STATE.language, "key": key[:16]}
        start = time.perf_counter()
        # One conversion per key: a prefetch thread may be converting it now.
        with STATE.notebook_locks.setdefault(key, threading.Lock()):
            if key in _NOTEBOOK_MEMO:
                body, source = _NOTEBOOK_MEMO[key], "memo"
            else:
                from llmlab.cache import cache_dir

                folder = cache_dir()
                disk = folder / "notebooks" / f"{key}.html" if folder else None
                if disk is not None and disk.exists():
                    body, source = disk.read_text(encoding="utf-8"), "disk"
                else:
                    body = _offline_notebook_html(original(nb_path, **kwargs))
                    source = "executed"
                    if disk is not None:
                        disk.parent.mkdir(parents=True, exist_ok=True)
                        disk.write_text(body, encoding="utf-8")
                _NOTEBOOK_MEMO[key] = body
        STATE.notebooks.append({**record, "seconds": time.perf_counter() - start,
                                "source": source, "output": _sha(body)})
        return body

    nb2html._llmlab_memo = True  # type: ignore[attr-defined]
    convert.nb2html = nb2html

    # mkdocs-jupyter converts each notebook to Markdown once per language and
    # build just to read its headings for the table of contents; the headings
    # only change when the file does.
    from mkdocs_jupyter import plugin as jupyter_plugin

    toc_original = jupyter_plugin._get_nb_toc_tokens
    toc_memo: dict[tuple[str, str, int], Any] = {}

    @functools.wraps(toc_original)
    def nb_toc_tokens(fpath: str, toc_depth: int) -> Any:
        key = (str(fpath), hashlib.sha256(Path(fpath).read_bytes()).hexdigest(), toc_depth)
        if key not in toc_memo:
            toc_memo[key] = toc_original(fpath, toc_depth)
        return copy.deepcopy(toc_memo[key])

    jupyter_plugin._get_nb_toc_tokens = nb_toc_tokens


# --------------------------------------------------------------------------
# events
# --------------------------------------------------------------------------
@event_priority(100)
def on_pre_build(config: Any) -> None:
    global STATE
    if _i18n_nested(config):
        STATE.language = _current_language(config)
        return  # same outer build, next language: keep the memo
    STATE = _State()
    STATE.language = _current_language(config)
    _fresh_llmlab()
    _clear_exec_sessions()
    _install_block_memo()
    _install_conversion_memo()
    _install_search_memo()
    _install_notebook_memo()
    _install_forked_kernels()
    from importlib.metadata import version

    from llmlab import cache

    STATE.source_hash = cache.source_hash()
    # torch itself is imported only when a block runs: a build whose block
    # outputs are all saved never needs it.
    STATE.torch_version = version("torch")
    STATE.markdown_exec_version = version("markdown-exec")
    STATE.markdown_settings = json.dumps(
        [config["markdown_extensions"], config["mdx_configs"]], sort_keys=True, default=repr)
    STATE.config = config
    # Make the notebook kernels import the same source tree.
    src = str(ROOT / "src")
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if src not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([src, *parts])
    _start_notebook_prefetch(config)


# --------------------------------------------------------------------------
# 7. prefetch: compute the pages' experiments and notebooks side by side
# --------------------------------------------------------------------------
_FENCE = re.compile(r"^```python[^\n]*exec=\"(?:on|1|true)\"[^\n]*\n(.*?)^```", re.M | re.S)


def _experiment_calls(code: str) -> list[tuple[str, str, tuple, dict]]:
    """Calls ``f(literal, ...)`` of functions imported from ``llmlab.experiments``."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "llmlab.experiments"):
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module, alias.name)
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in names:
            try:
                args = tuple(ast.literal_eval(a) for a in node.args)
                kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
            except ValueError:
                continue  # not literal: computed on the page as usual
            calls.append((*names[node.func.id], args, kwargs))
    return calls


def _workers() -> int:
    return max(1, int(os.environ.get("LLMLAB_BUILD_WORKERS", os.cpu_count() or 1)))


def _start_experiment_prefetch() -> None:
    """Start computing, in worker processes, every experiment the pages call.

    Called when the first block of a build has to run (a build whose block
    outputs are all saved plans nothing). The pages still call the experiments
    themselves; the cache's per-key lock makes a page wait for a result a
    worker is computing instead of computing it twice. Parts of an experiment
    (``@cached(parts=...)``) are independent, so they are what the workers get.
    """
    if STATE.experiments_planned or STATE.config is None:
        return
    STATE.experiments_planned = True
    import concurrent.futures as cf
    import importlib

    from llmlab import cache

    config = STATE.config
    folder = cache.cache_dir()
    if folder is not None and _worker_context().get_start_method() == "forkserver":
        cache.set_runner(_run_in_child)
    workers = _workers()
    docs = Path(config.docs_dir) / LANGUAGES[0]
    if folder is not None and workers > 1 and docs.is_dir():
        groups, seen = [], set()  # one group of jobs per experiment call
        for page in sorted(docs.rglob("*.md")):
            for code in _FENCE.findall(page.read_text(encoding="utf-8")):
                for module, name, args, kwargs in _experiment_calls(code):
                    try:
                        fn = getattr(importlib.import_module(module), name)
                        calls = cache.plan(fn, *args, **kwargs)
                    except (ImportError, AttributeError, TypeError, ValueError):
                        continue  # the page will report it when it runs
                    group = []
                    groups.append(group)
                    for part, part_kwargs in calls:
                        if not hasattr(part, "uncached"):
                            continue  # not cached (timings): a worker's result is lost
                        if getattr(part, "parts", None) is not None:
                            continue  # a parent: cheap once its parts are cached
                        key = cache.cache_key(part, **part_kwargs)
                        if key in seen or (folder / f"{key}.pkl").exists():
                            continue
                        seen.add(key)
                        group.append((getattr(part, "cost", 0.0), part.__module__,
                                      part.__name__, part_kwargs, key))
        jobs = _schedule(groups)
        if jobs:
            STATE.pool = cf.ProcessPoolExecutor(min(workers, len(jobs)),
                                                mp_context=_worker_context())
            # Starting the first worker waits until the forkserver has imported
            # torch (seconds, on a cold build): submit from a thread, so that the
            # pages go on rendering meanwhile.
            STATE.submitter = threading.Thread(target=_submit, args=(STATE.pool, jobs),
                                               daemon=True)
            STATE.submitter.start()


def _run_in_child(module: str, name: str, args: tuple, kwargs: dict) -> Any:
    """The page's runner for costly experiments (``llmlab.cache.set_runner``).

    What the page itself has to compute (no worker had started it) runs in a
    child of the workers' forkserver, and the page waits for it, as it would
    for its own computation. The child has torch's optimizer machinery
    imported already: computed here instead, the first optimizer step would
    import ``torch._dynamo`` (and sympy) into this process, about 3 s of CPU.
    One child serves the whole build.
    """
    import concurrent.futures as cf

    from llmlab import cache

    if STATE.runner is None:
        STATE.runner = cf.ProcessPoolExecutor(1, mp_context=_worker_context())
    return STATE.runner.submit(cache.call_uncached, module, name, args, kwargs).result()


def _submit(pool: Any, jobs: list[Any]) -> None:
    from llmlab import cache

    for _cost, module, name, kwargs, key in jobs:
        job = {"name": f"{module}.{name}", "key": key[:16], "kwargs": kwargs}
        STATE.prefetched.append(job)
        try:
            job["future"] = pool.submit(cache.compute_in_worker, module, name, kwargs)
        except Exception as error:  # noqa: BLE001 - a broken pool: the pages compute
            job["error"] = repr(error)
            return


def _worker_context() -> Any:
    """How worker processes start: forked from a server that has imported torch.

    A fresh interpreter per worker ("spawn") would import torch in each, and
    the first optimizer a process builds imports ``torch._dynamo`` too: about
    4 s of CPU per worker. The forkserver imports them once (and keeps them
    for the rebuilds of a ``mkdocs serve``) and forks each worker from there.
    Plain "fork" of this process is not safe: the notebook threads run beside
    it. ``llmlab`` itself is not preloaded: the server outlives a rebuild, and a
    worker must import the source as it is now (a worker's environment is the
    one the server started with, in the first build of a ``serve``: the
    variables this hook sets are set when it is imported, before that). Linux
    only: macOS frameworks that torch loads are not safe to fork (Python spawns
    there by default too), and Windows has no fork.
    """
    import multiprocessing

    if not sys.platform.startswith("linux"):
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "torch.optim", "torch._dynamo"])
    return context


def _schedule(groups: list[list[Any]]) -> list[Any]:
    """The order in which the workers get the jobs ``(cost, module, name, kwargs)``.

    Costliest first (the ``cost`` hint of ``@cached``): a long job that starts
    last runs alone at the end while the other cores idle, and the short ones
    fill the gaps instead (longest-processing-time-first). The page's own
    process also computes any part no worker has started yet when it gets
    there. Among equal costs, split experiments go first, and their parts are
    dealt out in turn (one part of each, then the next), each experiment's in
    reverse: the page asks for the parts in order, so the workers start with
    the ones it will need last, and the two meet in the middle (a worker skips
    a part the page is computing; the page waits for one a worker is).
    """
    split = [g[::-1] for g in groups if len(g) > 1]
    order = [job for round_ in itertools.zip_longest(*split) for job in round_ if job is not None]
    order += [job for g in groups if len(g) <= 1 for job in g]
    return sorted(order, key=lambda job: -job[0])  # stable: ties keep the order above


def _start_notebook_prefetch(config: Any) -> None:
    """Convert the notebooks in threads while the pages render.

    Each notebook runs in its own kernel process; the threads just wait on
    them. A saved conversion (see 4) makes a thread return at once.
    """
    import concurrent.futures as cf

    workers = _workers()
    plugin = config.plugins.get("mkdocs-jupyter")
    notebooks = sorted((Path(config.docs_dir) / LANGUAGES[0] / NOTEBOOK_DIR).glob("*.py"))
    if plugin is not None and plugin.config["execute"] and notebooks and workers > 1:
        from mkdocs_jupyter import convert

        options = {k: plugin.config[k] for k in (
            "kernel_name", "theme", "allow_errors", "show_input", "no_input", "no_prompt",
            "remove_tag_config", "highlight_extra_classes", "include_requirejs",
            "custom_mathjax_url")}
        STATE.threads = cf.ThreadPoolExecutor(max(1, workers - 1))
        for path in notebooks:
            # the same arguments mkdocs-jupyter's on_pre_page passes, so the same key
            STATE.threads.submit(convert.nb2html, str(path), execute=True, **options)


def _finish_prefetch() -> None:
    if STATE.submitter is not None:
        STATE.submitter.join()
    from llmlab import cache

    cache.set_runner(None)
    for executor in (STATE.pool, STATE.threads, STATE.runner):
        if executor is not None:
            executor.shutdown(wait=True)
    for job in STATE.prefetched:
        future = job.pop("future", None)
        if future is None:
            job["seconds"], job["skipped"] = None, False  # not submitted: see "error"
            continue
        error = future.exception()
        seconds = None if error else future.result()
        job["seconds"] = seconds
        # None without an error: stored already, or another process (the page, a
        # notebook's kernel) held its lock, and computed it
        job["skipped"] = error is None and seconds is None
        job["error"] = None if error is None else repr(error)
    STATE.pool = STATE.threads = STATE.submitter = STATE.runner = None


def on_env(env: Any, config: Any, files: Any) -> Any:  # noqa: ARG001
    # MkDocs makes a new Jinja environment for every build (and every language),
    # so the theme's ~100 templates are compiled again each time. Jinja's own
    # bytecode cache (checked against each template's source) skips that.
    from jinja2 import FileSystemBytecodeCache

    from llmlab.cache import cache_dir

    folder = cache_dir()
    if folder is not None and env.bytecode_cache is None:
        (folder / "jinja").mkdir(parents=True, exist_ok=True)
        env.bytecode_cache = FileSystemBytecodeCache(str(folder / "jinja"))
    return env


@event_priority(100)
def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:  # noqa: ARG001
    # 2. sessions are page-local: nothing leaks between pages or languages.
    _clear_exec_sessions()
    STATE.page = page.file.src_uri
    return markdown


# --------------------------------------------------------------------------
# 8. no stray spaces where Chinese prose was wrapped
# --------------------------------------------------------------------------
_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"  # with full-width punctuation
_CJK_BREAK = re.compile(f"(?<=[{_CJK}])[ \t]*\n[ \t]*(?=[{_CJK}])")
_VERBATIM = re.compile(r"(<(pre|script|style|textarea)\b.*?</\2>)", re.S | re.I)


def _join_cjk_lines(html: str) -> str:
    """Remove line breaks between two CJK characters, except in verbatim elements."""
    parts = _VERBATIM.split(html)
    # re.split with two groups: text, element, tag name, text, element, tag name, ...
    return "".join(_CJK_BREAK.sub("", part) if i % 3 == 0 else part
                   for i, part in enumerate(parts) if i % 3 != 2)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:  # noqa: ARG001
    return _join_cjk_lines(html)


# --------------------------------------------------------------------------
# 9. notebook kernels forked from the same server
# --------------------------------------------------------------------------
KERNEL_CHILD = Path(__file__).with_name("forked_kernel.py")


class _ForkedKernel:
    """What jupyter_client's ``LocalProvisioner`` uses of a ``subprocess.Popen``,
    for a kernel that is a forkserver child (a ``multiprocessing`` process)."""

    stdin = stdout = stderr = None

    def __init__(self, process: Any) -> None:
        self._process = process
        self.pid = process.pid

    def poll(self) -> int | None:
        return self._process.exitcode  # None while it runs, as Popen.poll

    def wait(self, timeout: float | None = None) -> int | None:
        self._process.join(timeout)
        return self._process.exitcode

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def terminate(self) -> None:
        self._process.terminate()

    def kill(self) -> None:
        self._process.kill()


def _forked_kernel_manager() -> type | None:
    """A kernel manager that forks IPython kernels from the workers' forkserver.

    nbconvert starts each notebook's kernel as ``python -m ipykernel_launcher``:
    a fresh interpreter that imports torch again, about 2 s of CPU per notebook
    (most of what a small notebook costs). The forkserver of section 7 has
    imported torch once; a kernel forked from it starts with torch loaded and
    nothing of ``llmlab``, with the environment and working directory
    jupyter_client asked for. ``_async_launch_kernel`` is the method
    jupyter_client documents for launching kernels differently; the rest
    (ports, connection file, shutdown, signals) is its own code, run on the
    Popen-like :class:`_ForkedKernel`. None where workers are not forked
    (not Linux): nbconvert's default manager then starts kernels as usual.
    """
    if _worker_context().get_start_method() != "forkserver":
        return None
    import runpy

    from jupyter_client import AsyncKernelManager

    class ForkedKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            if kernel_cmd[1:3] != ["-m", "ipykernel_launcher"]:  # another kernel
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            cwd = str(kw.get("cwd") or Path.cwd())
            env = dict(kw.get("env") or os.environ)
            if not kw.get("independent"):
                env["JPY_PARENT_PID"] = str(os.getpid())  # as jupyter_client's launcher
            process = _worker_context().Process(
                target=runpy.run_path, args=(str(KERNEL_CHILD),),
                kwargs={"init_globals": {"KERNEL_ARGV": kernel_cmd[3:], "KERNEL_CWD": cwd,
                                         "KERNEL_ENV": env},
                        "run_name": "__main__"},
            )
            process.start()
            provisioner = self.provisioner  # a LocalProvisioner, as for a Popen kernel
            provisioner.process = _ForkedKernel(process)
            provisioner.pid, provisioner.pgid, provisioner.cwd = process.pid, None, cwd
            self._reconcile_connection_info(provisioner.connection_info)
            return None

    return ForkedKernelManager


def _install_forked_kernels() -> None:
    """Make mkdocs-jupyter's nbconvert use :func:`_forked_kernel_manager`."""
    from mkdocs_jupyter import nbconvert2

    if getattr(nbconvert2.get_nbconvert_app, "_llmlab_forked", False):
        return
    manager = _forked_kernel_manager()
    if manager is None:
        return
    original = nbconvert2.get_nbconvert_app

    @functools.wraps(original)
    def get_nbconvert_app(*args: Any, **kwargs: Any) -> Any:
        app = original(*args, **kwargs)
        app.config["ExecutePreprocessor"]["kernel_manager_class"] = manager
        return app

    get_nbconvert_app._llmlab_forked = True  # type: ignore[attr-defined]
    nbconvert2.get_nbconvert_app = get_nbconvert_app


# --------------------------------------------------------------------------
# 3, 5, 6. notebooks as pages, in the sitemaps, and the language links
# --------------------------------------------------------------------------
def _notebook_dest(dest_path: str) -> str:
    path = PurePosixPath(dest_path)
    return (path.with_suffix("") / "index.html").as_posix()


def _as_notebook_page(file: Any, config: Any) -> None:
    """Make an i18n-rebuilt ``File`` of a notebook a documentation page again."""
    if getattr(file, "_llmlab_notebook", False):
        return
    # static-i18n copies the dest of mkdocs-jupyter's wrapper (".../index.html")
    # for the current language, and the asset path (".py") for alternates.
    if file.dest_path.endswith(".py"):
        file.dest_path = _notebook_dest(file.dest_path)
    file.abs_dest_path = os.path.normpath(os.path.join(config.site_dir, file.dest_path))
    file.url = file._get_url(config.use_directory_urls)
    file.is_documentation_page = lambda: True
    file.is_static_page = lambda: False
    file._llmlab_notebook = True


def _is_notebook(file: Any) -> bool:
    parts = PurePosixPath(file.src_uri).parts
    return (
        len(parts) == 3
        and parts[0] in LANGUAGES
        and parts[1] == NOTEBOOK_DIR
        and parts[2].endswith(".py")
    )


def _language_prefix(language: str) -> str:
    return "" if language == LANGUAGES[0] else f"{language}/"


@event_priority(-200)  # after static-i18n (-100)
def on_files(files: Any, config: Any) -> Any:
    # 3. static-i18n issue #198: turn notebooks back into pages. i18n only pairs
    # up documentation pages, so we also give each notebook its alternates (the
    # same notebook in the other languages) for the language switcher.
    for file in list(files):
        if not _is_notebook(file):
            continue
        _as_notebook_page(file, config)
        name = PurePosixPath(file.src_uri).stem
        alternates = {}
        for language in LANGUAGES:
            alternate = copy.copy(file)
            alternate.dest_path = f"{_language_prefix(language)}{NOTEBOOK_DIR}/{name}/index.html"
            alternate.abs_dest_path = os.path.normpath(
                os.path.join(config.site_dir, alternate.dest_path))
            alternate.url = alternate._get_url(config.use_directory_urls)
            alternates[language] = alternate
        alternates[_current_language(config)] = file
        file.alternates = alternates
    return files


def _add_notebooks_to_sitemap(site: Path, config: Any) -> None:
    """List the notebook pages in sitemap.xml, with their language alternates.

    static-i18n writes the sitemap from the pages it knew, and notebooks only
    became pages after it (see 3). Material's language switcher looks a page up
    in the sitemap and falls back to the language's home page when it is missing.
    """
    import gzip

    sitemap = site / "sitemap.xml"
    if not sitemap.is_file():
        return
    base = (config.site_url or "/").rstrip("/") + "/"
    entries = []
    for notebook in sorted((Path(config.docs_dir) / LANGUAGES[0] / NOTEBOOK_DIR).glob("*.py")):
        links = {lang: f"{base}{_language_prefix(lang)}{NOTEBOOK_DIR}/{notebook.stem}/"
                 for lang in LANGUAGES}
        alternates = "".join(
            f'\n        <xhtml:link rel="alternate" hreflang="{lang}" href="{url}"/>'
            for lang, url in links.items())
        entries += [f"    <url>\n        <loc>{url}</loc>{alternates}\n    </url>"
                    for url in links.values()]
    text = sitemap.read_text(encoding="utf-8")
    if entries and "</urlset>" in text:
        text = text.replace("</urlset>", "\n".join(entries) + "\n</urlset>")
        sitemap.write_text(text, encoding="utf-8")
        with gzip.GzipFile(site / "sitemap.xml.gz", "wb", mtime=0) as fh:
            fh.write(text.encode("utf-8"))


_HEAD_ALTERNATE = re.compile(r'<link rel="alternate" href="[^"]*" hreflang="([a-z]+)">')


@event_priority(-200)  # after static-i18n's page context
def on_post_page(output: str, page: Any, config: Any) -> str:  # noqa: ARG001
    depth = len([part for part in page.url.split("/") if part])
    up = "../" * depth

    def root(match: re.Match[str]) -> str:
        language = match.group(1)
        if language not in LANGUAGES:
            return match.group(0)
        href = (up + _language_prefix(language)) or "./"
        return f'<link rel="alternate" href="{href}" hreflang="{language}">'

    head, sep, body = output.partition("</head>")
    return _HEAD_ALTERNATE.sub(root, head) + sep + body


@event_priority(-200)  # after static-i18n has built every language
def on_post_build(config: Any) -> None:
    if _i18n_nested(config):
        return
    _finish_prefetch()
    from llmlab import cache

    report = {
        "source_hash": STATE.source_hash,
        "torch": STATE.torch_version,
        "seconds": time.perf_counter() - STATE.started,
        "blocks": STATE.blocks,
        "notebooks": STATE.notebooks,
        "workers": _workers(),
        "prefetched": STATE.prefetched,
        "experiments": [
            {"name": r.name, "key": r.key[:16], "seconds": r.seconds, "source": r.source,
             "compute_seconds": r.compute_seconds}
            for r in cache.RUN_LOG
        ],
    }
    # Material's language selector fetches <language>/sitemap.xml to find the
    # same page in the other language; static-i18n writes only the root one
    # (which lists every language), so each language folder gets a copy.
    site = Path(config.site_dir)
    _add_notebooks_to_sitemap(site, config)
    for language in LANGUAGES[1:]:
        for name in ("sitemap.xml", "sitemap.xml.gz"):
            if (site / name).is_file() and (site / language).is_dir():
                shutil.copyfile(site / name, site / language / name)
    out = Path(config.site_dir) / "build-report.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
