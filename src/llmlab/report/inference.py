"""Tables and figures of :mod:`llmlab.experiments.inference`, in the reader's language.

Taught on: "Faster inference".
"""

from __future__ import annotations

from llmlab.checks import check_int, check_type
from llmlab.experiments.inference import (
    GQAComparison,
    InferenceCosts,
    QuantizationResult,
    QuantizedRow,
    SamplingCheck,
    SpeculativeResult,
)
from llmlab.report import Label, Localized, fmt_float, fmt_int, fmt_pct, label, line_plot, table
from llmlab.report.distributed import fmt_bytes

__all__ = [
    "costs_table",
    "gqa_memory_table",
    "gqa_quality_table",
    "layers_table",
    "quantization_table",
    "row_scales_figure",
    "sampling_table",
    "setting_name",
    "speculative_figure",
    "speculative_table",
]

_MODEL = {"shakespeare": label("莎士比亚", "Shakespeare"), "tang": label("唐诗", "Tang")}
"""The base models' short names, for a table's first column."""


def _model(name: str) -> Label | str:
    return _MODEL.get(name, name)


def _flops(x: float) -> str:
    """``1.5e10`` -> ``"1.54 × 10¹⁰"``."""
    mantissa, exponent = f"{x:.2e}".split("e")
    digits = str(int(exponent)).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{mantissa} × 10{digits}"


def costs_table(costs: InferenceCosts) -> Localized:
    """Per generated token at batch size 1, 16-bit: what is read, what is computed
    (at a full context)."""
    check_type("costs", costs, InferenceCosts)
    headers = [label("模型", "model"), label("参数", "parameters"),
               label("权重（16 位）", "weights (16-bit)"),
               label("每个 token 的 KV 缓存", "KV cache per token"),
               label("满上下文的 KV 缓存", "KV cache, full context"),
               label("每个 token 的前向 FLOPs", "forward FLOPs per token"),
               label("每读一字节的 FLOPs", "FLOPs per byte read")]
    rows = [[_model(r.name), fmt_int(r.parameters), fmt_bytes(r.weight_bytes),
             fmt_bytes(r.kv_bytes_per_token),
             label(f"{fmt_bytes(r.kv_bytes)}（{fmt_int(r.context)} 个 token）",
                   f"{fmt_bytes(r.kv_bytes)} ({fmt_int(r.context)} tokens)"),
             _flops(r.flops_per_token), fmt_float(r.intensity, 2)] for r in costs.rows]
    return table(headers, rows)


def setting_name(row: QuantizedRow) -> Label:
    """``int8, a scale per row`` / ``int4, a scale per 32 columns``."""
    check_type("row", row, QuantizedRow)
    if row.group_size is None:
        return label(f"int{row.bits}，每行一个缩放", f"int{row.bits}, a scale per row")
    return label(f"int{row.bits}，每 {row.group_size} 列一个缩放",
                 f"int{row.bits}, a scale per {row.group_size} columns")


def quantization_table(*results: QuantizationResult) -> Localized:
    """Per base model: float32, then each setting: bytes of the linear layers, the
    largest weight error, the held-out loss and its change, greedy text kept."""
    for result in results:
        check_type("results", result, QuantizationResult)
    headers = [label("模型", "model"), label("存法", "stored as"),
               label("线性层字节", "linear bytes"), label("缩小", "smaller"),
               label("最大误差", "max error"),
               label("损失（nats/字符）", "loss (nats/char)"), label("变化", "change"),
               label("贪心不变", "greedy kept")]
    rows = []
    for r in results:
        rows.append([_model(r.corpus), "float32", fmt_bytes(r.float_bytes), "1×", "0",
                     fmt_float(r.float_loss, 4), "", f"{r.greedy_tokens}/{r.greedy_tokens}"])
        rows += [[_model(r.corpus), setting_name(q), fmt_bytes(q.quantized_bytes),
                  f"{q.compression:.1f}×", fmt_float(q.max_error, 3),
                  fmt_float(q.loss, 4), f"{q.loss_change:+.4f}",
                  f"{q.same_greedy}/{r.greedy_tokens}"] for q in r.rows]
    return table(headers, rows)


def layers_table(result: QuantizationResult, n: int = 4) -> Localized:
    """The ``n`` linear layers whose largest weights stand out most, and the mean
    4-bit error with a scale per row and per 32 columns."""
    check_type("result", result, QuantizationResult)
    check_int("n", n, maximum=len(result.layers))
    headers = [label("层", "layer"), label("max|w| ÷ 平均 |w|", "max|w| ÷ mean |w|"),
               label("int4 平均误差，每行一个缩放", "int4 mean error, a scale per row"),
               label("int4 平均误差，每 32 列", "int4 mean error, per 32 columns"),
               label("误差减少", "error saved")]
    rows = [[f"`{e.layer}`", fmt_float(e.peak_ratio, 2), fmt_float(e.row_error, 3),
             fmt_float(e.group_error, 3), fmt_pct(1 - e.group_error / e.row_error)]
            for e in result.layers[:n]]
    return table(headers, rows)


