"""Tables and figures of :mod:`llmlab.experiments.attention`, in the reader's language.

Taught on: "Self-attention from scratch".
"""

from __future__ import annotations

from llmlab.experiments.attention import (
    DropoutDemoResult,
    ScalingResult,
    SummaryRecallResult,
    TimingResult,
)
from llmlab.checks import check_type
from llmlab.report import Localized, fmt_float, heatmap, label, line_plot, table

__all__ = ["dropout_figure", "scaling_table", "summary_recall_figure", "timing_table"]


def summary_recall_figure(result: SummaryRecallResult) -> Localized:
    """Recall accuracy by sequence length: a fixed-size state vs attention."""
    check_type("result", result, SummaryRecallResult)
    d = result.dim
    series = {
        label(f"固定大小的状态（d = {d}）", f"fixed-size state (d = {d})"):
            (result.lengths, result.summary_accuracy),
        label("对全部输入做注意力", "attention over all inputs"):
            (result.lengths, result.attention_accuracy),
    }
    v = result.vocab_size
    return line_plot(
        series, hlines={label(f"瞎猜（1/{v}）", f"chance (1/{v})"): 1 / v},
        xlabel=label("序列长度（token 数）", "sequence length (tokens)"),
        ylabel=label("召回准确率", "recall accuracy"),
        title=label("取回随机位置上的 token", "Recall the token at a random position"),
        alt=label("折线图：固定大小的状态与对全部输入做注意力，在各个序列长度上的召回准确率",
                  "Line chart of recall accuracy against sequence length for a "
                  "fixed-size state and for attention over all inputs"),
    )


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
