"""The pages' executed blocks: each runs once, shared by every build whose inputs are the same.

markdown-exec has no cache and runs each page once per language. Its python fence
gets :func:`format_block`, markdown-exec's documented ``formatter`` that calls its
``base_format`` with :func:`run_block` as ``run``; that keeps each block's output (in
memory and on disk under ``<cache>/blocks/``, keyed by :func:`block_key`: its code,
the page's language, the ``llmlab`` source it imports, the versions) and the HTML
made of it, so an unchanged build or a prose edit under ``serve`` runs no block. A
block runs with ``LLMLAB_LANG`` set to its page's language, and for the other
languages right after the first's page (:func:`run_ahead`).

What persists across builds (the memo of outputs and of HTML, the snippet hashes)
is the caller's: it passes the same dicts to each build's :class:`Blocks`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import linecache
import os
import re
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

from markdown_exec import ExecutionError, base_format, code_block

from llmlab.build import cache
from llmlab.build.provenance import git_commit
from llmlab.report import LANGUAGES

__all__ = ["ALWAYS_RUN", "Blocks", "block_key", "build_report", "check_calls", "digest", "execute",
           "format_block", "numbers", "run_ahead", "run_block", "store_block"]

ALWAYS_RUN = "machine-dependent-compute-"  # ids of blocks that report on the precompute run


def digest(*parts: Any) -> str:
    """SHA-256 of ``parts`` as JSON (what JSON cannot hold, as ``str``)."""
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


@dataclasses.dataclass
class Blocks:
    """One build's blocks: what their keys hold, where they are kept, what they did.

    Attributes:
        cache: The result cache's folder (outputs go to ``blocks/`` under it).
        source: :func:`llmlab.build.cache.source_hash` of this build.
        versions: The versions a block's output depends on (torch, markdown-exec, Python).
        markdown: Digest of the Markdown configuration (it shapes a block's HTML).
        precompute: What the key of an ``ALWAYS_RUN`` block holds: the precompute
            run it reports on (in the build that runs it, a value of that build).
        memo: Block key -> ``{"output", "runs"}``, kept across builds by the caller.
        html: Formatter key -> HTML, kept across builds by the caller.
        hashes: ``(source, code)`` -> the code's snippet hash, kept across builds.
        page: The page being rendered (``zh/...``), set by the caller.
        stamp: :func:`llmlab.build.cache.package_stamp`, taken by the first block
            of the build whose snippet hash is not kept.
        records: One record per block rendered, for the build report.
        runs: Page -> the experiments its blocks called, as ``[name, key]``.
        ahead: Keys of blocks run ahead for a language whose page is still to come.
    """

    cache: Path
    source: str
    versions: list[str]
    markdown: str
    precompute: Any
    memo: dict[str, dict[str, Any]]
    html: dict[str, Any]
    hashes: dict[tuple[str, str], str]
    page: str = ""
    stamp: tuple | None = None
    records: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    runs: dict[str, list[list[str]]] = dataclasses.field(default_factory=dict)
    ahead: set[str] = dataclasses.field(default_factory=set)
    commit: str | None = None


def block_key(build: Blocks, code: str, block_id: str) -> str:
    """The key of a block's output in ``$LLMLAB_LANG``: its code and id, the language,
    the ``llmlab`` source it can reach and the versions; for ``machine-dependent*``
    ids the machine and commit too, and for ``ALWAYS_RUN`` ids the precompute run."""
    # the llmlab source a block can reach, hashed once per version of the source
    if (build.source, code) not in build.hashes:
        if build.stamp is None:  # the source, read once per build
            build.stamp = cache.package_stamp()
        build.hashes[build.source, code] = cache.snippet_hash(code, build.stamp)
    parts = [code, block_id, os.environ["LLMLAB_LANG"], build.hashes[build.source, code],
             build.versions]
    if block_id.startswith("machine-dependent"):  # timings, provenance: this machine
        if build.commit is None:
            build.commit = git_commit()
        parts += [cache.machine_fingerprint(), build.commit]
    if block_id.startswith(ALWAYS_RUN):
        parts.append(build.precompute)
    return digest(*parts)


def execute(code: str, name: str) -> str:
    """Run ``code`` as a fresh module named ``name``; what it printed (markdown-exec's
    contract). An exception becomes markdown-exec's ``ExecutionError``, its traceback
    as a code block (the lines shown from ``code``)."""
    buffer = io.StringIO()
    module = types.ModuleType(name)  # dataclasses and pickle look a module up
    sys.modules[name] = module
    module.__dict__["print"] = functools.partial(print, file=buffer)
    filename = f"<{name}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        exec(compile(code, filename, "exec"), module.__dict__)  # noqa: S102 - the page's code
    except Exception as error:
        trace = "".join(traceback.format_exception(error))
        raise ExecutionError(code_block("python", trace)) from error
    finally:
        del sys.modules[name]
    return buffer.getvalue()


def _disk(build: Blocks, key: str) -> Path:
    return build.cache / "blocks" / f"{key}.json"


def store_block(build: Blocks, key: str, code: str, block_id: str) -> None:
    """Execute a block into ``build.memo[key]``, with the experiments it called, and
    into the disk store, unless it reports on the precompute run."""
    before = len(cache.RUN_LOG)
    output = execute(code, f"llmlab_block_{key[:12]}")
    build.memo[key] = {"output": output,
                       "runs": [[r.name, r.key] for r in cache.RUN_LOG[before:]]}
    if not block_id.startswith(ALWAYS_RUN):
        disk = _disk(build, key)
        disk.parent.mkdir(parents=True, exist_ok=True)
        tmp = disk.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(build.memo[key], ensure_ascii=False), encoding="utf-8")
        tmp.replace(disk)


def run_ahead(build: Blocks, code: str, block_id: str) -> None:
    """Run a block just run for the first language for the others (their pages hold
    the same blocks: a test checks it) now, while pages may still wait for
    precompute, not once it is done and a core is idle. A block that fails here
    is left to fail again on its own page."""
    here = os.environ["LLMLAB_LANG"]
    if here != LANGUAGES[0] or os.environ.get("LLMLAB_BUILD_EN", "true").lower() == "false":
        return
    try:
        for language in LANGUAGES[1:]:
            os.environ["LLMLAB_LANG"] = language
            key = block_key(build, code, block_id)
            if key not in build.memo and not _disk(build, key).is_file():
                try:
                    store_block(build, key, code, block_id)
                except ExecutionError:
                    continue
                build.ahead.add(key)
    finally:
        os.environ["LLMLAB_LANG"] = here


def run_block(build: Blocks, code: str, returncode: int = 0, session: str | None = None,
              id: str = "", **extra: Any) -> str:  # noqa: A002, ARG001
    """markdown-exec's ``run`` (bind ``build`` first): the block's output, from memory,
    from disk or executed, and a record of it in ``build.records``."""
    if session:
        raise ExecutionError("blocks are self-contained on this site: no session=")
    key = block_key(build, code, id or "")
    disk = _disk(build, key)
    start, source = time.perf_counter(), "ahead" if key in build.ahead else "memo"
    if key not in build.memo and disk.is_file():
        try:
            build.memo[key], source = json.loads(disk.read_text("utf-8")), "disk"
        except ValueError:  # a damaged saved output: run the block again
            disk.unlink(missing_ok=True)
    if key not in build.memo:
        store_block(build, key, code, id or "")
        source = "executed"
        run_ahead(build, code, id or "")
    build.ahead.discard(key)
    entry = build.memo[key]
    if "digests" not in entry:  # of what it printed, and of the numbers in it: once
        entry["digests"] = [digest(entry["output"])[:16], digest(numbers(entry["output"]))[:16]]
    build.runs.setdefault(build.page, []).extend(entry["runs"])
    build.records.append({"page": build.page, "language": os.environ["LLMLAB_LANG"],
                          "id": id or None, "key": key[:16], "source": source,
                          "seconds": time.perf_counter() - start,
                          "output": entry["digests"][0], "numbers": entry["digests"][1]})
    return entry["output"]


_NUMBER = re.compile(r"[-−+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?%?")
_NOT_DATA = re.compile(r'(?:src="data:|alt="| width="| height=")[^"]*"')  # figures, alt texts


def numbers(output: str) -> list[str]:
    """The numbers a block printed, in order: what both languages must agree on
    (not those inside a figure's data, alt text or size)."""
    return _NUMBER.findall(_NOT_DATA.sub("", output))


def format_block(build: Blocks, source: str, language: str, css_class: str,
                 options: dict[str, Any], md: Any, **kwargs: Any) -> Any:  # noqa: ARG001
    """markdown-exec's ``formatter`` (bind ``build`` first), with :func:`run_block`
    as ``run`` and the HTML kept for the next build."""
    key = digest(block_key(build, source, options.get("id", "")), options, build.markdown)
    if key in build.html:
        run_block(build, source, **{k: options.get(k) for k in ("session", "id")})  # the record
        return build.html[key]
    markup = base_format(language=language, run=functools.partial(run_block, build),
                         code=source, md=md, **options)
    # a heading also goes into the page's TOC; exec-N ids are numbered per build
    if not re.search(r"<h[1-6][\s>]", markup) and 'id="exec-' not in markup:
        build.html[key] = markup
    return markup


def check_calls(runs: dict[str, list[list[str]]], pages: dict[str, list[dict[str, Any]]]) -> None:
    """The experiments each page's blocks called (``runs``, by ``<language>/<page>``)
    are the ones precompute found in them (its report's ``pages``, by ``<page>``).

    Raises:
        ValueError: a page called an experiment with arguments precompute did not find.
    """
    for page, called in runs.items():
        rel = page.split("/", 1)[1]
        listed = {k for entry in pages.get(rel, []) for k in entry["keys"]}
        stray = sorted({name for name, key in called if key not in listed})
        if stray:
            raise ValueError(f"{page} calls {', '.join(stray)} with arguments that "
                             f"precompute did not find in {rel}'s blocks: call the experiment "
                             "in the block itself, with literal arguments")


def build_report(build: Blocks, seconds: float, precompute: dict[str, Any]) -> dict[str, Any]:
    """The build's report (``build-report.json``): its time, each block rendered, the
    experiments the blocks read from the cache, and precompute's report."""
    return {"seconds": seconds, "blocks": build.records,
            "experiments": [{"name": r.name, "key": r.key[:16], "source": r.source}
                            for r in cache.RUN_LOG],
            "precompute": precompute}
