"""Tables and figures of :mod:`llmlab.experiments.multihead`, in the reader's language.

Taught on: "Multi-head attention and the Transformer block (GPT-2 style)".
"""

from __future__ import annotations

from collections.abc import Sequence

from llmlab.experiments.multihead import ResidualAblationResult, WhyMultiheadResult
from llmlab.checks import check_type
from llmlab.report import (
    Localized,
    fmt_float,
    fmt_int,
    fmt_pct,
    heatmap,
    label,
    line_plot,
    table,
)

__all__ = [
    "residual_figure",
    "residual_table",
    "why_multihead_answer_table",
    "why_multihead_figure",
    "why_multihead_seed_table",
    "why_multihead_table",
]

KIND_NAMES = {
    "pre_ln": label("Pre-LN", "Pre-LN"),
    "post_ln": label("Post-LN", "Post-LN"),
    "no_residual": label("Pre-LN，去掉残差", "Pre-LN, no residual"),
}


def why_multihead_table(result: WhyMultiheadResult) -> Localized:
    """Per head count: ``d_head``, accuracy per target (mean over seeds), worst, parameters."""
    check_type("result", result, WhyMultiheadResult)
    headers = [label("头数", "heads"), "d_head", *[f"x[t−{k}]" for k in result.offsets],
               label("最差的目标", "worst target"), label("参数量", "parameters")]
    rows = [
        [h, result.d_model // h, *[fmt_pct(a) for a in result.target_accuracy(h)],
         fmt_pct(result.worst_target(h)), fmt_int(n)]
        for h, n in zip(result.heads, result.n_params)
    ]
    return table(headers, rows)


def why_multihead_seed_table(result: WhyMultiheadResult) -> Localized:
    """One row per (head count, seed): the accuracy of each target."""
    check_type("result", result, WhyMultiheadResult)
    headers = [label("头数", "heads"), label("种子", "seed"),
               *[f"x[t−{k}]" for k in result.offsets]]
    rows = [[h, seed, *[fmt_pct(a) for a in accs]]
            for h, runs in zip(result.heads, result.accuracy)
            for seed, accs in zip(result.seeds, runs)]
    return table(headers, rows)


def why_multihead_answer_table(
    result: WhyMultiheadResult, runs: Sequence[tuple[int, int]]
) -> Localized:
    """What each read-out answered, for the ``(n_heads, seed)`` models in ``runs``.

    One row per read-out ``x[t−k]``, one column per target position ``t−o``: the
    share of its predictions that are the token there. In the read-out's own column
    (bold) that is its accuracy; in the others, only its wrong answers count.
    """
    check_type("result", result, WhyMultiheadResult)
    check_type("runs", runs, (list, tuple), expected="a list of (n_heads, seed) pairs")
    headers = [label("模型", "model"), label("输出层", "read-out"),
               *[f"x[t−{o}]" for o in result.offsets]]
    rows = []
    for n_heads, seed in runs:
        model = label(f"{n_heads} 个头，种子 {seed}",
                      f"{n_heads} head{'s' if n_heads > 1 else ''}, seed {seed}")
        for i, k in enumerate(result.offsets):
            shares = [(o, fmt_pct(result.answered(n_heads, seed, k, o)))
                      for o in result.offsets]
            cells = [f"**{c}**" if o == k else c for o, c in shares]  # bold: accuracy
            rows.append([model if i == 0 else "", f"x[t−{k}]", *cells])
    return table(headers, rows, align="ll" + "r" * len(result.offsets))


def why_multihead_figure(result: WhyMultiheadResult) -> Localized:
    """Heatmap: one row per head of the first seed's models, one column per offset."""
    check_type("result", result, WhyMultiheadResult)
    rows, names = [], []
    for n_heads, per_head in zip(result.heads, result.offset_attention):
        for h, row in enumerate(per_head):
            rows.append(row)
            names.append(label(f"H={n_heads} · 头 {h}", f"H={n_heads} · head {h}"))
    columns = [f"t−{o}" for o in range(len(rows[0]))]
    return heatmap(
        rows, names, columns, vmin=0.0, vmax=1.0,
        title=label("按偏移量的平均注意力（查询 t，键 t−o）",
                    "Mean attention by offset (query t, key t−o)"),
        xlabel=label("键的位置", "key position"), ylabel=label("模型 · 头", "model · head"),
        alt=label("热力图：每种头数的模型里，每个头在各个偏移量 t−o 上的平均注意力权重",
                  "Heatmap: the mean attention weight each head of each model puts on "
                  "every offset t−o"),
    )


def residual_table(result: ResidualAblationResult) -> Localized:
    """Per kind of block: collapse at initialisation, first and last loss, accuracy."""
    check_type("result", result, ResidualAblationResult)
    w = result.window
    headers = [label("块", "block"), label("初始化时的坍缩程度", "collapse at init"),
               label(f"前 {w} 步的损失", f"loss, first {w} steps"),
               label(f"最后 {w} 步的损失", f"loss, last {w} steps"),
               label("准确率", "accuracy")]
    rows = [[KIND_NAMES[k], fmt_float(result.collapse[k]), fmt_float(result.first_loss(k)),
             fmt_float(result.last_loss(k)), fmt_pct(result.accuracy[k])]
            for k in result.kinds]
    return table(headers, rows)


def residual_figure(result: ResidualAblationResult) -> Localized:
    """Training-loss curves of every kind, with the guessing loss ``ln V``."""
    check_type("result", result, ResidualAblationResult)
    series = {KIND_NAMES[k]: (range(1, len(result.losses[k]) + 1), result.losses[k])
              for k in result.kinds}
    v = result.vocab_size
    return line_plot(
        series, hlines={label(f"ln {v}（瞎猜）", f"ln {v} (guessing)"): result.chance_loss},
        title=label(f"{result.n_layers} 个块，预测 x[t−{result.offset}]",
                    f"{result.n_layers} blocks, predict x[t−{result.offset}]"),
        xlabel=label("训练步数", "training step"), ylabel=label("交叉熵损失", "cross-entropy loss"),
        alt=label(f"三种 {result.n_layers} 块模型每一步的训练损失，虚线是瞎猜的损失 ln {v}",
                  f"Training loss at every step of the three {result.n_layers}-block "
                  f"models, with the guessing loss ln {v} as a dashed line"),
    )
