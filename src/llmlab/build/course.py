"""The course's table of contents, read from the site's own files.

The order is the site's navigation (``nav`` in ``mkdocs.yml``); a page's title
is its first heading and its summary the ``summary:`` of its front matter, each
in the page's own language. So the home page lists a new lecture once its pages
and its line in ``nav`` exist, and never a title the page no longer has. A
notebook's page is a stub that includes what precompute wrote: its title is the
notebook's own (the first heading of its Markdown in that language,
``examples/<name>.py``), its summary the stub's front matter.
``python -m llmlab.build.precompute`` writes both lists for the home pages.

Taught on: the home page ("Lectures").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from mkdocs.utils.meta import get_data

from llmlab.checks import check_type
from llmlab.report import LANGUAGES, Localized

__all__ = ["CoursePage", "contents", "course_pages", "notebook_contents", "split_front_matter"]

SECTIONS = ("lectures/", "reference/")  # what the list shows; notebooks have their own
NOTEBOOKS = "notebooks/"  # the notebooks' pages: notebooks/<name>.md from examples/<name>.py


@dataclass(frozen=True)
class CoursePage:
    """A page of the course: its path under ``docs/<lang>/``, and per language its
    title and one-sentence summary."""

    path: str
    title: dict[str, str]
    summary: dict[str, str]


class _ConfigLoader(yaml.SafeLoader):
    """Reads mkdocs.yml without running its ``!!python/name:`` and ``!ENV`` tags."""


# any tag the safe loader does not know (!!python/name:..., !ENV) reads as None
_ConfigLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _nav_paths(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_paths(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_paths(value)]
    return []


def split_front_matter(text: str, where: str = "") -> tuple[dict, str]:
    """A page's YAML front matter and its Markdown, split as MkDocs splits them
    (``mkdocs.utils.meta.get_data``). The front matter's lines are left blank in the
    Markdown, so that line numbers stay those of the file; ``where`` names the page
    in the error a leading ``---`` block that MkDocs would not read raises."""
    check_type("text", text, str)
    if not text.startswith("---"):
        return {}, text
    body, meta = get_data(text)
    if not meta:  # MkDocs would render the block as Markdown
        raise ValueError(f"{where}: its leading --- block is not YAML front matter "
                         "that MkDocs reads (a mapping between two --- lines)")
    return meta, "\n" * (text.count("\n") - body.count("\n")) + body


def _heading(body: str) -> str | None:
    """The text of ``body``'s first ``# `` line, or None."""
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return None


def _title(body: str, where: Path) -> str:
    if (title := _heading(body)) is None:
        raise ValueError(f"{where}: no '# ' title line")
    return title


def course_pages(root: str | Path, notebooks: bool = False) -> list[CoursePage]:
    """The lectures and reference pages of the course in ``root`` (the folder
    holding ``mkdocs.yml`` and ``docs/``), in the order of the site's navigation;
    with ``notebooks``, the example notebooks' pages instead."""
    check_type("root", root, (str, Path), expected="a folder (str or Path)")
    check_type("notebooks", notebooks, bool, expected="True or False")
    root = Path(root)
    config = root / "mkdocs.yml"
    if not config.is_file():
        raise ValueError(f"root must be the course's folder (with mkdocs.yml), got {root}")
    nav = yaml.load(config.read_text(encoding="utf-8"), Loader=_ConfigLoader).get("nav")
    pages = []
    for path in _nav_paths(nav):
        if not path.startswith(NOTEBOOKS if notebooks else SECTIONS):
            continue
        titles = _notebook_titles(root, path) if notebooks else {}
        summaries = {}
        for lang in LANGUAGES:
            where = root / "docs" / lang / path
            meta, body = split_front_matter(where.read_text(encoding="utf-8"), str(where))
            if not isinstance(meta.get("summary"), str) or not meta["summary"].strip():
                raise ValueError(f"{where}: front matter needs a summary: one sentence "
                                 "that the home page lists under the title")
            if not notebooks:
                titles[lang] = _title(body, where)
            summaries[lang] = meta["summary"].strip()
        pages.append(CoursePage(path, titles, summaries))
    return pages


def _notebook_titles(root: Path, page: str) -> dict[str, str]:
    """Per language, the first heading of the notebook's Markdown cells (the first
    Markdown cell with a ``# `` line), the notebook read once."""
    import jupytext

    from llmlab.build.notebooks import split_notebook

    source = root / "examples" / f"{Path(page).stem}.py"
    if not source.is_file():
        raise ValueError(f"{page} is a notebook's page, but {source} does not exist")
    notebook, titles = jupytext.read(source), {}
    for lang in LANGUAGES:
        found = (_heading(cell.source) for cell in split_notebook(notebook, lang).cells
                 if cell.cell_type == "markdown")
        title = next((heading for heading in found if heading is not None), None)
        if title is None:
            raise ValueError(f"{source}: no Markdown cell in {lang} has a '# ' title line")
        titles[lang] = title
    return titles


def contents(root: str | Path) -> Localized:
    """The home page's numbered list: each page's title, linked, and its summary.

    ``python -m llmlab.build.precompute`` writes it, per language, where the home
    pages include it (``--8<-- "zh/contents.md"``), so MkDocs checks its links as
    it checks every page's."""
    return _listing(course_pages(root), numbered=True)


def notebook_contents(root: str | Path) -> Localized:
    """The home page's list of example notebooks: each one's title, linked, and its
    summary (:func:`course_pages` with ``notebooks``), written by precompute as the
    lecture list is (``--8<-- "zh/notebooks.md"``)."""
    return _listing(course_pages(root, notebooks=True), numbered=False)


def _listing(pages: list[CoursePage], numbered: bool) -> Localized:
    sep = {"zh": "：", "en": ": "}

    def make(lang: str) -> str:
        return "\n".join(f"{f'{i}.' if numbered else '-'} [{p.title[lang]}]({p.path})"
                         f"{sep[lang]}{p.summary[lang]}" for i, p in enumerate(pages, 1))

    return Localized(make)
