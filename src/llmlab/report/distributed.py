"""Tables and the figure of :mod:`llmlab.experiments.distributed`, in the reader's language.

Numbers are written the same way in both languages: counts with thousands
separators, large counts (FLOPs, parameters) with SI prefixes (``46.08 G``),
memory in binary units (``1.85 GiB``: ``1 GiB = 2³⁰`` bytes, as a GPU's memory
is built and ``nvidia-smi`` shows it; only the ZeRO paper's own example is set
against the paper in its decimal GB) and totals in powers of ten
(``9.22 × 10²²``). Differences from a reference are signed percentages
(``+10.7%``, ``−12.3%``).

Taught on: "Where the compute and the memory go".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from llmlab.checks import check_finite_float, check_floats, check_int, check_str, check_type
from llmlab.experiments.distributed import (
    CommunicationTiming,
    DDPCheckResult,
    FlopCountResult,
    FlopRow,
    FSDPCheckResult,
    MemoryMode,
    MemoryResult,
    TrainingCostResult,
    UtilisationTiming,
    ZeroMemoryResult,
)
from llmlab.report import (Label, Localized, _scalar, fmt_float, fmt_int, fmt_pct, label, table,
                           yes_no)
from llmlab.report.diagrams import (
    FONT,
    MUTED,
    SMALL,
    Diagram,
    _arrow,
    _box,
    _canvas,
    _rect,
    _tint,
    _write,
)

__all__ = [
    "ZERO_PAPER_GB",
    "activation_table",
    "at_scale_table",
    "communication_settings",
    "communication_summary",
    "communication_table",
    "ddp_check_table",
    "ddp_losses_table",
    "flop_sweep_table",
    "flop_table",
    "fmt_bytes",
    "fmt_change",
    "fmt_sci",
    "fmt_si",
    "fsdp_bytes_table",
    "fsdp_check_table",
    "memory_modes_table",
    "parallelism_figure",
    "state_table",
    "training_cost_table",
    "utilisation_table",
    "zero_paper_table",
    "zero_table",
]

ZERO_PAPER_GB = (120.0, 31.4, 16.6, 1.9)
"""Model-state GB per GPU for 7.5B parameters on 64 GPUs, ZeRO stages 0–3, as
Rajbhandari et al. (2020), *ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models*, figure 1, report them (Ψ = 7.5B, N_d = 64, K = 12)."""

MODEL_NAMES = {
    "gpt2-small": "GPT-2 small", "GPT2_SMALL": "GPT-2 small",
    "llama2-7b": "Llama 2 7B", "LLAMA2_7B": "Llama 2 7B",
}
FAMILY_NAMES = {
    "B·T·d": label("B·T·d（隐状态）", "B·T·d (hidden states)"),
    "B·T·d_ff": label("B·T·d_ff（前馈层内部）", "B·T·d_ff (inside the FFN)"),
    "B·h·T·T": label("B·h·T·T（注意力分数）", "B·h·T·T (attention scores)"),
    "B·T·V": label("B·T·V（logits）", "B·T·V (logits)"),
    "other": label("其他（RMS、RoPE 表、掩码、编号）", "other (RMS, RoPE tables, mask, ids)"),
}
STATE_NAMES = {
    "parameters": (label("参数", "parameters"), "4·N"),
    "gradients": (label("梯度", "gradients"), "4·N"),
    "optimizer_state": (label("AdamW 的 m 和 v", "AdamW's m and v"), "8·N"),
}
_PREFIXES = ("", "k", "M", "G", "T", "P", "E")
_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


# --------------------------------------------------------------------------
# numbers
# --------------------------------------------------------------------------
def _number(name: str, x: object) -> float:
    """``x`` as a float (as the report layer reads one), NaN refused, ±inf allowed."""
    x = _scalar(name, x, integral=False)
    if math.isnan(x):
        raise ValueError(f"{name} must be a number (not NaN), got nan")
    return x


def fmt_si(x: float, unit: str = "", digits: int = 4) -> str:
    """``46084915200`` -> ``"46.08 G"``: ``digits`` significant digits, SI prefix.

    Trailing zeros stay (``"22.70 M"``): they are significant.
    """
    x = _number("x", x)
    check_str("unit", unit)
    digits = check_int("digits", digits)
    if x == 0 or not math.isfinite(x):
        return f"{x:g} {unit}".strip()
    k = max(0, min(int(math.floor(math.log10(abs(x)) / 3)), len(_PREFIXES) - 1))
    scaled = x / 1000**k

    def decimals(v: float) -> int:
        return max(0, digits - 1 - int(math.floor(math.log10(abs(v)))))

    places = decimals(scaled)
    if abs(round(scaled, places)) >= 1000 and k + 1 < len(_PREFIXES):
        k, scaled = k + 1, scaled / 1000  # 999.97 k rounds to 1000 k: say 1.000 M
        places = digits - 1
    return f"{scaled:.{places}f} {_PREFIXES[k]}{unit}".strip()


def fmt_bytes(n: float, digits: int = 3) -> str:
    """``1991036928`` -> ``"1.85 GiB"``: binary units (1 KiB = 2¹⁰ bytes, 1 MiB =
    2²⁰, 1 GiB = 2³⁰), ``digits`` significant digits; below 1 KiB, bytes (``"512 B"``).

    A value that rounds up to 1024 of a unit is said in the next (``"1.00 MiB"``).
    """
    n = _number("n", n)
    if n < 0:
        raise ValueError(f"n must be a number of bytes >= 0, got {n:g}")
    digits = check_int("digits", digits)
    if n < 1024 or not math.isfinite(n):
        return f"{n:g} B"
    k = min(int(math.floor(math.log(n, 1024))), len(_BINARY) - 1)
    if 1024**(k + 1) <= n and k + 1 < len(_BINARY):
        k += 1  # log rounded down an exact power of 1024
    scaled = n / 1024**k

    def decimals(v: float) -> int:
        return max(0, digits - 1 - int(math.floor(math.log10(v))))

    places = decimals(scaled)
    if round(scaled, places) >= 1024 and k + 1 < len(_BINARY):
        k, scaled = k + 1, scaled / 1024  # 1023.9 KiB rounds to 1024 KiB: say 1.00 MiB
        places = digits - 1
    return f"{scaled:.{places}f} {_BINARY[k]}"


def fmt_sci(x: float, digits: int = 3) -> str:
    """``9.21698304e22`` -> ``"9.22 × 10²²"``."""
    check_finite_float("x", x)
    check_int("digits", digits)
    mantissa, exponent = f"{float(x):.{digits - 1}e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def fmt_change(value: float, reference: float, digits: int = 1) -> str:
    """How far ``value`` is from ``reference``: ``"+10.7%"``, ``"−12.3%"``, ``"0.0%"``."""
    check_finite_float("value", value)
    if check_finite_float("reference", reference) == 0:
        raise ValueError("reference must be non-zero (a change is relative to it), "
                         f"got {reference}")
    check_int("digits", digits, minimum=0)
    change = 100 * (value / reference - 1)
    out = f"{abs(change):.{digits}f}%"
    if float(out[:-1]) == 0:
        return out
    return ("+" if change > 0 else "−") + out


def _small(x: float) -> str:
    """A difference: ``0`` when exact, else ``1.9e-08``."""
    return "0" if x == 0 else f"{x:.1e}"


def _ms(seconds: float) -> str:
    return fmt_float(seconds * 1000, 2)


def _code(name: str) -> str:
    return f"`{name}`"


# --------------------------------------------------------------------------
# 1. FLOPs, counted and estimated
# --------------------------------------------------------------------------
def flop_table(r: FlopCountResult) -> Localized:
    """Per configuration (a column each): counted FLOPs per token against ``6N``
    (all parameters), ``6N`` (matrix products only) and ``6N + 12LdT``."""
    check_type("r", r, FlopCountResult)
    rows_of: list[tuple[Label, Callable[[FlopRow], str]]] = [
        (label("参数 N（全部）", "parameters N (all)"), lambda w: fmt_si(w.n_parameters)),
        (label("其中矩阵乘法的 N_mm", "of which in matmuls, N_mm"),
         lambda w: fmt_si(w.n_matmul)),
        ("L / d / T",
         lambda w: f"{w.config['num_layers']} / {w.config['d_model']} / {w.context_length}"),
        (label("实测：前向", "counted: forward"),
         lambda w: fmt_si(w.forward / (w.batch_size * w.context_length))),
        (label("实测：反向 ÷ 前向", "counted: backward ÷ forward"),
         lambda w: fmt_float(w.backward / w.forward, 3)),
        (label("实测：前向 + 反向", "counted: forward + backward"),
         lambda w: fmt_si(w.per_token)),
        (label("其中输出层", "of which the output layer"),
         lambda w: fmt_pct(w.by_module.get("lm_head", 0) / (w.forward + w.backward))),
        (label("6·N（全部参数）", "6·N (all parameters)"),
         lambda w: f"{fmt_si(w.six_n_all)} ({fmt_change(w.six_n_all, w.per_token)})"),
        (label("6·N_mm", "6·N_mm"),
         lambda w: f"{fmt_si(w.six_n)} ({fmt_change(w.six_n, w.per_token)})"),
        (label("6·N_mm + 12·L·d·T", "6·N_mm + 12·L·d·T"),
         lambda w: f"{fmt_si(w.with_attention)} "
                   f"({fmt_change(w.with_attention, w.per_token)})"),
    ]
    rows = [[name, *[value(w) for w in r.rows]] for name, value in rows_of]
    headers = [label("每个 token 的 FLOPs", "FLOPs per token"),
               *[_code(w.name) for w in r.rows]]
    return table(headers, rows)


def flop_sweep_table(r: FlopCountResult) -> Localized:
    """Llama 2 7B as the context grows: counted FLOPs per token, ``6N`` and the
    attention term's share. Its own 4096-token row is included."""
    check_type("r", r, FlopCountResult)
    own = [w for w in r.rows if w.name == "LLAMA2_7B"]
    sweep = sorted(r.sweep + own, key=lambda w: w.context_length)
    rows = []
    for w in sweep:
        attention = w.with_attention - w.six_n
        rows.append([fmt_int(w.context_length), fmt_si(w.per_token), fmt_si(w.six_n),
                     fmt_pct(attention / w.with_attention),
                     fmt_change(w.six_n, w.per_token)])
    headers = [label("上下文 T", "context T"),
               label("实测 FLOPs/token", "counted FLOPs/token"),
               label("6·N_mm", "6·N_mm"),
               label("12·L·d·T 的占比", "share of 12·L·d·T"),
               label("6·N_mm 的误差", "error of 6·N_mm")]
    return table(headers, rows)


