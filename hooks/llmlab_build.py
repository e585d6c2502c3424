"""MkDocs hook: the site's build glue, through documented seams only.

1. ``python -m llmlab.build.precompute`` computes the experiments and notebooks (started
   in ``on_pre_build`` when its inputs changed, in its own process, while pages
   render). Pages read results from the content-addressed cache and never compute
   (``LLMLAB_CACHE_MISS``); precompute reads what to compute from the pages'
   blocks, and a call it did not find there fails the build.
2. markdown-exec has no cache and runs each page once per language: its python
   fence gets markdown-exec's documented ``base_format`` with our ``run``, which
   keeps each block's output (in memory and on disk; keyed by its code, the
   page's language, the ``llmlab`` source it imports, the versions) and the HTML
   made of it, so an unchanged build or a prose edit under ``serve`` runs no
   block. A block runs with ``LLMLAB_LANG`` set to its page's language, and for
   the English twin right after the Chinese page.
3. Notebook pages are stubs that include (``pymdownx.snippets``) the Markdown
   precompute wrote per language; their downloads are copied next to them.
4. Line breaks between two Chinese characters are dropped (browsers other than
   Firefox show them as spaces).
5. Figures (data URIs in what blocks print) become files of their own.
6. Material's language selector reads ``sitemap.xml`` in each language folder and
   next to every ``<link rel="alternate">``; static-i18n writes only the root one
   and points those links at translations: the sitemap is copied, the links point
   at the language roots (full addresses, as hreflang wants). The search dialog
   gets an accessible name.
7. Search indexes a copy of each page with only the tags it keeps inside code,
   formulas, paragraphs and tables (the same index, from a sixth of the tags); a
   page unchanged since the last build is not processed again.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import itertools
import json
import linecache
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import types
from html import unescape
from importlib.metadata import version
from pathlib import Path
from typing import Any

from jinja2 import FileSystemBytecodeCache
from markdown_exec import ExecutionError, base_format, code_block
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: one thread is fastest
ROOT = Path(__file__).resolve().parent.parent
from llmlab.report import LANGUAGES  # noqa: E402 - after OMP_NUM_THREADS (it imports torch)
ALWAYS_RUN = "machine-dependent-compute-"  # blocks that report on the precompute run
MEMO: dict[str, dict[str, Any]] = {}  # block key -> {"output", "runs"}, across rebuilds
HTML: dict[str, Any] = {}  # formatter key -> HTML, across rebuilds
PAGES: dict[str, Any] = {}  # page key -> (search copy, HTML, figures), across rebuilds
HASHES: dict[tuple[str, str], str] = {}  # (llmlab source, code) -> the code's snippet hash
STATE: dict[str, Any] = {}  # this build
_TMP: list[Any] = []  # the cache folder of LLMLAB_CACHE=0 builds, removed at exit
LOG = logging.getLogger("mkdocs.plugins.llmlab")


def _sha(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


# --------------------------------------------------------------------------
# 1. precompute
# --------------------------------------------------------------------------
def _cache_dir() -> Path:
    if os.environ.pop("LLMLAB_CACHE", "1").strip().lower() in {"0", "off", "false", "no"}:
        _TMP.append(tempfile.TemporaryDirectory(prefix="llmlab-build-"))  # nothing kept
        os.environ["LLMLAB_CACHE_DIR"] = _TMP[-1].name
    path = Path(os.environ.get("LLMLAB_CACHE_DIR") or ROOT / ".cache" / "llmlab").resolve()
    os.environ["LLMLAB_CACHE_DIR"] = str(path)
    return path


def _start_precompute(config: Any) -> None:
    """Run ``python -m llmlab.build.precompute`` if its inputs changed since its last run.

    On POSIX it runs while the pages render: a block that needs a result it has
    not stored yet waits for it (``LLMLAB_CACHE_MISS=wait``); elsewhere the
    build waits for it first.
    """
    from llmlab.build.precompute import (find_calls, home_contents, report_path, stamp,
                                   up_to_date, write_home_contents)

    docs = Path(config.docs_dir)
    examples = docs.parent / "examples"
    try:
        current = stamp(find_calls(docs, examples), examples, docs)
        write_home_contents(STATE["cache"], home_contents(docs))  # the home page's, now
    except ValueError as error:  # a call not read from its block, a page without a summary
        raise PluginError(str(error)) from None
    STATE["report"] = report_path(STATE["cache"], current)
    os.environ.update(LLMLAB_CACHE_MISS="error", LLMLAB_DOCS=str(docs))
    if up_to_date(STATE["cache"], current):  # its outputs all there, as it left them
        return
    command = [sys.executable, "-m", "llmlab.build.precompute", "--docs", str(docs),
               "--examples", str(examples), "--cache-dir", str(STATE["cache"])]
    STATE["process"] = subprocess.Popen(command, cwd=docs.parent)
    STATE["ran"] = True  # this build runs precompute
    if os.name == "posix":
        from llmlab.build.cache import wait_for

        wait_for(STATE["process"])
        os.environ["LLMLAB_CACHE_MISS"] = "wait"
    else:
        _precompute_report()


def _precompute_report() -> dict[str, Any]:
    """What precompute did, once it has finished."""
    process = STATE.pop("process", None)
    if process is not None:
        if process.wait() != 0:  # once it has ended, a miss raises (LLMLAB_CACHE_MISS=wait)
            raise PluginError(f"`{' '.join(process.args[1:])}` failed: see its output above")
    if "precompute" not in STATE:
        STATE["precompute"] = json.loads(STATE["report"].read_text("utf-8"))
    return STATE["precompute"]


def on_config(config: Any) -> Any:
    os.environ["LLMLAB_OUTPUT"] = "markdown"  # blocks print Markdown and <img> tags
    # 2. markdown-exec's python fence, with our run function
    for fence in config.mdx_configs["pymdownx.superfences"].get("custom_fences", []):
        if fence["name"] in ("python", "py"):
            fence["format"] = _format_block
    # 3. the notebook pages' Markdown, for the stubs' includes
    snippets = config.mdx_configs.setdefault("pymdownx.snippets", {})
    site = str(_cache_dir() / "site")
    if site not in snippets.setdefault("base_path", []):
        snippets["base_path"].append(site)
    return config


@event_priority(100)
def on_pre_build(config: Any) -> None:
    # static-i18n builds the other languages inside the first one's on_post_build:
    # the builds nest, and the outer one is where this build's work is done
    STATE["depth"] = STATE.get("depth", 0) + 1
    if STATE["depth"] > 1:
        return
    for name in [m for m in sys.modules if m == "llmlab" or m.startswith("llmlab.")]:
        del sys.modules[name]  # a long `mkdocs serve` imports today's source
    STATE.clear()
    STATE.update(depth=1, cache=_cache_dir(), blocks=[], runs={}, figures={}, ahead=set(),
                 content={}, pages=set(), started=time.perf_counter())
    _start_precompute(config)
    from llmlab.build.cache import source_hash

    STATE["versions"] = [version("torch"), version("markdown-exec"), sys.version]
    STATE["source"] = source_hash()
    STATE["markdown"] = _sha(config["markdown_extensions"], config["mdx_configs"])


# --------------------------------------------------------------------------
# 2. blocks: run once, shared by every build whose inputs are the same
# --------------------------------------------------------------------------
def _block_key(code: str, block_id: str) -> str:
    from llmlab.build.cache import machine_fingerprint, snippet_hash

    # the llmlab source a block can reach, hashed once per version of the source
    if (STATE["source"], code) not in HASHES:
        HASHES[STATE["source"], code] = snippet_hash(code)
    parts = [code, block_id, os.environ["LLMLAB_LANG"], HASHES[STATE["source"], code],
             STATE["versions"]]
    if block_id.startswith("machine-dependent"):  # timings, provenance: this machine
        if "commit" not in STATE:
            from llmlab.build.provenance import git_commit

            STATE["commit"] = git_commit()
        parts += [machine_fingerprint(), STATE["commit"]]
    if block_id.startswith(ALWAYS_RUN):
        # what the cache holds for this precompute stamp is fixed once its run is
        # over; in the build that runs it, the block runs again
        parts.append(STATE["started"] if "ran" in STATE else STATE["report"].name)
    return _sha(*parts)


def _execute(code: str, name: str) -> str:
    """Run ``code`` as a fresh module; what it printed (markdown-exec's contract)."""
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


def _store_block(key: str, code: str, block_id: str) -> None:
    """Execute a block into MEMO[key] (and the disk store, unless it reports on the precompute run)."""
    from llmlab.build import cache

    before = len(cache.RUN_LOG)
    output = _execute(code, f"llmlab_block_{key[:12]}")
    MEMO[key] = {"output": output, "runs": [[r.name, r.key] for r in cache.RUN_LOG[before:]]}
    if not block_id.startswith(ALWAYS_RUN):
        disk = STATE["cache"] / "blocks" / f"{key}.json"
        disk.parent.mkdir(parents=True, exist_ok=True)
        tmp = disk.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(MEMO[key], ensure_ascii=False), encoding="utf-8")
        tmp.replace(disk)


