"""The transforms of the site's finished HTML: strings in, strings (and bytes) out.

The build hook (``hooks/llmlab_build.py``) calls them on each page as MkDocs renders
it; :func:`transform_site` runs the same ones over a site already built, for a
builder without hooks (Zensical): ``python -m llmlab.build.html site-zensical``.

* :func:`join_cjk_lines`: no line break between two Chinese characters (browsers
  other than Firefox show one as a space);
* :func:`code_blocks`: Pygments' name and space spans unwrapped, each block's
  number of lines given;
* :func:`mathml`: formulas typeset as MathML, which browsers render natively;
* :func:`figure_files`: figures as files of their own, not data URIs;
* :func:`transform_content`: the four above, in that order;
* :func:`search_copy`: the copy of a page that Material's search indexes;
* :func:`language_links` and :func:`name_search_dialog`: the ``<head>``'s language
  links point at the language roots; the search dialog has an accessible name.
* :func:`download_links`: a notebook's downloads link to the site's pages by their
  full address (the files are read outside the site).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import itertools
import posixpath
import re
import shutil
import sys
from html import unescape
from pathlib import Path

from llmlab.build.languages import language_prefix
from llmlab.checks import check_str
from llmlab.report import LANGUAGES

__all__ = ["FIGURES", "code_blocks", "download_links", "figure_files", "join_cjk_lines",
           "language_links", "language_sitemaps", "main", "mathml", "name_search_dialog",
           "root_prefix", "search_copy", "transform_content", "transform_site",
           "write_figures"]

FIGURES = "assets/figures"  # where figure_files' files go, under the site's root

_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"  # with full-width punctuation
_CJK_BREAK = re.compile(f"(?<=[{_CJK}])[ \t]*\n[ \t]*(?=[{_CJK}])")
_VERBATIM = re.compile(r"(<(pre|script|style|textarea)\b.*?</\2>)", re.S | re.I)


def join_cjk_lines(html: str) -> str:
    """``html`` without the line breaks (and the spaces around them) between two CJK
    characters, full-width punctuation included, except inside ``<pre>``,
    ``<script>``, ``<style>`` and ``<textarea>``. A break next to any other
    character stays."""
    parts = _VERBATIM.split(html)  # text, element, tag name, text, ...
    return "".join(_CJK_BREAK.sub("", part) if i % 3 == 0 else part
                   for i, part in enumerate(parts) if i % 3 != 2)


_FIGURE = re.compile(r'(<img class="llmlab-figure"[^>]*?) src="data:image/svg\+xml;base64,'
                     r'([A-Za-z0-9+/=]+)"')


def root_prefix(url: str) -> str:
    """The relative path from the page at ``url`` to the site's root: ``""`` for
    ``""`` or ``index.html``, ``"../../"`` for ``a/b/`` or ``a/b/index.html``."""
    folder = url.rpartition("/")[0]
    return "../" * len([part for part in folder.split("/") if part])


def figure_files(html: str, page_url: str) -> tuple[str, dict[str, bytes]]:
    """Figures as files (``assets/figures/<digest>.svg``), not data URIs that every
    reader downloads before the text: the page's HTML and its figures by file name.

    Only the report layer's SVG figures (``<img class="llmlab-figure"``) change;
    ``page_url`` (as :func:`root_prefix` reads it) makes their ``src`` relative.
    Each loads lazily but the page's first, which may be what the reader sees:
    high priority (the ``<img>`` has its size from the report layer: no layout
    shift). The file's name is a digest of the SVG: the same figure twice is one
    file.
    """
    up, figures = root_prefix(page_url), {}

    def to_file(match: re.Match[str]) -> str:
        svg = base64.b64decode(match.group(2))
        name = f"{hashlib.sha256(svg).hexdigest()[:20]}.svg"
        lazy = ' loading="lazy"' if figures else ' fetchpriority="high"'
        figures[name] = svg
        return f'{match.group(1)}{lazy} src="{up}{FIGURES}/{name}"'

    return _FIGURE.sub(to_file, html), figures


# Pygments wraps every name and every run of spaces in a span; Material colours a
# name as the code around it, and a space not at all. Unwrapped, a lecture page has
# about a quarter fewer elements for the browser to lay out, and looks the same.
_PLAIN_TOKEN = re.compile(r'<span class="(?:n|w)">([^<]*)</span>')
_HIGHLIGHT = re.compile(r'(<div class="[^"]*\bhighlight\b[^"]*")'
                        r'(>(?:<span class="filename">[^<]*</span>)?\s*<pre\b.*?</pre>)', re.S)


def code_blocks(html: str) -> str:
    """Code blocks (``<div class="highlight">``) with fewer elements, text and colours
    unchanged, each with its number of lines (``--llmlab-lines``): the stylesheet
    lays out a block only once it scrolls into view, and reserves its height until
    then. Spans outside such a block stay; a block already done is left alone."""
    def block(match: re.Match[str]) -> str:
        pre = _PLAIN_TOKEN.sub(r"\1", match.group(2))
        lines = pre.count("\n")
        return f'{match.group(1)} style="--llmlab-lines: {lines}"{pre}'

    return _HIGHLIGHT.sub(block, html)


_MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)


def mathml(html: str) -> str:
    """Formulas typeset at build time as MathML, which browsers render natively.

    pymdownx.arithmatex leaves ``\\(...\\)`` (inline) and ``\\[...\\]`` (display) in
    ``class="arithmatex"`` elements; a script would typeset them in the reader's
    browser, after downloading it and its fonts.
    """
    from latex2mathml.converter import convert  # a docs dependency, only where it is used

    def typeset(match: re.Match[str]) -> str:
        tex = unescape(match.group(2)).strip()
        return convert(tex[2:-2].strip(), display="block" if tex[1] == "[" else "inline")

    return _MATH.sub(typeset, html)


def transform_content(html: str, page_url: str) -> tuple[str, dict[str, bytes]]:
    """A page's HTML as the site serves it: :func:`join_cjk_lines`,
    :func:`code_blocks`, :func:`mathml`, then :func:`figure_files` (the figures
    it took out, by file name, come back with it)."""
    check_str("html", html)
    check_str("page_url", page_url)
    return figure_files(mathml(code_blocks(join_cjk_lines(html))), page_url)


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


_HEAD_ALTERNATE = re.compile(rf'<link rel="alternate" href="[^"]*" hreflang="({"|".join(LANGUAGES)})">')
_SEARCH_DIALOG = re.compile(r'<div class="md-search" data-md-component="search" role="dialog"'
                            r'(?! aria-label=)')
_SEARCH_NAME = {"zh": "搜索", "en": "Search"}


def language_links(page: str, site_url: str) -> str:
    """``page`` with its ``<head>``'s language links (``<link rel="alternate"
    hreflang=...>``, which static-i18n points at the page's translation) pointing
    at the language roots, as full addresses under ``site_url`` (hreflang wants
    them): Material's language selector reads ``sitemap.xml`` next to each."""
    base = site_url.rstrip("/") + "/"

    def root(match: re.Match[str]) -> str:
        language = match.group(1)
        href = base + language_prefix(language)  # the pattern matches our languages only
        return f'<link rel="alternate" href="{href}" hreflang="{language}">'

    head, sep, body = page.partition("</head>")
    return _HEAD_ALTERNATE.sub(root, head) + sep + body