# --------------------------------------------------------------------------
# 2. memory, measured and estimated
# --------------------------------------------------------------------------
def state_table(r: MemoryResult) -> Localized:
    """Parameters, gradients and AdamW state: the formula against the real tensors."""
    check_type("r", r, MemoryResult)
    rows = []
    for key, (name, formula) in STATE_NAMES.items():
        rows.append([name, formula, fmt_int(r.estimated_state[key]),
                     fmt_int(r.measured_state[key])])
    rows.append([label("合计", "total"), "16·N", fmt_int(sum(r.estimated_state.values())),
                 fmt_int(sum(r.measured_state.values()))])
    headers = [label("张量", "tensors"), label("公式（fp32）", "formula (fp32)"),
               label("公式：字节", "formula: bytes"), label("实测：字节", "measured: bytes")]
    return table(headers, rows, align="llrr")


def _mode(r: MemoryResult, precision: str, checkpointing: bool) -> MemoryMode:
    for m in r.modes:
        if (m.precision, m.checkpointing) == (precision, checkpointing):
            return m
    raise ValueError(f"no mode {precision!r}, checkpointing={checkpointing} in the result")


def _tensor_count(nbytes: int, elements: int, itemsize: int) -> str:
    count = nbytes / (elements * itemsize)
    return fmt_int(int(count)) if count == int(count) else fmt_float(count, 2)


