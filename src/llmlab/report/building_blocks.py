"""Tables and figures of :mod:`llmlab.experiments.building_blocks`, in the reader's language.

Taught on: "The building blocks of a modern (Llama-style) Transformer".
"""

from __future__ import annotations

import math

from llmlab.experiments.building_blocks import (
    ActivationResult,
    AttentionCheckResult,
    FFNParityResult,
    FlopsRuntimeResult,
    InitStatisticsResult,
    LowPrecisionNormResult,
    NormComparisonResult,
    ParameterCheckResult,
    RopeCheckResult,
)
from llmlab.checks import check_choice, check_type
from llmlab.report import (
    Label,
    Localized,
    fmt_float,
    fmt_int,
    fmt_pct,
    fmt_shape,
    heatmap,
    label,
    line_plot,
    table,
    yes_no,
)

__all__ = [
    "activation_figure",
    "activation_table",
    "attention_check_table",
    "ffn_parity_table",
    "flops_table",
    "init_statistics_table",
    "kernels_table",
    "low_precision_table",
    "norm_comparison_table",
    "norm_share_summary",
    "parameter_check_table",
    "roofline_summary",
    "rope_frequency_figure",
    "rope_scores_figure",
]


def init_statistics_table(r: InitStatisticsResult) -> Localized:
    check_type("r", r, InitStatisticsResult)
    rows = [(n, fmt_shape(s), fmt_float(t, 4), fmt_float(p, 4), fmt_float(m, 4),
             fmt_float(a, 4), fmt_float(c, 4))
            for n, s, t, p, m, a, c in zip(r.names, r.shapes, r.target_std, r.predicted_std,
                                          r.measured_std, r.max_abs, r.cut)]
    headers = [label("层", "layer"), label("权重", "weight"), label("目标 σ", "σ target"),
               label("截断后的 σ（理论）", "σ truncated (theory)"),
               label("实测 σ", "σ measured"), "max abs(w)", label("3σ 截断点", "3σ cut")]
    return table(headers, rows)


TENSOR_NAMES = {"x": label("输入 x", "input x")}


def norm_comparison_table(r: NormComparisonResult) -> Localized:
    check_type("r", r, NormComparisonResult)
    rows = [(TENSOR_NAMES.get(lab, lab), fmt_float(m), fmt_float(s), fmt_float(q),
             "" if p is None else fmt_int(p))
            for lab, m, s, q, p in zip(r.labels, r.mean, r.std, r.rms, r.parameters)]
    headers = [label("张量", "tensor"), label("行均值", "row mean"),
               label("行标准差", "row std"), label("行 RMS", "row RMS"),
               label("参数量", "parameters")]
    return table(headers, rows)


METHODS = {"input_dtype": label("输入的 dtype", "input dtype"), "float32": "float32"}


def low_precision_table(r: LowPrecisionNormResult) -> Localized:
    check_type("r", r, LowPrecisionNormResult)
    rows = [(d, METHODS[m], fmt_int(i), fmt_int(n), fmt_int(z), fmt_int(r.n_total),
             "—" if math.isnan(e) else fmt_float(e, 4))
            for d, m, i, n, z, e in zip(r.dtypes, r.methods, r.n_inf, r.n_nan, r.n_zero,
                                        r.max_abs_error)]
    headers = [label("输入 dtype", "input dtype"), label("计算用的精度", "computed in"),
               "inf", "nan", label("零", "zeros"), label("输出个数", "outputs"),
               label("最大绝对误差", "max abs error")]
    return table(headers, rows)


IMPLS = {"torch": label("PyTorch", "PyTorch"),
         "llmlab": label("llmlab（教学代码）", "llmlab (teaching code)")}
OPS = {"matmul": label("矩阵乘法", "matmul")}
BOUND = {True: label("内存", "memory"), False: label("计算", "compute")}