# a Markdown link to a page of the docs, relative: ](../lectures/x.md#anchor)
_PAGE_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|/|#)([^()\s#]+)\.md(#[^()\s]*)?\)")


def download_links(text: str, page: str, site_url: str) -> str:
    """``text``, a file a reader downloads from ``page`` (its path in the language's
    docs, ``notebooks/x.md``), with each relative Markdown link to a page of the
    docs (``](../lectures/training.md#sampling)``) made the page's full address
    under ``site_url``, the language's root (``](https://…/en/lectures/training/#sampling)``):
    read outside the site, a relative link leads nowhere. Links that leave the docs
    are left as they are.
    """
    check_str("text", text)
    check_str("page", page, nonempty=True)
    check_str("site_url", site_url, nonempty=True)
    base, folder = site_url.rstrip("/") + "/", posixpath.dirname(page)

    def full(match: re.Match[str]) -> str:
        path = posixpath.normpath(posixpath.join(folder, match[1]))
        if path.startswith("../") or path == "..":
            return match[0]
        if path in {".", "index"}:  # the home page: the root
            path = ""
        elif path.endswith("/index"):  # a section's index page: its folder
            path = path.removesuffix("index")
        else:  # a page: its folder (MkDocs' directory URLs)
            path += "/"
        return f"]({base}{path}{match[2] or ''})"

    return _PAGE_LINK.sub(full, text)