def activation_table(r: MemoryResult) -> Localized:
    """fp32, no checkpointing: per size family, how many tensors the formula says
    the backward pass needs and how many autograd really kept, and their bytes."""
    check_type("r", r, MemoryResult)
    m = _mode(r, "fp32", False)
    rows = []
    for family, elements in r.family_elements.items():
        formula = m.estimate_elements[family] // elements
        rows.append([FAMILY_NAMES[family], fmt_int(elements), fmt_int(formula),
                     _tensor_count(m.measured[family], elements, 4),
                     fmt_int(4 * m.estimate_elements[family]),
                     fmt_int(m.measured[family])])
    rows.append([FAMILY_NAMES["other"], "", "", "", "—", fmt_int(m.measured["other"])])
    rows.append([label("合计", "total"), "", "", "",
                 fmt_int(4 * sum(m.estimate_elements.values())), fmt_int(m.measured_total)])
    headers = [label("形状", "shape"), label("一个张量的元素数", "elements per tensor"),
               label("公式：张量数", "formula: tensors"),
               label("实测：张量数", "measured: tensors"),
               label("公式：字节", "formula: bytes"), label("实测：字节", "measured: bytes")]
    return table(headers, rows)


def _mode_name(m: MemoryMode) -> Label:
    if m.precision == "fp32":
        return label("fp32 + 激活重计算", "fp32 + checkpointing") if m.checkpointing \
            else label("fp32", "fp32")
    return label("bf16 autocast + 激活重计算", "bf16 autocast + checkpointing") \
        if m.checkpointing else label("bf16 autocast", "bf16 autocast")


def memory_modes_table(r: MemoryResult) -> Localized:
    """fp32 and bf16, without and with activation checkpointing: activation bytes
    (formula, measured), the bf16 weight copies autocast keeps, the step's FLOPs."""
    check_type("r", r, MemoryResult)
    base = _mode(r, "fp32", False)
    rows = []
    for m in r.modes:
        itemsize = 4 if m.precision == "fp32" else 2
        rows.append([_mode_name(m), fmt_int(itemsize * sum(m.estimate_elements.values())),
                     fmt_int(m.measured_total),
                     fmt_change(m.measured_total, base.measured_total),
                     fmt_int(m.parameter_copies),
                     f"{fmt_si(m.flops)} ({fmt_change(m.flops, base.flops)})"])
    headers = [label("做法（字节）", "mode (bytes)"), label("激活：公式", "activations: formula"),
               label("激活：实测", "activations: measured"),
               label("实测相对 fp32", "measured vs fp32"),
               label("权重的 bf16 副本", "bf16 weight copies"),
               label("一步的 FLOPs（相对 fp32）", "FLOPs of the step (vs fp32)")]
    return table(headers, rows)


