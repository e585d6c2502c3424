"""The site: a strict bilingual build whose numbers come from llmlab at build time."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
import torch
from bs4 import BeautifulSoup

from conftest import (ROOT, _free_port, build_env, run_mkdocs_build, search_sections,
                      write_mini_site)
from llmlab.build.html import search_copy, transform_site
from llmlab.build.notebooks import notebooks

pytestmark = pytest.mark.site

DOCS = ROOT / "docs"
NOTEBOOKS = [p.stem for p in notebooks(ROOT / "examples")]


def _pages(lang: str) -> set[str]:
    base = DOCS / lang
    return {p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()}


def _html_files(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html"))


# --------------------------------------------------------------------------
# the real site
# --------------------------------------------------------------------------
def test_every_page_has_its_translation() -> None:
    zh, en = _pages("zh"), _pages("en")
    assert zh, "no Chinese pages found"
    assert zh - en == set(), f"pages without an English version: {sorted(zh - en)}"
    assert en - zh == set(), f"pages without a Chinese version: {sorted(en - zh)}"


def test_build_is_strict_and_complete(built_site) -> None:
    site = built_site.site_dir
    assert (site / "index.html").is_file()
    assert (site / "en" / "index.html").is_file()
    for rel in _pages("zh"):
        if rel.endswith(".md"):
            page = rel[:-3]
            target = "index.html" if page == "index" else (
                f"{page[:-len('index')]}index.html" if page.endswith("/index") else f"{page}/index.html"
            )
            assert (site / target).is_file(), f"zh page {rel} was not built"
            assert (site / "en" / target).is_file(), f"en page {rel} was not built"
    # mkdocs' own warnings (strict mode would have failed on them anyway)
    warnings = re.findall(r"^(?:WARNING|ERROR)\s+-.*$", built_site.log, re.M)
    assert warnings == [], warnings


def test_build_time_value_is_in_both_languages_and_not_in_the_markdown(built_site) -> None:
    # The home page's provenance block prints torch.__version__ at build time.
    value = torch.__version__
    sources = "".join(p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md"))
    assert value not in sources, "the value must be computed, not written in a page"
    zh = BeautifulSoup(built_site.html("index.html"), "html.parser")
    en = BeautifulSoup(built_site.html("en/index.html"), "html.parser")

    def table(soup: BeautifulSoup) -> list[list[str]]:
        for t in soup.select("article table"):
            rows = [[c.get_text(strip=True) for c in r.find_all(["td", "th"])]
                    for r in t.find_all("tr")]
            if any(value in cell for row in rows for cell in row):
                return rows
        raise AssertionError(f"no table with {value!r} on the page")

    assert table(zh)[1:] == table(en)[1:]  # the values; the headers are each language's
    assert table(zh)[0] != table(en)[0]


def test_each_experiment_is_computed_once_before_the_pages(built_site) -> None:
    """precompute computed every result once; the pages only read them."""
    report = json.loads(built_site.html("build-report.json"))
    jobs = report["precompute"]["jobs"]
    keys = [job["key"] for job in jobs]
    assert len(keys) == len(set(keys))
    if built_site.cold:  # an empty cache: every result was computed, once, by precompute
        assert keys and all(job["seconds"] is not None for job in jobs)
    read = report["experiments"]  # what the pages' blocks read (none run on a warm build)
    assert {r["source"] for r in read} <= {"disk", "memory"}
    assert read or not built_site.cold
    listed = {k[:16] for entries in report["precompute"]["pages"].values()
              for entry in entries for k in entry["keys"]}
    assert {r["key"] for r in read} <= listed
    pages = report["precompute"]["pages"]
    assert {"lectures/multihead-transformer-block.md", "examples/copy_task_heads.py"} <= set(pages)


def test_blocks_run_once_per_language(built_site) -> None:
    """The zh and en pages run the same blocks, each once per build and language."""
    report = json.loads(built_site.html("build-report.json"))
    per_page: dict[str, list[dict]] = {}
    for b in report["blocks"]:
        per_page.setdefault(b["page"], []).append(b)
    zh_pages = [p for p in per_page if p.startswith("zh/")]
    assert len(zh_pages) >= 4, sorted(per_page)
    for page in zh_pages:
        zh, en = per_page[page], per_page.get("en/" + page[3:], [])
        assert [b["id"] for b in zh] == [b["id"] for b in en], page
    executed = Counter((b["page"], b["key"]) for b in report["blocks"]
                       if b["source"] == "executed")
    assert executed and max(executed.values()) == 1


def _notebook(built_site, lang: str, name: str) -> dict:
    prefix = "" if lang == "zh" else "en/"
    return json.loads(built_site.html(f"{prefix}notebooks/{name}/{name}.ipynb"))


_CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_per_language(built_site, name: str) -> None:
    """One executed notebook: prose in each page's language, the same code and outputs."""
    pages = {}
    for lang, prefix in (("zh", ""), ("en", "en/")):
        soup = BeautifulSoup(built_site.html(f"{prefix}notebooks/{name}/index.html"),
                             "html.parser")
        article = soup.select_one("article")
        assert article.select("div.highlight"), f"{lang} {name}: no code"
        assert "# %%" not in article.get_text(), f"{lang} {name}: raw jupytext shown"
        base = (built_site.site_url or f"http://127.0.0.1:{built_site.port}{built_site.subpath}"
                ) + prefix
        for ext in ("ipynb", "py"):  # the downloads, in this language
            assert article.select_one(f'a[href="{name}.{ext}"][download]'), (lang, name, ext)
            download = built_site.site_dir / f"{prefix}notebooks/{name}/{name}.{ext}"
            text = download.read_text(encoding="utf-8")
            # read outside the site: its links to the pages are full addresses of built pages
            assert not re.search(r"\]\((?![a-z]+:)[^()\s]*\.md\b", text), (lang, name, ext)
            links = re.findall(rf"\]\({re.escape(base)}([^()#\s]*)(#[^()\s]*)?\)", text)
            assert links, (lang, name, ext)  # every notebook links to its lecture
            for path, anchor in links:
                target = built_site.site_dir / prefix / path / "index.html"
                assert target.is_file(), (lang, name, ext, path)
                assert not anchor or f'id="{anchor[1:]}"' in target.read_text("utf-8"), anchor
        pages[lang] = article
    code = {lang: [d.get_text() for d in a.select("div.language-python")]
            for lang, a in pages.items()}
    assert code["zh"] == code["en"] and code["zh"]
    zh, en = _notebook(built_site, "zh", name), _notebook(built_site, "en", name)
    cells = {lang: [c for c in nb["cells"] if c["cell_type"] == "code"]
             for lang, nb in (("zh", zh), ("en", en))}
    assert [c["source"] for c in cells["zh"]] == [c["source"] for c in cells["en"]]
    assert any(c["outputs"] for c in cells["zh"]), f"{name}: not executed"
    outputs = {lang: [o for c in cs for o in c["outputs"]] for lang, cs in cells.items()}
    assert ([o for o in outputs["zh"] if o["output_type"] == "stream"]
            == [o for o in outputs["en"] if o["output_type"] == "stream"])
    shown = {}  # tables and figures: each download's in its own language only
    for lang, own in outputs.items():
        shown[lang] = [o["data"] for o in own if o["output_type"] == "display_data"]
        assert all("llmlab" not in o.get("metadata", {}) for o in own), (lang, name)
        for data in shown[lang]:
            assert not re.fullmatch(r"<[\w.]+ object( at 0x[0-9a-f]+)?>",
                                    "".join(data["text/plain"])), (name, data)
    assert len(shown["zh"]) == len(shown["en"])
    for data in shown["en"]:
        first = "".join(data.get("text/markdown", "")).split("\n", 1)[0]
        assert not _CJK.search(first), (name, first)
    prose = {lang: "".join("".join(c["source"]) for c in nb["cells"]
                           if c["cell_type"] == "markdown") for lang, nb in (("zh", zh), ("en", en))}
    assert _CJK.search(prose["zh"]) and not _CJK.search(prose["en"]), name
    # tables and figures in the page's own language (llmlab.report's every-language outputs)
    headers = {lang: [th.get_text() for th in a.select("table th")] for lang, a in pages.items()}
    assert not any(_CJK.search(h) for h in headers["en"]), headers["en"]
    if headers["zh"] != headers["en"]:  # the page's tables differ: so do the downloads'
        assert shown["zh"] != shown["en"], name