def _run_ahead(code: str, block_id: str) -> None:
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
            key = _block_key(code, block_id)
            if key not in MEMO and not (STATE["cache"] / "blocks" / f"{key}.json").is_file():
                try:
                    _store_block(key, code, block_id)
                except ExecutionError:
                    continue
                STATE["ahead"].add(key)
    finally:
        os.environ["LLMLAB_LANG"] = here


def _run_block(code: str, returncode: int = 0, session: str | None = None,
               id: str = "", **extra: Any) -> str:  # noqa: A002, ARG001
    if session:
        raise ExecutionError("blocks are self-contained on this site: no session=")
    key = _block_key(code, id or "")
    disk = STATE["cache"] / "blocks" / f"{key}.json"
    start, source = time.perf_counter(), "ahead" if key in STATE["ahead"] else "memo"
    if key not in MEMO and disk.is_file():
        try:
            MEMO[key], source = json.loads(disk.read_text("utf-8")), "disk"
        except ValueError:  # a damaged saved output: run the block again
            disk.unlink(missing_ok=True)
    if key not in MEMO:
        _store_block(key, code, id or "")
        source = "executed"
        _run_ahead(code, id or "")
    STATE["ahead"].discard(key)
    entry = MEMO[key]
    if "digests" not in entry:  # of what it printed, and of the numbers in it: once
        entry["digests"] = [_sha(entry["output"])[:16], _sha(_numbers(entry["output"]))[:16]]
    STATE["runs"].setdefault(STATE["page"], []).extend(entry["runs"])
    STATE["blocks"].append({"page": STATE["page"], "language": os.environ["LLMLAB_LANG"],
                            "id": id or None, "key": key[:16], "source": source,
                            "seconds": time.perf_counter() - start,
                            "output": entry["digests"][0], "numbers": entry["digests"][1]})
    return entry["output"]