def at_scale_table(r: MemoryResult) -> Localized:
    """GPT-2 small and Llama 2 7B: model state (fp32 and mixed precision) and the
    activations of one 4096-token sequence (the formulas, bf16): without
    checkpointing, what the forward pass saves (also the peak); with it, what the
    forward pass saves, the one block recomputed in the backward pass, and the peak."""
    check_type("r", r, MemoryResult)
    names = list(r.at_scale)

    def state(name: str, precision: str) -> str:
        row = r.at_scale[name]
        return fmt_bytes(sum(row[f"{precision}_{k}"] for k in STATE_NAMES))

    def activations(name: str, key: str) -> str:
        value = r.at_scale[name].get(key)
        return fmt_bytes(value) if value is not None else "—"

    rows = [
        [label("参数 N", "parameters N"),
         *[fmt_si(r.at_scale[n]["n_parameters"]) for n in names]],
        [label("模型状态，fp32（4 + 4 + 8 字节/参数）",
               "model state, fp32 (4 + 4 + 8 bytes/parameter)"),
         *[state(n, "fp32") for n in names]],
        [label("模型状态，混合精度（2 + 2 + 12 字节/参数）",
               "model state, mixed (2 + 2 + 12 bytes/parameter)"),
         *[state(n, "mixed") for n in names]],
        [label("激活，一条 4096 token 的序列（公式，bf16）：前向存下的，也是峰值",
               "activations, one 4096-token sequence (formula, bf16): saved in the "
               "forward pass, also the peak"),
         *[activations(n, "activations_bf16") for n in names]],
        [label("激活重计算：前向存下的（每块的输入、块之后的张量）",
               "checkpointed: saved in the forward pass (each block's input, the "
               "tensors after the blocks)"),
         *[activations(n, "activations_bf16_checkpointed") for n in names]],
        [label("激活重计算：反向时重算的一个块",
               "checkpointed: one block, recomputed in the backward pass"),
         *[activations(n, "activations_bf16_recomputed_block") for n in names]],
        [label("激活重计算：峰值", "checkpointed: the peak"),
         *[activations(n, "activations_bf16_checkpointed_peak") for n in names]],
    ]
    headers = [label("字节", "bytes"), *[_code(n) for n in names]]
    return table(headers, rows)


# --------------------------------------------------------------------------
# 3. what training costs at scale
# --------------------------------------------------------------------------
def training_cost_table(r: TrainingCostResult) -> Localized:
    """GPT-2 small and Llama 2 7B (a column each): tokens × FLOPs per token ÷ (peak ×
    utilisation), against the GPU-hours their runs published."""
    check_type("r", r, TrainingCostResult)
    rows_of: list[tuple[Label, Callable[[Any], str]]] = [
        (label("GPU（bf16 峰值）", "GPU (bf16 peak)"),
         lambda w: f"{w.accelerator} ({fmt_si(w.peak_flops, 'FLOP/s', 3)})"),
        (label("训练 token 数 D", "training tokens D"), lambda w: fmt_si(w.tokens, digits=3)),
        ("L / d / T", lambda w: f"{w.num_layers} / {w.d_model} / {w.context_length}"),
        (label("每个 token：6·N_mm", "per token: 6·N_mm"),
         lambda w: fmt_si(w.flops_per_token_6n, "FLOP")),
        (label("每个 token：6·N_mm + 12·L·d·T", "per token: 6·N_mm + 12·L·d·T"),
         lambda w: fmt_si(w.flops_per_token, "FLOP")),
        (label("总 FLOPs", "total FLOPs"), lambda w: fmt_sci(w.total_flops)),
        (label("GPU 小时：100% 峰值（下限）", "GPU-hours at 100% of peak (a floor)"),
         lambda w: fmt_int(round(w.hours_at_peak))),
        (label("GPU 小时：假设利用率", "GPU-hours at an assumed utilisation"),
         lambda w: f"{fmt_int(round(w.estimated_gpu_hours))} ({fmt_pct(w.utilisation, 0)})"),
        (label("GPU 小时：公布的", "GPU-hours, published"),
         lambda w: fmt_int(round(w.published_gpu_hours))),
        (label("公布的数字对应的利用率", "utilisation the published hours imply"),
         lambda w: fmt_pct(w.implied_utilisation)),
        (label("同上，只用 6·N_mm", "the same, with 6·N_mm only"),
         lambda w: fmt_pct(w.implied_utilisation_6n)),
    ]
    rows = [[name, *[value(w) for w in r.rows]] for name, value in rows_of]
    headers = [label("训练一次", "one training run"),
               *[MODEL_NAMES.get(w.model, w.model) for w in r.rows]]
    return table(headers, rows)