def test_chinese_search_index_is_segmented(built_site) -> None:
    index = json.loads(built_site.html("search/search_index.json"))
    zh_docs = [d for d in index["docs"] if not d["location"].startswith("en/")]
    text = " ".join(d["text"] for d in zh_docs)
    # jieba joins words with U+200B; the search separator splits on it.
    assert "\u200b" in text
    assert re.split(index["config"]["separator"], "甲\u200b乙") == ["甲", "乙"]
    words = set(re.split(index["config"]["separator"], text))
    for word in ("课程", "代码", "断言"):
        assert word in words, f"{word!r} is not a search term of its own"
    assert "stemmer" not in index["config"]["pipeline"]


def _is_local(url: str) -> bool:
    if url.startswith(("data:", "#", "blob:")):
        return True
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc or parts.hostname == "127.0.0.1"


def test_no_page_loads_anything_from_another_host(built_site) -> None:
    bad: list[str] = []
    for path in _html_files(built_site.site_dir):
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        rel = path.relative_to(built_site.site_dir).as_posix()
        for tag in soup.find_all("script", src=True):
            if not _is_local(tag["src"]):
                bad.append(f"{rel}: script {tag['src']}")
        for tag in soup.find_all("script", src=False):
            for url in re.findall(r"""import\(\s*["'](https?://[^"']+)""", tag.get_text()):
                bad.append(f"{rel}: dynamic import {url}")
        for tag in soup.find_all("link", href=True):
            rels = set(tag.get("rel", []))
            if rels & {"stylesheet", "preload", "modulepreload", "icon", "preconnect"}:
                if not _is_local(tag["href"]):
                    bad.append(f"{rel}: link {tag['href']}")
        for tag in soup.find_all(["img", "iframe", "source", "video", "audio"], src=True):
            if not _is_local(tag["src"]):
                bad.append(f"{rel}: {tag.name} {tag['src']}")
    for css in built_site.site_dir.rglob("*.css"):
        for url in re.findall(r"url\(\s*['\"]?([^'\")]+)", css.read_text(encoding="utf-8")):
            if not _is_local(url):
                bad.append(f"{css.name}: url({url})")
        for url in re.findall(r"@import\s+['\"]([^'\"]+)", css.read_text(encoding="utf-8")):
            if not _is_local(url):
                bad.append(f"{css.name}: @import {url}")
    assert not bad, "\n".join(bad[:20])