def flops_table(r: FlopsRuntimeResult, impl: str = "torch") -> Localized:
    """One row per op, ``impl``'s where it has one (``r.layer``), with the shares."""
    check_type("r", r, FlopsRuntimeResult)
    check_choice("impl", impl, ("torch", "llmlab"))
    shares = r.shares(impl)
    rows = []
    for i in r.layer(impl):
        op = r.ops[i]
        fs, ts = shares[op]
        rows.append((OPS.get(op, op), IMPLS[r.impls[i]],
                     " @ ".join(fmt_shape(s) for s in r.shapes[i]), f"{r.flops[i]:.2e}",
                     fmt_float(r.intensity[i], 2),
                     BOUND[r.memory_bound(i)],
                     fmt_float(1e3 * r.seconds[i], 3), fmt_pct(fs, 2), fmt_pct(ts, 1),
                     fmt_float(ts / fs, 1)))
    headers = [label("运算", "op"), label("实现", "implementation"), label("张量", "tensors"),
               "FLOPs", "FLOP/byte", label("受限于", "bound by"), "ms",
               label("FLOP 占比", "FLOP share"), label("时间占比", "time share"),
               label("时间占比 ÷ FLOP 占比", "time ÷ FLOP share")]
    return table(headers, rows)


def kernels_table(r: FlopsRuntimeResult) -> Localized:
    """The ops timed both ways: kernels per call, time, and the time share each gets."""
    check_type("r", r, FlopsRuntimeResult)
    ours = r.shares("llmlab")
    rows = []
    for op in dict.fromkeys(o for o, m in zip(r.ops, r.impls) if m == "llmlab"):
        t, m = r.index(op, "torch"), r.index(op, "llmlab")
        rows.append((op, r.kernels[t], r.kernels[m], fmt_float(1e3 * r.seconds[t], 3),
                     fmt_float(1e3 * r.seconds[m], 3),
                     fmt_float(r.seconds[m] / r.seconds[t], 1),
                     fmt_pct(r.shares("torch")[op][1], 1), fmt_pct(ours[op][1], 1)))
    headers = [label("运算", "op"), label("PyTorch 的 kernel 数", "PyTorch kernels"),
               label("llmlab 的 kernel 数", "llmlab kernels"),
               label("PyTorch 用时 ms", "PyTorch ms"), label("llmlab 用时 ms", "llmlab ms"),
               label("llmlab ÷ PyTorch", "llmlab ÷ PyTorch"),
               label("时间占比（PyTorch）", "time share (PyTorch)"),
               label("时间占比（llmlab）", "time share (llmlab)")]
    return table(headers, rows)


def _names(ops: list[str]) -> Label:
    """Op names as one list in both languages ("无" / "none" when there are none)."""
    names = [OPS.get(op, label(op, op)) for op in ops]
    return label("、".join(n.zh for n in names) or "无", ", ".join(n.en for n in names) or "none")


def roofline_summary(r: FlopsRuntimeResult, impl: str = "torch") -> Localized:
    """What this machine measured, in words: the ops above its ridge point
    (compute-bound) and below it (memory-bound), and those whose time share is
    above their FLOP share. Measured, so it describes this machine only."""
    check_type("r", r, FlopsRuntimeResult)
    check_choice("impl", impl, ("torch", "llmlab"))
    rows = r.layer(impl)
    above, below = ([r.ops[i] for i in rows if r.memory_bound(i) == bound]
                    for bound in (False, True))
    shares = r.shares(impl)
    dearer, cheaper = ([op for op, (f, t) in shares.items() if (t > f) == flag]
                       for flag in (True, False))
    ridge = fmt_float(r.ridge, 1)
    a, b, d, c = _names(above), _names(below), _names(dearer), _names(cheaper)
    lines = [
        label(f"- 这台机器（{r.machine}）的脊点：{ridge} FLOP/byte。",
              f"- Ridge point of this machine ({r.machine}): {ridge} FLOP/byte."),
        label(f"- 高于脊点（计算受限）：{a.zh}；低于脊点（内存受限）：{b.zh}。",
              f"- Above it (compute-bound): {a.en}; below it (memory-bound): {b.en}."),
        label(f"- 时间占比大于 FLOP 占比（每个 FLOP 比这组运算的平均贵）：{d.zh}；"
              f"不大于的：{c.zh}。",
              f"- Time share above FLOP share (each FLOP dearer than the average of "
              f"these ops): {d.en}; not above: {c.en}."),
    ]
    return Localized(lambda lang: "\n".join(line.text(lang) for line in lines))