def utilisation_table(t: UtilisationTiming) -> Localized:
    """Our CPU step: FLOPs, seconds, FLOP/s against the machine's matmul peak."""
    check_type("t", t, UtilisationTiming)
    c = t.config
    rows = [
        [label("机器", "machine"), t.machine],
        [label("模型", "model"),
         label(f"LLAMA_TOY（d = {c['d_model']}，{c['num_layers']} 层），"
               f"batch {t.batch_size} × {c['context_length']} 个 token",
               f"LLAMA_TOY (d = {c['d_model']}, {c['num_layers']} layers), "
               f"batch {t.batch_size} × {c['context_length']} tokens")],
        [label("前向 + 反向的 FLOPs", "FLOPs of forward + backward"),
         fmt_si(t.step_flops, "FLOP")],
        [label("用时（中位数）", "time (median)"),
         label(f"{_ms(t.step_seconds)} 毫秒", f"{_ms(t.step_seconds)} ms")],
        [label("达到的 FLOP/s", "FLOP/s achieved"), fmt_si(t.achieved_flops, "FLOP/s")],
        [label(f"峰值：{t.matmul_size}×{t.matmul_size} fp32 矩阵乘法",
               f"peak: a {t.matmul_size}×{t.matmul_size} fp32 matmul"),
         fmt_si(t.peak_flops, "FLOP/s")],
        [label("利用率", "utilisation"), fmt_pct(t.utilisation)],
    ]
    return table([label("项目", "item"), label("值", "value")], rows, align="ll")


# --------------------------------------------------------------------------
# 4. data parallelism with DDP
# --------------------------------------------------------------------------
def ddp_losses_table(r: DDPCheckResult) -> Localized:
    """Per step: one process's loss on the whole batch, DDP's (the mean of the
    ranks'), and each rank's loss on its share."""
    check_type("r", r, DDPCheckResult)
    rows = []
    for step, (single, ddp) in enumerate(zip(r.single_losses, r.ddp_losses), start=1):
        local = [fmt_float(losses[step - 1], 4) for losses in r.ddp_local_losses]
        rows.append([step, fmt_float(single, 4), fmt_float(ddp, 4), *local,
                     _small(abs(ddp - single))])
    share = r.batch_size // r.world_size
    headers = [label("步", "step"),
               label(f"一个进程：{r.batch_size} 个窗口", f"one process: {r.batch_size} windows"),
               label("DDP：各 rank 的平均", "DDP: mean over ranks"),
               *[label(f"rank {k}：自己的 {share} 个", f"rank {k}: its {share}")
                 for k in range(r.world_size)],
               label("|差|", "|diff|")]
    return table(headers, rows, align="r" * len(headers))


def ddp_check_table(r: DDPCheckResult) -> Localized:
    """What was compared between DDP and one process, and how close it came."""
    check_type("r", r, DDPCheckResult)
    rtol, atol = r.tolerance
    rows = [[label(f"rank {k} 的梯度（all-reduce 之后）与整批的梯度：最大 |差|",
                   f"rank {k}'s gradients (after the all-reduce) vs the whole batch's: "
                   "max |diff|"), _small(d)] for k, d in enumerate(r.gradient_diff)]
    rows += [
        [label("容差（torch.allclose）", "tolerance (torch.allclose)"),
         f"rtol = {rtol:g}, atol = {atol:g}"],
        [label("每个 rank 的梯度都在容差内", "every rank's gradients within it"),
         yes_no(r.gradients_equal)],
        [label(f"{r.steps} 步的损失：最大 |差|", f"losses over {r.steps} steps: max |diff|"),
         _small(r.loss_diff)],
        [label(f"{r.steps} 步后的参数：最大 |差|",
               f"parameters after {r.steps} steps: max |diff|"), _small(r.parameter_diff)],
        [label("各 rank 的参数逐位相同", "every rank's parameters bit-identical"),
         yes_no(r.ranks_identical)],
    ]
    return table([label("比较", "comparison"), label("结果", "result")], rows, align="lr")


def communication_table(t: CommunicationTiming) -> Localized:
    """Per rank (a column each): milliseconds of computing and of communicating."""
    check_type("t", t, CommunicationTiming)
    ranks = range(t.world_size)
    rows = [
        [label("前向 + 反向，不同步（no_sync）", "forward + backward, no sync (no_sync)"),
         *[_ms(s) for s in t.compute_seconds]],
        [label("前向 + 反向，带 all-reduce", "forward + backward with the all-reduce"),
         *[_ms(s) for s in t.synced_seconds]],
        [label("两者之差", "the difference"),
         *[_ms(a - b) for a, b in zip(t.synced_seconds, t.compute_seconds)]],
        [label("各步之差：最小到最大", "each step's difference, least to most"),
         *[label(f"{_ms(min(d))} 到 {_ms(max(d))}", f"{_ms(min(d))} to {_ms(max(d))}")
           for d in t.difference_seconds]],
        [label("桶的 all-reduce：发起到完成（与反向重叠）",
               "the buckets' all-reduce, launch to completion (overlaps backward)"),
         *[_ms(s) for s in t.hook_seconds]],
        [label(f"单独一次阻塞的 all-reduce（{fmt_bytes(t.gradient_bytes)}）",
               f"one blocking all-reduce alone ({fmt_bytes(t.gradient_bytes)})"),
         *[_ms(s) for s in t.all_reduce_seconds]],
        [label("裁剪梯度 + AdamW", "clipping + AdamW"), *[_ms(s) for s in t.optimizer_seconds]],
    ]
    return table([label("毫秒", "ms"), *[f"rank {k}" for k in ranks]], rows)


