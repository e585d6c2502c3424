"""Renderers of the tokenization lecture: both languages, the same numbers, safe chips.

Each table renderer is rendered in Chinese and in English from one (small) result:
the zh headers are Chinese (or identifiers), the en output has no Chinese outside
``<code>`` (tokens of a Chinese text are data), and both show the same numbers in
the same order. Token chips must survive Markdown: no raw ``|``, ``*``, ``_`` or
backtick inside them.
"""

from __future__ import annotations

import re

import pytest

from llmlab.experiments import tokenization as tk
from llmlab.report import Localized
from llmlab.report import tokenization as rt

_CJK = re.compile(r"[\u4e00-\u9fff]")
_CODE = re.compile(r"<code[^>]*>.*?</code>", re.S)
_NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)*%?")
# zh headers that are names, not words: identifiers, units, tokens
_NAMES = {"k", "ms"}


@pytest.fixture(scope="module")
def results() -> dict[str, object]:
    small = dict(num_merges=60, en_chars=20_000, zh_chars=6_000, heldout_chars=2_000)
    return {
        "granularity": tk.run_granularity(num_chars=3_000, heldout_chars=1_000),
        "bpe": tk.run_bpe_steps(),
        "corpus": tk.run_corpus_training(**small, merge_steps=(0, 20, 60)),
        "agreement": tk.run_gpt2_agreement(keys=("english", "chinese", "special")),
        "chinese": tk.run_chinese_tokenizers(**small),
        "pitfalls": tk.run_tokenizer_pitfalls(),
        "timing": tk.time_training(num_chars=3_000, num_merges=10, num_processes=2,
                                   encode_chars=3_000, repeats=1),
    }


def _tables(results: dict[str, object]) -> dict[str, Localized]:
    r = results
    return {
        "utf8_table": rt.utf8_table("Aé明🤖"),
        "utf8_corpus_table": rt.utf8_corpus_table(r["granularity"]),
        "granularity_table": rt.granularity_table(r["granularity"]),
        "bpe_steps_table": rt.bpe_steps_table(r["bpe"]),
        "bpe_segmentation_table": rt.bpe_segmentation_table(r["bpe"], after=(0, 3, 12)),
        "first_merges_table": rt.first_merges_table(r["corpus"], n=5),
        "compression_table": rt.compression_table(r["corpus"]),
        "longest_tokens_table": rt.longest_tokens_table(r["corpus"], n=4),
        "token_kinds_table": rt.token_kinds_table(r["corpus"]),
        "agreement_table": rt.agreement_table(r["agreement"]),
        "chinese_tokenizers_table": rt.chinese_tokenizers_table(r["chinese"]),
        "chinese_example_table": rt.chinese_example_table(r["chinese"]),
        "pitfalls_table": rt.pitfalls_table(r["pitfalls"]),
        "boundary_table": rt.boundary_table(r["pitfalls"]),
        "partial_decode_table": rt.partial_decode_table(r["pitfalls"]),
        "timing_table": rt.timing_table(r["timing"]),
        "timing_settings_table": rt.timing_settings_table(r["timing"]),
    }


NAMES = [
    "utf8_table", "utf8_corpus_table", "granularity_table", "bpe_steps_table",
    "bpe_segmentation_table", "first_merges_table", "compression_table",
    "longest_tokens_table", "token_kinds_table", "agreement_table",
    "chinese_tokenizers_table", "chinese_example_table", "pitfalls_table",
    "boundary_table", "partial_decode_table", "timing_table", "timing_settings_table",
]


def _headers(markdown: str) -> list[str]:
    first = markdown.splitlines()[0]
    return [h.strip() for h in first.strip().strip("|").split(" | ")]


def _rows(markdown: str) -> list[str]:
    return markdown.splitlines()[2:]


