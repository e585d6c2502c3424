"""Each lecture's prose numbers, registered in a file of its own.

``tests/prose/<page>.py`` belongs to ``docs/{zh,en}/lectures/<page>.md`` (the same
name) and defines

* ``GUARDS``: number as written in the prose -> the checks that keep it true,
  made of the classes below (``{}`` for a lecture with no such number);
* ``ALLOWED`` (optional): number -> why it is no result (a setting written in the
  block right there, a year, a citation, a constant, an exercise parameter).

``tests/test_prose_numbers.py`` finds these files by name and runs the checks; a new
lecture adds its own file and edits nothing shared. The files' names do not start with
``test_``, so pytest does not collect them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Assert:
    """Text that must appear in the code of an executed block of the page."""

    text: str


@dataclass(frozen=True)
class Default:
    """``func``'s argument ``arg`` must default to ``value``."""

    func: str  # "module:function"
    arg: str
    value: object


@dataclass(frozen=True)
class Attr:
    """``obj.attr`` must equal ``value`` (a preset's field)."""

    obj: str  # "module:NAME"
    attr: str
    value: object


@dataclass(frozen=True)
class Output:
    """Text the build prints into the page (checked in the built HTML)."""

    text: str


# Numbers allowed in the prose of every lecture: number -> why
ALLOWED_ON_EVERY_PAGE: dict[str, str] = {
    "2017": "year (the original Transformer)",
    "2020": "year of a citation",
    "2021": "year of a citation",
}


@dataclass(frozen=True)
class Lecture:
    """What a lecture's file registers."""

    guards: dict[str, list[object]]
    allowed: dict[str, str]


def guards_file(page: str) -> Path:
    """``lectures/x.md`` -> ``tests/prose/x.py``."""
    return HERE / (page.removeprefix("lectures/").removesuffix(".md") + ".py")


def shown(path: Path) -> str:
    """The path as a maintainer types it (``tests/prose/x.py``)."""
    return path.relative_to(HERE.parent.parent).as_posix()


def guard_files() -> dict[str, Path]:
    """page (``lectures/x.md``) -> its file, for every file in this folder."""
    return {"lectures/" + p.relative_to(HERE).with_suffix(".md").as_posix(): p
            for p in sorted(HERE.rglob("*.py")) if p.name != "__init__.py"}


def load(path: Path) -> Lecture:
    name = "prose_" + path.relative_to(HERE).with_suffix("").as_posix().replace("/", ".")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not isinstance(getattr(module, "GUARDS", None), dict):
        raise TypeError(f"{shown(path)} defines no GUARDS dict (write GUARDS = {{}} "
                        "for a lecture whose prose states no result)")
    return Lecture(module.GUARDS, getattr(module, "ALLOWED", {}))