_NUMBER = re.compile(r"[-−+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?%?")
_NOT_DATA = re.compile(r'(?:src="data:|alt="| width="| height=")[^"]*"')  # figures, alt texts


def _numbers(output: str) -> list[str]:
    """The numbers a block printed, in order: what both languages must agree on."""
    return _NUMBER.findall(_NOT_DATA.sub("", output))


def _format_block(source: str, language: str, css_class: str, options: dict[str, Any],
                  md: Any, **kwargs: Any) -> Any:  # noqa: ARG001
    """markdown-exec's ``formatter``, with our ``run`` and the HTML kept."""
    key = _sha(_block_key(source, options.get("id", "")), options, STATE["markdown"])
    if key in HTML:
        _run_block(source, **{k: options.get(k) for k in ("session", "id")})  # the record
        return HTML[key]
    markup = base_format(language=language, run=_run_block, code=source, md=md, **options)
    # a heading also goes into the page's TOC; exec-N ids are numbered per build
    if not re.search(r"<h[1-6][\s>]", markup) and 'id="exec-' not in markup:
        HTML[key] = markup
    return markup


def on_files(files: Any, config: Any) -> Any:  # noqa: ARG001
    # each language's build: its pages, for the progress lines
    STATE["progress"] = [0, len(files.documentation_pages())]
    return files


