"""Cross-references between lectures: the reader can follow the course both ways.

The strict build already fails on a broken link or anchor (mkdocs validation is
set to warn and the build runs with ``--strict``; see
``test_site.test_strict_build_fails_loudly``). This file checks that the links a
reader needs *exist*, from the Markdown:

* the lecture graph: each lecture links to the lectures it builds on and the one
  it leads to (attention-from-scratch -> multihead-transformer-block ->
  building-blocks -> tokenization -> training -> distributed, and back), as its
  front matter's ``links_to`` declares;
* section-level references where a concept is reused, in each language with its
  own anchors (Chinese slugs on zh pages, English slugs on en pages), placed in
  the section that reuses the concept, as its front matter's ``section_links``
  declares;
* every anchor used by a lecture link is a heading slug of the target page.
"""

from __future__ import annotations

import re

import pytest
from pymdownx.slugs import slugify

from pages import (LANGS, front_matter, lecture_pages, markdown_links, read_page,
                   strip_code)

SLUG = slugify(case="lower")
LECTURES = [p.removeprefix("lectures/") for p in lecture_pages()]

# Each lecture declares, in its YAML front matter (MkDocs' page.meta, not rendered):
#   links_to: the lectures it must link to (builds on, leads to), the same in zh and en;
#   section_links: [heading, "page#anchor"] pairs, in the page's language: the section
#   under that heading (which reuses a concept) holds that link.
# A new lecture declares its own; nothing here is edited when one is added.


def _meta(lang: str, page: str) -> dict:
    return front_matter(lang, f"lectures/{page}")


def _links_to(lang: str, page: str) -> list[str]:
    return list(_meta(lang, page).get("links_to") or [])


def _section_links(lang: str, page: str) -> list[tuple[str, str]]:
    pairs = _meta(lang, page).get("section_links") or []
    for pair in pairs:
        assert (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(x, str) for x in pair)), (
            f"{lang}/lectures/{page}: section_links {pair!r} is not [heading, target]")
    return [tuple(pair) for pair in pairs]


def _headings(text: str) -> list[tuple[int, str]]:
    return [(len(m.group(1)), m.group(2).strip())
            for m in re.finditer(r"^(#{1,6})\s+(.+)$", strip_code(text), re.M)]


def _slugs(text: str) -> set[str]:
    """Each heading's anchor: its ``{#id}`` (attr_list) if it has one, else its slug."""
    out = set()
    for _, title in _headings(text):
        given = re.search(r"\{#([^\s}]+)\}\s*$", title)
        # inline code in a heading keeps its text in the slug (`CausalAttention`)
        out.add(given.group(1) if given else SLUG(title.replace("`", ""), "-"))
    return out


def _section(text: str, heading: str) -> str:
    """The Markdown of the section under ``heading`` (up to the next heading of its level)."""
    lines = text.splitlines()
    start = level = None
    for i, line in enumerate(lines):
        m = re.match(r"^(#{1,6})\s+(.+)$", line)
        if not m:
            continue
        if start is None and m.group(2).strip() == heading:
            start, level = i, len(m.group(1))
        elif start is not None and len(m.group(1)) <= level:
            return "\n".join(lines[start:i])
    assert start is not None, f"no heading {heading!r}"
    return "\n".join(lines[start:])


def _lecture_links(lang: str, page: str) -> list[str]:
    return [target for _, target in markdown_links(read_page(lang, f"lectures/{page}"))]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", LECTURES)
def test_every_lecture_declares_what_it_links_to(lang: str, page: str) -> None:
    targets = _links_to(lang, page)
    where = f"{lang}/lectures/{page}"
    assert targets, f"{where}: no links_to in its front matter"
    assert len(set(targets)) == len(targets), f"{where}: links_to repeats a lecture"
    unknown = sorted(t for t in targets if t not in LECTURES or t == page)
    assert not unknown, f"{where}: links_to {unknown}: not another lecture"


@pytest.mark.parametrize("page", LECTURES)
def test_both_languages_declare_the_same_links(page: str) -> None:
    assert _links_to("zh", page) == _links_to("en", page), f"lectures/{page}: links_to"
    # the headings and anchors are each language's own: the same number of them
    assert len(_section_links("zh", page)) == len(_section_links("en", page)), (
        f"lectures/{page}: section_links")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", LECTURES)
def test_lecture_links_to_what_it_builds_on_and_leads_to(lang: str, page: str) -> None:
    linked = {t.split("#")[0] for t in _lecture_links(lang, page)}
    missing = set(_links_to(lang, page)) - linked
    assert not missing, f"{lang}/lectures/{page} does not link to {sorted(missing)}"


@pytest.mark.parametrize("lang", LANGS)
def test_reused_concepts_link_to_their_section(lang: str) -> None:
    missing = []
    declared = 0
    for page in LECTURES:
        text = read_page(lang, f"lectures/{page}")
        for heading, target in _section_links(lang, page):
            declared += 1
            section = _section(text, heading)
            if target not in [t for _, t in markdown_links(section)]:
                missing.append(f"{lang}/lectures/{page} § {heading!r} -> {target}")
            path, _, anchor = target.partition("#")
            target_text = read_page(lang, f"lectures/{path}") if path else text
            if anchor and anchor not in _slugs(target_text):
                missing.append(f"{lang}/lectures/{page} § {heading!r} -> {target}: "
                               f"#{anchor} is not a heading of {path or page}")
    assert declared, f"no {lang} lecture declares section_links"
    assert not missing, "missing cross-references:\n" + "\n".join(missing)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", LECTURES)
def test_lecture_anchors_are_headings_of_their_target(lang: str, page: str) -> None:
    """Each language links its own anchors (the strict build checks this too)."""
    for target in _lecture_links(lang, page):
        if "#" not in target or "://" in target:
            continue
        path, anchor = target.split("#", 1)
        text = read_page(lang, f"lectures/{path}" if path else f"lectures/{page}")
        assert anchor in _slugs(text), (
            f"{lang}/lectures/{page}: #{anchor} is not a heading of {path or page}")
