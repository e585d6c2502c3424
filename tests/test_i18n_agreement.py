"""The two languages agree: same blocks, same structure, same computed outputs.

From the Markdown source of every page pair ``docs/zh/X`` / ``docs/en/X``:

* the same executed blocks, with byte-identical code and the same options, in the
  same order (and the same non-executed code blocks, e.g. the ``{.partial}`` ones);
* the same number of headings at each level, tables, images, content tabs and
  admonitions of each kind (``!!! note``, ``??? tip`` ...).

From the built site (``built_site``):

* the same number of headings per level, tables, figures, admonitions/details and
  tab sets in each page's article;
* the same figures (the ``img.llmlab-figure`` data: one figure serves both
  languages) and the same tables printed by executed blocks, cell for cell;
* every page's executed blocks appear in the build report for both languages
  (``test_site.test_executed_blocks_identical_in_both_languages`` compares their
  outputs' hashes; this file names the block when one differs).

Each failure names the page and the block or element.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from bs4 import BeautifulSoup

from pages import fenced_blocks, page_paths, read_page, structure

PAGES = page_paths("zh")


def _html_path(rel: str) -> str:
    page = rel[:-3]
    if page == "index":
        return "index.html"
    if page.endswith("/index"):
        return page[: -len("index")] + "index.html"
    return page + "/index.html"


def test_pages_are_compared() -> None:
    assert PAGES == page_paths("en"), "zh and en have different pages"
    assert len(PAGES) >= 4, PAGES


@pytest.mark.parametrize("rel", PAGES)
def test_same_code_blocks_in_the_same_order(rel: str) -> None:
    zh = fenced_blocks(read_page("zh", rel), f"zh/{rel}")
    en = fenced_blocks(read_page("en", rel), f"en/{rel}")
    zh_code = [b for b in zh if b.executed or b.lang in ("python", "py")]
    en_code = [b for b in en if b.executed or b.lang in ("python", "py")]
    assert len(zh_code) == len(en_code), (
        f"{rel}: {len(zh_code)} Python blocks in zh, {len(en_code)} in en")
    for i, (a, b) in enumerate(zip(zh_code, en_code), start=1):
        assert (a.lang, a.attrs, a.classes) == (b.lang, b.attrs, b.classes), (
            f"{rel}: block {i} ({a.where} vs {b.where}) has different options: "
            f"{a.lang} {a.attrs} {a.classes} vs {b.lang} {b.attrs} {b.classes}")
        assert a.code == b.code, (
            f"{rel}: block {i} ({a.where} vs {b.where}) has different code")


@pytest.mark.parametrize("rel", PAGES)
def test_same_structure_in_the_markdown(rel: str) -> None:
    zh, en = structure(read_page("zh", rel)), structure(read_page("en", rel))
    for name in ("headings", "tables", "admonitions", "tabs", "images", "fences"):
        assert getattr(zh, name) == getattr(en, name), (
            f"{rel}: {name} differ: zh {getattr(zh, name)} vs en {getattr(en, name)}")


# --------------------------------------------------------------------------
# the built site
# --------------------------------------------------------------------------
def _article(built_site, lang: str, rel: str) -> BeautifulSoup:
    prefix = "" if lang == "zh" else "en/"
    soup = BeautifulSoup(built_site.html(prefix + _html_path(rel)), "html.parser")
    article = soup.select_one("article")
    assert article is not None, f"{lang}/{rel}: no <article> in the built page"
    return article


def _elements(article: BeautifulSoup) -> Counter:
    counts: Counter = Counter()
    for level in range(1, 7):
        counts[f"h{level}"] = len(article.find_all(f"h{level}"))
    counts["table"] = len(article.find_all("table"))
    counts["img"] = len(article.find_all("img"))
    counts["figure (img.llmlab-figure)"] = len(article.select("img.llmlab-figure"))
    counts["admonition"] = len(article.select("div.admonition"))
    counts["details"] = len(article.find_all("details"))
    counts["tab set"] = len(article.select(".tabbed-set"))
    counts["code block"] = len(article.select("div.highlight"))
    return counts


@pytest.mark.site
@pytest.mark.parametrize("rel", PAGES)
def test_same_structure_in_the_built_pages(built_site, rel: str) -> None:
    zh, en = _elements(_article(built_site, "zh", rel)), _elements(_article(built_site, "en", rel))
    diffs = [f"{k}: zh {zh[k]} vs en {en[k]}" for k in sorted(set(zh) | set(en))
             if zh[k] != en[k]]
    assert not diffs, f"{rel} (built): " + "; ".join(diffs)


def _figures(article: BeautifulSoup) -> list[tuple[str, str]]:
    return [(img.get("alt", ""), img.get("src", "")) for img in article.select("img.llmlab-figure")]


def _block_tables(article: BeautifulSoup) -> list[list[list[str]]]:
    """Every table of the article, as rows of cell texts."""
    tables = []
    for table in article.find_all("table"):
        rows = [[c.get_text(" ", strip=True) for c in r.find_all(["td", "th"])]
                for r in table.find_all("tr")]
        tables.append(rows)
    return tables


@pytest.mark.site
@pytest.mark.parametrize("rel", PAGES)
def test_same_computed_outputs_in_the_built_pages(built_site, rel: str) -> None:
    zh_article, en_article = _article(built_site, "zh", rel), _article(built_site, "en", rel)
    zh_figs, en_figs = _figures(zh_article), _figures(en_article)
    assert len(zh_figs) == len(en_figs), f"{rel}: {len(zh_figs)} vs {len(en_figs)} figures"
    for i, (a, b) in enumerate(zip(zh_figs, en_figs), start=1):
        assert a == b, f"{rel}: figure {i} ({a[0]!r} / {b[0]!r}) differs between languages"
    zh_tables, en_tables = _block_tables(zh_article), _block_tables(en_article)
    zh_heads = Counter(json.dumps(t[0]) for t in zh_tables if t)
    en_heads = Counter(json.dumps(t[0]) for t in en_tables if t)
    # same header in both languages: printed by a shared block (prose tables are
    # written, and headed, in each language)
    zh_shared = [t for t in zh_tables if t and en_heads[json.dumps(t[0])]]
    en_shared = [t for t in en_tables if t and zh_heads[json.dumps(t[0])]]
    assert len(zh_shared) == len(en_shared), (
        f"{rel}: {len(zh_shared)} vs {len(en_shared)} tables printed by blocks")
    for i, (a, b) in enumerate(zip(zh_shared, en_shared), start=1):
        assert a == b, (
            f"{rel}: computed table {i} (header {a[0]}) differs: zh {a} vs en {b}")


@pytest.mark.site
def test_build_report_names_the_differing_block(built_site) -> None:
    """Per block (not just per page): same key and output in both languages."""
    report = json.loads(built_site.html("build-report.json"))
    per_page: dict[str, list[dict]] = {}
    for b in report["blocks"]:
        per_page.setdefault(b["page"], []).append(b)
    compared = 0
    for rel in PAGES:
        zh, en = per_page.get(f"zh/{rel}", []), per_page.get(f"en/{rel}", [])
        executed = [b for b in fenced_blocks(read_page("zh", rel)) if b.executed]
        assert len(zh) == len(executed), (
            f"{rel}: the build report has {len(zh)} zh blocks, the page {len(executed)}")
        assert len(zh) == len(en), f"{rel}: {len(zh)} zh blocks vs {len(en)} en blocks"
        for i, (a, b) in enumerate(zip(zh, en), start=1):
            assert a["key"] == b["key"], f"{rel}: block {i} has different code (key)"
            assert a["output"] == b["output"], (
                f"{rel}: block {i} ({executed[i - 1].where}) printed different output")
            compared += 1
    assert compared > 0