IVANOV_BERT_NORM_TIME = 0.25  # Ivanov et al. (2021), BERT: softmax + LayerNorm ~25%


def norm_share_summary(r: FlopsRuntimeResult, op: str = "RMSNorm") -> Localized:
    """What this machine shows, in the argument's own terms (``op`` vs one matmul) and as
    Ivanov et al. count it (softmax + LayerNorm, their "statistical normalisations")."""
    check_type("r", r, FlopsRuntimeResult)
    check_choice("op", op, ("RMSNorm", "LayerNorm"))
    mm = r.index("matmul")
    t, m = r.index(op, "torch"), r.index(op, "llmlab")
    flop_vs_mm = fmt_pct(r.flops[t] / r.flops[mm], 3)
    time_vs_mm = [fmt_pct(r.seconds[i] / r.seconds[mm], 1) for i in (t, m)]
    shares = r.shares("torch")
    fs, ts = shares[op]
    ratio = (label(f"约为其 FLOP 占比的 {ts / fs:.0f} 倍", f"about {ts / fs:.0f} times its "
                   "FLOP share") if ts >= fs else
             label("低于其 FLOP 占比", "below its FLOP share"))
    both_f, both_t = (sum(shares[o][k] for o in ("LayerNorm", "softmax")) for k in (0, 1))
    if both_t < IVANOV_BERT_NORM_TIME / 5:
        verdict = label("远低于所引的约 25%", "far below the 25% quoted")
    elif both_t < IVANOV_BERT_NORM_TIME:
        verdict = label("低于所引的约 25%", "below the 25% quoted")
    else:
        verdict = label("达到或超过所引的约 25%", "at or above the 25% quoted")
    threads = label(f"{r.threads} 个线程", f"{r.threads} thread" + "s" * (r.threads != 1))
    lines = [
        label(f"- 这台机器：{r.machine}，{threads.zh}。",
              f"- This machine: {r.machine}, {threads.en}."),
        label(f"- {op} 的 FLOPs 是一次矩阵乘法的 {flop_vs_mm}，时间是它的 {time_vs_mm[0]}"
              f"（PyTorch）或 {time_vs_mm[1]}（llmlab 的教学代码）。",
              f"- {op}'s FLOPs are {flop_vs_mm} of one matmul's; its time is "
              f"{time_vs_mm[0]} of the matmul's (PyTorch) or {time_vs_mm[1]} "
              "(llmlab's teaching code)."),
        label(f"- 在第一张表这组运算里，{op} 占 FLOPs 的 {fmt_pct(fs, 2)}、时间的 "
              f"{fmt_pct(ts, 1)}，{ratio.zh}。",
              f"- Among the ops of the first table, {op} has {fmt_pct(fs, 2)} of the "
              f"FLOPs and {fmt_pct(ts, 1)} of the time, {ratio.en}."),
        label(f"- 按 Ivanov 等人的归类，把 LayerNorm 和 softmax 合起来：占 FLOPs 的 "
              f"{fmt_pct(both_f, 2)}、时间的 {fmt_pct(both_t, 1)}，{verdict.zh}。",
              f"- LayerNorm and softmax together, as Ivanov et al. group them: "
              f"{fmt_pct(both_f, 2)} of the FLOPs and {fmt_pct(both_t, 1)} of the time, "
              f"{verdict.en}."),
    ]
    return Localized(lambda lang: "\n".join(line.text(lang) for line in lines))


def activation_table(r: ActivationResult) -> Localized:
    check_type("r", r, ActivationResult)
    rows = [(fmt_float(p, 2), *(fmt_float(v[i], 3) for v in r.values.values()))
            for i, p in enumerate(r.points)]
    return table(["x", *r.values], rows)


