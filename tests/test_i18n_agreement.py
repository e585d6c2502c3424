"""The two languages agree: same blocks, same structure, same computed outputs.

From the Markdown source of every page pair ``docs/zh/X`` / ``docs/en/X``:

* the same executed blocks, with byte-identical code and the same options, in the
  same order (and the same non-executed code blocks, e.g. the ``{.partial}`` ones);
* the same number of headings at each level, tables, images, content tabs and
  admonitions of each kind (``!!! note``, ``??? tip`` ...).

From the built site (``built_site``):

* the same number of headings per level, tables, figures, admonitions/details and
  tab sets in each page's article;
* the same numbers, to the last digit, in every computed table and in what every
  executed block printed; the same data in every figure (``data-digest``), with
  an alt text in the page's language; no Chinese in an English page's tables and
  no plain-English header on a Chinese page.

Each failure names the page and the block or element.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter

import pytest
from bs4 import BeautifulSoup

from pages import ROOT, fenced_blocks, page_paths, read_page, structure

PAGES = page_paths("zh")
_CJK = re.compile(r"[\u4e00-\u9fff]")
# a header made of plain English words only (identifiers have _ . ( or digits; these don't)
# the names of functions, values and units, and the toy sentence's tokens: not labels
_TERMS = {"softmax", "inf", "nan", "FLOPs", "torch", "ReLU", "GELU", "SiLU",
          *"attention lets each word look back".split()}
_ENGLISH_WORDS = re.compile(r"(?:(?!d_|n_)[a-z]{3,}[ ,]*){1,}(?: [a-z]+)*", re.I)


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


def test_zh_pages_say_token_and_name_the_standard_term_once() -> None:
    """The zh pages keep the English word "token"; 词元, the standard Chinese term,
    is named only in the glossary and where the tokenization lecture introduces
    tokens."""
    used = {rel: read_page("zh", rel).count("词元") for rel in PAGES}
    assert {rel: n for rel, n in used.items() if n} == {
        "lectures/tokenization.md": 1, "reference/glossary.md": 1}


# Chinese that misnamed things, by where it may not appear: a pattern, the
# pages (None: every zh page and every label in llmlab.report), and the term to use.
MISNOMERS = [
    (r"会合地址", None, "主节点地址 (the rendezvous address)"),
    (r"激活检查点|检查点在 7B", None, "激活重计算 (activation checkpointing)"),
    (r"对句(?!子)|合格律", None, "成联 / 五七言 (a line with a comma and a full stop; "
     "halves of five or seven characters)"),
    (r"算力", ["lectures/distributed.md"], "计算量 (a FLOP count)"),
    (r"学习笔记", None, "a source a reader can open (Raschka's chapter 3)"),
]


@pytest.mark.parametrize("pattern,pages,term", MISNOMERS, ids=[m[0] for m in MISNOMERS])
def test_zh_terms_that_misname_things_stay_out(pattern, pages, term) -> None:
    texts = {f"docs/zh/{rel}": read_page("zh", rel) for rel in (pages or PAGES)}
    if pages is None:
        report = ROOT / "src" / "llmlab" / "report"
        texts.update({str(f.relative_to(ROOT)): f.read_text(encoding="utf-8")
                      for f in sorted(report.glob("*.py"))})
    found = {where: m.group(0) for where, text in texts.items()
             if (m := re.search(pattern, text))}
    assert not found, f"use {term} instead: {found}"


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
    return [(img.get("data-digest", ""), img.get("alt", ""))
            for img in article.select("img.llmlab-figure")]


_NUMBER = re.compile(r"[-−+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?%?")


def _tables(article: BeautifulSoup) -> list[list[list[list[str]]]]:
    """Every table of the article: rows of cells, each cell the numbers it shows."""
    tables = []
    for table in article.find_all("table"):
        tables.append([[_NUMBER.findall(c.get_text(" ", strip=True))
                        for c in r.find_all(["td", "th"])] for r in table.find_all("tr")])
    return tables


@pytest.mark.site
@pytest.mark.parametrize("rel", PAGES)
def test_same_computed_outputs_in_the_built_pages(built_site, rel: str) -> None:
    """Both languages show the same numbers to the last digit, and the same figures
    (the same data plotted), each with an alt text in its own language."""
    zh_article, en_article = _article(built_site, "zh", rel), _article(built_site, "en", rel)
    zh_figs, en_figs = _figures(zh_article), _figures(en_article)
    assert len(zh_figs) == len(en_figs), f"{rel}: {len(zh_figs)} vs {len(en_figs)} figures"
    for i, ((zd, za), (ed, ea)) in enumerate(zip(zh_figs, en_figs), start=1):
        assert zd and zd == ed, f"{rel}: figure {i} plots different data ({za!r} / {ea!r})"
        assert _CJK.search(za) and not _CJK.search(ea), (
            f"{rel}: figure {i}'s alt texts are not in their page's language: {za!r} / {ea!r}")
    zh_tables, en_tables = _tables(zh_article), _tables(en_article)
    assert len(zh_tables) == len(en_tables), f"{rel}: {len(zh_tables)} vs {len(en_tables)} tables"
    for i, (a, b) in enumerate(zip(zh_tables, en_tables), start=1):
        assert a == b, f"{rel}: table {i} shows different numbers: zh {a} vs en {b}"


def _without_code(cell) -> str:
    """A table cell's text, its ``<code>`` elements left out."""
    cell = copy.copy(cell)
    for code in cell.find_all("code"):
        code.decompose()
    return cell.get_text(" ", strip=True)


@pytest.mark.site
@pytest.mark.parametrize("rel", PAGES)
def test_computed_tables_speak_the_pages_language(built_site, rel: str) -> None:
    """No Chinese in an English page's tables, no English words alone in a Chinese
    page's table headers (identifiers, shapes and formulas stay as they are, and so
    does code: the tokens of a Chinese text are shown in both languages)."""
    for lang in ("zh", "en"):
        for table in _article(built_site, lang, rel).find_all("table"):
            headers = [th.get_text(" ", strip=True) for th in table.find_all("th")]
            if lang == "en":
                # code (identifiers, tokens, quoted text) is data: 明 stays 明 in English
                words = [_without_code(c) for c in table.find_all(["th", "td"])]
                chinese = [t for t in words if _CJK.search(t)]
                assert not chinese, f"en/{rel}: Chinese in a table: {chinese}"
            else:
                english = [h for h in headers if _ENGLISH_WORDS.fullmatch(h)
                           and h not in _TERMS]
                assert not english, f"zh/{rel}: English table headers: {english}"


@pytest.mark.site
def test_every_block_prints_the_same_numbers_in_both_languages(built_site) -> None:
    """Per block (not just per table): the numbers each block printed, in order, agree."""
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
            assert a["id"] == b["id"], f"{rel}: block {i} has different options"
            assert a["numbers"] == b["numbers"], (
                f"{rel}: block {i} ({executed[i - 1].where}) printed different numbers")
            compared += 1
    assert compared > 0