def communication_summary(t: CommunicationTiming) -> Label:
    """What the table's difference can be, in words made from this machine's numbers.

    The difference of the medians (with the all-reduce minus without) is set
    against one blocking all-reduce of every gradient: what a difference has beyond
    is more than sending every gradient once takes (waiting for the other rank,
    the cost of sending in several buckets, noise: the table cannot tell them
    apart), and a negative one is noise alone. The spread of the rank's
    differences over the steps comes with it.
    """
    check_type("t", t, CommunicationTiming)
    diffs = [s - c for s, c in zip(t.synced_seconds, t.compute_seconds)]
    ranks = range(len(diffs))
    over = [k for k in ranks if diffs[k] > t.all_reduce_seconds[k]]
    k = max(over or ranks, key=lambda i: diffs[i] - t.all_reduce_seconds[i])
    d, a = _ms(diffs[k]), _ms(t.all_reduce_seconds[k])
    lo, hi = _ms(min(t.difference_seconds[k])), _ms(max(t.difference_seconds[k]))
    if over:
        x = fmt_float(diffs[k] / t.all_reduce_seconds[k], 1) \
            if t.all_reduce_seconds[k] > 0 else "∞"
        out = label(
            f"在这台机器上，rank {k} 的两者之差（{d} 毫秒）比单独一次阻塞的 all-reduce"
            f"（{a} 毫秒，全部梯度传一遍）还长，是它的 {x} 倍：超出的部分比把梯度传一遍花的时间还多，"
            f"可能是等另一个 rank、分桶多次发送的开销或测量噪声，这张表分不开。"
            f"这个差在各步之间从 {lo} 到 {hi} 毫秒不等。",
            f"On this machine, rank {k}'s difference ({d} ms) is longer than one "
            f"blocking all-reduce of every gradient ({a} ms), {x} times as long: the "
            f"excess is more than sending every gradient once takes; waiting for the "
            f"other rank, sending in several buckets and noise may all be in it, and "
            f"this table cannot tell them apart. Over the steps the difference ranges "
            f"from {lo} to {hi} ms.")
    else:
        out = label(
            f"在这台机器上，没有哪个 rank 的两者之差超过单独一次阻塞的 all-reduce"
            f"（rank {k}：{d} 毫秒，all-reduce {a} 毫秒）：它可以是没藏住的通信，"
            f"但也混着等待和噪声，这张表分不开。这个差在各步之间从 {lo} 到 {hi} 毫秒不等。",
            f"On this machine, no rank's difference exceeds one blocking all-reduce "
            f"(rank {k}: {d} ms against {a} ms): it may be communication left unhidden, "
            f"but waiting and noise are in it too, and this table cannot tell them "
            f"apart. Over the steps it ranges from {lo} to {hi} ms.")
    j = min(ranks, key=lambda i: diffs[i])
    if diffs[j] < 0:
        dj = _ms(diffs[j])
        out = label(f"{out.zh}rank {j} 的差是负的（{dj} 毫秒）：带 all-reduce 的一步反而更快，"
                    "噪声比通信还大。",
                    f"{out.en} Rank {j}'s difference is negative ({dj} ms): the step with "
                    "the all-reduce was the faster, the noise larger than the communication.")
    return out


def communication_settings(t: CommunicationTiming) -> Label:
    """One line: the machine and what was timed."""
    check_type("t", t, CommunicationTiming)
    c = t.config
    return label(f"{t.machine}；{t.world_size} 个 gloo 进程，每个 1 个线程；每步 batch "
                 f"{t.batch_size}（每个 rank {t.batch_size // t.world_size}），d = "
                 f"{c['d_model']}，{c['num_layers']} 层；梯度 {fmt_bytes(t.gradient_bytes)}，"
                 f"{t.buckets} 个桶",
                 f"{t.machine}; {t.world_size} gloo processes of 1 thread each; batch "
                 f"{t.batch_size} per step ({t.batch_size // t.world_size} per rank), "
                 f"d = {c['d_model']}, {c['num_layers']} layers; gradients "
                 f"{fmt_bytes(t.gradient_bytes)} in {t.buckets} bucket"
                 f"{'s' if t.buckets > 1 else ''}")


