"""The built site in a real browser: headless Debian Chromium driven by Playwright.

The site is served on 127.0.0.1 under a sub-path (as on GitHub Pages). Every test
records console errors, failed requests and requests that leave localhost, and
fails on any of them. Screenshots go to test-artifacts/ for a person to look at.
"""

from __future__ import annotations

import functools
import gzip
import os
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.site, pytest.mark.browser]

ARTIFACTS = ROOT / "test-artifacts"
# How long a test waits for something to happen (a load, a request, a button): a
# guard against hanging, not a budget. Speed is measured by benchmarks/page_tasks.py
# and benchmarks/lighthouse.py, never asserted here.
WAIT_MS = 120_000


def _chromium() -> str:
    path = os.environ.get("LLMLAB_CHROMIUM") or shutil.which("chromium")
    if not path:
        pytest.fail("Chromium not found: run `make browser-deps` (or set LLMLAB_CHROMIUM)")
    return path


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=_chromium(),
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@functools.cache
def _gzipped_size(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), 6))


class Watched:
    """A page whose console errors and off-site or failed requests are recorded."""

    def __init__(self, browser, base: str, built_for: str = "", site_dir: Path | None = None,
                 **context_args) -> None:
        self.context = browser.new_context(**context_args)
        # a bound on waiting, never a speed check: a busy machine must not fail a test
        self.context.set_default_timeout(WAIT_MS)
        self.page = self.context.new_page()
        self.base = base
        self.site_dir = site_dir
        self.built_for = built_for
        self.errors: list[str] = []
        self.offsite: list[str] = []
        self.failed: list[str] = []
        self.requested: list[str] = []  # every response's URL, the search worker's too
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        # ERR_ABORTED is a request cancelled because the test navigated on (the
        # search worker loads lunr lazily); a missing file shows up as a 4xx below.
        self.page.on("requestfailed", lambda r: "ERR_ABORTED" not in (r.failure or "")
                     and self.failed.append(f"{r.url} {r.failure}"))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(
            f"{r.url} HTTP {r.status}"))
        self.page.on("response", lambda r: self.requested.append(r.url))

        def route(route) -> None:
            url = route.request.url
            host = urlsplit(url).hostname
            if built_for and url.startswith(built_for):
                # a prebuilt site (LLMLAB_PREBUILT_SITE) names its own address in its
                # <head> (hreflang links; Material fetches their sitemaps): the same
                # files, served from here instead
                path = site_dir / urlsplit(url).path[len(urlsplit(built_for).path):]
                path = path / "index.html" if path.is_dir() else path
                if path.is_file():
                    route.fulfill(path=str(path))
                else:
                    self.failed.append(f"{url} not in the built site")
                    route.fulfill(status=404)
            elif url.startswith("data:") or host in ("127.0.0.1", "localhost"):
                route.continue_()
            else:
                self.offsite.append(route.request.url)
                route.abort()

        self.context.route("**/*", route)

    def goto(self, rel: str) -> None:
        self.page.goto(self.base + rel, wait_until="networkidle")

    def transferred_kib(self) -> float:
        """What the responses so far come to, gzipped as a host like GitHub Pages sends
        them (this test server does not compress), in KiB."""
        total = 0
        for url in self.requested:
            if url.startswith("data:"):
                continue
            prefix = next((p for p in (self.base, self.built_for) if p and url.startswith(p)),
                          None)
            assert prefix, f"a response from outside the site: {url}"
            path = self.site_dir / urlsplit(url[len(prefix):]).path
            total += _gzipped_size(path / "index.html" if path.is_dir() else path)
        return total / 1024

    def check_clean(self) -> None:
        assert self.errors == [], f"console errors: {self.errors}"
        assert self.failed == [], f"failed requests: {self.failed}"
        assert self.offsite == [], f"requests leaving localhost: {self.offsite}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(browser, site_server, built_site):
    pages: list[Watched] = []

    def make(**context_args) -> Watched:
        w = Watched(browser, site_server, built_site.site_url, built_site.site_dir,
                    **context_args)
        pages.append(w)
        return w

    yield make
    for w in pages:
        w.close()


