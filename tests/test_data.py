"""The shipped data files: present, readable, and described in NOTICE.md."""

from __future__ import annotations

import pytest

from llmlab import data


@pytest.mark.parametrize("name", data.NAMES)
def test_every_name_is_a_shipped_file(name: str) -> None:
    assert data.path(name).is_file()
    assert data.path(name).stat().st_size > 0


def test_notice_names_every_data_file() -> None:
    notice = data.path("NOTICE.md").read_text(encoding="utf-8")
    for name in data.NAMES:
        if name != "NOTICE.md":
            assert f"`{name}`" in notice
    assert "public domain" in notice and "MIT" in notice
    licence = data.path("LICENSE-chinese-poetry").read_text(encoding="utf-8")
    assert licence.strip() in notice


def test_bad_name_lists_the_available_ones() -> None:
    with pytest.raises(ValueError, match=r"name \('input.txt'\).*shakespeare.txt"):
        data.path("input.txt")
    with pytest.raises(TypeError, match="name must be a str"):
        data.path(3)  # type: ignore[arg-type]


def test_shakespeare_is_the_tiny_shakespeare_text() -> None:
    text = data.shakespeare()
    assert len(text) == 1_115_394
    assert text.startswith("First Citizen:\nBefore we proceed any further")


def test_tang_poems_are_one_string_per_poem() -> None:
    poems = data.tang_poems()
    assert len(poems) == 4003
    assert poems[0].split("\n")[0] == "秦川雄帝宅，函谷壯皇居。"
    assert all(p and not p.endswith("\n") for p in poems)
    assert len(data.tang_poems("tang300")) == 366
    # a fresh list each call: a caller's edit does not leak into the next call
    poems.clear()
    assert len(data.tang_poems()) == 4003
    with pytest.raises(ValueError, match=r"collection \('tang'\) must be one of"):
        data.tang_poems("tang")


def test_gpt2_files() -> None:
    assert data.GPT2_VOCAB == data.path("vocab.json")
    assert data.GPT2_MERGES.read_text(encoding="utf-8").splitlines()[0] == "Ġ t"
