"""MkDocs hook: the site's build glue, through documented seams only. Orchestration:
the work is done by plain functions of ``llmlab.build``, which a builder without
hooks can call too.

1. ``python -m llmlab.build.precompute`` computes the experiments and notebooks in its
   own process while pages render (when its inputs changed). Pages read results from
   the cache and never compute; a call precompute did not find fails the build.
2. markdown-exec's python fence gets ``llmlab.build.blocks.format_block`` (its documented
   ``formatter``): each block runs once per language (``LLMLAB_LANG``), its output
   and HTML kept in memory and on disk (an unchanged build or a prose edit under
   ``serve`` runs no block); the English twin runs right after the Chinese.
3. Notebook pages are stubs that include (``pymdownx.snippets``) the Markdown
   precompute wrote per language; their downloads are copied next to them, their
   links to the site's pages made full addresses.
4. Each page's HTML goes through ``llmlab.build.html`` (also runnable on a built site):
   Chinese line breaks joined, slim code blocks, MathML, figures as files; search
   indexes a copy with only the tags it keeps (an unchanged page is not done again).
5. Material's language selector reads ``sitemap.xml`` in each language folder (static-i18n
   writes the root one only): it is copied, the alternate links point at the language
   roots. The search dialog gets an accessible name.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from jinja2 import FileSystemBytecodeCache
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: one thread is fastest
ROOT = Path(__file__).resolve().parent.parent
MEMO: dict[str, dict[str, Any]] = {}  # block key -> {"output", "runs"}, across rebuilds
HTML: dict[str, Any] = {}  # formatter key -> HTML, across rebuilds
PAGES: dict[str, Any] = {}  # page key -> (search copy, HTML, figures), across rebuilds
HASHES: dict[tuple[str, str], str] = {}  # (llmlab source, code) -> the code's snippet hash
STATE: dict[str, Any] = {}  # this build
_TMP: list[Any] = []  # the cache folder of LLMLAB_CACHE=0 builds, removed at exit
LOG = logging.getLogger("mkdocs.plugins.llmlab")
# llmlab.build.blocks, .html and .notebooks, imported anew by each build (on_pre_build)
blocks: Any = None
notebooks: Any = None
transforms: Any = None


# 1. precompute
def _cache_dir() -> Path:
    if os.environ.pop("LLMLAB_CACHE", "1").strip().lower() in {"0", "off", "false", "no"}:
        _TMP.append(tempfile.TemporaryDirectory(prefix="llmlab-build-"))  # nothing kept
        os.environ["LLMLAB_CACHE_DIR"] = _TMP[-1].name
    path = Path(os.environ.get("LLMLAB_CACHE_DIR") or ROOT / ".cache" / "llmlab").resolve()
    os.environ["LLMLAB_CACHE_DIR"] = str(path)
    return path


def _start_precompute(config: Any) -> None:
    """Run ``python -m llmlab.build.precompute`` if its inputs changed since its last run
    (at once in a cache with no run's report, before this process imports torch). On POSIX
    it runs while the pages render: a block that needs a result not stored yet waits for
    it (``LLMLAB_CACHE_MISS=wait``); elsewhere the build waits for it first."""
    docs = Path(config.docs_dir)
    examples = docs.parent / "examples"
    command = [sys.executable, "-m", "llmlab.build.precompute", "--docs", str(docs),
               "--examples", str(examples), "--cache-dir", str(STATE["cache"])]
    if not (STATE["cache"] / "precompute").is_dir():
        STATE["process"] = subprocess.Popen(command, cwd=docs.parent)
    from llmlab.build.manifest import find_calls
    from llmlab.build.precompute import (home_contents, report_path, stamp, up_to_date,
                                         write_home_contents)

    try:
        home = home_contents(docs)
        current = stamp(find_calls(docs, examples), examples, home)
        write_home_contents(STATE["cache"], home)  # the home page's, now
    except ValueError as error:  # a call not read from its block, a page without a summary
        if "process" in STATE:  # it fails on the same pages (on_build_error reaps it)
            STATE["process"].kill()
        raise PluginError(str(error)) from None
    STATE["report"] = report_path(STATE["cache"], current)
    os.environ.update(LLMLAB_CACHE_MISS="error", LLMLAB_DOCS=str(docs))
    if "process" not in STATE:
        if up_to_date(STATE["cache"], current):  # its outputs all there, as it left them
            return
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


def _format_block(*args: Any, **kwargs: Any) -> Any:
    """2. markdown-exec's ``formatter``: this build's :func:`llmlab.build.blocks.format_block`."""
    return blocks.format_block(STATE["blocks"], *args, **kwargs)


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
    global blocks, notebooks, transforms
    # static-i18n builds the other languages inside the first one's on_post_build:
    # the builds nest, and the outer one is where this build's work is done
    STATE["depth"] = STATE.get("depth", 0) + 1
    if STATE["depth"] > 1:
        return
    for name in [m for m in sys.modules if m == "llmlab" or m.startswith("llmlab.")]:
        del sys.modules[name]  # a long `mkdocs serve` imports today's source
    STATE.clear()
    STATE.update(depth=1, cache=_cache_dir(), figures={}, content={}, pages=set(),
                 started=time.perf_counter())
    _start_precompute(config)
    from llmlab.build import blocks, html as transforms, notebooks
    from llmlab.build.cache import source_hash

    STATE["blocks"] = blocks.Blocks(
        cache=STATE["cache"], source=source_hash(),
        versions=[version("torch"), version("markdown-exec"), sys.version],
        markdown=blocks.digest(config["markdown_extensions"], config["mdx_configs"]),
        # in the build that runs precompute, the blocks that report on it run again
        precompute=STATE["started"] if "ran" in STATE else STATE["report"].name,
        memo=MEMO, html=HTML, hashes=HASHES)


def on_files(files: Any, config: Any) -> Any:  # noqa: ARG001
    # each language's build: its pages, for the progress lines
    STATE["progress"] = [0, len(files.documentation_pages())]
    return files


@event_priority(100)
def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:  # noqa: ARG001
    STATE["progress"][0] += 1
    STATE["blocks"].page = page.file.src_uri
    if "/notebooks/" in page.file.src_uri:
        _precompute_report()  # its Markdown is written once every notebook has run
    os.environ["LLMLAB_LANG"] = page.file.src_uri.split("/", 1)[0]  # docs/<language>/...
    return markdown


# 4. the pages' HTML, 5. language links
def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:  # noqa: ARG001
    build = STATE["blocks"]
    ran = sum(b["source"] == "executed" for b in build.records if b["page"] == build.page)
    if ran:  # progress while the first build runs the blocks (a warm build says nothing)
        done, total = STATE["progress"]
        LOG.info(f"llmlab: {page.file.src_uri} ({done}/{total}), {ran} blocks run")
    key = hashlib.sha256(f"{page.url}\n{html}".encode()).hexdigest()
    if key not in PAGES:  # a page unchanged since the last build is not done again
        full, figures = transforms.transform_content(html, page.url)
        PAGES[key] = (transforms.search_copy(full), full, figures)
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


@event_priority(-200)  # after static-i18n's page context
def on_post_page(output: str, page: Any, config: Any) -> str:  # noqa: ARG001
    # Material's search dialog has no accessible name (static-i18n sets the language)
    output = transforms.name_search_dialog(output, config.theme.get("language"))
    return transforms.language_links(output, config.site_url or "/")


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
    try:  # the experiments each page's blocks called are the ones precompute found
        blocks.check_calls(STATE["blocks"].runs, _precompute_report()["pages"])
    except ValueError as error:
        raise PluginError(str(error)) from None
    for key in set(PAGES) - STATE["pages"]:  # what no page of this build was
        del PAGES[key]
    site = Path(config.site_dir)
    transforms.write_figures(site, STATE["figures"])
    # 3. the notebooks' downloads, next to their pages
    notebooks.write_downloads(site, STATE["cache"], config.site_url or "/")
    transforms.language_sitemaps(site)
    report = blocks.build_report(STATE["blocks"], time.perf_counter() - STATE["started"],
                                 STATE["precompute"])
    (site / "build-report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False),
                                            encoding="utf-8")


def on_build_error(error: Exception) -> None:  # noqa: ARG001
    STATE["depth"] = 0  # the next build (a `serve` rebuild) starts afresh
    if "process" in STATE:
        STATE.pop("process").wait()