@pytest.mark.site
def test_materials_script_waits_for_the_page_on_every_page(built_site) -> None:
    """overrides/main.html holds Material's script back until the page has loaded and
    painted (tests/test_browser.py checks when it is requested): its tag is not a
    script the browser runs, and the loader after it is there. If Material renamed
    its block, the script would block the page again. On a phone, Lighthouse's LCP
    of a notebook page was about 3.1 s with the script blocking and 1.6 s with it
    deferred; of four lecture pages, 1.7-1.8 s deferred and 1.35 s held back."""
    bundle = re.compile(r'<script\b[^>]*\bsrc="[^"]*/bundle\.[0-9a-f]+\.min\.js"[^>]*>')
    pages = sorted(built_site.site_dir.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        html = page.read_text(encoding="utf-8")
        tags = bundle.findall(html)
        assert len(tags) == 1 and 'type="text/llmlab-later"' in tags[0], (page, tags)
        assert 'document.dispatchEvent(new Event("DOMContentLoaded"))' in html, page


@pytest.mark.site
def test_figures_are_files_with_their_size_and_only_the_first_is_fetched_at_once(
        built_site) -> None:
    """The hook writes each figure to assets/figures/ and gives its <img> the SVG's
    size (no layout shift); every figure but a page's first loads lazily, and the
    first (which may be the largest thing in view) is fetched at high priority."""
    pages_with_figures, figures_dir = 0, (built_site.site_dir / "assets" / "figures").resolve()
    for page in sorted(built_site.site_dir.rglob("*.html")):
        figures = BeautifulSoup(page.read_text(encoding="utf-8"),
                                "html.parser").select("img.llmlab-figure")
        pages_with_figures += bool(figures)
        for i, img in enumerate(figures):
            target = (page.parent / img["src"]).resolve()
            assert target.parent == figures_dir and target.is_file(), (page, img["src"])
            assert int(img["width"]) > 0 and int(img["height"]) > 0, (page, img.attrs)
            first = i == 0
            assert (img.get("fetchpriority") == "high") == first, (page, i, img.attrs)
            assert (img.get("loading") == "lazy") == (not first), (page, i, img.attrs)
    assert pages_with_figures >= 12  # six lectures with figures, in each language


def test_language_switcher_works_under_the_sub_path(built_site) -> None:
    soup = BeautifulSoup(built_site.html("en/notebooks/quickstart/index.html"), "html.parser")
    links = {a["hreflang"]: a["href"] for a in soup.select("a.md-select__link[hreflang]")}
    assert links["en"] == "./"
    assert links["zh"] == "../../../notebooks/quickstart/"
    home = BeautifulSoup(built_site.html("index.html"), "html.parser")
    alt = {a["hreflang"]: a["href"] for a in home.select("a.md-select__link[hreflang]")}
    # Absolute links must carry the sub-path; relative ones resolve under it.
    for href in alt.values():
        assert not href.startswith("/") or href.startswith(built_site.subpath), alt
    canonical = home.select_one('link[rel="canonical"]')["href"]
    assert urlsplit(canonical).path == built_site.subpath


_CJK_LINE_BREAK = re.compile(r"[\u4e00-\u9fff，。、：；（）][ \t]*\n[ \t]*[\u4e00-\u9fff，。、：；（）]")
_VERBATIM = re.compile(r"<(pre|script|style|textarea)\b.*?</\1>", re.S | re.I)


def test_wrapped_chinese_prose_has_no_stray_spaces(built_site) -> None:
    """A line break between two Chinese characters would show as a space in Chromium."""
    pages = sorted(built_site.site_dir.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        html = _VERBATIM.sub("", page.read_text(encoding="utf-8"))
        match = _CJK_LINE_BREAK.search(html)
        assert match is None, f"{page}: {match.group(0)!r}"
    # wrapped in the sources, joined in the pages: a lecture and a notebook
    assert "课程从最小的零件（点积" in (built_site.site_dir / "index.html").read_text("utf-8")
    notebook = built_site.site_dir / "notebooks" / "copy_task_heads" / "index.html"
    assert "它的权重就集中在对角线下方" in notebook.read_text(encoding="utf-8")


def test_built_code_blocks_keep_their_text_without_name_spans(built_site) -> None:
    """Fewer elements for the browser; the same text to read and to copy; a line count."""
    blocks = 0
    for page in _html_files(built_site.site_dir):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for div in soup.select("div.highlight"):
            blocks += 1
            code = div.select_one("pre code")
            spans = code.select("span.n, span.w")
            assert not spans, f"{page}: {spans[0]}"
            # the height the stylesheet keeps for it until it is laid out
            lines = code.get_text().count("\n")
            assert div.get("style") == f"--llmlab-lines: {lines}", (page, div.get("style"))
    assert blocks > 100
    soup = BeautifulSoup(built_site.html("lectures/attention-from-scratch/index.html"),
                         "html.parser")
    text = soup.select_one("article div.highlight pre code").get_text()
    source = (DOCS / "zh" / "lectures" / "attention-from-scratch.md").read_text("utf-8")
    assert len(text) > 100 and text in source, text[:200]  # the page's code, as written


def test_the_full_content_goes_back_or_the_build_fails(build_hook) -> None:
    """Search reads the copy (on_page_content); the template gets the full content
    back (on_page_context, after search's), unless something changed the copy."""
    from types import SimpleNamespace

    from mkdocs.exceptions import PluginError

    full = '<p>a</p><pre><code><span class="k">for</span></code></pre>'
    light = search_copy(full)
    assert light != full
    page = SimpleNamespace(content=light, file=SimpleNamespace(
        abs_dest_path="/site/x/index.html", src_uri="zh/x.md"))
    build_hook.STATE["content"] = {page.file.abs_dest_path: (light, full)}
    assert build_hook.on_page_context({"k": 1}, page=page, config=None, nav=None) == {"k": 1}
    assert page.content == full
    page.content = light.replace("<p>", '<p class="changed">')
    build_hook.STATE["content"] = {page.file.abs_dest_path: (light, full)}
    with pytest.raises(PluginError, match="zh/x.md"):
        build_hook.on_page_context({}, page=page, config=None, nav=None)


def test_search_indexes_what_each_page_says_and_pages_keep_their_markup(built_site) -> None:
    """Search parses a copy of each page with only the tags it keeps inside code,
    formulas, paragraphs and tables (llmlab.build.html); it must index what
    the page says, and the page keep its highlighting, MathML and tables."""
    pages = 0
    for page in _html_files(built_site.site_dir):
        html = page.read_text(encoding="utf-8")
        start, end = html.find("<article"), html.find("</article>")
        if start < 0:
            continue
        article = html[start:end]
        pages += 1
        assert search_sections(search_copy(article)) == search_sections(article), page
    assert pages > 20
    lecture = built_site.html("lectures/attention-from-scratch/index.html")
    assert '<code><span class="kn">import</span>' in lecture and "<mi>" in lecture
    assert "</td>" in lecture  # tables keep their cells
    index = json.loads((built_site.site_dir / "search" / "search_index.json").read_text())
    docs = " ".join(d["text"] for d in index["docs"])
    assert "import torch" in docs and "<span" not in docs


def test_the_post_build_pass_finds_the_hooks_pages_done(built_site, tmp_path) -> None:
    """``python -m llmlab.build.html`` (for a builder without hooks) runs the hook's
    transforms: over the hook's site, it finds every page done but 404.html, which
    MkDocs renders without on_post_page (its search dialog has no name)."""
    site = tmp_path / "site"
    shutil.copytree(built_site.site_dir, site)
    counts = transform_site(site)
    changed = sorted(p.relative_to(site).as_posix() for p in site.rglob("*")
                     if p.is_file() and p.read_bytes() != (built_site.site_dir / p.relative_to(
                         site)).read_bytes())
    assert counts["pages"] > 20 and counts["figures"] == 0
    assert changed == ["404.html"], changed
    assert 'role="dialog" aria-label=' in (site / "404.html").read_text("utf-8")


def test_heading_anchors_keep_chinese(built_site) -> None:
    soup = BeautifulSoup(built_site.html("index.html"), "html.parser")
    ids = [h.get("id", "") for h in soup.select("article h2")]
    assert any(re.search(r"[\u4e00-\u9fff]", i) for i in ids), ids


def test_every_table_column_has_a_header(built_site) -> None:
    """A screen reader names each cell by its column's header (axe: td-has-header)."""
    pages = sorted(built_site.site_dir.rglob("index.html"))
    tables = 0
    for page in pages:
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for table in soup.select("article table"):
            tables += 1
            heads = [th.get_text(" ", strip=True) for th in table.select("thead th")]
            assert heads and all(heads), (
                f"{page.relative_to(built_site.site_dir)}: a table with headers {heads}")
    assert tables > 100


def test_table_of_contents_shows_no_raw_latex(built_site) -> None:
    """The page's table of contents is plain text: a heading's ``$...$`` would show
    there as ``\\(...\\)`` (the math is rendered in the article only)."""
    pages = sorted(built_site.site_dir.rglob("index.html"))
    assert len(pages) > 10
    for page in pages:
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for link in soup.select(".md-nav--secondary a.md-nav__link"):
            words = link.get_text(" ", strip=True)
            assert "\\(" not in words and "$" not in words, (
                f"{page.relative_to(built_site.site_dir)}: TOC entry {words!r}")


# --------------------------------------------------------------------------
# loud failures, on a minimal site that uses the real config and hooks
# --------------------------------------------------------------------------
GOOD_EN = "# Home\n\nHello.\n"


@pytest.mark.parametrize(
    ("case", "zh_page", "expected"),
    [
        ("exception in a block",
         '# 首页\n\n```python exec="on"\nraise RuntimeError("boom from a block")\n```\n',
         "boom from a block"),
        ("broken link", "# 首页\n\n[missing](nowhere.md)\n", "nowhere.md"),
        ("broken anchor", "# 首页\n\n## 一节\n\n[x](#no-such-anchor)\n", "no-such-anchor"),
    ],
)
def test_strict_build_fails_loudly(tmp_path: Path, case: str, zh_page: str, expected: str) -> None:
    config = write_mini_site(tmp_path, {"zh/index.md": zh_page, "en/index.md": GOOD_EN})
    proc = run_mkdocs_build(config, tmp_path / "site", build_env(LLMLAB_CACHE="0"), timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"{case}: the build passed:\n{log[-2000:]}"
    assert expected in log, f"{case}: the log does not say what failed:\n{log[-2000:]}"


def test_failing_notebook_fails_the_build(tmp_path: Path) -> None:
    # a notebook is a jupytext file of examples/ (a plain script there is not run)
    notebook = ("# ---\n# jupyter:\n#   jupytext:\n#     formats: py:percent\n# ---\n\n"
                "# %% [markdown]\n# # Broken\n\n"  # its title, for the home page's list
                "# %%\nraise ValueError('boom from a notebook')\n")
    config = write_mini_site(
        tmp_path, {"zh/index.md": "# 首页\n", "en/index.md": GOOD_EN},
        notebooks={"broken.py": notebook},
    )
    proc = run_mkdocs_build(config, tmp_path / "site", build_env(LLMLAB_CACHE="0"), timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log[-2000:]
    assert "boom from a notebook" in log


def test_missing_translation_fails_the_build(tmp_path: Path) -> None:
    config = write_mini_site(tmp_path, {
        "zh/index.md": "# 首页\n", "en/index.md": GOOD_EN, "zh/only-zh.md": "# 只有中文\n",
    })
    text = config.read_text(encoding="utf-8").replace(
        "\nnav:\n  - index.md\n", "\nnav:\n  - index.md\n  - only-zh.md\n")
    config.write_text(text, encoding="utf-8")
    proc = run_mkdocs_build(config, tmp_path / "site", build_env(LLMLAB_CACHE="0"), timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log[-2000:]
    # the English build misses the page (not any other failure, such as a bad config)
    assert "'only-zh.md' is included in the 'nav' configuration, which is not found" in log, (
        log[-2000:])


def test_pages_compute_what_their_blocks_call_and_nothing_else(tmp_path: Path) -> None:
    """What a block calls with literal arguments is computed and shown; a call
    whose arguments precompute cannot read fails the build naming its line; a call
    it cannot see (through another name) misses the cache and fails, saying why."""
    def block(call: str) -> str:
        return ('# 首页\n\n```python exec="on"\nfrom llmlab.experiments.attention import '
                f'run_dropout_demo\nprint(f"p-{{{call}.p}}-end")\n```\n')

    def build(zh: str, name: str, cache: str = "cache") -> subprocess.CompletedProcess[str]:
        root = tmp_path / name
        config = write_mini_site(root, {"zh/index.md": zh, "en/index.md": GOOD_EN})
        env = build_env(LLMLAB_CACHE_DIR=str(tmp_path / cache))
        return run_mkdocs_build(config, root / "site", env, timeout=300)

    found = build(block("run_dropout_demo(p=0.25)"), "found")
    assert found.returncode == 0, (found.stdout + found.stderr)[-3000:]
    assert "p-0.25-end" in (tmp_path / "found" / "site" / "index.html").read_text("utf-8")
    # in an empty cache (a first build), where precompute starts before the pages are read
    unreadable = build(block("run_dropout_demo(p=float('0.3'))"), "unreadable", "empty")
    log = unreadable.stdout + unreadable.stderr
    assert unreadable.returncode != 0, log[-3000:]
    assert "index.md:5: run_dropout_demo(p=float('0.3'))" in log and "literal" in log, log[-3000:]
    assert not [p for p in psutil.process_iter(["cmdline"])
                if str(tmp_path / "empty") in " ".join(p.info["cmdline"] or [])]
    unseen = build(block("(demo := run_dropout_demo)(p=0.3)"), "unseen")
    log = unseen.stdout + unseen.stderr
    assert unseen.returncode != 0, log[-3000:]
    assert "run_dropout_demo(p=0.3" in log and "did not find" in log, log[-3000:]


# --------------------------------------------------------------------------
# live editing: mkdocs serve picks up a changed llmlab and a changed page
# --------------------------------------------------------------------------
def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode("utf-8")


def _stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _wait_for(url: str, needle: str, timeout: float,
              alive: subprocess.Popen | None = None) -> str:
    """The page at ``url`` once it holds ``needle``; ``timeout`` guards against a
    hang (never a speed check), and a server ``alive`` that exits ends the wait."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if alive is not None and alive.poll() is not None:
            raise AssertionError(f"the server exited ({alive.returncode}) before {url} "
                                 f"showed {needle!r}")
        try:
            last = _get(url)
            if needle in last:
                return last
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{needle!r} did not appear at {url} within {timeout}s")


def test_serve_rerenders_after_llmlab_and_page_edits(tmp_path: Path) -> None:
    import socket

    # A private copy of the package, first on PYTHONPATH, that the test may edit.
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "llmlab", src / "llmlab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    block = ('```python exec="on"\nimport llmlab\n'
             'print(f"version-{llmlab.__version__}-end")\n```\n\n'
             '```python exec="on" id="machine-dependent-compute-test"\nimport time\n'
             'print(f"run-{time.time_ns()}-end")\n```\n')
    config = write_mini_site(
        tmp_path, {"zh/index.md": "# 首页\n\n第一版。\n\n" + block, "en/index.md": GOOD_EN + block},
        watch=[str(tmp_path / "docs"), str(src / "llmlab")],
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = build_env(LLMLAB_CACHE="0", PYTHONPATH=str(src),
                    SITE_URL=f"http://127.0.0.1:{port}/")
    log = (tmp_path / "serve.log").open("w", encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "-f", str(config), "-a", f"127.0.0.1:{port}"],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        import llmlab

        def run_stamp(html: str) -> str:
            return re.search(r"run-\d+-end", html).group(0)

        first = run_stamp(_wait_for(url, f"version-{llmlab.__version__}-end", 900, alive=server))
        init = src / "llmlab" / "__init__.py"
        init.write_text(init.read_text(encoding="utf-8").replace(
            f'__version__ = "{llmlab.__version__}"', '__version__ = "9.9.9-live"'), encoding="utf-8")
        live = run_stamp(_wait_for(url, "version-9.9.9-live-end", 900, alive=server))
        _wait_for(url + "en/", "version-9.9.9-live-end", 900, alive=server)
        assert live != first  # new source, new precompute: a report on the build runs again
        page = tmp_path / "docs" / "zh" / "index.md"
        shown = []
        for old, new in (("第一版", "第二版"), ("第二版", "第三版")):
            page.write_text(page.read_text(encoding="utf-8").replace(old, new),
                            encoding="utf-8")
            shown.append(run_stamp(_wait_for(url, new, 900, alive=server)))
        # prose edits, the same precompute: the report is the one this precompute got
        assert shown[0] == shown[1]
    finally:
        _stop_server(server)
        log.close()


# --------------------------------------------------------------------------
# builds reproduce
# --------------------------------------------------------------------------
def _clean_copy(dest: Path) -> Path:
    """The checkout as a fresh clone has it: the files git tracks (and new ones it does
    not ignore), as they are in the working tree; no .venv, no cache, no site."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
    for rel in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / rel
        if source.is_file():  # a file deleted but not yet staged is left out
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


@dataclass
class ReadmeRoute:
    clone: Path
    cache: Path  # where precompute put the results: the clone's .cache/llmlab
    jobs: list[dict]  # what its precompute ran (its report, before any later run)
    precompute_log: str
    precompute_seconds: float
    first_page_seconds: float
    serve_log: str


@pytest.fixture(scope="module")
def readme_route(tmp_path_factory: pytest.TempPathFactory) -> ReadmeRoute:
    """The README's `make serve`, as a new user runs it after `make setup`: a clean copy
    of the checkout, an empty cache, ``python -m llmlab.build.precompute`` as a plain program
    (from a folder inside the checkout, its output in a pipe), then ``mkdocs serve`` (from
    another folder) until its first page answers.

    Its results are also the second clean computation of every experiment: against
    the first build's (computed while the pages rendered, other processes computing
    what) ``test_two_clean_computations_give_identical_results`` checks that no
    result depends on the run, the process or what ran before it in that process.
    """
    tmp = tmp_path_factory.mktemp("readme-route")
    clone = _clean_copy(tmp / "clone")
    env = build_env(PYTHONPATH=str(clone / "src"))  # the clone's llmlab, as its venv has
    for name in ("LLMLAB_CACHE_DIR", "LLMLAB_CACHE", "LLMLAB_CACHE_MISS", "PYTHONUNBUFFERED"):
        env.pop(name, None)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "llmlab.build.precompute"], cwd=clone / "docs",
                          env=env, capture_output=True, text=True, timeout=3600)
    precompute_seconds = time.perf_counter() - start
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    port = _free_port()
    env["SITE_URL"] = f"http://127.0.0.1:{port}/"
    log_path = tmp / "serve.log"
    with log_path.open("w", encoding="utf-8") as log:
        start = time.perf_counter()
        server = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "-f", str(clone / "mkdocs.yml"),
             "-a", f"127.0.0.1:{port}"], cwd=tmp, env=env, stdout=log,
            stderr=subprocess.STDOUT, text=True)
        try:
            import torch

            _wait_for(f"http://127.0.0.1:{port}/", torch.__version__, 1800,
                      alive=server)  # the home page, its provenance computed
            first_page = time.perf_counter() - start
        finally:
            _stop_server(server)
    cache = clone / ".cache" / "llmlab"
    jobs = json.loads((cache / "precompute.json").read_text(encoding="utf-8"))["jobs"]
    return ReadmeRoute(clone, cache, jobs, proc.stdout + proc.stderr, precompute_seconds,
                       first_page, log_path.read_text(encoding="utf-8"))


def test_the_readmes_serve_route_works_from_a_clean_clone(readme_route, record_property
                                                         ) -> None:
    route = readme_route
    record_property("precompute_seconds", round(route.precompute_seconds, 1))
    record_property("first_page_seconds", round(route.first_page_seconds, 1))
    # progress as it happens: what ran and how far along, then the total
    steps = re.findall(r"^precompute: \[\s*(\d+)/(\d+)\] ", route.precompute_log, re.M)
    assert steps and int(steps[-1][0]) == int(steps[-1][1]) == len(steps), route.precompute_log
    assert re.search(r"^precompute: \d+ results, \d+ notebooks in ", route.precompute_log, re.M)
    # the server found everything computed (the same cache, wherever it ran from)
    assert "precompute: " not in route.serve_log, route.serve_log[-3000:]
    assert "NotPrecomputedError" not in route.serve_log


def _same(a: object, b: object) -> bool:
    """Equal results: field by field, tensors and arrays element by element (NaN = NaN).

    Not pickle's bytes: a dict filled in another order, or a set (whose order
    follows the process's string hash seed), pickles differently with equal values.
    """
    import dataclasses

    import numpy as np

    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name))
                   for f in dataclasses.fields(a))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and torch.equal(a.nan_to_num(), b.nan_to_num()) and bool(
            (a.isnan() == b.isnan()).all())
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    return a == b