def row_scales_figure(result: QuantizationResult) -> Localized:
    """``max |w|`` of each output row of the most outlying layer, largest first: each
    row's int4 step is this ÷ 7, so one large weight coarsens its whole row."""
    check_type("result", result, QuantizationResult)
    layer = result.layers[0]
    ys = sorted(layer.row_absmax, reverse=True)
    return line_plot({label(f"{layer.layer} 的各行", f"rows of {layer.layer}"):
                      (list(range(1, len(ys) + 1)), ys)},
                     xlabel=label("输出行，按 max|w| 从大到小排", "output row, by max|w|"),
                     ylabel="max |w|",
                     alt=label(f"{layer.layer} 每个输出行的最大权重绝对值，从大到小",
                               f"largest absolute weight of each output row of "
                               f"{layer.layer}, largest first"))


def speculative_table(*results: SpeculativeResult) -> Localized:
    """Per base model and ``k``: passes of each model, tokens per target pass measured
    and predicted, and the weights read per token against plain decoding's."""
    for result in results:
        check_type("results", result, SpeculativeResult)
    headers = [label("目标模型", "target"), "k", label("目标前向", "target passes"),
               label("草稿前向", "draft passes"),
               label("每次目标前向的 token", "tokens per target pass"),
               label("公式", "formula"),
               label("读的权重（× 普通解码）", "weights read (× plain)")]
    rows = [[_model(r.corpus), row.k, row.target_calls, row.draft_calls,
             fmt_float(r.new_tokens / row.target_calls, 2),
             fmt_float(row.expected_per_pass, 2), fmt_float(r.weights_read(row), 2)]
            for r in results for row in r.rows]
    return table(headers, rows)


def speculative_figure(*results: SpeculativeResult) -> Localized:
    """Tokens per target pass against ``k``: measured, and the formula's."""
    for result in results:
        check_type("results", result, SpeculativeResult)
    series: dict = {}
    for r in results:
        ks = [row.k for row in r.rows]
        name = _model(r.corpus)
        series[label(f"{name.zh}：实测", f"{name.en}: measured")] = (
            ks, [r.new_tokens / row.target_calls for row in r.rows])
        series[label(f"{name.zh}：公式（α = {r.agreement:.2f}）",
                     f"{name.en}: formula (α = {r.agreement:.2f})")] = (
            ks, [row.expected_per_pass for row in r.rows])
    return line_plot(series, xlabel=label("每轮提议的 token 数 k", "tokens proposed per round, k"),
                     ylabel=label("每次目标前向得到的 token", "tokens per target pass"),
                     alt=label("每次目标模型前向得到的 token 数随 k 的变化：实测与公式",
                               "tokens per target pass against k, measured and predicted"))


def sampling_table(check: SamplingCheck) -> Localized:
    """Per toy token: the target's and the draft's probabilities, and the share drawn."""
    check_type("check", check, SamplingCheck)
    headers = [label("token 编号", "token"), label("目标 p", "target p"),
               label("草稿 q", "draft q"),
               label(f"抽 {fmt_int(check.draws)} 次的占比", f"share of {fmt_int(check.draws)} draws")]
    rows = [[i, fmt_float(p, 3), fmt_float(q, 3), fmt_float(c / check.draws, 3)]
            for i, (p, q, c) in enumerate(zip(check.target, check.draft, check.counts))]
    return table(headers, rows)


def _heads(kv: int, num_heads: int) -> Label:
    if kv == num_heads:
        return label(f"多头（{kv} 个 KV 头）", f"multi-head ({kv} kv heads)")
    if kv == 1:
        return label("多查询（1 个 KV 头）", "multi-query (1 kv head)")
    return label(f"分组（{kv} 个 KV 头）", f"grouped ({kv} kv heads)")


def gqa_memory_table(result: GQAComparison) -> Localized:
    """16-bit KV-cache bytes of a full context with each number of kv heads: the
    Shakespeare base model's shape and Llama 2 70B's."""
    check_type("result", result, GQAComparison)
    headers = [label("模型", "model"), label("注意力", "attention"),
               label("满上下文的 KV 缓存（16 位）", "KV cache, full context (16-bit)")]
    rows = [[_model("shakespeare"), _heads(kv, result.num_heads), fmt_bytes(b)]
            for kv, b in zip(result.kv_heads, result.kv_bytes)]
    rows += [["Llama 2 70B", _heads(kv, result.llama70b_kv_heads[0]), fmt_bytes(b)]
             for kv, b in zip(result.llama70b_kv_heads, result.llama70b_kv_bytes)]
    return table(headers, rows)


def gqa_quality_table(result: GQAComparison) -> Localized:
    """The short training runs: parameters and validation loss per attention kind."""
    check_type("result", result, GQAComparison)
    headers = [label("注意力", "attention"), label("参数", "parameters"),
               label(f"{result.steps} 步后的验证损失", f"validation loss after {result.steps} steps")]
    rows = [[_heads(kv, result.num_heads), fmt_int(n), fmt_float(loss, 3)]
            for kv, n, loss in zip(result.kv_heads, result.parameters, result.val_loss)]
    return table(headers, rows)
