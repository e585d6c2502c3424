"""Tables and figures of :mod:`llmlab.experiments.attention`, in the reader's language.

Taught on: "Self-attention from scratch".
"""

from __future__ import annotations

from llmlab.experiments.attention import (
    DropoutDemoResult,
    LearnedRecallResult,
    ScalingResult,
    SummaryRecallResult,
    TimingResult,
)
from llmlab.checks import check_type
from llmlab.report import (
    Label,
    Localized,
    fmt_float,
    fmt_pct,
    heatmap,
    label,
    line_plot,
    table,
)

__all__ = [
    "dropout_figure",
    "learned_recall_settings",
    "recall_table",
    "scaling_table",
    "summary_recall_figure",
    "timing_table",
]


def summary_recall_figure(result: SummaryRecallResult,
                          learned: LearnedRecallResult | None = None) -> Localized:
    """Recall accuracy by sequence length: a fixed-size state vs attention.

    With ``learned``, a third line: the attention layer trained to do the lookup.
    """
    check_type("result", result, SummaryRecallResult)
    if learned is not None:
        check_type("learned", learned, LearnedRecallResult)
    d = result.dim
    series = {
        label(f"固定大小的状态（d = {d}）", f"fixed-size state (d = {d})"):
            (result.lengths, result.summary_accuracy),
        label("手工搭的注意力查找", "hand-built attention lookup"):
            (result.lengths, result.attention_accuracy),
    }
    if learned is not None:
        series[label(f"训练出来的注意力（d = {learned.d_model}）",
                     f"trained attention (d = {learned.d_model})")] = (
            learned.lengths, learned.accuracy)
    v = result.vocab_size
    alt_zh = "折线图：固定大小的状态与手工搭的注意力查找"
    alt_en = ("Line chart of recall accuracy against sequence length for a fixed-size "
              "state and for a hand-built attention lookup")
    if learned is not None:
        alt_zh += "、训练出来的注意力"
        alt_en += ", and for an attention layer trained to do the lookup"
    return line_plot(
        series, hlines={label(f"瞎猜（1/{v}）", f"chance (1/{v})"): 1 / v},
        xlabel=label("序列长度（token 数）", "sequence length (tokens)"),
        ylabel=label("召回准确率", "recall accuracy"),
        title=label("取回随机位置上的 token", "Recall the token at a random position"),
        alt=label(alt_zh + "，在各个序列长度上的召回准确率", alt_en),
    )


def recall_table(result: SummaryRecallResult, learned: LearnedRecallResult) -> Localized:
    """Per length: recall of the fixed state, the hand-built and the trained attention,
    and the weight the trained query puts on the asked position."""
    check_type("result", result, SummaryRecallResult)
    check_type("learned", learned, LearnedRecallResult)
    if list(result.lengths) != list(learned.lengths):
        raise ValueError(f"learned.lengths ({learned.lengths}) must equal result.lengths "
                         f"({result.lengths})")
    rows = [
        (n, fmt_pct(s), fmt_pct(a), fmt_pct(t), fmt_float(w, 3))
        for n, s, a, t, w in zip(result.lengths, result.summary_accuracy,
                                 result.attention_accuracy, learned.accuracy,
                                 learned.target_weight)
    ]
    headers = [label("序列长度", "sequence length"),
               label("固定状态的召回", "fixed state recall"),
               label("手工查找的召回", "hand-built recall"),
               label("训练出的注意力的召回", "trained attention recall"),
               label("被问位置上的权重", "weight on the asked position")]
    return table(headers, rows)


def learned_recall_settings(learned: LearnedRecallResult) -> Label:
    """The training and evaluation settings of :func:`run_learned_recall`, as a sentence."""
    check_type("learned", learned, LearnedRecallResult)
    r = learned
    longest = max(r.lengths)
    return label(
        f"训练设置：`d_model = {r.d_model}`，词表 {r.vocab_size} 个 token；在长度为 {longest} "
        f"的随机序列上训练 {r.steps} 步（Adam，学习率 {r.lr:g}，每批 {r.batch_size} 条，"
        f"种子 {r.seed}）；每个长度用 {r.trials} 条没见过的序列评估。",
        f"Settings: `d_model = {r.d_model}`, {r.vocab_size} tokens; trained on random "
        f"sequences of length {longest} for {r.steps} steps (Adam, learning rate {r.lr:g}, "
        f"{r.batch_size} sequences a batch, seed {r.seed}); evaluated on {r.trials} unseen "
        "sequences per length.")


def scaling_table(result: ScalingResult) -> Localized:
    """Per ``d_k``: variance of the scores and the softmax's peak and Jacobian, raw vs scaled."""
    check_type("result", result, ScalingResult)
    rows = [
        (d, fmt_float(vr, 1), fmt_float(vs, 2), fmt_float(mr, 3), fmt_float(ms, 3),
         fmt_float(jr, 4), fmt_float(js, 4))
        for d, vr, vs, mr, ms, jr, js in zip(
            result.d_ks, result.var_raw, result.var_scaled, result.max_weight_raw,
            result.max_weight_scaled, result.jacobian_raw, result.jacobian_scaled)
    ]
    raw, scaled = label("不缩放", "raw"), label("缩放", "scaled")
    headers = ["d_k", "Var(q·k)", "Var(q·k/√d_k)",
               label(f"最大权重，{raw.zh}", f"max weight, {raw.en}"),
               label(f"最大权重，{scaled.zh}", f"max weight, {scaled.en}"),
               label(f"‖∂p/∂z‖，{raw.zh}", f"‖∂p/∂z‖, {raw.en}"),
               label(f"‖∂p/∂z‖，{scaled.zh}", f"‖∂p/∂z‖, {scaled.en}")]
    return table(headers, rows)


def dropout_figure(demo: DropoutDemoResult) -> Localized:
    """The causal weights after dropout in training mode."""
    check_type("demo", demo, DropoutDemoResult)
    return heatmap(
        demo.dropped, xlabel=label("键的位置", "key position"),
        ylabel=label("查询的位置", "query position"),
        title=label(f"dropout 之后的因果权重（p = {demo.p}）",
                    f"causal weights after dropout (p = {demo.p})"),
        alt=label(f"热力图：p = {demo.p} 的 dropout 之后的因果注意力权重，一部分被置零，其余被放大",
                  f"Heatmap of causal attention weights after dropout with p = {demo.p}: "
                  "some are zeroed, the rest scaled up"),
    )


def timing_table(result: TimingResult) -> Localized:
    """Median time per forward call of each variant, and relative to the first."""
    check_type("result", result, TimingResult)
    base = result.seconds[0]
    rows = [(name, fmt_float(s * 1e6, 1), fmt_float(s / base, 2))
            for name, s in zip(result.names, result.seconds)]
    headers = [label("实现", "variant"), label("中位时间（µs）", "median time (µs)"),
               label(f"相对 {result.names[0]}", f"relative to {result.names[0]}")]
    return table(headers, rows)
