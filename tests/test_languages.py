"""llmlab.build.languages: one config per language, for a builder without static-i18n;
and the notebooks' downloads written into a built site (llmlab.build.notebooks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from mkdocs.utils.yaml import yaml_load

from llmlab.build import languages, notebooks
from pages import ROOT


def _config(lang: str, site_url: str = "https://example.org/llm-lab") -> dict:
    text = languages.language_config(ROOT, lang, site_url, "out")
    yaml_load(text)  # MkDocs' own loader reads it: its tags (!ENV, slugify) run
    return yaml.load(text, Loader=languages._Loader)  # the tags as written


def test_each_language_gets_the_sites_config_with_what_the_plugin_would_set() -> None:
    course = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"),
                       Loader=languages._Loader)
    (toc,) = [e["toc"] for e in course["markdown_extensions"] if isinstance(e, dict)
              and "toc" in e]
    assert isinstance(toc["slugify"], languages._Tagged)  # the slugify tag, kept to compare
    own = {"docs_dir", "site_dir", "site_url", "nav", "theme", "extra", "site_description"}
    (i18n,) = [p["i18n"] for p in course["plugins"] if isinstance(p, dict) and "i18n" in p]
    assert isinstance(i18n["languages"][1]["build"], languages._Tagged)  # !ENV, kept
    english = next(entry for entry in i18n["languages"] if entry["locale"] == "en")
    for lang, prefix in (("zh", ""), ("en", "en/")):
        config = _config(lang)
        # everything else as mkdocs.yml has it, tags and all
        assert {k: v for k, v in config.items() if k not in own} == {
            k: v for k, v in course.items() if k not in own}
        assert config["docs_dir"] == f"docs/{lang}"
        assert config["site_dir"] == f"out/{prefix}"
        assert config["site_url"] == f"https://example.org/llm-lab/{prefix}"
        assert config["theme"] == {**course["theme"], "language": lang}
        assert config["extra"] == {**course["extra"], "alternate": [
            {"name": "中文", "link": "/llm-lab/", "lang": "zh"},
            {"name": "English", "link": "/llm-lab/en/", "lang": "en"}]}
        assert config["markdown_extensions"] == course["markdown_extensions"]
    zh, en = _config("zh"), _config("en")
    assert zh["nav"] == course["nav"]
    assert en["site_description"] == english["site_description"]
    # the nav in English: the plugin's titles, the same pages in the same order
    assert [next(iter(item)) for item in en["nav"]] == [
        english["nav_translations"][next(iter(item))] for item in course["nav"]]
    assert [list(item.values()) for item in en["nav"]] == [
        list(item.values()) for item in course["nav"]]


def test_a_site_at_the_hosts_root_links_its_languages_from_slash() -> None:
    assert [a["link"] for a in _config("en", "http://127.0.0.1:8000/")["extra"]["alternate"]
            ] == ["/", "/en/"]
    assert languages.language_prefix("zh") == "" and languages.language_prefix("en") == "en/"


def test_a_course_without_the_plugin_is_refused(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nplugins:\n  - search\n", "utf-8")
    with pytest.raises(ValueError, match=r"mkdocs\.yml has no i18n plugin"):
        languages.language_config(tmp_path, "en", "/", "out")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: x\nplugins:\n  - i18n:\n      languages:\n        - locale: zh\n", "utf-8")
    with pytest.raises(ValueError, match=r"does not list 'en' \(it lists \['zh'\]\)"):
        languages.language_config(tmp_path, "en", "/", "out")
    assert yaml.safe_load(languages.language_config(tmp_path, "zh", "/", "out"))[
        "docs_dir"] == "docs/zh"


def test_the_downloads_go_next_to_their_pages_with_full_links(tmp_path: Path) -> None:
    cache, site = tmp_path / "cache", tmp_path / "site"
    for lang in ("zh", "en"):
        folder = cache / "site" / lang / "notebooks"
        folder.mkdir(parents=True)
        (folder / "nb.md").write_text("the page itself", "utf-8")
        (folder / "nb.py").write_text(f"# see [it](../lectures/a.md#{lang})\n", "utf-8")
        (folder / "nb.ipynb").write_text(json.dumps(
            {"cells": [{"source": [f"[it](../index.md) {lang}"]}]}, ensure_ascii=False),
            "utf-8")
    (site / "notebooks").mkdir(parents=True)  # the zh pages; no English pages built
    written = notebooks.write_downloads(site, cache, "https://example.org/x")
    assert written == 2
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*.*")) == [
        "notebooks/nb/nb.ipynb", "notebooks/nb/nb.py"]
    assert (site / "notebooks/nb/nb.py").read_text("utf-8") == (
        "# see [it](https://example.org/x/lectures/a/#zh)\n")
    assert json.loads((site / "notebooks/nb/nb.ipynb").read_text("utf-8"))["cells"][0][
        "source"] == ["[it](https://example.org/x/) zh"]
    (site / "en" / "notebooks").mkdir(parents=True)
    assert notebooks.write_downloads(site, cache, "https://example.org/x/") == 4
    assert "https://example.org/x/en/lectures/a/#en" in (
        site / "en/notebooks/nb/nb.py").read_text("utf-8")


def test_the_snippets_include_from_the_folder_named_whatever_the_working_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``includes`` the config names the folder precompute writes the included
    Markdown to, so a builder without the hook (which adds it) finds it from anywhere."""
    import markdown
    from pymdownx.snippets import SnippetMissingError

    (tmp_path / "site" / "en").mkdir(parents=True)
    (tmp_path / "site" / "en" / "list.md").write_text("- included\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = yaml.load(languages.language_config(ROOT, "en", "/", "out", tmp_path / "site"),
                       Loader=languages._Loader)
    course = _config("en")
    changed = [(a, b) for a, b in zip(config["markdown_extensions"],
                                       course["markdown_extensions"]) if a != b]
    assert changed == [({"pymdownx.snippets": {"check_paths": True,
                                               "base_path": [str(tmp_path / "site")]}},
                        {"pymdownx.snippets": {"check_paths": True}})]
    options = changed[0][0]["pymdownx.snippets"]
    html = markdown.markdown('--8<-- "en/list.md"\n', extensions=["pymdownx.snippets"],
                             extension_configs={"pymdownx.snippets": options})
    assert "<li>included</li>" in html
    with pytest.raises(SnippetMissingError, match="en/list.md"):  # without it: not found
        markdown.markdown('--8<-- "en/list.md"\n', extensions=["pymdownx.snippets"],
                          extension_configs={"pymdownx.snippets": {"check_paths": True}})