def test_the_result_comparison_sees_a_difference() -> None:
    import dataclasses

    @dataclasses.dataclass
    class R:
        xs: list
        t: torch.Tensor

    base = R([1.0, float("nan")], torch.tensor([1.0, float("nan")]))
    assert _same(base, R([1.0, float("nan")], torch.tensor([1.0, float("nan")])))
    assert not _same(base, R([1.0, 2.0], base.t))
    assert not _same(base, R(base.xs, torch.tensor([1.5, float("nan")])))
    assert _same({"a": 1, "b": 2}, {"b": 2, "a": 1}) and not _same((1,), [1])


def test_two_clean_computations_give_identical_results(built_site, readme_route) -> None:
    import pickle

    jobs = [j for j in readme_route.jobs if not j["machine"]]  # timings: the machine
    assert len(jobs) >= 30, len(jobs)  # every page's experiments and their parts
    differ = []
    for job in jobs:
        first, second = (pickle.loads((folder / f"{job['key']}.pkl").read_bytes())[0]
                         for folder in (built_site.cache_dir, readme_route.cache))
        if not _same(first, second):
            differ.append(f"{job['module']}.{job['name']}({job['kwargs']})")
    assert not differ, f"results that changed between two clean computations: {differ}"


def test_machine_dependent_blocks_name_their_machine(built_site) -> None:
    """Timings and provenance are shown with the machine they describe."""
    import platform

    from pages import fenced_blocks, page_paths, read_page

    marked = [rel for rel in page_paths("zh")
              if any(b.attrs.get("id", "").startswith("machine-dependent")
                     for b in fenced_blocks(read_page("zh", rel)))]
    assert len(marked) >= 3, marked
    for rel in marked:
        for prefix in ("", "en/"):
            page = rel[:-3]
            html = built_site.html(prefix + ("index.html" if page == "index"
                                             else page + "/index.html"))
            assert platform.machine() in html, f"{prefix}{rel} does not name its machine"