def _shot(w: Watched, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    w.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


@pytest.mark.parametrize(("rel", "lang", "title"), [("", "zh", "LLM Lab"), ("en/", "en", "LLM Lab")])
def test_home_page_loads_clean(watched, rel: str, lang: str, title: str) -> None:
    w = watched()
    w.goto(rel)
    assert w.page.locator("html").get_attribute("lang") == lang
    assert title in w.page.title()
    # the provenance block ran at build time: its table is on the page
    assert w.page.locator("article table").count() >= 1
    _shot(w, f"home-{lang}")
    w.check_clean()


def test_language_switch_stays_on_the_same_page(watched, site_server) -> None:
    w = watched()
    w.goto("notebooks/quickstart/")
    w.page.locator(".md-header__option .md-select").hover()
    w.page.locator('a.md-select__link[hreflang="en"]').click()
    w.page.wait_for_load_state("networkidle")
    assert w.page.url == site_server + "en/notebooks/quickstart/"
    w.page.locator(".md-header__option .md-select").hover()
    w.page.locator('a.md-select__link[hreflang="zh"]').click()
    w.page.wait_for_load_state("networkidle")
    assert w.page.url == site_server + "notebooks/quickstart/"
    w.check_clean()


@pytest.mark.parametrize(("rel", "query"), [("", "断言"), ("en/", "assertion")])
def test_search_finds_a_word_inside_a_sentence(watched, rel: str, query: str) -> None:
    w = watched()
    w.goto(rel)
    w.page.locator("label.md-search__icon, .md-search__input").first.click()
    box = w.page.locator(".md-search__input")
    box.fill(query)
    # Material searches on keyup; typing CJK text is an IME "insertText" with no
    # key events, so release a harmless key as a person's keyboard would.
    box.press("ArrowRight")
    results = w.page.locator(".md-search-result__item")
    results.first.wait_for()
    assert results.count() >= 1
    texts = " ".join(results.all_inner_texts()).replace("\u200b", "")
    assert query.lower() in texts.lower(), texts[:500]
    w.check_clean()


def test_formulas_are_mathml_typeset_at_build_time(watched) -> None:
    """No TeX is left for a script to typeset: the page holds MathML the browser lays out."""
    w = watched()
    w.goto("lectures/multihead-transformer-block/")
    assert w.page.locator("article math").count() >= 10
    assert w.page.locator("article .arithmatex").count() == 0
    text = w.page.locator("article").inner_text()
    assert "\\frac" not in text and "\\(" not in text  # no raw TeX
    box = w.page.locator('article math[display="block"]').first.bounding_box()
    assert box and box["height"] > 20  # laid out as a formula, not as a line of letters
    w.check_clean()


COPY = 'button[data-md-type="copy"], button.md-clipboard'  # Material's copy button


def test_code_blocks_are_set_up_once_they_come_into_view(watched) -> None:
    """``content.lazy`` (mkdocs.yml): Material sets up a code block (its copy button,
    a measure of its width) only once it scrolls into view, not every block of a long
    page while it loads. If the flag stopped taking effect, every block of the page
    would have its button at once."""
    w = watched()
    w.goto("lectures/tokenization/")
    blocks = w.page.locator("article div.highlight >> visible=true")  # not in a folded solution
    blocks.first.scroll_into_view_if_needed()
    blocks.first.locator(COPY).first.wait_for()  # Material's script has run
    last = blocks.nth(blocks.count() - 1)
    assert last.locator(COPY).count() == 0, "a block far below the fold already has its button"
    last.scroll_into_view_if_needed()
    last.locator(COPY).first.wait_for()
    w.check_clean()


def test_copy_button_copies_the_block(watched) -> None:
    w = watched(permissions=["clipboard-read", "clipboard-write"])
    w.goto("")
    source = (ROOT / "docs" / "zh" / "index.md").read_text(encoding="utf-8")
    code = re.search(r'```python exec="on" source="above"[^\n]*\n(.*?)```', source, re.S)[1]
    block = w.page.locator("article .highlight").first
    block.hover()
    block.locator(COPY).first.click()
    copied = w.page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == code.strip()  # exactly the code written in the page
    assert "from llmlab.build.provenance import build_info" in copied
    w.check_clean()


def test_phone_viewport(watched) -> None:
    w = watched(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    for rel, name in (("", "phone-home-zh"), ("en/", "phone-home-en")):
        w.goto(rel)
        width = w.page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{name}: page is {width}px wide on a 390px screen"
        _shot(w, name)
    w.check_clean()


# ---------------------------------------------------------------------------
# every page, both languages
# ---------------------------------------------------------------------------
def _all_pages() -> list[str]:
    """Site-relative URLs of every zh page (md pages and notebooks)."""
    docs = ROOT / "docs" / "zh"
    pages = []
    for path in sorted(docs.rglob("*.md")):  # notebooks' stub pages included
        rel = path.relative_to(docs).with_suffix("").as_posix()
        pages.append("" if rel == "index" else rel + "/")
    return pages


PAGES = _all_pages()
DOM_BUDGET = 7500


def _check_page(w: Watched, rel: str) -> None:
    w.goto(rel)
    page = w.page
    # every image decodes: the figures load lazily, so ask for all of them now
    page.evaluate("document.querySelectorAll('img[loading=lazy]')"
                  ".forEach(i => { i.loading = 'eager'; })")
    page.wait_for_function("[...document.images].every(i => i.complete)")
    broken = page.evaluate(
        "[...document.images].filter(i => !i.complete || i.naturalWidth === 0)"
        ".map(i => i.alt || i.src.slice(0, 60))"
    )
    assert broken == [], f"{rel}: images that did not load: {broken}"
    # every figure and diagram says what it shows, in the page's language
    alts = page.evaluate("[...document.querySelectorAll('article img')].map(i => i.alt)")
    assert all(a.strip() for a in alts), f"{rel}: images without alt text: {alts}"
    cjk = [bool(re.search(r"[\u4e00-\u9fff]", a)) for a in alts]
    want_zh = not rel.startswith("en/")
    assert all(c == want_zh for c in cjk), f"{rel}: alt texts in the other language: {alts}"
    # a budget of elements (Lighthouse's "DOM size"): every one is styled and laid
    # out on a phone before the page responds; the longest lecture has about 6,800
    elements = page.evaluate("document.querySelectorAll('*').length")
    assert elements <= DOM_BUDGET, f"{rel}: {elements} elements, over {DOM_BUDGET}"
    # every formula typeset at build time (MathML), none left as TeX
    untypeset = page.evaluate("[...document.querySelectorAll('.arithmatex')]"
                              ".map(e => e.textContent.slice(0, 40))")
    assert untypeset == [], f"{rel}: formulas not typeset: {untypeset}"


@pytest.mark.parametrize("rel", PAGES)
def test_every_page_in_both_languages(watched, site_server, rel: str) -> None:
    w = watched()
    for lang_prefix, other, other_prefix in (("", "en", "en/"), ("en/", "zh", "")):
        _check_page(w, lang_prefix + rel)
        # the language switch lands on the same page in the other language
        w.page.locator(".md-header__option .md-select").hover()
        w.page.locator(f'a.md-select__link[hreflang="{other}"]').click()
        w.page.wait_for_load_state("networkidle")
        assert w.page.url == site_server + other_prefix + rel, (rel, w.page.url)
    w.check_clean()


TRANSFER_BUDGET_KIB = 800  # #16: what a page load may transfer, the search index included


def _check_load(w: Watched, rel: str) -> None:
    """What the load of ``rel`` just done requested and transferred.

    Material's script and the search index wait for the page to load and paint
    (overrides/main.html): the test waits until both have been requested (however
    long a busy machine takes), then checks that both came after the load event,
    that Material set the page up all the same, and the bytes transferred. How
    long the page's tasks take is measured by ``benchmarks/page_tasks.py``.
    """
    w.page.wait_for_function(f"() => Object.keys(({_AFTER_LOAD})()).length === 2")
    w.page.wait_for_function(_SET_UP)
    after = w.page.evaluate(_AFTER_LOAD)
    assert sorted(after) == ["bundle", "search_index"], f"{rel}: requested {after}"
    assert min(after.values()) >= 0, f"{rel}: ms after the load event: {after}"
    w.page.wait_for_load_state("networkidle")  # every response recorded
    assert any(url.endswith("/search/search_index.json") for url in w.requested), rel
    kib = w.transferred_kib()
    assert kib <= TRANSFER_BUDGET_KIB, f"{rel}: {kib:.0f} KiB transferred"
    w.requested.clear()


# When Material's script and the search index were requested, in ms after the load event
_AFTER_LOAD = """() => {
  const load = performance.getEntriesByType("navigation")[0].loadEventEnd
  const after = {}
  for (const e of performance.getEntriesByType("resource")) {
    const name = (e.name.match(/\\/(bundle)\\.[0-9a-f]+\\.min\\.js$|\\/(search_index)\\.json$/) || [])
    if (name[1] || name[2]) after[name[1] || name[2]] = e.startTime - load
  }
  return after
}"""
# What Material does once the document is ready (on DOMContentLoaded): it takes the
# scroll fix off the navigation's lists and wraps each table to scroll on its own
_SET_UP = """() => document.documentElement.classList.contains("js")
  && document.querySelectorAll("[data-md-scrollfix]").length === 0
  && document.querySelectorAll(".md-nav__list").length > 0
  && document.querySelectorAll(".md-typeset table:not(.md-typeset__table > table)")
       .length === 0"""


@pytest.mark.parametrize("rel", PAGES)
def test_every_page_fits_a_phone(watched, rel: str) -> None:
    w = watched(viewport={"width": 390, "height": 844}, device_scale_factor=1, is_mobile=True)
    for prefix in ("", "en/"):
        w.goto(prefix + rel)
        _check_load(w, prefix + rel)
        # what extra.css lays out only in view (content-visibility) clips what would
        # overflow it: measured laid out, as a reader scrolling to it sees it, content
        # wider than the screen shows here
        w.page.add_style_tag(content="* { content-visibility: visible !important; }")
        width = w.page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{prefix}{rel}: {width}px wide on a 390px screen"
        # figures and diagrams are scaled to the screen, none wider than the text
        wide = w.page.evaluate(
            "[...document.querySelectorAll('article img')].filter(i =>"
            " i.getBoundingClientRect().right > document.documentElement.clientWidth"
            " || i.getBoundingClientRect().left < 0).map(i => i.alt.slice(0, 60))")
        assert wide == [], f"{prefix}{rel}: figures wider than the screen: {wide}"
        name = (prefix + rel).strip("/").replace("/", "_") or "home"
        _shot(w, f"phone-{name}")
    w.check_clean()


def test_copy_button_copies_each_block_of_a_lecture(watched) -> None:
    """On a lecture, the copy button of every executed block copies its source.

    Blocks inside admonitions (the exercises' solutions, folded) count too: they are
    opened first, and their code is compared without its indentation.
    """
    import re
    import textwrap

    w = watched(permissions=["clipboard-read", "clipboard-write"])
    rel = "lectures/multihead-transformer-block/"
    source = (ROOT / "docs" / "zh" / (rel.rstrip("/") + ".md")).read_text(encoding="utf-8")
    found = re.findall(r'^( *)```python exec="on"[^\n]*source="[^"]+"[^\n]*\n(.*?)^\1```',
                       source, re.M | re.S)
    blocks = [textwrap.dedent(code) for _, code in found]
    assert blocks
    w.goto(rel)
    w.page.evaluate("document.querySelectorAll('article details')"
                    ".forEach(d => { d.open = true; })")  # folded solutions
    highlighted, copied = w.page.locator("article div.highlight"), []
    for i in range(highlighted.count()):
        highlighted.nth(i).scroll_into_view_if_needed()  # content.lazy: set up once in view
        button = highlighted.nth(i).locator(COPY).first
        button.wait_for()
        button.click()
        copied.append(w.page.evaluate("navigator.clipboard.readText()").strip())
    for code in blocks:
        assert code.strip() in copied, code[:200]
    w.check_clean()


# ---------------------------------------------------------------------------
# what a reader sees: one table and one figure of each lecture, one notebook
# ---------------------------------------------------------------------------
LECTURES = [p for p in PAGES if p.startswith("lectures/")]
NOTEBOOK = next(p for p in PAGES if p.startswith("notebooks/"))


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_screenshots_of_tables_and_figures_in_both_languages(watched, device: str) -> None:
    """Element screenshots to test-artifacts/readers/ for a person to look at.

    Each lecture's first table and first figure, and the first notebook's, in zh
    and en; the zh table's first header cell is Chinese, the en one's is not.
    """
    size = {"desktop": {"viewport": {"width": 1280, "height": 900}},
            "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True}}[device]
    w = watched(device_scale_factor=1, **size)
    folder = ARTIFACTS / "readers"
    folder.mkdir(parents=True, exist_ok=True)
    for rel in [*LECTURES, NOTEBOOK]:
        for lang, prefix in (("zh", ""), ("en", "en/")):
            w.goto(prefix + rel)
            name = rel.strip("/").split("/")[-1]
            shots = {"table": "article table", "figure": "article img.llmlab-figure"}
            for kind, selector in shots.items():
                element = w.page.locator(selector).first
                if kind == "figure" and rel == NOTEBOOK and not element.count():
                    continue
                element.scroll_into_view_if_needed()
                if kind == "figure":
                    element.evaluate("i => i.complete || new Promise(r => i.onload = r)")
                box = element.bounding_box()
                assert box and box["width"] > 0, f"{prefix}{rel}: no visible {kind}"
                element.screenshot(path=str(folder / f"{name}-{kind}-{lang}-{device}.png"))
            header = w.page.locator("article table th").first.inner_text()
            if lang == "zh":
                assert re.search(r"[\u4e00-\u9fff]", header), (rel, header)
            else:
                assert not re.search(r"[\u4e00-\u9fff]", header), (rel, header)
    w.check_clean()