@event_priority(100)
def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:  # noqa: ARG001
    STATE["progress"][0] += 1
    STATE["page"] = page.file.src_uri
    if "/notebooks/" in page.file.src_uri:
        _precompute_report()  # its Markdown is written once every notebook has run
    os.environ["LLMLAB_LANG"] = page.file.src_uri.split("/", 1)[0]  # docs/<language>/...
    return markdown


def _check_calls() -> None:
    """The experiments each page's blocks called are the ones precompute found in them."""
    pages = _precompute_report()["pages"]
    for page, runs in STATE["runs"].items():
        rel = page.split("/", 1)[1]
        listed = {k for entry in pages.get(rel, []) for k in entry["keys"]}
        stray = sorted({name for name, key in runs if key not in listed})
        if stray:
            raise PluginError(f"{page} calls {', '.join(stray)} with arguments that "
                              f"precompute did not find in {rel}'s blocks: call the experiment "
                              "in the block itself, with literal arguments")


# --------------------------------------------------------------------------
# 3. notebook downloads, 4. Chinese line breaks, 5. language links
# --------------------------------------------------------------------------
_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"  # with full-width punctuation
_CJK_BREAK = re.compile(f"(?<=[{_CJK}])[ \t]*\n[ \t]*(?=[{_CJK}])")
_VERBATIM = re.compile(r"(<(pre|script|style|textarea)\b.*?</\2>)", re.S | re.I)


def join_cjk_lines(html: str) -> str:
    """Remove line breaks between two CJK characters, except in verbatim elements."""
    parts = _VERBATIM.split(html)  # text, element, tag name, text, ...
    return "".join(_CJK_BREAK.sub("", part) if i % 3 == 0 else part
                   for i, part in enumerate(parts) if i % 3 != 2)


_FIGURE = re.compile(r'(<img class="llmlab-figure"[^>]*?) src="data:image/svg\+xml;base64,'
                     r'([A-Za-z0-9+/=]+)"')


def _figure_files(html: str, page: Any) -> tuple[str, dict[str, bytes]]:
    """Figures as files (``assets/figures/<digest>.svg``), not data URIs that every
    reader downloads before the text: the page's HTML and its figures by file name.
    Each loads lazily but the page's first, which may be what the reader sees: high
    priority (the ``<img>`` has its size from the report layer: no layout shift)."""
    up, figures = "../" * len([part for part in page.url.split("/") if part]), {}

    def to_file(match: re.Match[str]) -> str:
        svg = base64.b64decode(match.group(2))
        name = f"{hashlib.sha256(svg).hexdigest()[:20]}.svg"
        lazy = ' loading="lazy"' if figures else ' fetchpriority="high"'
        figures[name] = svg
        return f'{match.group(1)}{lazy} src="{up}assets/figures/{name}"'

    return _FIGURE.sub(to_file, html), figures


# Pygments wraps every name and every run of spaces in a span; Material colours a
# name as the code around it, and a space not at all. Unwrapped, a lecture page has
# about a quarter fewer elements for the browser to lay out, and looks the same.
_PLAIN_TOKEN = re.compile(r'<span class="(?:n|w)">([^<]*)</span>')
_HIGHLIGHT = re.compile(r'(<div class="[^"]*\bhighlight\b[^"]*")'
                        r'(>(?:<span class="filename">[^<]*</span>)?\s*<pre\b.*?</pre>)', re.S)


def code_blocks(html: str) -> str:
    """Code blocks with fewer elements (text and colours unchanged), each with its
    number of lines (``--llmlab-lines``): the stylesheet lays out a block only
    once it scrolls into view, and reserves its height until then."""
    def block(match: re.Match[str]) -> str:
        pre = _PLAIN_TOKEN.sub(r"\1", match.group(2))
        lines = pre.count("\n")
        return f'{match.group(1)} style="--llmlab-lines: {lines}"{pre}'

    return _HIGHLIGHT.sub(block, html)


_MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)


def _mathml(html: str) -> str:
    """Formulas typeset at build time as MathML, which browsers render natively.

    pymdownx.arithmatex leaves ``\\(...\\)`` and ``\\[...\\]``; a script would
    typeset them in the reader's browser, after downloading it and its fonts.
    """
    from latex2mathml.converter import convert

    def typeset(match: re.Match[str]) -> str:
        tex = unescape(match.group(2)).strip()
        return convert(tex[2:-2].strip(), display="block" if tex[1] == "[" else "inline")

    return _MATH.sub(typeset, html)


_CODE_OR_MATH = re.compile(r"(<pre\b[^>]*>(?:<span></span>)?)?(<(code|math)\b[^>]*>)(.*?)"
                           r"(</\3>)", re.S)
_PARAGRAPH_OR_TABLE = re.compile(r"(<(p|table)\b[^>]*>)(.*?)(</\2>)", re.S)
_KEPT = re.compile(r"</?(?:p|code|pre|li|ol|ul|sub|sup)\b")  # the tags search keeps


def _text_run(texts: list[str], verbatim: bool) -> str:
    """Text nodes as search reads them. In ``<pre>`` it keeps them as they are;
    elsewhere a node of spaces is one space, or none after another, so the nodes
    become one, but for a leading or trailing run of spaces (whether search keeps
    it depends on the text around): a node of its own, apart from the rest by a
    void ``<wbr>``, which search drops."""
    texts = [t for t in texts if t]
    blank = [unescape(t).isspace() for t in texts]
    if verbatim or all(blank):
        return "".join(texts)
    first, end = blank.index(False), len(blank) - blank[::-1].index(False)
    middle = "".join(" " if space else "".join(t for t, _ in run)
                     for space, run in itertools.groupby(zip(texts[first:end], blank[first:end]),
                                                         key=lambda pair: pair[1]))
    return " <wbr>" * (first > 0) + middle + "<wbr> " * (end < len(texts))


def _flatten(inner: str, verbatim: bool = False) -> str:
    """``inner`` with only the tags search keeps, and the text it reads unchanged."""
    parts, out = re.split(r"(<[^>]*>)", inner), []
    start = 0
    for i in range(1, len(parts), 2):
        if _KEPT.match(parts[i]):
            out += [_text_run(parts[start:i:2], verbatim), parts[i]]
            start = i + 1
    return "".join(out) + _text_run(parts[start::2], verbatim)


def search_copy(html: str) -> str:
    """``html`` with only the tags Material's search keeps inside code, formulas,
    paragraphs and tables: it parses each page in pure Python, and the others
    (Pygments' spans, MathML's, table cells) are most of the site's. It keeps only
    the text and those tags, so the copy indexes the same (a test checks every page)."""
    html = _CODE_OR_MATH.sub(lambda m: (m[1] or "") + m[2] + _flatten(m[4], bool(m[1])) + m[5],
                             html)
    return _PARAGRAPH_OR_TABLE.sub(lambda m: m[1] + _flatten(m[3]) + m[4], html)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:  # noqa: ARG001
    ran = sum(b["source"] == "executed" for b in STATE["blocks"] if b["page"] == STATE["page"])
    if ran:  # progress while the first build runs the blocks (a warm build says nothing)
        done, total = STATE["progress"]
        LOG.info(f"llmlab: {page.file.src_uri} ({done}/{total}), {ran} blocks run")
    key = hashlib.sha256(f"{page.url}\n{html}".encode()).hexdigest()
    if key not in PAGES:  # a page unchanged since the last build is not done again
        full, figures = _figure_files(_mathml(code_blocks(join_cjk_lines(html))), page)
        PAGES[key] = (search_copy(full), full, figures)
    STATE["figures"].update(PAGES[key][2])
    STATE["pages"].add(key)
    # Material's search reads page.content (on_page_context); ours puts the full one back
    STATE["content"][page.file.abs_dest_path] = PAGES[key][:2]
    return PAGES[key][0]


