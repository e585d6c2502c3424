"""Prose agrees with numbers: every number in a lecture's prose is guarded.

Each multi-digit number, percentage or decimal in the prose of a lecture (both
languages; code blocks, link targets and section numbering left out) must be
either

* **registered** in the ``GUARDS`` of the lecture's own file, ``tests/prose/<page>.py``
  (``lectures/x.md`` -> ``tests/prose/x.py``; see ``tests/prose/__init__.py``), with the
  check that keeps it true:
  ``Assert(text)``  an assertion (or argument) in one of the page's executed blocks;
  ``Default(func, arg, value)``  a setting that must equal a code default;
  ``Attr(obj, attr, value)``  a setting that must equal a field of a preset;
  ``Output(text)``  a value the build prints into the page (checked in the built HTML);
* or **allowed** in that file's ``ALLOWED`` (or, for years cited on any page,
  ``ALLOWED_ON_EVERY_PAGE`` in ``tests/prose/__init__.py``): settings written in the
  block right there, years, citations, constants of nature/IEEE, exercise parameters.

The test fails when a number appears in prose without either (so a typed-in
result cannot land), when a registered guard no longer holds (the assertion was
removed, the default changed), or when a registered number has left the prose
(a stale entry). The zh and en prose must contain the same numbers. Every lecture has
its file, and every file a lecture.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections import Counter

import pytest

from pages import LANGS, fenced_blocks, lecture_pages, read_page, strip_code
from prose import (ALLOWED_ON_EVERY_PAGE, Assert, Attr, Default, Output, guard_files,
                   guards_file, load, shown)


PAGES = lecture_pages()
FILES = guard_files()  # page -> tests/prose/<page>.py
LECTURES = {page: load(path) for page, path in FILES.items()}
# page -> number as written in the prose -> the guards that keep it true
GUARDS: dict[str, dict[str, list[object]]] = {
    page: lecture.guards for page, lecture in LECTURES.items()}
# Numbers that are not results: (page or "*", number) -> why
ALLOWED: dict[tuple[str, str], str] = {
    **{("*", n): why for n, why in ALLOWED_ON_EVERY_PAGE.items()},
    **{(page, n): why for page, lecture in LECTURES.items()
       for n, why in lecture.allowed.items()},
}


def _guards(page: str) -> dict[str, list[object]]:
    """The page's guards; none for a lecture without its file (which
    test_every_lecture_is_audited reports)."""
    return GUARDS.get(page, {})


_NUMBER = re.compile(r"(?<![\w.\\{])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?%?|\.\d+%?)(?![\w])")


def prose_numbers(text: str) -> list[str]:
    """Multi-digit numbers, percentages and decimals in the prose of a page."""
    prose = strip_code(text)
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets (#11-...) are no claims
    prose = re.sub(r"^(#{1,6}\s+)\d+\.", r"\1", prose, flags=re.M)  # "## 7. ..." numbering
    prose = re.sub(r"第 \d+ 节|section \d+", "", prose)  # cross-references to sections
    prose = prose.replace("{,}", ",")  # LaTeX thousands separator
    found = []
    for m in _NUMBER.finditer(prose):
        token = m.group(1)
        if re.fullmatch(r"\d", token):  # one digit: counts, not results
            continue
        found.append(token)
    return found


def _executed_code(lang: str, page: str) -> str:
    return "\n".join(b.code for b in fenced_blocks(read_page(lang, page)) if b.executed)


def _resolve(ref: str) -> object:
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


def _default(func: str, arg: str) -> object:
    fn = inspect.unwrap(_resolve(func))
    return inspect.signature(fn).parameters[arg].default


def test_every_lecture_is_audited() -> None:
    missing = [f"{page} has no guards file: create {shown(guards_file(page))} "
               "(GUARDS = {} if its prose states no result)"
               for page in PAGES if page not in FILES]
    orphans = [f"{shown(path)} names no lecture: there is no docs/zh/{page} "
               "(rename the file after its page, or delete it)"
               for page, path in FILES.items() if page not in PAGES]
    assert not missing and not orphans, "\n".join(missing + orphans)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", PAGES)
def test_every_prose_number_is_guarded_or_allowed(lang: str, page: str) -> None:
    unguarded = sorted({
        n for n in prose_numbers(read_page(lang, page))
        if n not in _guards(page) and (page, n) not in ALLOWED and ("*", n) not in ALLOWED
    })
    assert not unguarded, (
        f"{lang}/{page}: numbers in the prose that no block checks: {unguarded}. "
        "Print them from the computation, assert them in the block and register them "
        "in GUARDS, or (for a setting, year or citation) add them to ALLOWED, in "
        f"{shown(guards_file(page))}")


@pytest.mark.parametrize("page", PAGES)
def test_both_languages_state_the_same_numbers(page: str) -> None:
    zh, en = (Counter(prose_numbers(read_page(lang, page))) for lang in LANGS)
    assert zh == en, f"{page}: zh has {dict(zh - en)} more, en has {dict(en - zh)} more"


@pytest.mark.parametrize("page", PAGES)
def test_registered_numbers_are_still_in_the_prose(page: str) -> None:
    for lang in LANGS:
        stale = set(_guards(page)) - set(prose_numbers(read_page(lang, page)))
        assert not stale, (f"{lang}/{page}: GUARDS in {shown(guards_file(page))} lists "
                           f"{sorted(stale)}, the prose does not")


@pytest.mark.parametrize("page", PAGES)
def test_each_guard_holds(page: str) -> None:
    failures = []
    for number, guards in _guards(page).items():
        for guard in guards:
            if isinstance(guard, Assert):
                for lang in LANGS:
                    if guard.text not in _executed_code(lang, page):
                        failures.append(f"{number}: no executed block of {lang}/{page} "
                                        f"contains {guard.text!r}")
            elif isinstance(guard, Default):
                got = _default(guard.func, guard.arg)
                if got != guard.value:
                    failures.append(f"{number}: {guard.func}({guard.arg}=...) defaults "
                                    f"to {got!r}, the prose says {guard.value!r}")
            elif isinstance(guard, Attr):
                got = getattr(_resolve(guard.obj), guard.attr)
                if got != guard.value:
                    failures.append(f"{number}: {guard.obj}.{guard.attr} is {got!r}, "
                                    f"the prose says {guard.value!r}")
            elif not isinstance(guard, Output):
                failures.append(f"{number}: unknown guard {guard!r}")
    assert not failures, "\n".join(failures)


@pytest.mark.site
@pytest.mark.parametrize("page", PAGES)
def test_printed_numbers_are_in_the_built_page(built_site, page: str) -> None:
    outputs = [(n, g) for n, gs in _guards(page).items() for g in gs if isinstance(g, Output)]
    for lang in LANGS:
        prefix = "" if lang == "zh" else "en/"
        html = built_site.html(prefix + page[:-3] + "/index.html")
        for number, guard in outputs:
            assert guard.text in html, f"{lang}/{page}: {number} is not printed ({guard.text!r})"


def test_count_of_checked_prose_numbers(record_property) -> None:
    registered = sum(len(v) for v in GUARDS.values())
    occurrences = sum(
        1 for page in PAGES for lang in LANGS for n in prose_numbers(read_page(lang, page))
        if n in _guards(page))
    record_property("checked_prose_numbers", registered)
    record_property("checked_prose_number_occurrences", occurrences)
    assert registered > 0, registered