def name_search_dialog(page: str, language: str | None) -> str:
    """``page`` with Material's search dialog named in ``language`` (English for a
    language the site has no name for), unless it has a name already."""
    name = _SEARCH_NAME.get(language or LANGUAGES[0], "Search")
    return _SEARCH_DIALOG.sub(lambda m: f'{m[0]} aria-label="{name}"', page, count=1)


def write_figures(site_dir: str | Path, figures: dict[str, bytes]) -> None:
    """Write :func:`figure_files`' figures (file name -> SVG) where pages find them."""
    folder = Path(site_dir) / FIGURES
    folder.mkdir(parents=True, exist_ok=True)
    for name, svg in figures.items():
        (folder / name).write_bytes(svg)


def language_sitemaps(site_dir: str | Path) -> None:
    """Copy the root's ``sitemap.xml`` (and ``.gz``) into each other language's folder:
    Material's language selector reads the one next to the language's root."""
    site = Path(site_dir)
    for language in LANGUAGES[1:]:
        for name in ("sitemap.xml", "sitemap.xml.gz"):
            if (site / name).is_file() and (site / language).is_dir():
                shutil.copyfile(site / name, site / language / name)


_HTML_LANG = re.compile(r'<html\b[^>]*\blang="([^"]*)"')


def transform_site(site_dir: str | Path, site_url: str | None = None) -> dict[str, int]:
    """Run the transforms over a built site, after a builder that runs no hooks.

    Every ``*.html`` under ``site_dir`` gets :func:`transform_content` (its figures
    are written to ``assets/figures/``) and :func:`name_search_dialog` in its
    ``<html lang>``; with ``site_url``, :func:`language_links` too. A page the hook
    made is left as it is: each transform does nothing to what it has done.

    Returns:
        ``{"pages": ..., "changed": ..., "figures": ...}``: the pages read, the
        pages rewritten and the figure files written.

    Raises:
        ValueError: ``site_dir`` is not a folder.
    """
    site = Path(site_dir)
    if not site.is_dir():
        raise ValueError(f"site_dir must be a built site's folder, got {str(site_dir)!r}")
    counts = {"pages": 0, "changed": 0, "figures": 0}
    for path in sorted(site.rglob("*.html")):
        before = path.read_text(encoding="utf-8")
        page, figures = transform_content(before, path.relative_to(site).as_posix())
        language = _HTML_LANG.search(page)
        page = name_search_dialog(page, language[1] if language else None)
        if site_url is not None:
            page = language_links(page, site_url)
        write_figures(site, figures)
        counts["pages"] += 1
        counts["figures"] += len(figures)
        if page != before:
            path.write_text(page, encoding="utf-8")
            counts["changed"] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    """``python -m llmlab.build.html SITE_DIR [--site-url URL]``."""
    parser = argparse.ArgumentParser(prog="python -m llmlab.build.html",
                                     description=transform_site.__doc__.split("\n")[0])
    parser.add_argument("site_dir", help="the built site's folder")
    parser.add_argument("--site-url", help="the site's address, for the language links")
    args = parser.parse_args(argv)
    try:
        counts = transform_site(args.site_dir, args.site_url)
    except ValueError as error:
        parser.error(str(error))
    print(f"llmlab.build.html: {counts['pages']} pages, {counts['changed']} rewritten, "
          f"{counts['figures']} figures written to {FIGURES}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
