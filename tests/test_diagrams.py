"""The conceptual diagrams: valid, compact, legible SVG in both languages, drawn from
what the experiments computed (their own tests: tests/test_experiments_*.py)."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pytest
import torch

import llmlab.report.diagrams as diagrams
from llmlab.experiments.attention import (
    run_attention_lookup,
    run_causal_mask,
    run_qkv_projections,
)
from llmlab.experiments.building_blocks import run_block_parts, run_rope_rotation
from llmlab.experiments.multihead import run_block_order, run_head_split
from llmlab.experiments.tokenization import run_bpe_steps
from llmlab.experiments.training import run_kv_cache_steps
from llmlab.models import gpt2
from llmlab.report import LANGUAGES, Localized, fmt_shape, img_tag
from llmlab.report.diagrams import (
    Diagram,
    attention_lookup,
    bpe_merges,
    causal_mask,
    gpt2_vs_llama_block,
    head_split,
    kv_cache_steps,
    qkv_projections,
    rope_rotation,
    transformer_block,
)

DEFAULTS: dict[str, Callable[[], Diagram]] = {  # what the pages draw
    "attention_lookup": lambda: attention_lookup(run_attention_lookup()),
    "qkv_projections": lambda: qkv_projections(run_qkv_projections()),
    "causal_mask": lambda: causal_mask(run_causal_mask()),
    "head_split": lambda: head_split(run_head_split()),
    "pre_ln_block": lambda: transformer_block(run_block_order(pre_ln=True)),
    "post_ln_block": lambda: transformer_block(run_block_order(pre_ln=False)),
    "gpt2_vs_llama_block": lambda: gpt2_vs_llama_block(run_block_parts()),
    "rope_rotation": lambda: rope_rotation(run_rope_rotation()),
    "kv_cache_steps": lambda: kv_cache_steps(run_kv_cache_steps()),
    "bpe_merges": lambda: bpe_merges(run_bpe_steps()),
}
# the largest (and smallest) pictures the diagrams draw
EXTREMES: dict[str, Callable[[], Diagram]] = {
    "attention_lookup max": lambda: attention_lookup(
        run_attention_lookup(n_keys=6, d_k=3, d_v=3, seed=3)),
    "qkv_projections max": lambda: qkv_projections(run_qkv_projections(T=8, d_model=12, d_k=12)),
    "causal_mask max": lambda: causal_mask(run_causal_mask(8)),
    "head_split wide": lambda: head_split(run_head_split(B=4, T=3, d_model=16, n_heads=8)),
    "head_split tall": lambda: head_split(run_head_split(B=4, T=6, d_model=8, n_heads=4)),
    "head_split one head": lambda: head_split(run_head_split(B=1, T=1, d_model=2, n_heads=1)),
    "rope_rotation max": lambda: rope_rotation(
        run_rope_rotation(positions=tuple(range(6)), d_k=128, pairs=(0, 1, 2))),
    "kv_cache_steps max": lambda: kv_cache_steps(run_kv_cache_steps(prompt_len=5, new_tokens=4)),
    "kv_cache_steps min": lambda: kv_cache_steps(run_kv_cache_steps(prompt_len=1, new_tokens=1)),
    "bpe_merges max": lambda: bpe_merges(run_bpe_steps("abcd efgh ijkl mnop qrst " * 2,
                                                       num_merges=6), steps=6),
    "bpe_merges min": lambda: bpe_merges(run_bpe_steps("ab", num_merges=1), steps=1),
    "bpe_merges short words": lambda: bpe_merges(run_bpe_steps("a b ab ab c", num_merges=1),
                                                 steps=1),
}
SVG_NS = "{http://www.w3.org/2000/svg}"
MAX_BYTES = 120_000  # the site's other figures: median ~46 KB, largest ~100 KB
CJK = re.compile(r"[\u4e00-\u9fff]")


def _layout(fig: Any) -> dict[str, Any]:
    """What a reader would notice: the smallest font, words on words, words out of boxes."""
    from matplotlib.patches import FancyBboxPatch

    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    words = [(t.get_text(), t.get_fontsize(), t.get_window_extent(renderer))
             for t in ax.texts if t.get_text().strip()]

    def overlap(a: Any, b: Any) -> bool:  # by more than a pixel each way
        return (min(a.x1, b.x1) - max(a.x0, b.x0) > 1) and (min(a.y1, b.y1) - max(a.y0, b.y0) > 1)

    crowded = [(s, u) for (s, _, a), (u, _, b) in itertools.combinations(words, 2)
               if overlap(a, b)]
    spilled = []
    for patch in ax.patches:  # rounded boxes hold words: a word there must fit inside
        if isinstance(patch, FancyBboxPatch):
            box = patch.get_window_extent(renderer)
            for s, _, w in words:
                centre_in = box.contains((w.x0 + w.x1) / 2, (w.y0 + w.y1) / 2)
                inside = box.x0 <= w.x0 and w.x1 <= box.x1 and box.y0 <= w.y0 and w.y1 <= box.y1
                if centre_in and not inside:
                    spilled.append(s)
    return {"smallest": min(size for _, size, _ in words), "crowded": crowded,
            "spilled": spilled, "n_words": len(words)}


def _render_checked(make: Callable[[], Diagram], monkeypatch: pytest.MonkeyPatch
                    ) -> tuple[Diagram, dict[str, str], dict[str, dict[str, Any]]]:
    """Render a diagram in every language, recording its layout on the way."""
    original, seen = diagrams.svg_from_figure, []
    monkeypatch.setattr(diagrams, "svg_from_figure",
                        lambda fig: (seen.append(_layout(fig)), original(fig))[1])
    fig = make()
    svgs = {lang: fig.make(lang) for lang in LANGUAGES}
    monkeypatch.setattr(diagrams, "svg_from_figure", original)
    return fig, svgs, dict(zip(LANGUAGES, seen))


@pytest.fixture(scope="module")
def rendered() -> dict[str, tuple[Diagram, dict[str, str], dict[str, dict[str, Any]]]]:
    with pytest.MonkeyPatch.context() as mp:
        return {name: _render_checked(make, mp) for name, make in {**DEFAULTS, **EXTREMES}.items()}


def _size_in(svg: str) -> tuple[float, float]:
    root = ET.fromstring(svg)
    return tuple(float(root.get(k).removesuffix("pt")) / 72 for k in ("width", "height"))


# --------------------------------------------------------------------------
# every diagram: valid, compact, legible, deterministic, in both languages
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", [*DEFAULTS, *EXTREMES])
def test_svg_is_valid_compact_and_fits_a_phone(rendered, name: str) -> None:
    fig, svgs, _ = rendered[name]
    assert isinstance(fig, Localized) and isinstance(fig, Diagram)
    for lang, svg in svgs.items():
        root = ET.fromstring(svg)  # parses as XML
        assert root.tag == f"{SVG_NS}svg"
        tags = {el.tag.removeprefix(SVG_NS) for el in root.iter()}
        assert "image" not in tags, f"{name} {lang}: embedded raster image"
        assert "text" not in tags, f"{name} {lang}: text should be paths"
        assert "data:image" not in svg
        width, height = _size_in(svg)
        assert 1.5 <= width <= diagrams.MAX_WIDTH_IN, f"{name} {lang}: {width:.2f} in wide"
        assert 1.5 <= height <= 10.0, f"{name} {lang}: {height:.2f} in tall"
        assert len(svg.encode()) < MAX_BYTES, f"{name} {lang}: {len(svg) // 1024} KB"


@pytest.mark.parametrize("name", [*DEFAULTS, *EXTREMES])
def test_words_are_legible_and_never_overlap(rendered, name: str) -> None:
    for lang, layout in rendered[name][2].items():
        assert layout["n_words"] >= 3
        assert layout["smallest"] >= diagrams.SMALL, f"{name} {lang}: tiny text"
        assert not layout["crowded"], f"{name} {lang}: overlapping words {layout['crowded']}"
        assert not layout["spilled"], f"{name} {lang}: words out of their box {layout['spilled']}"


@pytest.mark.parametrize("name", DEFAULTS)
def test_same_inputs_same_bytes_and_languages_differ(rendered, name: str) -> None:
    fig, svgs, _ = rendered[name]
    again = DEFAULTS[name]()  # a fresh diagram: its numbers and its drawing
    assert again.digest == fig.digest
    for lang in LANGUAGES:
        assert again.make(lang) == svgs[lang], f"{name} {lang}: not deterministic"
    assert svgs["zh"] != svgs["en"]  # the labels differ, the data do not:
    assert fig.digest and re.fullmatch(r"[0-9a-f]{16}", fig.digest)
    for lang in LANGUAGES:  # what Localized.render puts on the page
        tag = img_tag(svgs[lang], fig.alt.text(lang), digest=fig.digest)
        assert f'data-digest="{fig.digest}"' in tag


def test_a_figure_tag_has_its_svgs_size_in_css_pixels(rendered) -> None:
    """1pt is 4/3 px; an SVG without a size in points gets no size attributes."""
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="432pt" height="216.75pt" viewBox="0 0 1 1"/>'
    tag = img_tag(svg, "a figure")
    assert ' width="576" height="289" ' in tag, tag
    assert " width=" not in img_tag('<svg xmlns="http://www.w3.org/2000/svg"/>', "no size")
    for name, (fig, svgs, _) in rendered.items():  # every diagram has a size in points
        tag = img_tag(svgs["en"], fig.alt.text("en"))
        assert re.search(r' width="[1-9]\d*" height="[1-9]\d*" ', tag), (name, tag[:160])


@pytest.mark.parametrize("name", DEFAULTS)
def test_alt_text_in_both_languages(rendered, name: str) -> None:
    alt = rendered[name][0].alt
    assert alt.zh.startswith("示意图：") and alt.en.startswith("Diagram: ")
    assert CJK.search(alt.zh) and not CJK.search(alt.en)
    assert len(alt.en.split()) >= 20 and len(alt.zh) >= 40


def test_digest_follows_the_data() -> None:
    assert head_split(run_head_split()).digest == head_split(run_head_split()).digest
    assert head_split(run_head_split(T=3)).digest != head_split(run_head_split()).digest
    assert causal_mask(run_causal_mask(seed=1)).digest != causal_mask(run_causal_mask()).digest
    assert (transformer_block(run_block_order(pre_ln=True)).digest
            != transformer_block(run_block_order(pre_ln=False)).digest)


def test_printed_in_the_language_of_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    fig = causal_mask(run_causal_mask(2))
    monkeypatch.setenv("LLMLAB_LANG", "zh")
    monkeypatch.setenv("LLMLAB_OUTPUT", "markdown")  # as the build prints it
    page = str(fig)
    assert f'alt="{fig.alt.zh}"' in page and f'data-digest="{fig.digest}"' in page
    bundle, meta = fig._repr_mimebundle_()  # a notebook gets both languages
    assert set(meta["llmlab"]) == set(LANGUAGES) and meta["alt"]["en"] == fig.alt.en


def test_layout_check_sees_overlaps_and_spills() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    fig = plt.figure(figsize=(3, 2))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 3)
    ax.set_ylim(0, 2)
    ax.text(1, 1, "overlapping", fontsize=12)
    ax.text(1.1, 1, "words", fontsize=12)
    ax.add_patch(FancyBboxPatch((0.1, 0.1), 0.3, 0.3, boxstyle="round,pad=0"))
    ax.text(0.25, 0.25, "far too long for its box", ha="center", va="center", fontsize=8)
    layout = _layout(fig)
    plt.close(fig)
    assert layout["crowded"] == [("overlapping", "words")]
    assert layout["spilled"] == ["far too long for its box"]
    assert layout["smallest"] == 8


# --------------------------------------------------------------------------
# what is drawn is what the experiment computed
# --------------------------------------------------------------------------
def test_head_split_draws_its_result() -> None:
    result = run_head_split(B=3, T=2, d_model=12, n_heads=3)
    data = head_split(result).data
    assert data["shapes"] == result.shapes and data["shapes"]["transpose"] == (3, 3, 2, 4)
    for name in ("x", "split", "heads"):
        assert torch.equal(data[name], getattr(result, name))
    assert (data["round_trip"], data["view_without_contiguous_fails"]) == (True, True)


def test_causal_mask_draws_its_result() -> None:
    result = run_causal_mask(6, seed=2)
    data = causal_mask(result).data
    for name in ("mask", "scores", "weights"):
        assert torch.equal(data[name], getattr(result, name))
    assert data["weights"].triu(1).abs().max() == 0  # the zeros drawn above the diagonal


def test_attention_lookup_draws_its_result() -> None:
    result = run_attention_lookup(n_keys=5, d_k=3, d_v=2, seed=1)
    fig = attention_lookup(result)
    for name in ("query", "keys", "values", "scores", "weights", "output"):
        assert torch.equal(fig.data[name], getattr(result, name))
    best = int(result.weights.argmax())
    assert f"{float(result.weights[best]):.2f}" in fig.alt.en  # the alt names the largest weight


def test_qkv_projections_draw_its_result() -> None:
    result = run_qkv_projections(T=3, d_model=5, d_k=2)
    data = qkv_projections(result).data
    assert data["shapes"] == {"x": (3, 5), "q_proj": (3, 2), "k_proj": (3, 2), "v_proj": (3, 2)}
    assert data["weights"] == {name: (2, 5) for name in ("q_proj", "k_proj", "v_proj")}
    for name in ("q_proj", "k_proj", "v_proj"):
        assert torch.equal(data[name], result.outputs[name])


def test_rope_rotation_draws_its_result() -> None:
    result = run_rope_rotation(positions=(0, 1, 2, 5), d_k=8, pairs=(0, 3))
    data = rope_rotation(result).data
    assert data["freqs"] == result.freqs and data["pairs"] == [0, 3]
    for k in (0, 3):
        assert torch.equal(data["rotated"][k], result.rotated[k])


@pytest.mark.parametrize("pre_ln, order", [(True, ["ln1", "attn", "ln2", "ffn"]),
                                           (False, ["attn", "ln1", "ffn", "ln2"])])
def test_transformer_block_order_and_code_are_the_module_s(pre_ln: bool, order: list[str]) -> None:
    data = transformer_block(run_block_order(pre_ln=pre_ln)).data
    assert data["order"] == order
    assert data["steps"].count("add") == 2 and data["steps"].count("fork") == 2
    # the two lines of code written on the picture compute what the block computes
    torch.manual_seed(0)
    block = gpt2.TransformerBlock(d_model=8, n_heads=2, pre_ln=pre_ln)
    x0 = torch.randn(2, 3, 8)
    scope = {name: getattr(block, name) for name in ("ln1", "attn", "ln2", "ffn")}
    scope["x"] = x0
    with torch.no_grad():
        for line in data["code"]:
            exec(line, {}, scope)  # noqa: S102 - our own two lines
        torch.testing.assert_close(scope["x"], block(x0))


def test_gpt2_vs_llama_block_draws_its_result() -> None:
    result = run_block_parts()
    fig = gpt2_vs_llama_block(result)
    assert fig.data == {"gpt2": result.gpt2, "llama": result.llama}
    assert result.gpt2["norm"] in fig.alt.en and result.llama["norm"] in fig.alt.en


@pytest.mark.parametrize(("prompt_len", "new_tokens"), [(3, 3), (1, 4), (5, 1)])
def test_kv_cache_steps_draws_its_result(prompt_len: int, new_tokens: int) -> None:
    result = run_kv_cache_steps(prompt_len=prompt_len, new_tokens=new_tokens)
    d = kv_cache_steps(result)
    assert d.data["fed"] == result.fed == [prompt_len] + [1] * new_tokens
    assert d.data["key_shapes"] == result.key_shapes
    assert fmt_shape(result.key_shapes[0]) in d.alt.en and fmt_shape(result.key_shapes[-1]) in d.alt.en


# --------------------------------------------------------------------------
# bad arguments name the argument
# --------------------------------------------------------------------------
BAD = [  # a diagram takes an experiment's result and refuses one too big to stay legible
    (lambda: head_split(run_head_split(d_model=32, n_heads=4)), ValueError,
     r"result's d_model must be at most 16 so the diagram stays legible, got 32"),
    (lambda: head_split(run_head_split(B=5)), ValueError, r"result's B must be at most 4"),
    (lambda: head_split(run_head_split(T=6, d_model=12)), ValueError,
     r"result's T \* d_model must be at most 48"),
    (lambda: head_split(run_head_split(T=1, d_model=16, n_heads=16)), ValueError,
     r"result's n_heads must be at most 8"),
    (lambda: head_split(None), TypeError,
     r"result must be a HeadSplitResult \(run_head_split\(\)\), got NoneType"),
    (lambda: causal_mask(run_causal_mask(9)), ValueError, r"result's T must be at most 8"),
    (lambda: causal_mask(run_attention_lookup()), TypeError,
     r"result must be a CausalMaskResult \(run_causal_mask\(\)\), got AttentionLookupResult"),
    (lambda: attention_lookup(run_attention_lookup(n_keys=7)), ValueError,
     r"result's n_keys must be at most 6"),
    (lambda: attention_lookup(run_attention_lookup(d_k=4)), ValueError,
     r"result's d_k must be at most 3"),
    (lambda: attention_lookup(run_attention_lookup(d_v=4)), ValueError,
     r"result's d_v must be at most 3"),
    (lambda: qkv_projections(run_qkv_projections(T=9)), ValueError, r"result's T must be at most 8"),
    (lambda: qkv_projections(run_qkv_projections(d_model=13)), ValueError,
     r"result's d_model must be at most 12"),
    (lambda: qkv_projections(run_qkv_projections(d_k=13)), ValueError,
     r"result's d_k must be at most 12"),
    (lambda: rope_rotation(run_rope_rotation(positions=tuple(range(7)))), ValueError,
     r"result's number of positions must be at most 6"),
    (lambda: rope_rotation(run_rope_rotation(pairs=(0, 1, 2, 3))), ValueError,
     r"result's number of pairs must be at most 3"),
    (lambda: transformer_block(True), TypeError,
     r"result must be a BlockOrderResult \(run_block_order\(\)\), got bool"),
    (lambda: gpt2_vs_llama_block({"gpt2": {}, "llama": {}}), TypeError,
     r"result must be a BlockPartsResult \(run_block_parts\(\)\), got dict"),
    (lambda: kv_cache_steps(run_kv_cache_steps(prompt_len=6)), ValueError,
     r"result's prompt_len must be at most 5"),
    (lambda: kv_cache_steps(run_kv_cache_steps(new_tokens=5)), ValueError,
     r"result's new_tokens must be at most 4"),
    (lambda: bpe_merges("low lower"), TypeError, r"result must be a BPEStepsResult"),
    (lambda: bpe_merges(run_bpe_steps(), steps=0), ValueError, r"steps must be an int >= 1"),
    (lambda: bpe_merges(run_bpe_steps(), steps=7), ValueError, r"steps must be at most 6"),
    (lambda: bpe_merges(run_bpe_steps(num_merges=2), steps=3), ValueError,
     r"steps \(3\) must be at most the merges result made \(2\)"),
    (lambda: bpe_merges(run_bpe_steps("a b c d e f g", num_merges=0), steps=1), ValueError,
     r"steps \(1\) must be at most the merges result made \(0\)"),
    (lambda: bpe_merges(run_bpe_steps("aa bb cc dd ee ff")), ValueError,
     r"result's words must be at most 5 words .* got \['aa', 'bb'"),
    (lambda: bpe_merges(run_bpe_steps("extraordinary incomprehensible")), ValueError,
     r"20 characters in all"),
    (lambda: bpe_merges(run_bpe_steps("ab" * 8, num_merges=4)), ValueError,
     r"result's merged tokens are too long to draw in 6.5 in .*draw fewer steps"),
    (lambda: bpe_merges(run_bpe_steps("注意 注意")), ValueError, r"printable ASCII"),
]


@pytest.mark.parametrize("text, steps", [(None, 4), ("hug pug pun bun hugs", 3),
                                         ("abcd efgh ijkl mnop qrst " * 2, 6), ("ab", 1)])
def test_bpe_merges_draws_the_merges_bpe_learns(text: str | None, steps: int) -> None:
    """Row r is every word cut into its tokens after r merges: the tokens join up to
    the word, the row's new tokens are its merge's pair joined, the text's token
    count drops by the merge's count, and the merges are ``learn_merges``' own."""
    from collections import Counter

    from llmlab.tokenization import learn_merges

    result = run_bpe_steps() if text is None else run_bpe_steps(text, num_merges=steps)
    d = bpe_merges(result, steps=steps).data
    counts = Counter((text or result.text).split())
    assert d["words"] == list(counts) and d["counts"] == list(counts.values())
    learned = learn_merges({w.encode(): n for w, n in counts.items()}, steps)
    assert d["merges"] == [(a.decode(), b.decode(), n) for (a, b), n in learned]
    assert len(d["rows"]) == steps + 1 and d["rows"][0] == [list(w) for w in d["words"]]
    for r, row in enumerate(d["rows"]):
        assert ["".join(seg) for seg in row] == d["words"]
        assert d["num_tokens"][r] == sum(len(seg) * n for seg, n in zip(row, d["counts"]))
        if r:
            a, b, n = d["merges"][r - 1]
            assert d["num_tokens"][r - 1] - d["num_tokens"][r] == n
            made = sum(seg.count(a + b) * k for seg, k in zip(row, d["counts"]))
            before = sum(seg.count(a + b) * k for seg, k in zip(d["rows"][r - 1], d["counts"]))
            assert (before, made) == (0, n)  # a new token, once per occurrence of the pair
    # overlapping pairs: "aaa" holds the pair (a, a) twice, and one merge joins one of them
    d = bpe_merges(run_bpe_steps("aaa", num_merges=1), steps=1).data
    assert d["merges"] == [("a", "a", 2)] and d["num_tokens"] == [3, 2]
    assert d["rows"][1] == [["aa", "a"]]


@pytest.mark.parametrize("call, error, message", BAD)
def test_bad_arguments_are_named(call: Callable[[], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


PAGE_DIAGRAMS = {  # the diagram calls each lecture shows: the experiment, then its drawing
    "attention-from-scratch.md": ("attention_lookup(run_attention_lookup())",
                                  "qkv_projections(run_qkv_projections())",
                                  "causal_mask(run_causal_mask())"),
    "multihead-transformer-block.md": ("head_split(run_head_split())",
                                       "transformer_block(run_block_order(pre_ln=True))",
                                       "transformer_block(run_block_order(pre_ln=False))"),
    "building-blocks.md": ("gpt2_vs_llama_block(run_block_parts())",
                           "rope_rotation(run_rope_rotation())"),
    "training.md": ("kv_cache_steps(run_kv_cache_steps())",),
    "tokenization.md": ("bpe_merges(run_bpe_steps())",),
}


@pytest.mark.parametrize("lang", ("zh", "en"))
@pytest.mark.parametrize("page", sorted(PAGE_DIAGRAMS))
def test_each_diagram_in_a_figure_only_block(lang: str, page: str) -> None:
    """A diagram is a figure between paragraphs: its block prints it and shows no code."""
    from pages import fenced_blocks, read_page

    blocks = fenced_blocks(read_page(lang, f"lectures/{page}"))
    for call in PAGE_DIAGRAMS[page]:
        found = [b for b in blocks if re.search(rf"\b{re.escape(call)}", b.code)]
        assert len(found) == 1, f"{lang}/{page}: {call} in {len(found)} blocks"
        block = found[0]
        assert block.executed and block.attrs.get("html") == "on"
        assert "source" not in block.attrs, f"{lang}/{page}: {call}: the figure only, no source"


def test_a_figure_is_a_block_of_html_even_right_after_a_table() -> None:
    """Printed on the line after a table, a figure is a paragraph of its own, not a
    row of the table; and Markdown keeps that paragraph whole, as a block of HTML,
    where it would scan an inline ``<img>``'s data URI with every inline pattern
    (what made the notebook pages slow to convert). Notebook figures too."""
    import markdown
    import nbformat

    from llmlab.build import notebooks
    from llmlab.report import table

    fig = causal_mask(run_causal_mask(2))
    rows = table(["a", "b"], [(1, 2)]).render("en").rstrip("\n")
    notebook = notebooks.output_markdown(nbformat.v4.new_output(
        "display_data", data={"image/svg+xml": fig.make("en")}))
    for text in (f"{rows}\n{fig.render('en')}\n", notebook):
        md = markdown.Markdown(extensions=["tables"])
        html = md.convert(text)
        assert "<td><img" not in html
        kept = "".join(md.htmlStash.rawHtmlBlocks).strip()
        assert re.fullmatch(r'<p><img class="llmlab-figure"[^>]*></p>', kept), kept[:200]
        assert html.endswith(kept)