def test_every_table_renderer_is_checked(results) -> None:
    assert set(_tables(results)) == set(NAMES)
    exported = {n for n in rt.__all__ if n.endswith("_table")}
    assert exported == set(NAMES), exported ^ set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_tables_speak_each_language_with_the_same_numbers(results, name: str) -> None:
    rendered = _tables(results)[name]
    zh, en = rendered.render("zh"), rendered.render("en")
    for header in _headers(zh):
        words = _CODE.sub("", header)
        assert _CJK.search(words) or words in _NAMES or not re.search(r"[a-z]{3,}", words), (
            f"{name}: zh header {header!r} is not Chinese")
    assert not _CJK.search(_CODE.sub("", en)), f"{name}: Chinese outside <code> in en"
    assert any(re.search(r"[a-z]{3,}", h) for h in _headers(en)), name
    assert _NUMBER.findall(zh) == _NUMBER.findall(en), f"{name}: numbers differ"
    # every row keeps its columns: no stray pipe from a token
    width = len(_headers(en))
    for row in _rows(en) + _rows(zh):
        cells = re.split(r"(?<!\\)\|", row.strip())[1:-1]
        assert len(cells) == width, (name, row[:120])


def test_english_tables_show_chinese_tokens_in_code(results) -> None:
    en = rt.first_merges_table(results["corpus"], n=5).render("en")
    assert "，" in en  # the first merges build the full-width comma ...
    assert not _CJK.search(_CODE.sub("", en))  # ... and only inside a chip


def test_granularity_examples_in_both_languages(results) -> None:
    r = results["granularity"]
    for lang in ("en", "zh"):
        listing = rt.granularity_examples(r, lang)
        zh, en = listing.render("zh"), listing.render("en")
        assert "字符" in zh and "characters" in en and not _CJK.search(_CODE.sub("", en))
        assert zh.count("\n- ") == en.count("\n- ") == len(r.schemes) - 1
        assert _NUMBER.findall(_CODE.sub("", zh)) == _NUMBER.findall(_CODE.sub("", en))


def test_compression_figure_in_both_languages(results) -> None:
    fig = rt.compression_figure(results["corpus"])
    assert fig.alt is not None and _CJK.search(fig.alt.zh) and not _CJK.search(fig.alt.en)
    zh, en = fig.render("zh"), fig.render("en")
    assert zh.startswith('<p><img class="llmlab-figure"') and en.startswith("<p><img")
    digest = re.compile(r'data-digest="([0-9a-f]+)"')
    assert digest.search(zh).group(1) == digest.search(en).group(1)  # same data


@pytest.mark.parametrize(("token", "shown"), [
    (b" the", "␣the"),
    (b"\n\n", "↵↵"),
    (b"\t", "⇥"),
    ("明".encode(), "明"),
    (b"\xe6\x98", r"\xe6\x98"),
    (b" \xf0\x9f", r"␣\xf0\x9f"),
    ("\u200d".encode(), r"\u200d"),
    ("hello", "hello"),
])
def test_token_text_makes_whitespace_and_partial_bytes_visible(token, shown) -> None:
    assert rt.token_text(token) == shown


def test_is_partial() -> None:
    assert rt.is_partial(b"\xe6\x98") and not rt.is_partial("明".encode())
    assert not rt.is_partial("not bytes")


def test_chips_survive_markdown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMLAB_OUTPUT", "markdown")  # as a page prints them
    chips = rt.tokens_html([b"<|endoftext|>", b"**", b"_x_", b"`", b"|", b"\\", b"\xe6"])
    inside = re.findall(r"<code[^>]*>(.*?)</code>", chips)
    assert len(inside) == 7
    for text in inside:
        assert not re.search(r"[|*_`<>\\\[\]]", text), text  # entities only
    assert chips.count('class="llmlab-tok llmlab-partial"') == 1
    assert "&#124;" in chips and "&#60;" in chips
    assert rt.verbatim_html("a b") == '<code class="llmlab-verbatim">a␣b</code>'


def test_the_merge_loops_are_compared_as_measured() -> None:
    import dataclasses

    r = tk.time_training(num_chars=3_000, num_merges=10, num_processes=2,
                         encode_chars=3_000, repeats=1)
    fast = dataclasses.replace(r, seconds={**r.seconds, "merges_naive": 0.3,
                                           "merges_incremental": 0.1})
    assert "took 3.0× as long as the incremental one" in rt.merge_speed_line(fast).en
    slow = dataclasses.replace(r, seconds={**r.seconds, "merges_naive": 0.1,
                                           "merges_incremental": 0.2})
    assert "朴素合并循环的用时是增量循环的 0.5 倍" in rt.merge_speed_line(slow).zh
