"""Conceptual diagrams, drawn from the real code, in the reader's language.

Each function takes what an experiment computed and returns a :class:`Diagram`:
a :func:`llmlab.report.figure` (SVG made on demand in the page's language, text
as paths, the same bytes on every build) that also keeps in :attr:`Diagram.data`
the shapes and numbers it drew. This module only draws: the sizes and numbers
come from running the package's own code in :mod:`llmlab.experiments` (the head
split runs ``view`` and ``transpose`` in :func:`~llmlab.experiments.multihead.run_head_split`,
the causal mask is :func:`~llmlab.experiments.attention.run_causal_mask`, the
rotations :func:`~llmlab.experiments.building_blocks.run_rope_rotation`, the
blocks' order and parts :func:`~llmlab.experiments.multihead.run_block_order` and
:func:`~llmlab.experiments.building_blocks.run_block_parts`, the KV cache
:func:`~llmlab.experiments.training.run_kv_cache_steps`, the BPE merges
:func:`~llmlab.experiments.tokenization.run_bpe_steps`), and a page calls the
experiment, then the diagram: ``diagrams.causal_mask(run_causal_mask())``. A
diagram refuses a result too big to stay legible on a phone.

Taught on: "Self-attention from scratch" (lookup, projections, the causal mask),
"Multi-head attention and the Transformer block (GPT-2 style)" (head split, Pre-LN
vs Post-LN), "The building blocks of a modern (Llama-style) Transformer" (GPT-2 vs
Llama, RoPE), "Tokenization" (BPE merges) and "Training and generating text" (the
KV cache).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llmlab.checks import check_int, check_type
from llmlab.experiments.attention import (
    AttentionLookupResult,
    CausalMaskResult,
    QKVProjectionsResult,
)
from llmlab.experiments.building_blocks import BlockPartsResult, RopeRotationResult
from llmlab.experiments.multihead import BlockOrderResult, HeadSplitResult
from llmlab.experiments.tokenization import BPEStepsResult
from llmlab.experiments.training import KVCacheStepsResult
from llmlab.report import Label, Localized, _style, figure, fmt_shape, label, svg_from_figure, text

__all__ = [
    "Diagram",
    "attention_lookup",
    "bpe_merges",
    "causal_mask",
    "gpt2_vs_llama_block",
    "head_split",
    "kv_cache_steps",
    "qkv_projections",
    "rope_rotation",
    "transformer_block",
]

# Sizes in points. The page shows a figure at its own width (at most ~6 in) and
# scales it down on a phone, so nothing is smaller than SMALL.
FONT = 11.5
SMALL = 10.0
MAX_WIDTH_IN = 6.5  # widest a diagram may be, in inches (tests check the SVG)

INK = "#222222"
MUTED = "#666666"
QUERY, KEY, VALUE = "#f28e2b", "#4e79a7", "#59a14f"
NORM, ATTN, FFN, EMBED = "#fbe7a1", "#fdd9b5", "#cfe2f3", "#e6e6e6"
HEADS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2",
         "#edc948", "#9c755f")


class Diagram(Localized):
    """A figure (:class:`~llmlab.report.Localized`) that keeps what it drew.

    Attributes:
        data: The shapes, numbers and names the picture shows, computed by the
            real code; the figure's ``digest`` is a hash of it.
    """

    def __init__(self, make_svg: Callable[[str], str], alt: Label, data: Mapping[str, Any]):
        made = figure(make_svg, alt, data=data)
        super().__init__(made.make, made.alt, made.digest)
        self.data = data


# --------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------
def _size(name: str, value: object, maximum: int, minimum: int = 1) -> int:
    """A positive int that keeps the picture readable on a phone."""
    value = check_int(name, value, minimum=minimum)
    if value > maximum:
        raise ValueError(
            f"{name} must be at most {maximum} so the diagram stays legible, got {value}")
    return value


def _result(result: object, cls: type, experiment: str) -> Any:
    """``result`` if it is what ``experiment`` returns."""
    article = "an" if cls.__name__[0] in "AEIOU" else "a"
    return check_type("result", result, cls, expected=f"{article} {cls.__name__} ({experiment}())")


# --------------------------------------------------------------------------
# drawing: one axis in inches (x right, y up), no frame
# --------------------------------------------------------------------------
def _canvas(lang: str, width: float, height: float, draw: Callable[[Any, Callable], None]) -> str:
    """SVG of ``draw(ax, t)`` on a ``width`` x ``height`` inch canvas, cropped to what it drew.

    One data unit is one inch, so sizes and gaps read the same everywhere; ``t``
    turns a :class:`~llmlab.report.Label` into the words of ``lang``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.transforms import Bbox

    rc = {**_style(lang), "font.size": FONT, "mathtext.fontset": "dejavusans"}
    with matplotlib.rc_context(rc):
        fig = plt.figure(figsize=(width, height), dpi=100)
        fig.patch.set_facecolor("white")
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
        ax.set_xlim(0, width)
        ax.set_ylim(0, height)
        ax.set_aspect("equal")
        ax.axis("off")
        draw(ax, lambda words: text(words, lang))
        # crop to the drawing (a tight bounding box never shrinks below the axes)
        renderer = fig.canvas.get_renderer()
        drawn = [a for a in (*ax.patches, *ax.lines, *ax.texts) if a.get_visible()]
        for artist in drawn:
            artist.set_clip_on(False)
        box = Bbox.union([a.get_window_extent(renderer) for a in drawn]).transformed(
            ax.transData.inverted())
        fig.set_size_inches(box.width, box.height)
        ax.set_xlim(box.x0, box.x1)
        ax.set_ylim(box.y0, box.y1)
        return _compact(svg_from_figure(fig))


def _compact(svg: str) -> str:
    """Matplotlib's SVG without its indentation and comments (about a fifth of the bytes).

    Safe because every word is a path: no whitespace in the file is content.
    """
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r"\s*\n\s*", " ", svg)
    return re.sub(r">\s+<", "><", svg).strip() + "\n"


def _write(ax: Any, x: float, y: float, s: str, *, size: float = FONT, mono: bool = False,
           ha: str = "center", va: str = "center", color: str = INK, **kwargs: Any) -> None:
    family = {"family": "monospace"} if mono else {}
    ax.text(x, y, s, fontsize=size, ha=ha, va=va, color=color, zorder=4, **family, **kwargs)