# --------------------------------------------------------------------------
# 5. sharding with FSDP, and ZeRO at scale
# --------------------------------------------------------------------------
def fsdp_bytes_table(r: FSDPCheckResult) -> Localized:
    """Per kind of tensor: what a DDP rank holds, what each FSDP rank holds, the share."""
    check_type("r", r, FSDPCheckResult)
    rows = []
    keys = list(STATE_NAMES)
    for key in keys:
        name = STATE_NAMES[key][0]
        rows.append([name, fmt_int(r.ddp_bytes[0][key]),
                     *[fmt_int(b[key]) for b in r.fsdp_bytes],
                     fmt_float(r.shares[0][key], 3)])
    rows.append([label("合计", "total"), fmt_int(sum(r.ddp_bytes[0].values())),
                 *[fmt_int(sum(b.values())) for b in r.fsdp_bytes],
                 fmt_float(sum(r.fsdp_bytes[0].values()) / sum(r.ddp_bytes[0].values()), 3)])
    headers = [label("字节", "bytes"), label("DDP：每个 rank", "DDP: each rank"),
               *[label(f"FSDP：rank {k}", f"FSDP: rank {k}") for k in range(r.world_size)],
               label("FSDP ÷ DDP", "FSDP ÷ DDP")]
    return table(headers, rows)


def fsdp_check_table(r: FSDPCheckResult) -> Localized:
    """FSDP against DDP: what a parameter became, and how close the results came."""
    check_type("r", r, FSDPCheckResult)
    rows = [
        [label("FSDP 的参数类型", "an FSDP parameter's type"), _code(r.parameter_type)],
        *[[label(f"rank {k} 第一步的完整梯度与 DDP 的：最大 |差|",
                 f"rank {k}'s first full gradients vs DDP's: max |diff|"), _small(d)]
          for k, d in enumerate(r.gradient_diff)],
        [label(f"{r.steps} 步的损失与 DDP 的：最大 |差|",
               f"losses over {r.steps} steps vs DDP's: max |diff|"), _small(r.loss_diff)],
        [label(f"{r.steps} 步后的参数（收集后）与 DDP 的：最大 |差|",
               f"parameters after {r.steps} steps (gathered) vs DDP's: max |diff|"),
         _small(r.parameter_diff)],
    ]
    return table([label("比较", "comparison"), label("结果", "result")], rows, align="lr")


def _stage_name(stage: int) -> Label:
    if stage == 0:
        return label("ZeRO-0（DDP）", "ZeRO-0 (DDP)")
    return label(f"ZeRO-{stage}", f"ZeRO-{stage}")


def zero_table(r: ZeroMemoryResult) -> Localized:
    """Model-state bytes per GPU: a row per model and GPU count, a column per stage."""
    check_type("r", r, ZeroMemoryResult)
    rows = []
    for m, name in enumerate(r.models):
        for d, n in enumerate(r.n_devices):
            rows.append([MODEL_NAMES.get(name, name), fmt_int(n),
                         *[fmt_bytes(b) for b in r.bytes_per_device[m][d]]])
    headers = [label("模型", "model"), label("GPU 数", "GPUs"),
               *[_stage_name(s) for s in r.stages]]
    return table(headers, rows, align="lr" + "r" * len(r.stages))


def zero_paper_table(r: ZeroMemoryResult,
                     paper_gb: Sequence[float] = ZERO_PAPER_GB) -> Localized:
    """ZeRO's own example (7.5B parameters, 64 GPUs): computed here and as published,
    both in the paper's decimal GB (10⁹ bytes), to its digits."""
    check_type("r", r, ZeroMemoryResult)
    paper_gb = check_floats("paper_gb", paper_gb, minimum=0.0)
    if len(paper_gb) != len(r.stages):
        raise ValueError(f"paper_gb must have one value per stage of r.stages "
                         f"({len(r.stages)}), got {len(paper_gb)}")
    rows = [[label("这里算出的", "computed here"),
             *[f"{b / 1e9:.1f} GB" for b in r.paper_check]],
            [label("论文图 1", "the paper's figure 1"), *[f"{g:g} GB" for g in paper_gb]]]
    headers = [label("7.5B 参数，64 个 GPU（论文的 GB：10⁹ 字节）",
                     "7.5B parameters, 64 GPUs (the paper's GB: 10⁹ bytes)"),
               *[_stage_name(s) for s in r.stages]]
    return table(headers, rows)


# --------------------------------------------------------------------------
# the figure: data parallelism vs sharding
# --------------------------------------------------------------------------
PARAM, GRAD, OPTIM = "#4e79a7", "#f28e2b", "#59a14f"


