"""Cross-references between lectures: the reader can follow the course both ways.

The strict build already fails on a broken link or anchor (mkdocs validation is
set to warn and the build runs with ``--strict``; see
``test_site.test_strict_build_fails_loudly``). This file checks that the links a
reader needs *exist*, from the Markdown:

* the lecture graph: each lecture links to the lectures it builds on and the one
  it leads to (attention-from-scratch -> multihead-transformer-block ->
  building-blocks -> tokenization -> training, and back);
* section-level references where a concept is reused, in each language with its
  own anchors (Chinese slugs on zh pages, English slugs on en pages), placed in
  the section that reuses the concept;
* every anchor used by a lecture link is a heading slug of the target page.
"""

from __future__ import annotations

import re

import pytest
from pymdownx.slugs import slugify

from pages import LANGS, lecture_pages, markdown_links, read_page, strip_code

SLUG = slugify(case="lower")
LECTURES = [p.removeprefix("lectures/") for p in lecture_pages()]

# page -> pages it must link to (builds on, leads to)
GRAPH = {
    "attention-from-scratch.md": {"multihead-transformer-block.md", "building-blocks.md"},
    "multihead-transformer-block.md": {"attention-from-scratch.md", "building-blocks.md"},
    "building-blocks.md": {"attention-from-scratch.md", "multihead-transformer-block.md",
                           "tokenization.md", "training.md"},
    "tokenization.md": {"building-blocks.md", "training.md"},
    "training.md": {"building-blocks.md", "tokenization.md", "distributed.md"},
    # builds on the model, its parameter counts and the training step
    "distributed.md": {"building-blocks.md", "multihead-transformer-block.md", "training.md"},
}

# (page, section heading that reuses a concept, link target "page#anchor"), per language
SECTION_LINKS = {
    "zh": [
        ("building-blocks.md", "带 RoPE 的因果多头自注意力",
         "attention-from-scratch.md#7-因果掩码的两种做法"),
        ("building-blocks.md", "带 RoPE 的因果多头自注意力",
         "attention-from-scratch.md#11-多头注意力的两种写法"),
        ("attention-from-scratch.md", "7. 因果掩码的两种做法",
         "building-blocks.md#带-rope-的因果多头自注意力"),
        ("building-blocks.md", "LayerNorm 与 RMSNorm",
         "multihead-transformer-block.md#层归一化"),
        ("multihead-transformer-block.md", "层归一化",
         "building-blocks.md#layernorm-与-rmsnorm"),
        ("multihead-transformer-block.md", "多头注意力",
         "attention-from-scratch.md#11-多头注意力的两种写法"),
        ("attention-from-scratch.md", "11. 多头注意力的两种写法",
         "multihead-transformer-block.md#多头注意力"),
        ("tokenization.md", "文档边界", "building-blocks.md#线性层与嵌入层"),
        ("training.md", "数据与训练循环", "building-blocks.md#完整模型"),
        ("training.md", "数据与训练循环", "tokenization.md#在莎士比亚和唐诗上训练"),
        ("training.md", "采样：从分布到文字", "tokenization.md#空格大小写数字"),
        ("training.md", "KV 缓存", "building-blocks.md#带-rope-的因果多头自注意力"),
        ("distributed.md", "公式：6N + 12·L·d·T", "building-blocks.md#完整模型"),
        ("distributed.md", "放大到真实的模型",
         "multihead-transformer-block.md#参数量每块-12d2--13d"),
        ("distributed.md", "训练一次要花多少", "building-blocks.md#flops-不等于运行时间"),
    ],
    "en": [
        ("building-blocks.md", "Causal multi-head self-attention with RoPE",
         "attention-from-scratch.md#7-causal-mask-two-ways"),
        ("building-blocks.md", "Causal multi-head self-attention with RoPE",
         "attention-from-scratch.md#11-multi-head-two-ways"),
        ("attention-from-scratch.md", "7. Causal mask, two ways",
         "building-blocks.md#causal-multi-head-self-attention-with-rope"),
        ("building-blocks.md", "LayerNorm and RMSNorm",
         "multihead-transformer-block.md#layer-normalisation"),
        ("multihead-transformer-block.md", "Layer normalisation",
         "building-blocks.md#layernorm-and-rmsnorm"),
        ("multihead-transformer-block.md", "Multi-head attention",
         "attention-from-scratch.md#11-multi-head-two-ways"),
        ("attention-from-scratch.md", "11. Multi-head, two ways",
         "multihead-transformer-block.md#multi-head-attention"),
        ("tokenization.md", "Document boundaries",
         "building-blocks.md#linear-and-embedding-layers"),
        ("training.md", "The data and the loop", "building-blocks.md#the-whole-model"),
        ("training.md", "The data and the loop",
         "tokenization.md#training-on-shakespeare-and-the-tang-poems"),
        ("training.md", "Sampling: from a distribution to text",
         "tokenization.md#spaces-case-digits"),
        ("training.md", "The KV cache",
         "building-blocks.md#causal-multi-head-self-attention-with-rope"),
        ("distributed.md", "The formula: 6N + 12·L·d·T",
         "building-blocks.md#the-whole-model"),
        ("distributed.md", "Scaled up to real models",
         "multihead-transformer-block.md#parameters-12d2--13d-per-block"),
        ("distributed.md", "What training costs", "building-blocks.md#flops-are-not-runtime"),
    ],
}


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


def test_the_graph_covers_every_lecture() -> None:
    assert set(GRAPH) == set(LECTURES), "update GRAPH when a lecture is added"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", sorted(GRAPH))
def test_lecture_links_to_what_it_builds_on_and_leads_to(lang: str, page: str) -> None:
    linked = {t.split("#")[0] for t in _lecture_links(lang, page)}
    missing = GRAPH[page] - linked
    assert not missing, f"{lang}/lectures/{page} does not link to {sorted(missing)}"


@pytest.mark.parametrize("lang", LANGS)
def test_reused_concepts_link_to_their_section(lang: str) -> None:
    missing = []
    for page, heading, target in SECTION_LINKS[lang]:
        section = _section(read_page(lang, f"lectures/{page}"), heading)
        if target not in [t for _, t in markdown_links(section)]:
            missing.append(f"{lang}/lectures/{page} § {heading!r} -> {target}")
    assert not missing, "missing cross-references:\n" + "\n".join(missing)
    assert len(SECTION_LINKS["zh"]) == len(SECTION_LINKS["en"])


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