# --------------------------------------------------------------------------
# saved block outputs: a build where nothing changed runs nothing
# --------------------------------------------------------------------------
def test_warm_build_runs_only_the_computation_reports(built_site, tmp_path: Path) -> None:
    """Same cache, nothing changed: no experiment, no notebook, no block runs again."""
    env = build_env(LLMLAB_CACHE_DIR=str(built_site.cache_dir))
    proc = run_mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site", env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "precompute" not in proc.stdout + proc.stderr  # up to date: not even started
    cold = json.loads(built_site.html("build-report.json"))
    warm = json.loads((tmp_path / "site" / "build-report.json").read_text(encoding="utf-8"))
    assert warm["precompute"] == cold["precompute"]  # the same report: nothing recomputed
    executed = [b for b in warm["blocks"] if b["source"] == "executed"]
    assert executed and all(b["id"].startswith("machine-dependent-compute-") for b in executed)
    # the reports may read stored results (from disk, then kept in memory), never compute
    assert {e["source"] for e in warm["experiments"]} <= {"disk", "memory"}

    def outputs(report: dict) -> dict[tuple[str, str, str], str]:
        return {(b["page"], b["language"], b["key"]): b["output"] for b in report["blocks"]
                if not (b.get("id") or "").startswith("machine-dependent-compute-")}

    # timings included: a saved output is the one measured on this machine
    assert outputs(warm) == outputs(cold)