def _box(ax: Any, x: float, y: float, w: float, h: float, face: str, *,
         edge: str = "#555555", lw: float = 1.0) -> None:
    """A rounded box for words (the only kind of patch that holds text)."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.07",
                                facecolor=face, edgecolor=edge, linewidth=lw, zorder=2))


def _rect(ax: Any, x: float, y: float, w: float, h: float, face: str, *,
          edge: str = "none", lw: float = 1.0, zorder: float = 2) -> None:
    """A plain rectangle: a bar, a frame, a card behind a grid."""
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, linewidth=lw,
                           zorder=zorder))


def _arrow(ax: Any, start: tuple[float, float], end: tuple[float, float], *,
           color: str = INK, lw: float = 1.3, style: str = "-|>") -> None:
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=11,
                                 linewidth=lw, color=color, shrinkA=0, shrinkB=0, zorder=3))


def _line(ax: Any, xs: Sequence[float], ys: Sequence[float], *, color: str = INK,
          lw: float = 1.3, **kwargs: Any) -> None:
    ax.plot(list(xs), list(ys), color=color, linewidth=lw, solid_capstyle="butt",
            zorder=3, **kwargs)


def _cell(ax: Any, x: float, y: float, size: float, face: str, *, edge: str = "white",
          lw: float = 1.0, alpha: float = 1.0) -> None:
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), size, size, facecolor=face, edgecolor=edge,
                           linewidth=lw, alpha=alpha, zorder=2))


def _tint(colour: str, amount: float) -> tuple[float, float, float]:
    """``colour`` mixed with white: ``amount`` 0 is white, 1 the colour itself."""
    from matplotlib.colors import to_rgb

    return tuple(1 - amount * (1 - c) for c in to_rgb(colour))  # type: ignore[return-value]


def _vector(ax: Any, x: float, y: float, values: Sequence[float], size: float,
            colour: str, *, shade: float = 0.25) -> None:
    """A row of cells, each showing one number (one decimal)."""
    for i, v in enumerate(values):
        _cell(ax, x + i * size, y, size, _tint(colour, shade), edge=colour, lw=1.0)
        _write(ax, x + (i + 0.5) * size, y + size / 2, _num(v), size=SMALL)


def _num(v: float, digits: int = 1) -> str:
    out = f"{float(v):.{digits}f}"
    out = out[1:] if out.startswith("-") and float(out) == 0 else out
    return out.replace("-", "−")  # a real minus sign


# --------------------------------------------------------------------------
# attention as a weighted lookup
# --------------------------------------------------------------------------
def attention_lookup(result: AttentionLookupResult) -> Diagram:
    """One query looks up ``n_keys`` (key, value) pairs: scores, softmax weights, output.

    Args:
        result: What :func:`~llmlab.experiments.attention.run_attention_lookup`
            returned, with 2 to 6 keys and ``d_k``, ``d_v`` 1 to 3 (one cell per number).
    """
    _result(result, AttentionLookupResult, "run_attention_lookup")
    q, keys, values = result.query, result.keys, result.values
    scores, weights, out = result.scores, result.weights, result.output
    n_keys = _size("result's n_keys", keys.shape[0], 6, minimum=2)
    d_k = _size("result's d_k", keys.shape[1], 3)
    d_v = _size("result's d_v", values.shape[1], 3)
    data = {"query": q, "keys": keys, "values": values, "scores": scores,
            "weights": weights, "output": out}
    best = int(weights.argmax())

    c, row, bar_len = 0.4, 0.54, 1.2  # cell size, row pitch, longest bar (weight 1)
    x_key = 0.5
    x_score = x_key + d_k * c + 0.6  # centre of the score column
    x_bar = x_score + 0.6
    x_val = x_bar + bar_len + 0.75
    y_query = n_keys * row + 2.0  # bottom of the query's cells

    def draw(ax: Any, t: Callable) -> None:
        # the query, above the keys it is compared with
        _write(ax, x_key - 0.12, y_query + c / 2, t(label("查询 $q$", "query $q$")), ha="right")
        _vector(ax, x_key, y_query, q.tolist(), c, QUERY)
        y_head = y_query - 0.4
        heads = [(x_key + d_k * c / 2, label("键 $k_i$", "key $k_i$")),
                 (x_score, label("得分", "score")),
                 (x_bar + bar_len / 2, label("权重 $w_i$", "weight $w_i$")),
                 (x_val + d_v * c / 2, label("值 $v_i$", "value $v_i$"))]
        for x, words in heads:
            _write(ax, x, y_head, t(words), color=MUTED)
        _write(ax, x_score, y_head - 0.32, r"$q\cdot k_i/\sqrt{d_k}$", size=SMALL, color=MUTED)
        _write(ax, x_bar + bar_len / 2, y_head - 0.32, "softmax", size=SMALL, color=MUTED,
               mono=True)
        y_rows = y_head - 0.55  # top of the first row
        for i in range(n_keys):
            y = y_rows - (i + 1) * row + (row - c) / 2
            mid = y + c / 2
            _write(ax, x_key - 0.12, mid, f"$k_{i + 1}$", ha="right")
            _vector(ax, x_key, y, keys[i].tolist(), c, KEY)
            _write(ax, x_score, mid, _num(scores[i], 2))
            w = float(weights[i])
            _rect(ax, x_bar, mid - 0.11, max(bar_len * w, 0.02), 0.22,
                  QUERY if i == best else _tint(QUERY, 0.55))
            _write(ax, x_bar + bar_len * w + 0.07, mid, _num(w, 2), ha="left", size=SMALL)
            _write(ax, x_val - 0.12, mid, f"$v_{i + 1}$", ha="right")
            _vector(ax, x_val, y, values[i].tolist(), c, VALUE, shade=0.1 + 0.6 * w)
        # the output: the values summed with the weights
        y_last = y_rows - n_keys * row + (row - c) / 2
        y_out = y_last - 0.75
        _arrow(ax, (x_val + d_v * c / 2, y_last - 0.06), (x_val + d_v * c / 2, y_out + c + 0.06))
        _vector(ax, x_val, y_out, out.tolist(), c, VALUE, shade=0.7)
        _write(ax, x_val - 0.12, y_out + c / 2,
               t(label(r"输出 $\Sigma_i\, w_i v_i$", r"output $\Sigma_i\, w_i v_i$")), ha="right")

    width, height = x_val + d_v * c + 0.5, y_query + c + 0.3
    w = weights.tolist()
    alt = label(
        f"示意图：一个查询 q 与 {n_keys} 个键逐一做点积并除以 √{d_k}，得到得分；softmax "
        f"把得分变成和为 1 的权重（最大的是第 {best + 1} 个，{w[best]:.2f}）；输出是各个值按"
        "权重相加的结果。",
        f"Diagram: a query q is compared with {n_keys} keys by dot products divided by "
        f"√{d_k}; softmax turns the scores into weights that sum to 1 (the largest, "
        f"{w[best]:.2f}, for key {best + 1}); the output is the values summed with "
        "those weights.")
    return Diagram(lambda lang: _canvas(lang, width, height, draw), alt, data)


# --------------------------------------------------------------------------
# Q/K/V projections
# --------------------------------------------------------------------------
def qkv_projections(result: QKVProjectionsResult) -> Diagram:
    """The input ``x`` ``(T, d_model)`` through ``q_proj``, ``k_proj``, ``v_proj``.

    Each projection is a :class:`llmlab.layers.Linear` ``(d_model -> d_k)`` (the
    names and weight layout of the Llama-style attention); every cell's colour is
    a real entry of ``x``, ``Q``, ``K`` or ``V``.

    Args:
        result: What :func:`~llmlab.experiments.attention.run_qkv_projections`
            returned, with ``T`` 1 to 8 and ``d_model``, ``d_k`` 1 to 12.
    """
    _result(result, QKVProjectionsResult, "run_qkv_projections")
    x, outs, weight_shapes = result.x, result.outputs, result.weight_shapes
    T, d_model = _size("result's T", x.shape[0], 8), _size("result's d_model", x.shape[1], 12)
    d_k = _size("result's d_k", outs["q_proj"].shape[1], 12)
    data = {"x": x, **outs, "shapes": {"x": tuple(x.shape), **{
        name: tuple(out.shape) for name, out in outs.items()}}, "weights": weight_shapes}

    c = min(0.22, 1.4 / max(d_model, d_k))  # cell size
    branch = max(T * c + 0.55, 1.05)  # vertical distance between the three branches
    x_in, box_w = 0.1, 1.25
    x_box = x_in + d_model * c + 0.65
    x_out = x_box + box_w + 0.45
    width = x_out + d_k * c + 1.55
    y_mid = 0.35 + branch + T * c / 2 + 0.15
    height = y_mid + branch + T * c / 2 + 0.35
    scale = float(max(x.abs().max(), *(o.abs().max() for o in outs.values())))

    def grid(ax: Any, x0: float, y_centre: float, m: Any, edge: str) -> None:
        from matplotlib import colormaps

        cmap = colormaps["RdBu_r"]
        top = y_centre + m.shape[0] * c / 2
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                face = cmap(0.5 + 0.4 * float(m[i, j]) / scale)
                _cell(ax, x0 + j * c, top - (i + 1) * c, c, face, edge="white", lw=0.6)
        _rect(ax, x0, top - m.shape[0] * c, m.shape[1] * c, m.shape[0] * c, "none",
              edge=edge, lw=1.4, zorder=3)

    roles = {"q_proj": ("Q", "W_Q", QUERY, label("查询", "queries")),
             "k_proj": ("K", "W_K", KEY, label("键", "keys")),
             "v_proj": ("V", "W_V", VALUE, label("值", "values"))}

    def draw(ax: Any, t: Callable) -> None:
        grid(ax, x_in, y_mid, x, INK)
        _write(ax, x_in + d_model * c / 2, y_mid + T * c / 2 + 0.2, f"x {fmt_shape(x.shape)}",
               mono=True)
        _write(ax, x_in + d_model * c / 2, y_mid - T * c / 2 - 0.22,
               t(label("每行一个 token", "one row per token")), size=SMALL, color=MUTED)
        fan = x_in + d_model * c + 0.12
        for k, (name, out) in enumerate(outs.items()):
            sym, w_name, colour, role = roles[name]
            y = y_mid + (1 - k) * branch
            _line(ax, [fan, fan + 0.2], [y_mid, y_mid])
            _arrow(ax, (fan + 0.2, y_mid), (x_box - 0.04, y))
            _box(ax, x_box, y - 0.3, box_w, 0.6, _tint(colour, 0.3), edge=colour)
            _write(ax, x_box + box_w / 2, y + 0.12, name, mono=True)
            _write(ax, x_box + box_w / 2, y - 0.14, f"{w_name} {fmt_shape(weight_shapes[name])}",
                   size=SMALL, mono=True)
            _arrow(ax, (x_box + box_w + 0.04, y), (x_out - 0.08, y))
            grid(ax, x_out, y, out, colour)
            right = x_out + d_k * c + 0.12
            _write(ax, right, y + 0.12, f"${sym} = x\\,{w_name}^\\top$", ha="left")
            _write(ax, right, y - 0.16, f"{t(role)} {fmt_shape(out.shape)}", ha="left",
                   size=SMALL)

    alt = label(
        f"示意图：输入 x 的形状是 {fmt_shape(x.shape)}（每行一个 token），分别经过三个线性层 "
        f"q_proj、k_proj、v_proj（权重形状都是 {fmt_shape(weight_shapes['q_proj'])}），"
        f"得到查询 Q、键 K、值 V，形状都是 {fmt_shape(outs['q_proj'].shape)}；"
        "格子的颜色是真实的数值。",
        f"Diagram: the input x of shape {fmt_shape(x.shape)} (one row per token) goes "
        "through three linear layers q_proj, k_proj and v_proj (each weight "
        f"{fmt_shape(weight_shapes['q_proj'])}), giving queries Q, keys K and values V, "
        f"each {fmt_shape(outs['q_proj'].shape)}; cell colours are the actual numbers.")
    return Diagram(lambda lang: _canvas(lang, width, height, draw), alt, data)


# --------------------------------------------------------------------------
# the causal mask
# --------------------------------------------------------------------------
def causal_mask(result: CausalMaskResult) -> Diagram:
    """:func:`llmlab.functional.causal_mask` ``(T, T)`` and the weights it leaves.

    Left: the boolean mask (True: query ``i`` may attend to key ``j``). Right: the
    softmax of seeded random scores with the masked ones set to ``−∞``: zeros above
    the diagonal, each row summing to 1.

    Args:
        result: What :func:`~llmlab.experiments.attention.run_causal_mask` returned,
            for ``T`` 2 to 8 positions.
    """
    _result(result, CausalMaskResult, "run_causal_mask")
    mask, scores, weights = result.mask, result.scores, result.weights
    T = _size("result's T", mask.shape[0], 8, minimum=2)
    data = {"mask": mask, "scores": scores, "weights": weights}

    c = min(0.44, 2.45 / T)  # two panels fit in 6.5 in
    panel = T * c
    x_left, gap = 0.62, 0.75
    x_right = x_left + panel + gap
    width = x_right + panel + 0.1
    y_grid = 0.95  # bottom of the grids
    height = y_grid + panel + 1.05

    def axes(ax: Any, x0: float, t: Callable, rows: bool) -> None:
        top = y_grid + panel
        for k in range(T):
            _write(ax, x0 + (k + 0.5) * c, top + 0.14, str(k), size=SMALL, color=MUTED)
            if rows:
                _write(ax, x0 - 0.12, top - (k + 0.5) * c, str(k), size=SMALL, color=MUTED,
                       ha="right")
        _write(ax, x0 + panel / 2, top + 0.4, t(label("键的位置 j", "key position j")),
               size=SMALL, color=MUTED)

    def draw(ax: Any, t: Callable) -> None:
        from matplotlib import colormaps

        blues = colormaps["Blues"]
        top = y_grid + panel
        axes(ax, x_left, t, rows=True)
        axes(ax, x_right, t, rows=False)
        _write(ax, x_left - 0.45, y_grid + panel / 2, t(label("查询的位置 i", "query position i")),
               size=SMALL, color=MUTED, rotation=90)
        for i in range(T):
            for j in range(T):
                y = top - (i + 1) * c
                allowed = bool(mask[i, j])
                _cell(ax, x_left + j * c, y, c, KEY if allowed else "#eeeeee")
                w = float(weights[i, j])
                _cell(ax, x_right + j * c, y, c, blues(0.15 + 0.75 * w) if allowed else "#eeeeee")
                colour = "white" if w > 0.55 else (INK if allowed else "#999999")
                _write(ax, x_right + (j + 0.5) * c, y + c / 2,
                       f"{w:.2f}".lstrip("0") if allowed and w < 1 else ("1" if allowed else "0"),
                       size=SMALL, color=colour)
        _write(ax, x_left + panel / 2, y_grid - 0.28, f"causal_mask({T})", mono=True)
        _write(ax, x_right + panel / 2, y_grid - 0.28,
               t(label("softmax 之后的权重", "weights after softmax")))
        # legend: what the two colours of the mask mean
        y = y_grid - 0.68
        _cell(ax, x_left, y - 0.09, 0.18, KEY)
        _write(ax, x_left + 0.26, y, t(label("True：可以看", "True: may attend")), ha="left",
               size=SMALL)
        _cell(ax, x_right - 0.3, y - 0.09, 0.18, "#eeeeee", edge="#999999", lw=0.6)
        _write(ax, x_right - 0.04, y, t(label("False：得分设为 −∞，权重为 0",
                                             "False: score set to −∞, weight 0")),
               ha="left", size=SMALL)

    alt = label(
        f"示意图：左边是 causal_mask({T})，一个 {T}×{T} 的下三角布尔矩阵，第 i 行只有键 0 到 i "
        "为 True；右边是把被屏蔽的得分设为 −∞ 后做 softmax 得到的权重：对角线以上全是 0，"
        "每一行之和为 1。",
        f"Diagram: on the left causal_mask({T}), a {T}×{T} lower-triangular boolean matrix "
        "whose row i is True for keys 0 to i only; on the right the softmax weights after "
        "the masked scores are set to −∞: zeros above the diagonal, each row summing to 1.")
    return Diagram(lambda lang: _canvas(lang, width, height, draw), alt, data)


# --------------------------------------------------------------------------
# splitting D into heads and merging them back
# --------------------------------------------------------------------------
def head_split(result: HeadSplitResult) -> Diagram:
    """``(B, T, D)`` -> ``view`` -> ``transpose`` into heads, and the merge back.

    Draws sequence 0 at each stage of
    :func:`~llmlab.experiments.multihead.run_head_split` (the calls of
    :meth:`llmlab.models.gpt2.MultiHeadSelfAttention.forward_steps`, on elements
    numbered ``t·D + d``) with the shape ``tuple(shape)`` gave; the batch's other
    sequences are the cards behind.

    Args:
        result: What ``run_head_split`` returned, with ``B`` 1 to 4, ``T`` 1 to 6,
            ``D`` 1 to 16, ``H`` 1 to 8 and ``T * D`` at most 48 (each stage draws
            that many numbered cells).
    """
    _result(result, HeadSplitResult, "run_head_split")
    shapes = result.shapes
    B, T = _size("result's B", shapes["x"][0], 4), _size("result's T", shapes["x"][1], 6)
    D = _size("result's d_model", shapes["x"][2], 16)
    H = _size("result's n_heads", shapes["view"][2], 8)
    if T * D > 48:
        raise ValueError(f"result's T * d_model must be at most 48 so the diagram stays "
                         f"legible, got {T} * {D} = {T * D}")
    Dh = D // H
    x, split, heads = result.x, result.split, result.heads  # sequence 0
    view_fails = result.view_without_contiguous_fails
    data = {"shapes": shapes, "x": x, "split": split, "heads": heads,
            "back_contiguous": result.back_contiguous, "view_without_contiguous_fails": view_fails,
            "round_trip": result.round_trip}

    c = 0.3 if D <= 12 else 0.26  # cell size
    shadow = 0.07 * (min(B, 4) - 1)  # the other sequences, as cards behind
    gap_view, gap_heads = 0.45 * c, (1.4 if H <= 4 else 0.7) * c
    w_stage = [D * c, D * c + (H - 1) * gap_view, D * c + (H - 1) * gap_heads]
    arrow_h = 0.85
    block = T * c + 0.75  # a stage: its title and its cards
    width = max(5.3, max(w_stage) + 2 * shadow + 0.4)
    cx = width / 2
    height = 3 * block + 2 * arrow_h + 0.75

    def cards(ax: Any, x0: float, top: float, cells: Any, columns: list[float]) -> None:
        """``cells`` (T, n) at the x offsets ``columns``, head colours, B cards deep."""
        n = cells.shape[1]
        for b in range(min(B, 4) - 1, 0, -1):  # the batch's other sequences
            d = 0.07 * b
            _rect(ax, x0 + columns[0] + d, top - T * c + d, columns[-1] + c - columns[0],
                  T * c, "#f4f4f4", edge="#aaaaaa", lw=0.8, zorder=1.5)
        for i in range(T):
            for j in range(n):
                value = int(cells[i, j])
                head = (value % D) // Dh
                _cell(ax, x0 + columns[j], top - (i + 1) * c, c, _tint(HEADS[head], 0.35),
                      edge="white", lw=1.0)
                _write(ax, x0 + columns[j] + c / 2, top - (i + 0.5) * c, str(value), size=SMALL)

    def stage_top(k: int) -> float:
        return height - 0.15 - k * (block + arrow_h)

    def title(ax: Any, k: int, name: str, dims: str, shape: tuple[int, ...]) -> None:
        _write(ax, cx, stage_top(k) - 0.15, f"{name}{dims} = {fmt_shape(shape)}", mono=True)

    def draw(ax: Any, t: Callable) -> None:
        # stage 0: x, one card per sequence
        title(ax, 0, "x ", "(B, T, D)", shapes["x"])
        top0 = stage_top(0) - 0.5
        cards(ax, cx - w_stage[0] / 2, top0, x, [j * c for j in range(D)])
        # stage 1: each row cut into H groups of Dh
        title(ax, 1, "", "(B, T, H, D // H)", shapes["view"])
        top1 = stage_top(1) - 0.5
        cols1 = [j * c + (j // Dh) * gap_view for j in range(D)]
        cards(ax, cx - w_stage[1] / 2, top1, split.reshape(T, D), cols1)
        # stage 2: one (T, Dh) matrix per head
        title(ax, 2, "", "(B, H, T, D // H)", shapes["transpose"])
        top2 = stage_top(2) - 0.5
        x2 = cx - w_stage[2] / 2
        for h in range(H):
            left = x2 + h * (Dh * c + gap_heads)
            cards(ax, left, top2, heads[h], [j * c for j in range(Dh)])
            _write(ax, left + Dh * c / 2, top2 - T * c - 0.2,
                   t(label(f"头 {h}", f"head {h}")), size=SMALL, color=MUTED)
        # the arrows: split going down on the left, merge going up on the right
        calls = [(".view(B, T, H, D // H)", ".contiguous().view(B, T, D)"),
                 (".transpose(1, 2)", ".transpose(1, 2)")]
        bottoms = [top0 - T * c, top1 - T * c]
        for k, (down, up) in enumerate(calls):
            y_from, y_to = bottoms[k] - 0.12, stage_top(k + 1) + 0.02
            _arrow(ax, (cx - 0.22, y_from), (cx - 0.22, y_to), color=INK)
            _arrow(ax, (cx + 0.22, y_to), (cx + 0.22, y_from), color=MUTED)
            mid = (y_from + y_to) / 2
            _write(ax, cx - 0.38, mid + 0.14, down, ha="right", size=SMALL, mono=True)
            _write(ax, cx + 0.38, mid + 0.14, up, ha="left", size=SMALL, mono=True,
                   color=MUTED)
            if k == 0:
                _write(ax, cx - 0.38, mid - 0.16, t(label("拆成头", "split into heads")),
                       ha="right", size=SMALL)
                _write(ax, cx + 0.38, mid - 0.16, t(label("合并各头", "merge the heads")),
                       ha="left", size=SMALL, color=MUTED)
        note = (label("transpose 只改步长、不搬数据：不先 .contiguous()，.view 会报错",
                      "transpose changes strides, not memory: .view fails without "
                      ".contiguous()") if view_fails else
                label("这里 transpose 之后仍然连续，.view 不先 .contiguous() 也行",
                      "here the tensor stays contiguous, so .view works even without "
                      ".contiguous()"))
        _write(ax, cx, 0.2, t(note), size=SMALL, color=MUTED)

    alt = label(
        f"示意图：形状为 {fmt_shape(shapes['x'])} 的 x 拆成 {H} 个头：.view(B, T, H, D // H) "
        f"把每一行切成 {H} 段，得到 {fmt_shape(shapes['view'])}；.transpose(1, 2) 把头的维度"
        f"提到前面，得到 {fmt_shape(shapes['transpose'])}，每个头一个 {T}×{Dh} 的矩阵。"
        "合并反过来：.transpose(1, 2)，再 .contiguous().view(B, T, D)。格子里的数字是元素在"
        "序列中的编号 t·D + d，颜色表示它属于哪个头。",
        f"Diagram: x of shape {fmt_shape(shapes['x'])} is split into {H} heads: "
        f".view(B, T, H, D // H) cuts each row into {H} pieces, giving "
        f"{fmt_shape(shapes['view'])}; .transpose(1, 2) moves the head axis forward, giving "
        f"{fmt_shape(shapes['transpose'])}, one {T}×{Dh} matrix per head. The merge runs "
        "backwards: .transpose(1, 2), then .contiguous().view(B, T, D). The numbers in "
        "the cells are each element's index t·D + d in its sequence; the colour is its head.")
    return Diagram(lambda lang: _canvas(lang, width, height, draw), alt, data)


# --------------------------------------------------------------------------
# the Transformer block: Pre-LN and Post-LN
# --------------------------------------------------------------------------
_SUBLAYER = {
    "ln1": ("LayerNorm", NORM), "ln2": ("LayerNorm", NORM),
    "attn": (label("多头注意力", "multi-head attention"), ATTN),
    "ffn": ("MLP", FFN),
}


def transformer_block(result: BlockOrderResult) -> Diagram:
    """The GPT-2-style block, Pre-LN (GPT-2) or Post-LN (2017).

    The order of ``ln1``, ``attn``, ``ln2``, ``ffn`` is the one
    :func:`~llmlab.experiments.multihead.run_block_order` recorded with forward
    hooks on a real :class:`llmlab.models.gpt2.TransformerBlock`; the picture adds
    the residual connections around them and the two lines of code they compute.

    Args:
        result: What ``run_block_order`` returned.
    """
    _result(result, BlockOrderResult, "run_block_order")
    pre_ln, order = result.pre_ln, list(result.order)
    code = (["x = x + attn(ln1(x))", "x = x + ffn(ln2(x))"] if pre_ln else
            ["x = ln1(x + attn(x))", "x = ln2(x + ffn(x))"])
    # the stream from top to bottom: "fork" starts a residual branch, "add" ends it
    steps: list[str] = []
    for name in order:
        if name in ("attn", "ffn"):
            steps += ["fork", name, "add"] if not pre_ln else [name, "add"]
        else:
            steps += ["fork", name] if pre_ln else [name]
    data = {"pre_ln": pre_ln, "order": order, "steps": steps, "code": code}

    box_w, box_h, r, link = 1.95, 0.56, 0.15, 0.26  # link: an arrow between two parts
    cx = 0.15 + box_w / 2
    x_res = cx + box_w / 2 + 0.35  # the residual path, right of the boxes

    def draw(ax: Any, t: Callable) -> None:
        from matplotlib.patches import Circle

        title = "Pre-LN" if pre_ln else "Post-LN"
        who = (label("GPT-2 的做法", "as in GPT-2") if pre_ln
               else label("2017 年原始 Transformer 的做法", "as in the 2017 Transformer"))
        _write(ax, 0.15, 0, title, ha="left", size=FONT + 1, weight="bold")
        _write(ax, 0.15 + (0.82 if pre_ln else 0.95), 0, t(who), ha="left", size=SMALL,
               color=MUTED)
        y = -0.45
        _write(ax, cx, y, "x (B, T, D)", mono=True)
        y -= 0.15
        fork_y, adds = 0.0, 0
        for step in steps:
            if step == "fork":  # the residual branch leaves the stream here
                _line(ax, [cx, cx], [y, y - 0.22])
                y -= 0.22
                _line(ax, [cx, x_res], [y, y], color=MUTED)
                ax.plot([cx], [y], "o", color=INK, markersize=4, zorder=4)
                fork_y = y
            elif step == "add":  # ... and comes back here
                _arrow(ax, (cx, y), (cx, y - link))
                centre = y - link - r
                ax.add_patch(Circle((cx, centre), r, facecolor="white", edgecolor=INK,
                                    linewidth=1.3, zorder=3))
                _write(ax, cx, centre, "+", size=FONT + 2)
                _line(ax, [x_res, x_res], [fork_y, centre], color=MUTED)
                _arrow(ax, (x_res, centre), (cx + r, centre), color=MUTED)
                _write(ax, x_res + 0.18, (fork_y + centre) / 2, code[adds], ha="left",
                       size=SMALL, mono=True)
                adds += 1
                y = centre - r
            else:
                kind, colour = _SUBLAYER[step]
                _arrow(ax, (cx, y), (cx, y - link))
                y -= link + box_h
                _box(ax, cx - box_w / 2, y, box_w, box_h, colour)
                _write(ax, cx, y + box_h / 2 + 0.12, step, mono=True)
                _write(ax, cx, y + box_h / 2 - 0.13, t(kind), size=SMALL)
        _arrow(ax, (cx, y), (cx, y - 0.32))
        _write(ax, cx, y - 0.48, t(label("输出，形状不变", "output, same shape")), size=SMALL)
        note = (label("残差通路上只有加法", "the residual path holds only additions") if pre_ln
                else label("每次相加之后做 LayerNorm", "a LayerNorm after every add"))
        _write(ax, 0.15, y - 0.9, t(note), ha="left", size=SMALL, color=MUTED)

    width, height = x_res + 2.3, 8.0  # generous: the canvas is cropped to the drawing

    names = "、".join(order)
    alt = (label(
        f"示意图：Pre-LN 的 Transformer 块（GPT-2 的做法），自上而下依次是 {names}。"
        "x 先经 ln1 再进 attn，结果加回 x；再经 ln2 进 ffn，结果再加回：x = x + attn(ln1(x))，"
        "x = x + ffn(ln2(x))。残差通路上只有加法。",
        "Diagram: a Pre-LN Transformer block (as in GPT-2), top to bottom "
        f"{', '.join(order)}. x goes through ln1 into attn and the result is added back to "
        "x; then through ln2 into ffn, added back again: x = x + attn(ln1(x)), "
        "x = x + ffn(ln2(x)). The residual path holds only additions.") if pre_ln else label(
        f"示意图：Post-LN 的 Transformer 块（2017 年原始 Transformer），自上而下依次是 {names}。"
        "x 进 attn，结果与 x 相加后做 ln1；再进 ffn，与输入相加后做 ln2：x = ln1(x + attn(x))，"
        "x = ln2(x + ffn(x))。每次相加之后都有 LayerNorm。",
        "Diagram: a Post-LN Transformer block (as in the 2017 Transformer), top to bottom "
        f"{', '.join(order)}. x goes into attn, the sum of x and the result goes through "
        "ln1; then into ffn, the sum through ln2: x = ln1(x + attn(x)), "
        "x = ln2(x + ffn(x)). A LayerNorm follows every add."))
    return Diagram(lambda lang: _canvas(lang, width, height, draw), alt, data)


# --------------------------------------------------------------------------
# GPT-2 block vs Llama block
# --------------------------------------------------------------------------
def gpt2_vs_llama_block(result: BlockPartsResult) -> Diagram:
    """The two blocks side by side: norms, attention, feed-forward, positions, biases.

    Every name on the boxes is what :func:`~llmlab.experiments.building_blocks.run_block_parts`
    read off a tiny :class:`llmlab.models.gpt2.TransformerLM` and
    :class:`llmlab.models.llama.TransformerLM` (classes, sub-module names, whether
    there is a position table or a RoPE, how many linear layers have biases).

    Args:
        result: What ``run_block_parts`` returned.
    """
    _result(result, BlockPartsResult, "run_block_parts")
    parts = {"gpt2": result.gpt2, "llama": result.llama}
    data = parts

    col_w, box_w, box_h = 2.75, 2.2, 0.62
    width = 2 * col_w + 0.25

    def column(ax: Any, t: Callable, x0: float, model: str) -> None:
        p = parts[model]
        cx, x_res = x0 + 0.1 + box_w / 2, x0 + 0.1 + box_w + 0.25
        y = 6.55
        _write(ax, cx, y + 0.35, "GPT-2" if model == "gpt2" else "Llama", size=FONT + 1,
               weight="bold")
        _write(ax, cx, y, t(label("token 编号", "token ids")), size=SMALL, color=MUTED)
        y -= 0.15
        if model == "gpt2":
            emb = (" + ".join(p["embeddings"]),
                   t(label("学到的位置嵌入，加在输入上", "learned positions, added to x")))
            attn_sub = f"{p['attn'][0]} → {t(label('各头', 'heads'))} → {p['attn'][-1]}"
            ffn_sub = " → ".join(p["ffn_parts"])
        else:
            emb = (p["embeddings"][0], t(label("输入不加位置嵌入", "no positions added here")))
            rope = "RoPE" if p["rope"] == "RotaryPositionalEmbedding" else p["rope"]
            attn_sub = t(label(f"{rope} 旋转 q、k", f"{rope} rotates q and k"))
            ffn_sub = "w2(SiLU(w1 x) ⊙ w3 x)"
        norm_sub = (t(label("减均值、除以标准差；γ、β", "centre and scale; γ, β"))
                    if p["norm"] == "LayerNorm" else
                    t(label("除以均方根；只有 γ", "divide by the RMS; γ only")))
        boxes = [
            ("emb", emb[0], emb[1], EMBED),
            ("ln1", f"ln1 · {p['norm']}", norm_sub, NORM),
            ("attn", "attn", attn_sub, ATTN),
            ("add", None, None, None),
            ("ln2", f"ln2 · {p['norm']}", norm_sub, NORM),
            ("ffn", f"ffn · {p['ffn']}", ffn_sub, FFN),
            ("add", None, None, None),
        ]
        fork_y = None
        from matplotlib.patches import Circle

        for kind, head, sub, colour in boxes:
            if kind in ("ln1", "ln2"):  # a residual branch starts before each norm
                _line(ax, [cx, cx], [y, y - 0.22])
                y -= 0.22
                _line(ax, [cx, x_res], [y, y], color=MUTED)
                ax.plot([cx], [y], "o", color=INK, markersize=4, zorder=4)
                fork_y = y
            if kind == "add":
                _arrow(ax, (cx, y), (cx, y - 0.22))
                y -= 0.22 + 2 * 0.14
                centre = y + 0.14
                ax.add_patch(Circle((cx, centre), 0.14, facecolor="white", edgecolor=INK,
                                    linewidth=1.3, zorder=3))
                _write(ax, cx, centre, "+", size=FONT + 2)
                _line(ax, [x_res, x_res], [fork_y, centre], color=MUTED)
                _arrow(ax, (x_res, centre), (cx + 0.14, centre), color=MUTED)
                continue
            _arrow(ax, (cx, y), (cx, y - 0.22))
            y -= 0.22 + box_h
            _box(ax, cx - box_w / 2, y, box_w, box_h, colour)
            _write(ax, cx, y + box_h / 2 + 0.13, head, mono=True, size=SMALL + 0.5)
            _write(ax, cx, y + box_h / 2 - 0.14, sub, size=SMALL)
        _arrow(ax, (cx, y), (cx, y - 0.3))
        n = p["linear_biases"]
        bias = (label(f"块里 {n} 个 Linear 层带偏置", f"{n} linear layers with biases")
                if n else label("没有任何偏置", "no biases at all"))
        _write(ax, cx, y - 0.5, t(bias), size=SMALL, color=MUTED)

    def draw(ax: Any, t: Callable) -> None:
        column(ax, t, 0.0, "gpt2")
        column(ax, t, col_w + 0.25, "llama")

    g, m = parts["gpt2"], parts["llama"]
    alt = label(
        "示意图：左右并排的 GPT-2 块与 Llama 块，结构相同（先归一化再进子层，结果加回残差），"
        f"部件不同：GPT-2 用 {g['norm']}、带 GELU 的 {g['ffn']}，位置靠学到的位置嵌入 "
        f"pos_emb 加在输入上，{g['linear_biases']} 个线性层带偏置；Llama 用 {m['norm']}、"
        f"{m['ffn']}，位置靠注意力里对 q、k 的 RoPE 旋转，没有偏置。",
        "Diagram: a GPT-2 block and a Llama block side by side, with the same structure "
        "(normalise, sub-layer, add back to the residual) and different parts: GPT-2 uses "
        f"{g['norm']}, a GELU {g['ffn']}, learned positions (pos_emb) added to the input "
        f"and {g['linear_biases']} linear layers with biases; Llama uses {m['norm']}, "
        f"{m['ffn']}, RoPE rotating q and k inside attention, and no biases.")
    return Diagram(lambda lang: _canvas(lang, width, 7.1, draw), alt, data)


# --------------------------------------------------------------------------
# RoPE: rotating pairs
# --------------------------------------------------------------------------
def rope_rotation(result: RopeRotationResult) -> Diagram:
    """The same vector at several positions, rotated pair by pair by RoPE.

    A vector whose every pair is ``(1, 0)`` went through a real
    :class:`llmlab.position.RotaryPositionalEmbedding` at each position
    (:func:`~llmlab.experiments.building_blocks.run_rope_rotation`); one panel per
    pair draws the rotated pair: pair ``k`` turns by ``θ_k = theta^(−2k/d_k)``
    per position.

    Args:
        result: What ``run_rope_rotation`` returned, for 1 to 6 positions and 1 to 3 pairs.
    """
    _result(result, RopeRotationResult, "run_rope_rotation")
    positions, d_k, theta = list(result.positions), result.d_k, result.theta
    pairs, rotated = list(result.pairs), result.rotated
    _size("result's number of positions", len(positions), 6)
    _size("result's number of pairs", len(pairs), 3)
    freqs = dict(zip(pairs, result.freqs))  # pair -> its angle per position
    data = {"positions": positions, "d_k": d_k, "theta": theta, "pairs": pairs,
            "freqs": list(result.freqs), "rotated": {k: rotated[k] for k in pairs}}

    gap = 0.35
    side = min(2.55, (6.2 - (len(pairs) - 1) * gap) / len(pairs))  # a panel's width
    radius = 0.37 * side
    width = len(pairs) * side + (len(pairs) - 1) * gap + 0.1
    height = 2 * radius + 2.4
    colours = [HEADS[i] for i in range(len(positions))]

    def draw(ax: Any, t: Callable) -> None:
        from matplotlib.patches import Arc, Circle

        for p, k in enumerate(pairs):
            ox = 0.05 + p * (side + gap) + side / 2
            oy = 1.05 + radius
            ax.add_patch(Circle((ox, oy), radius, facecolor="none", edgecolor="#cccccc",
                                linewidth=1.0, linestyle="--", zorder=1))
            _line(ax, [ox - radius - 0.15, ox + radius + 0.15], [oy, oy], color="#bbbbbb", lw=0.8)
            _line(ax, [ox, ox], [oy - radius - 0.15, oy + radius + 0.15], color="#bbbbbb", lw=0.8)
            _write(ax, ox + radius + 0.18, oy, f"$x_{{{2 * k}}}$", ha="left", size=SMALL,
                   color=MUTED)
            _write(ax, ox, oy + radius + 0.22, f"$x_{{{2 * k + 1}}}$", size=SMALL, color=MUTED)
            for i in range(len(positions)):
                u, v = (float(a) for a in rotated[k][i])
                _arrow(ax, (ox, oy), (ox + radius * u, oy + radius * v), color=colours[i],
                       lw=1.8)
            # the angle of the last position, as an arc
            last = float(freqs[k]) * positions[-1]
            if abs(last) > 1e-3:
                ax.add_patch(Arc((ox, oy), 0.6, 0.6, theta1=0, theta2=math.degrees(last) % 360,
                                 color=INK, linewidth=1.0, zorder=3))
            if 0.6 < last % (2 * math.pi) < 5.5:  # room to name the angle inside the arc
                half = (last % (2 * math.pi)) / 2
                _write(ax, ox + 0.5 * math.cos(half), oy + 0.5 * math.sin(half),
                       f"{positions[-1]}θ{_sub(k)}", size=SMALL,
                       bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
            f = float(freqs[k])
            _write(ax, ox, oy + radius + 0.62, t(label(f"第 {k} 对", f"pair {k}")),
                   weight="bold")
            _write(ax, ox, oy - radius - 0.4,
                   t(label(f"每个位置转 θ{_sub(k)} = {f:.3g} 弧度",
                           f"θ{_sub(k)} = {f:.3g} rad per position")), size=SMALL)
        # legend: one colour per position
        n = len(positions)
        step = min(1.0, (width - 1.0) / n)
        left = width / 2 - (n * step) / 2 + 0.3
        _write(ax, left - 0.15, 0.25, t(label("位置", "position")), ha="right", size=SMALL)
        for i, m in enumerate(positions):
            lx = left + i * step
            _line(ax, [lx, lx + 0.25], [0.25, 0.25], color=colours[i], lw=2.2)
            _write(ax, lx + 0.3, 0.25, f"m = {m}", ha="left", size=SMALL)

    f = data["freqs"]
    pos = ", ".join(str(m) for m in positions)
    per = "；".join(f"第 {k} 对每个位置转 {fr:.3g} 弧度" for k, fr in zip(pairs, f))
    per_en = "; ".join(f"pair {k} turns {fr:.3g} rad per position" for k, fr in zip(pairs, f))
    alt = label(
        f"示意图：同一个向量放在位置 {pos} 上，经 RoPE（d_k = {d_k}，Θ = {theta:g}）旋转后，"
        f"每一对坐标画成平面上的一支箭头：位置 m 的箭头转了 m·θ_k。{per}。",
        f"Diagram: the same vector at positions {pos}, rotated by RoPE (d_k = {d_k}, "
        f"Θ = {theta:g}); each pair of coordinates is drawn as an arrow in the plane, "
        f"turned by m·θ_k at position m: {per_en}.")
    return Diagram(lambda lang: _canvas(lang, width, height, draw), alt, data)


def _sub(k: int) -> str:
    return str(k).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


# --------------------------------------------------------------------------
# generating with a KV cache
# --------------------------------------------------------------------------
def kv_cache_steps(result: KVCacheStepsResult) -> Diagram:
    """What each call of generation computes, and what it reads from the KV cache.

    :func:`~llmlab.experiments.training.run_kv_cache_steps` fed a small Llama-style
    model a prompt in one call, then one token a call, with one
    :class:`llmlab.kv_cache.KVCache`, recording how many positions each call fed
    and the shape of block 0's cached keys after it. One row per call: the
    positions it computes (their query, key and value), and the earlier ones,
    whose keys and values it reads from the cache.

    Args:
        result: What ``run_kv_cache_steps`` returned, for a prompt of 1 to 5
            tokens and 1 to 4 new ones.
    """
    _result(result, KVCacheStepsResult, "run_kv_cache_steps")
    fed, shapes = list(result.fed), list(result.key_shapes)
    prompt_len = _size("result's prompt_len", fed[0], 5)
    _size("result's new_tokens", len(fed) - 1, 4)
    total = sum(fed)
    data = {"fed": fed, "key_shapes": shapes, "num_layers": result.num_layers,
            "num_heads": result.num_heads, "d_head": result.d_head}

    c, row_gap = min(0.36, 2.7 / total), 0.16  # a position's cell; between two calls' rows
    x_grid = 1.75  # the calls' names to its left
    x_shape = x_grid + total * c + 0.3
    y_legend = 0.25
    y_bottom = y_legend + 0.55  # the last call's row
    rows = len(fed)
    top = y_bottom + rows * c + (rows - 1) * row_gap
    height, width = top + 0.75, x_shape + 2.0

    def draw(ax: Any, t: Callable) -> None:
        for k in range(total):
            _write(ax, x_grid + (k + 0.5) * c, top + 0.16, str(k), size=SMALL, color=MUTED)
        _write(ax, x_grid + total * c / 2, top + 0.46, t(label("位置", "position")),
               size=SMALL, color=MUTED)
        _write(ax, x_shape, top + 0.46, t(label("块 0 缓存的键", "block 0's cached keys")),
               size=SMALL, color=MUTED, ha="left")
        _write(ax, x_shape, top + 0.16, "(B, h, T, d_head)", size=SMALL, color=MUTED,
               mono=True, ha="left")
        for r, (n, shape) in enumerate(zip(fed, shapes)):
            y = top - (r + 1) * c - r * row_gap
            cached = shape[-2]
            name = (label(f"提示：{n} 个 token", f"prompt: {n} tokens") if r == 0 else
                    label(f"第 {r} 步：1 个 token", f"step {r}: 1 token"))
            _write(ax, x_grid - 0.15, y + c / 2, t(name), size=SMALL, ha="right")
            for k in range(cached):
                new = k >= cached - n
                _cell(ax, x_grid + k * c, y, c, KEY if new else _tint(KEY, 0.25))
            # the newest position's query: it attends to every key in its row
            _write(ax, x_grid + (cached - 0.5) * c, y + c / 2, "q", size=SMALL, color="white")
            _write(ax, x_shape, y + c / 2, fmt_shape(shape), size=SMALL, mono=True, ha="left")
        _cell(ax, x_grid, y_legend - 0.09, 0.18, KEY)
        _write(ax, x_grid + 0.26, y_legend,
               t(label("这次调用计算 q、k、v", "computed by this call: q, k, v")),
               size=SMALL, ha="left")
        _cell(ax, x_grid, y_legend - 0.45, 0.18, _tint(KEY, 0.25))
        _write(ax, x_grid + 0.26, y_legend - 0.36,
               t(label("k、v 从缓存读出", "k, v read from the cache")), size=SMALL, ha="left")

    last = shapes[-1]
    alt = label(
        f"示意图：生成时的 KV 缓存。第一次调用一次算完提示的 {prompt_len} 个位置；之后每一步只算"
        f"一个新位置的 q、k、v，它的查询看缓存里全部的键。块 0 缓存的键从 {fmt_shape(shapes[0])} "
        f"长到 {fmt_shape(last)}：每一步在位置这一维上多一个。",
        f"Diagram: the KV cache during generation. The first call computes the prompt's "
        f"{prompt_len} positions at once; each later step computes q, k and v of one new "
        f"position only, and its query looks at every cached key. Block 0's cached keys grow "
        f"from {fmt_shape(shapes[0])} to {fmt_shape(last)}: one more along the position "
        f"dimension per step.")
    return Diagram(lambda lang: _canvas(lang, width, height, draw), alt, data)


# --------------------------------------------------------------------------
# BPE: merge by merge
# --------------------------------------------------------------------------
def bpe_merges(result: BPEStepsResult, steps: int = 4) -> Diagram:
    """The words of a tiny text as tokens, before the first merge and after each of
    the first ``steps`` merges of :func:`~llmlab.experiments.tokenization.run_bpe_steps`.

    One row per merge: every distinct word (its count above it) cut into its
    tokens at that point, the tokens the merge made highlighted; beside the row,
    the pair merged and how many tokens the whole text takes now.

    Args:
        result: What ``run_bpe_steps`` returned, on a text of at most 5 distinct
            words of printable ASCII, 20 characters in all (it must fit a phone).
        steps: Merges to draw, 1 to 6 (and at most the merges ``result`` made).
    """
    check_type("result", result, BPEStepsResult, expected="a BPEStepsResult (run_bpe_steps())")
    steps = _size("steps", steps, 6)
    if steps > len(result.steps):
        raise ValueError(f"steps ({steps}) must be at most the merges result made "
                         f"({len(result.steps)})")
    words = [w.decode("ascii", "replace") for w in result.words]
    if (len(words) > 5 or sum(map(len, words)) > 20
            or not all(w.isascii() and w.isprintable() and " " not in w for w in words)):
        raise ValueError(f"result's words must be at most 5 words of printable ASCII, 20 "
                         f"characters in all, to be drawn; got {words}")
    rows = [[[bytes([b]) for b in w] for w in result.words],
            *(s.segmentation for s in result.steps[:steps])]
    merges = [(s.pair[0].decode(), s.pair[1].decode(), s.count) for s in result.steps[:steps]]
    data = {"words": words, "counts": list(result.word_counts), "merges": merges,
            "rows": [[[t.decode() for t in seg] for seg in row] for row in rows],
            "num_tokens": [result.initial_num_tokens,
                           *(s.num_tokens for s in result.steps[:steps])]}

    c, h, pitch, word_gap = 0.18, 0.3, 0.62, 0.14  # a character, a row, row to row
    names = [f"{a} + {b} → {a + b} (×{n})" for a, b, n in merges]
    x_words = max(1.5, 0.25 + 0.084 * max(map(len, names)))  # the rows' labels to its left
    # a word's column: its characters, or the word and its count above them if wider
    slots = [max(len(w) * c, 0.08 * len(f"{w} ×{n}")) for w, n in zip(words, data["counts"])]
    starts = [x + (slot - len(w) * c) / 2 for x, slot, w in zip(
        itertools.accumulate((slot + word_gap for slot in slots[:-1]), initial=x_words),
        slots, words)]
    top = 0.5 + len(rows) * pitch  # above the first row: the words' counts
    height, width = top + 0.5, x_words + sum(slots) + word_gap * (len(slots) - 1) + 0.1
    if width > MAX_WIDTH_IN:
        raise ValueError(f"result's merged tokens are too long to draw in {MAX_WIDTH_IN} in "
                         f"(the rows' labels: {names}); draw fewer steps")

    def draw(ax: Any, t: Callable) -> None:
        for x, word, n in zip(starts, words, data["counts"]):
            _write(ax, x + len(word) * c / 2, top + 0.15, f"{word} ×{n}", size=SMALL,
                   color=MUTED)
        for r, row in enumerate(data["rows"]):
            y = top - (r + 1) * pitch + (pitch - h) / 2
            if r == 0:
                name = t(label("开始：单个字节", "start: bytes"))
            else:
                name = names[r - 1]
            _write(ax, x_words - 0.15, y + h / 2 + 0.11, name, size=SMALL, ha="right",
                   mono=r > 0)
            _write(ax, x_words - 0.15, y + h / 2 - 0.13,
                   t(label(f"全文 {data['num_tokens'][r]} 个 token",
                           f"text: {data['num_tokens'][r]} tokens")),
                   size=SMALL, ha="right", color=MUTED)
            made = merges[r - 1][0] + merges[r - 1][1] if r else None
            for x, seg in zip(starts, row):
                for token in seg:
                    new = token == made
                    colour = QUERY if new else KEY
                    _box(ax, x + 0.015, y, len(token) * c - 0.03, h,
                         _tint(colour, 0.45 if new else 0.15), edge=colour)
                    _write(ax, x + len(token) * c / 2, y + h / 2, token, size=SMALL, mono=True)
                    x += len(token) * c
        _box(ax, x_words, 0.12, 0.3, 0.2, _tint(QUERY, 0.45), edge=QUERY)
        _write(ax, x_words + 0.4, 0.22, t(label("这一行的合并产生的 token",
                                               "a token this row's merge made")),
               size=SMALL, ha="left")

    first, last = merges[0], merges[-1]
    alt = label(
        f"示意图：BPE 一次合并一对。{len(words)} 个词（{'、'.join(words)}）先拆成单个字节，"
        f"全文 {data['num_tokens'][0]} 个 token；第 1 次合并把 {first[0]} 和 {first[1]} 合成 "
        f"{first[0] + first[1]}（出现 {first[2]} 次），之后每一行再合并一对，新 token 高亮。"
        f"{steps} 次合并后全文 {data['num_tokens'][-1]} 个 token；最后一次合并的是 "
        f"{last[0]} + {last[1]}。",
        f"Diagram: BPE merges one pair at a time. {len(words)} words ({', '.join(words)}) "
        f"start as single bytes, {data['num_tokens'][0]} tokens in the whole text; merge 1 "
        f"joins {first[0]} and {first[1]} into {first[0] + first[1]} ({first[2]} occurrences), "
        f"and each later row merges one more pair, its new tokens highlighted. After {steps} "
        f"merges the text takes {data['num_tokens'][-1]} tokens; the last merge is "
        f"{last[0]} + {last[1]}.")
    return Diagram(lambda lang: _canvas(lang, width, height, draw), alt, data)