@event_priority(-100)  # after Material's search (priority 0) has indexed the copy
def on_page_context(context: Any, page: Any, config: Any, nav: Any) -> Any:  # noqa: ARG001
    light, full = STATE["content"].pop(page.file.abs_dest_path)
    if page.content != light:  # search removes data-search-* attributes from it
        raise PluginError(f"{page.file.src_uri}: its content changed after on_page_content "
                          "(a data-search-* attribute?): its full code blocks and "
                          "formulas cannot go back in place of search's copy")
    page.content = full
    return context


_HEAD_ALTERNATE = re.compile(rf'<link rel="alternate" href="[^"]*" hreflang="({"|".join(LANGUAGES)})">')
_SEARCH_DIALOG = '<div class="md-search" data-md-component="search" role="dialog"'
_SEARCH_NAME = {"zh": "搜索", "en": "Search"}


@event_priority(-200)  # after static-i18n's page context
def on_post_page(output: str, page: Any, config: Any) -> str:
    base = (config.site_url or "/").rstrip("/") + "/"

    def root(match: re.Match[str]) -> str:  # the language's root, as a full address
        language = match.group(1)
        href = base + ("" if language == LANGUAGES[0] else f"{language}/")
        return f'<link rel="alternate" href="{href}" hreflang="{language}">'

    head, sep, body = output.partition("</head>")
    # Material's search dialog has no accessible name (static-i18n sets the language)
    name = _SEARCH_NAME.get(config.theme.get("language") or LANGUAGES[0], "Search")
    body = body.replace(_SEARCH_DIALOG, f'{_SEARCH_DIALOG} aria-label="{name}"', 1)
    return _HEAD_ALTERNATE.sub(root, head) + sep + body


def on_env(env: Any, config: Any, files: Any) -> Any:  # noqa: ARG001
    # Jinja's own bytecode cache: the theme's templates are compiled once, not per build
    if env.bytecode_cache is None and "cache" in STATE:
        (STATE["cache"] / "jinja").mkdir(parents=True, exist_ok=True)
        env.bytecode_cache = FileSystemBytecodeCache(str(STATE["cache"] / "jinja"))
    return env


@event_priority(-200)  # after static-i18n has built every language
def on_post_build(config: Any) -> None:
    STATE["depth"] -= 1
    if STATE["depth"]:
        return
    _check_calls()
    for key in set(PAGES) - STATE["pages"]:  # what no page of this build was
        del PAGES[key]
    site = Path(config.site_dir)
    (site / "assets" / "figures").mkdir(parents=True, exist_ok=True)
    for name, svg in STATE["figures"].items():
        (site / "assets" / "figures" / name).write_bytes(svg)
    for language in LANGUAGES:  # 3. the notebooks' downloads, next to their pages
        prefix = "" if language == LANGUAGES[0] else f"{language}/"
        for path in (STATE["cache"] / "site" / language / "notebooks").glob("*.*"):
            if path.suffix in (".ipynb", ".py") and (site / prefix / "notebooks").is_dir():
                (site / prefix / "notebooks" / path.stem).mkdir(exist_ok=True)
                shutil.copyfile(path, site / prefix / "notebooks" / path.stem / path.name)
    for language in LANGUAGES[1:]:
        for name in ("sitemap.xml", "sitemap.xml.gz"):
            if (site / name).is_file() and (site / language).is_dir():
                shutil.copyfile(site / name, site / language / name)
    from llmlab.build.cache import RUN_LOG

    report = {"seconds": time.perf_counter() - STATE["started"], "blocks": STATE["blocks"],
              "experiments": [{"name": r.name, "key": r.key[:16], "source": r.source}
                              for r in RUN_LOG],
              "precompute": STATE["precompute"]}
    (site / "build-report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False),
                                            encoding="utf-8")


def on_build_error(error: Exception) -> None:  # noqa: ARG001
    STATE["depth"] = 0  # the next build (a `serve` rebuild) starts afresh
    if "process" in STATE:
        STATE.pop("process").wait()