def test_saved_block_outputs_follow_the_code_they_depend_on(tmp_path: Path) -> None:
    """A saved output is reused only while its code, the llmlab modules it
    imports and (for a machine-dependent block) the commit are unchanged."""

    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "llmlab", src / "llmlab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    blocks = {
        "version": 'import llmlab\nprint(f"version-{llmlab.__version__}-end")',
        "norm": 'from llmlab.norm import RMSNorm\nprint(f"norm-{RMSNorm.__name__}-end")',
        "machine": 'import platform\nprint(f"machine-{platform.machine()}-end")',
    }
    text = "".join(
        f'```python exec="on" id="{"machine-dependent-demo" if name == "machine" else name}"\n'
        f"{code}\n```\n\n" for name, code in blocks.items())
    config = write_mini_site(tmp_path, {"zh/index.md": "# 首页\n\n" + text,
                                        "en/index.md": GOOD_EN + text})

    def build(commit: str) -> dict[str, str]:
        env = build_env(LLMLAB_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(src),
                        LLMLAB_GIT_COMMIT=commit)
        proc = run_mkdocs_build(config, tmp_path / "site", env, timeout=300)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        report = json.loads((tmp_path / "site" / "build-report.json").read_text("utf-8"))
        return {b["id"].replace("machine-dependent-demo", "machine"): b["source"]
                for b in report["blocks"] if b["language"] == "zh"}

    def edit(module: str, text: str) -> None:
        path = src / "llmlab" / module
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")

    ran, saved = "executed", "disk"
    assert build("aaaa") == {"version": ran, "norm": ran, "machine": ran}
    assert build("aaaa") == {"version": saved, "norm": saved, "machine": saved}
    assert build("bbbb") == {"version": saved, "norm": saved, "machine": ran}  # new commit
    edit("norm.py", "\n# an edit\n")  # imported by the norm block only
    assert build("bbbb") == {"version": saved, "norm": ran, "machine": saved}
    edit("__init__.py", '\n__version__ = "9.9.9-saved"\n')  # every llmlab import runs it
    assert build("bbbb") == {"version": ran, "norm": ran, "machine": saved}
    assert "version-9.9.9-saved-end" in (tmp_path / "site" / "index.html").read_text("utf-8")
