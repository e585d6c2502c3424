"""llmlab.build.course: the home page's list of lectures, made from the site's own files."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmlab.build import course
from pages import ROOT, read_page


def _course(root: Path, pages: dict[str, tuple[str, str | None]], nav: list[str]) -> Path:
    """A course in miniature: ``pages`` maps a path to (title, summary or None)."""
    nav_lines = "\n".join(f"      - {p}" for p in nav)
    (root / "mkdocs.yml").parent.mkdir(parents=True, exist_ok=True)
    (root / "mkdocs.yml").write_text(
        "site_name: x\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
        f"nav:\n  - index.md\n  - 讲义:\n{nav_lines}\n", encoding="utf-8")
    for lang in ("zh", "en"):
        for path, (title, summary) in pages.items():
            page = root / "docs" / lang / path
            page.parent.mkdir(parents=True, exist_ok=True)
            meta = f"---\nsummary: {summary} ({lang})\n---\n\n" if summary else ""
            page.write_text(f"{meta}# {title} {lang}\n\ntext\n", encoding="utf-8")
    return root


def test_the_list_follows_the_navigation_in_each_language(tmp_path: Path) -> None:
    root = _course(tmp_path, {"lectures/a.md": ("A", "first"), "lectures/b.md": ("B", "second"),
                              "lectures/draft.md": ("D", None)},
                   nav=["lectures/b.md", "lectures/a.md"])  # a page not in nav: not listed
    listed = course.contents(root)
    assert listed.render("zh") == ("1. [B zh](lectures/b.md)：second (zh)\n"
                                   "2. [A zh](lectures/a.md)：first (zh)")
    assert listed.render("en") == ("1. [B en](lectures/b.md): second (en)\n"
                                   "2. [A en](lectures/a.md): first (en)")


def test_a_listed_page_without_a_summary_is_refused_naming_it(tmp_path: Path) -> None:
    root = _course(tmp_path, {"lectures/a.md": ("A", None)}, nav=["lectures/a.md"])
    with pytest.raises(ValueError, match=r"zh/lectures/a\.md: front matter needs a summary"):
        course.course_pages(root)


def test_the_course_lists_every_lecture_with_its_own_title() -> None:
    pages = course.course_pages(ROOT)
    lectures = [p.path for p in pages if p.path.startswith("lectures/")]
    assert len(lectures) >= 6 and pages[-1].path == "reference/glossary.md"
    for page in pages:
        for lang in ("zh", "en"):
            assert f"\n# {page.title[lang]}\n" in "\n" + read_page(lang, page.path)
        assert page.summary["zh"] != page.summary["en"]  # each in its own language


NOTEBOOK = ('# ---\n# jupyter:\n#   jupytext:\n#     formats: py:percent\n# ---\n\n'
            '# %% [markdown] lang="zh"\n# # 第{n}本\n#\n# 说明。\n\n'
            '# %% [markdown] lang="en"\n# # Notebook {n}\n#\n# About it.\n\n# %%\nx = {n}\n')


def test_the_notebook_list_follows_the_navigation_with_each_notebooks_own_title(
        tmp_path: Path) -> None:
    """A notebook's page is a stub: its title is the notebook's first heading in the
    language, its summary the stub's front matter; a lecture is not in this list."""
    root = _course(tmp_path, {"lectures/a.md": ("A", "first")},
                   nav=["lectures/a.md", "notebooks/two.md", "notebooks/one.md"])
    (root / "examples").mkdir()
    for n, name in ((1, "one"), (2, "two")):
        (root / "examples" / f"{name}.py").write_text(NOTEBOOK.format(n=n), encoding="utf-8")
        for lang in ("zh", "en"):
            stub = root / "docs" / lang / "notebooks" / f"{name}.md"
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.write_text(f"---\nsummary: does {n} ({lang})\n---\n\n"
                            f'--8<-- "{lang}/notebooks/{name}.md"\n', encoding="utf-8")
    listed = course.notebook_contents(root)
    assert listed.render("zh") == ("- [第2本](notebooks/two.md)：does 2 (zh)\n"
                                   "- [第1本](notebooks/one.md)：does 1 (zh)")
    assert listed.render("en") == ("- [Notebook 2](notebooks/two.md): does 2 (en)\n"
                                   "- [Notebook 1](notebooks/one.md): does 1 (en)")
    assert [p.path for p in course.course_pages(root)] == ["lectures/a.md"]
    # the first heading, not the first cell: an opening cell without one is passed over
    opening = '# %% [markdown]\n# A word before the title.\n\n'
    (root / "examples" / "one.py").write_text(NOTEBOOK.format(n=1).replace(
        '# %% [markdown] lang="zh"', opening + '# %% [markdown] lang="zh"'), encoding="utf-8")
    assert listed.render("en") == course.notebook_contents(root).render("en")
    untitled = NOTEBOOK.format(n=1).replace("# # Notebook 1", "# Notebook 1")
    (root / "examples" / "one.py").write_text(untitled, encoding="utf-8")
    with pytest.raises(ValueError, match=r"examples/one\.py: no Markdown cell in en has "
                                         r"a '# ' title line"):
        course.notebook_contents(root)
    (root / "examples" / "one.py").unlink()
    with pytest.raises(ValueError, match=r"notebooks/one\.md is a notebook's page, but .*"
                                         r"examples/one\.py does not exist"):
        course.notebook_contents(root)


def test_the_home_page_lists_every_notebook_of_the_nav() -> None:
    pages = course.course_pages(ROOT, notebooks=True)
    examples = sorted(p.stem for p in (ROOT / "examples").glob("*.py")
                      if p.read_text(encoding="utf-8").startswith("# ---\n# jupyter:"))
    assert sorted(p.path for p in pages) == [f"notebooks/{name}.md" for name in examples]
    for page in pages:
        assert page.summary["zh"] != page.summary["en"]  # each in its own language
    for lang in ("zh", "en"):
        assert f'--8<-- "{lang}/notebooks.md"' in read_page(lang, "index.md")


def test_the_site_builds_the_languages_the_code_lists() -> None:
    """mkdocs.yml's i18n locales are llmlab.report.LANGUAGES, the default first (the
    YAML cannot import the list, so this keeps the two in step)."""
    import yaml

    from llmlab.report import LANGUAGES

    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = yaml.load(text, Loader=course._ConfigLoader)
    [i18n] = [p["i18n"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p]
    locales = [entry["locale"] for entry in i18n["languages"]]
    assert tuple(locales) == LANGUAGES
    assert [entry.get("default", False) for entry in i18n["languages"]] == [
        True] + [False] * (len(LANGUAGES) - 1)
