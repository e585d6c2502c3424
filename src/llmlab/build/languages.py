"""One build per language, for a site builder without mkdocs-static-i18n.

``mkdocs.yml`` builds both languages in one run through the ``i18n`` plugin: Chinese
from ``docs/zh`` at the site's root, English from ``docs/en`` under ``/en/``, each
with its interface language, its nav titles and its language selector. A builder
that ignores the plugin (Zensical) sees one site of two folders instead.
:func:`language_config` writes, per language, ``mkdocs.yml`` with what the plugin
would have said: that language's folder, where its pages
go, its interface language, its nav titles (the plugin's ``nav_translations``), its
description, and Material's language selector (``extra.alternate``). Two builds, one
per config, lay the site out as the plugin does; the build of each can set
``LLMLAB_LANG`` for its blocks, which a single build cannot do per page.

``scripts/build-zensical.sh`` builds the site this way (CONTRIBUTING.md, "Zensical").

Taught on: nothing (the build's own glue).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from llmlab.checks import check_choice, check_str, check_type
from llmlab.report import LANGUAGES

__all__ = ["language_config", "language_prefix"]


def language_prefix(lang: str) -> str:
    """Where ``lang``'s pages go under the site's root: ``""`` for the first of
    :data:`llmlab.report.LANGUAGES` (the default), ``"<lang>/"`` for the others."""
    check_choice("lang", lang, LANGUAGES)
    return "" if lang == LANGUAGES[0] else f"{lang}/"


class _Tagged:
    """A YAML value under a tag this module does not run (``!ENV``, ``!!python/...``):
    kept as written, to be written back."""

    def __init__(self, tag: str, value: Any) -> None:
        self.tag, self.value = tag, value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Tagged) and (self.tag, self.value) == (other.tag, other.value)

    def __repr__(self) -> str:
        return f"_Tagged({self.tag!r}, {self.value!r})"


class _Loader(yaml.SafeLoader):
    """Reads mkdocs.yml keeping every tag it does not know as a :class:`_Tagged`."""


class _Dumper(yaml.SafeDumper):
    """Writes a config back, :class:`_Tagged` values under their own tags."""


def _keep(loader: _Loader, suffix: str, node: yaml.Node) -> _Tagged:  # noqa: ARG001
    if isinstance(node, yaml.SequenceNode):
        return _Tagged(node.tag, loader.construct_sequence(node, deep=True))
    if isinstance(node, yaml.MappingNode):
        return _Tagged(node.tag, loader.construct_mapping(node, deep=True))
    return _Tagged(node.tag, loader.construct_scalar(node))


def _write(dumper: _Dumper, data: _Tagged) -> yaml.Node:
    if isinstance(data.value, list):
        return dumper.represent_sequence(data.tag, data.value)
    if isinstance(data.value, dict):
        return dumper.represent_mapping(data.tag, data.value)
    return dumper.represent_scalar(data.tag, data.value)


_Loader.add_multi_constructor("", _keep)
_Dumper.add_representer(_Tagged, _write)


def _i18n(config: dict[str, Any], where: Path) -> dict[str, Any]:
    for plugin in config.get("plugins") or []:
        if isinstance(plugin, dict) and "i18n" in plugin:
            return plugin["i18n"] or {}
    raise ValueError(f"{where} has no i18n plugin: nothing to split by language")


def _translate(nav: Any, names: dict[str, str]) -> Any:
    """``nav`` with each section and page title replaced by ``names``' (if it has one)."""
    if isinstance(nav, list):
        return [_translate(item, names) for item in nav]
    if isinstance(nav, dict):
        return {names.get(key, key): _translate(value, names) for key, value in nav.items()}
    return nav


def language_config(root: str | Path, lang: str, site_url: str, site_dir: str,
                    includes: str | Path | None = None) -> str:
    """The config of ``lang``'s own build of the course in ``root``, as YAML text.

    It is ``root/mkdocs.yml`` as written (its tags kept; write it into ``root``, where
    its relative paths hold), with: ``docs_dir`` ``docs/<lang>``; ``site_dir``
    ``site_dir`` plus :func:`language_prefix`; ``site_url`` ``site_url`` plus the
    same; the theme's ``language``; the nav with the plugin's ``nav_translations`` for
    ``lang``; the plugin's ``site_description`` for ``lang`` if it has one; and
    ``extra.alternate``, a link to each language's root (Material's language
    selector). (Not ``INHERIT``: Zensical joins an inherited list to the child's, so
    the nav would be there in both languages.) With ``includes`` (precompute's
    ``<cache>/site``, what the notebook stubs and the home page include), that folder,
    made absolute, is pymdownx.snippets' ``base_path``, which is otherwise the working
    folder (the MkDocs build's hook adds it the same way).

    Raises:
        ValueError: ``root`` has no ``mkdocs.yml``, it has no ``i18n`` plugin, or the
            plugin does not list ``lang``.
    """
    check_type("root", root, (str, Path), expected="a folder (str or Path)")
    check_choice("lang", lang, LANGUAGES)
    check_str("site_url", site_url, nonempty=True)
    check_str("site_dir", site_dir, nonempty=True)
    if includes is not None:
        check_type("includes", includes, (str, Path), expected="a folder (str or Path) or None")
        if not Path(includes).is_dir():
            raise ValueError(f"includes must be a folder, got {includes} (not a folder)")
    path = Path(root) / "mkdocs.yml"
    if not path.is_file():
        raise ValueError(f"root must be the course's folder (with mkdocs.yml), got {root}")
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    listed = _i18n(config, path).get("languages") or []
    languages = {entry.get("locale"): entry for entry in listed}
    if lang not in languages:
        raise ValueError(f"mkdocs.yml's i18n plugin does not list {lang!r} (it lists "
                         f"{sorted(map(str, languages))})")
    own = languages[lang]
    base = site_url.rstrip("/") + "/"
    root_path = "/" + base.split("://", 1)[-1].partition("/")[2]  # the root's path
    config.update(
        docs_dir=f"docs/{lang}",
        site_dir=(str(Path(site_dir) / language_prefix(lang))).rstrip("/") + "/",
        site_url=base + language_prefix(lang),
        nav=_translate(config.get("nav"), own.get("nav_translations") or {}))
    config["theme"] = {**(config.get("theme") or {}), "language": lang}
    config["extra"] = {**(config.get("extra") or {}), "alternate": [
        {"name": languages[other].get("name", other),
         "link": root_path + language_prefix(other), "lang": other}
        for other in LANGUAGES if other in languages]}
    if includes is not None:
        config["markdown_extensions"] = [_with_base_path(entry, Path(includes).resolve())
                                         for entry in config.get("markdown_extensions") or []]
    if own.get("site_description"):
        config["site_description"] = own["site_description"]
    return yaml.dump(config, Dumper=_Dumper, allow_unicode=True, sort_keys=False)


def _with_base_path(entry: Any, folder: Path) -> Any:
    """A ``markdown_extensions`` entry, with ``folder`` as snippets' only base path."""
    name = entry if isinstance(entry, str) else next(iter(entry))
    if name != "pymdownx.snippets":
        return entry
    options = {} if isinstance(entry, str) else dict(entry[name] or {})
    return {name: {**options, "base_path": [str(folder)]}}