def parallelism_figure(r: FSDPCheckResult) -> Diagram:
    """What each of two ranks holds under DDP and under FSDP, to scale.

    Each bar's length is the bytes a rank really held in :func:`run_fsdp_check`
    (parameters, gradients, AdamW's ``m`` and ``v``); under FSDP the part a rank
    does not hold is drawn as an empty outline: its peer holds it.
    """
    check_type("r", r, FSDPCheckResult)
    if r.world_size != 2:
        raise ValueError(f"the figure draws two ranks, got world_size={r.world_size}")
    keys = list(STATE_NAMES)
    colours = dict(zip(keys, (PARAM, GRAD, OPTIM)))
    full = {k: r.ddp_bytes[0][k] for k in keys}
    held = [{k: b[k] for k in keys} for b in r.fsdp_bytes]
    data = {"ddp_bytes": r.ddp_bytes, "fsdp_bytes": r.fsdp_bytes, "keys": keys}

    panel_w, gap = 2.95, 0.25
    name_w, bar_max = 1.2, 1.5  # the names' column; the longest bar
    scale = bar_max / max(full.values())
    row_h, card_pad = 0.34, 0.12
    card_h = 0.42 + len(keys) * row_h + card_pad
    y_card0 = 0.15  # the lower card's bottom
    link = 1.0  # room between the two cards for the collectives
    y_card1 = y_card0 + card_h + link
    y_title = y_card1 + card_h + 0.55
    names = {
        "parameters": label("参数", "parameters"),
        "gradients": label("梯度", "gradients"),
        "optimizer_state": label("AdamW m、v", "AdamW m, v"),
    }
    halves = (label("批次的前一半", "first half of the batch"),
              label("批次的后一半", "second half of the batch"))

    def card(ax: Any, t: Callable, x0: float, y0: float, rank: int, sharded: bool) -> None:
        _rect(ax, x0, y0, panel_w, card_h, _tint("#999999", 0.08), edge="#999999", lw=1.0,
              zorder=1)
        top = y0 + card_h
        _write(ax, x0 + 0.12, top - 0.2, f"rank {rank}", ha="left", size=FONT,
               weight="bold")
        _write(ax, x0 + panel_w - 0.12, top - 0.2, t(halves[rank]), ha="right", size=SMALL,
               color=MUTED)
        for i, k in enumerate(keys):
            y = top - 0.42 - (i + 0.5) * row_h
            _write(ax, x0 + 0.12, y, t(names[k]), ha="left", size=SMALL)
            x_bar, w_full = x0 + name_w, full[k] * scale
            if not sharded:
                _rect(ax, x_bar, y - 0.1, w_full, 0.2, colours[k])
                continue
            w_held = held[rank][k] * scale
            start = x_bar if rank == 0 else x_bar + w_full - w_held
            _rect(ax, x_bar, y - 0.1, w_full, 0.2, "white", edge=_tint(colours[k], 0.6),
                  lw=1.0, zorder=2)
            _rect(ax, start, y - 0.1, w_held, 0.2, colours[k], zorder=3)

    def panel(ax: Any, t: Callable, x0: float, sharded: bool) -> None:
        title = label("分片（FSDP）", "Sharding (FSDP)") if sharded else \
            label("数据并行（DDP）", "Data parallel (DDP)")
        sub = label("每个 rank 只存一半", "each rank holds half") if sharded else \
            label("每个 rank 存一整份", "each rank holds a full copy")
        _write(ax, x0 + panel_w / 2, y_title, t(title), size=FONT + 1, weight="bold")
        _write(ax, x0 + panel_w / 2, y_title - 0.3, t(sub), size=SMALL, color=MUTED)
        card(ax, t, x0, y_card1, 0, sharded)
        card(ax, t, x0, y_card0, 1, sharded)
        x_mid = x0 + 0.32
        _arrow(ax, (x_mid, y_card1 - 0.05), (x_mid, y_card0 + card_h + 0.05), style="<|-|>")
        box_x, box_w = x0 + 0.58, panel_w - 0.6
        y_mid = y_card0 + card_h + link / 2
        if sharded:
            lines = (label("all-gather：逐块收齐参数", "all-gather: a block's weights"),
                     label("reduce-scatter：平均梯度各留一半",
                           "reduce-scatter: mean, halved"))
        else:
            lines = (label("all-reduce：梯度求平均", "all-reduce: average gradients"),
                     label("每个 rank 做同样的更新", "every rank: the same step"))
        _box(ax, box_x, y_mid - 0.36, box_w, 0.72, "white", edge="#bbbbbb")
        _write(ax, box_x + 0.1, y_mid + 0.16, t(lines[0]), ha="left", size=SMALL)
        _write(ax, box_x + 0.1, y_mid - 0.16, t(lines[1]), ha="left", size=SMALL)

    def draw(ax: Any, t: Callable) -> None:
        panel(ax, t, 0.0, False)
        panel(ax, t, panel_w + gap, True)

    width, height = 2 * panel_w + gap, y_title + 0.2
    alt = label(
        "示意图：左边是数据并行（DDP），两个 rank 各存一整份参数、梯度和 AdamW 的 m、v，"
        "各算批次的一半，反向时用 all-reduce 把梯度求平均；右边是分片（FSDP），"
        "每个 rank 只存每样东西的一半（条的长度是实测的字节数），用到一个块时用 all-gather "
        "收齐它的参数，梯度用 reduce-scatter 求平均，每个 rank 留下平均梯度的一半。",
        "Diagram: left, data parallelism (DDP): each of two ranks holds a full copy of "
        "the parameters, the gradients and the AdamW moments m and v, computes half "
        "the batch, and "
        "averages the gradients with an all-reduce during the backward pass; right, "
        "sharding (FSDP): each rank holds half of each (bar lengths are the measured "
        "bytes), gathers the parameters of a block with an all-gather when it runs, and "
        "keeps its half of the mean gradient with a reduce-scatter.")
    return Diagram(lambda lang: _canvas(lang, width, height, draw), alt, data)