def activation_figure(r: ActivationResult) -> Localized:
    check_type("r", r, ActivationResult)
    series = {name: (r.grid, ys) for name, ys in r.curves.items()}
    names = "、".join(r.curves)
    return line_plot(
        series, xlabel="x", ylabel=label("激活值", "activation(x)"), height=3.2,
        alt=label(f"{names} 三条激活函数曲线，x 从 {r.grid[0]:g} 到 {r.grid[-1]:g}",
                  f"The activation functions {', '.join(r.curves)} for x from "
                  f"{r.grid[0]:g} to {r.grid[-1]:g}"),
    )


def ffn_parity_table(r: FFNParityResult) -> Localized:
    check_type("r", r, FFNParityResult)
    rows = [(d, fmt_int(rf), fmt_int(rp), fmt_int(sf), fmt_float(sf / d, 3), fmt_int(sp),
             f"{sp / rp - 1:+.2%}")
            for d, rf, rp, sf, sp in zip(r.d_models, r.relu_d_ff, r.relu_params,
                                         r.swiglu_d_ff, r.swiglu_params)]
    headers = ["d_model", "ReLU d_ff", label("ReLU FFN 参数量", "ReLU FFN params"),
               "SwiGLU d_ff", "d_ff / d_model", label("SwiGLU 参数量", "SwiGLU params"),
               label("差别", "difference")]
    return table(headers, rows)


def rope_scores_figure(r: RopeCheckResult) -> Localized:
    check_type("r", r, RopeCheckResult)
    n = len(r.scores)
    return heatmap(
        r.scores, [str(i) for i in range(n)], [str(i) for i in range(n)],
        xlabel=label("键的位置 n", "key position n"), ylabel=label("查询的位置 m", "query position m"),
        annotate=False, cmap="RdBu_r", title=label("RoPE 之后的 q·k", "q·k after RoPE"),
        alt=label(f"热力图：同一对 q、k 放在 {n} 个位置上，RoPE 之后的点积",
                  f"Heatmap of q·k after RoPE for one pair q, k placed at each of {n} "
                  "positions"),
    )


def rope_frequency_figure(r: RopeCheckResult) -> Localized:
    check_type("r", r, RopeCheckResult)
    k = list(range(len(r.frequencies)))
    wavelength = [2 * math.pi / f for f in r.frequencies]
    series = {label("θ_k（每个位置转过的弧度）", "θ_k (radians per position)"): (k, r.frequencies),
              label("波长 2π/θ_k（位置数）", "wavelength 2π/θ_k (positions)"): (k, wavelength)}
    return line_plot(
        series, logy=True, height=3.2,
        xlabel=label(f"第 k 对（d_k = {r.d_k}，Θ = {r.theta:g}）",
                     f"pair index k (d_k = {r.d_k}, Θ = {r.theta:g})"),
        alt=label(f"对数坐标：d_k = {r.d_k} 时每一对的频率 θ_k 和波长",
                  f"Log-scale plot of each pair's frequency θ_k and wavelength for "
                  f"d_k = {r.d_k}"),
    )


COMPARISONS = {
    "no_rope": label("无 RoPE vs SDPA(is_causal=True)", "no RoPE vs SDPA(is_causal=True)"),
    "rope": label("RoPE vs 复数 RoPE + SDPA(is_causal=True)",
                  "RoPE vs complex RoPE + SDPA(is_causal=True)"),
}


def attention_check_table(r: AttentionCheckResult) -> Localized:
    check_type("r", r, AttentionCheckResult)
    rows = [(COMPARISONS[k], f"{d:.1e}") for k, d in zip(r.labels, r.max_abs_diff)]
    return table([label("对照", "comparison"), label("最大绝对差", "max abs difference")], rows)


def parameter_check_table(r: ParameterCheckResult) -> Localized:
    check_type("r", r, ParameterCheckResult)
    rows = [(n, c.d_model, c.num_layers, c.num_heads, c.d_ff, fmt_int(c.vocab_size),
             fmt_int(f), fmt_int(k), yes_no(f == k))
            for n, c, f, k in zip(r.names, r.configs, r.formula, r.code)]
    headers = [label("配置", "config"), "d_model", label("层数", "layers"),
               label("头数", "heads"), "d_ff", label("词表", "vocab"), label("公式", "formula"),
               label("代码数出的", "counted in code"), label("相等", "equal")]
    return table(headers, rows)
