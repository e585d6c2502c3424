"""Experiments for the Llama-style building blocks lecture.

Each ``run_*`` is seeded, CPU-only and returns plain data (rendered by
:mod:`llmlab.report.building_blocks`). :func:`run_flops_vs_runtime` times kernels,
so it is cached per machine: its timings describe the machine that measured them.
The arguments that configure a Llama-style module keep its (CS336) names, as
``num_heads`` of :func:`run_attention_check` and ``d_k`` of :func:`run_rope_check`.
:func:`run_block_parts` and :func:`run_rope_rotation` compute what the lecture's
diagrams show (drawn by :mod:`llmlab.report.diagrams`).

Taught on: "The building blocks of a modern (Llama-style) Transformer".
"""

from __future__ import annotations

import dataclasses
import math
import platform
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from llmlab.build.cache import cached
from llmlab.checks import (
    check_choice,
    check_divisible,
    check_finite_float,
    check_floats,
    check_int,
    check_rope_size,
    check_sizes,
    check_type,
)
from llmlab.feed_forward import ReLUFFN, SwiGLU, gelu, relu, silu
from llmlab.functional import softmax
from llmlab.layers import Embedding, Linear, trunc_normal_std
from llmlab.models import gpt2
from llmlab.models.llama import (
    CS336_TINYSTORIES,
    LLAMA2_7B,
    LLAMA_TOY,
    LlamaConfig,
    MultiHeadSelfAttention,
    TransformerLM,
)
from llmlab.norm import LayerNorm, RMSNorm, rms_norm
from llmlab.params import count_parameters
from llmlab.position import RotaryPositionalEmbedding, rope_complex, rope_frequencies

__all__ = [
    "ActivationResult",
    "AttentionCheckResult",
    "BlockPartsResult",
    "FFNParityResult",
    "FlopsRuntimeResult",
    "InitStatisticsResult",
    "LowPrecisionNormResult",
    "NormComparisonResult",
    "ParameterCheckResult",
    "RopeCheckResult",
    "RopeRotationResult",
    "run_activation_values",
    "run_attention_check",
    "run_block_parts",
    "run_ffn_parity",
    "run_flops_vs_runtime",
    "run_init_statistics",
    "run_low_precision_norm",
    "run_norm_comparison",
    "run_parameter_check",
    "run_rope_check",
    "run_rope_rotation",
]


# --- 0. the lecture's diagrams: GPT-2 vs Llama, RoPE's rotations -----------------


@dataclasses.dataclass
class BlockPartsResult:
    """The parts of a tiny GPT-2-style and a tiny Llama-style model, read off the modules.

    Each of :attr:`gpt2` and :attr:`llama` maps

    * ``embeddings``: the model's embedding tables (a position table, if it has one),
    * ``norm``: the class of a block's norms,
    * ``attn``: the names of the attention's linear layers,
    * ``ffn``, ``ffn_parts``: the feed-forward's class and its parts in order,
    * ``rope``: the class of the attention's rotary embedding, or None,
    * ``linear_biases``: how many linear layers of a block have a bias.
    """

    gpt2: dict[str, Any]
    llama: dict[str, Any]


def _linear_biases(module: nn.Module) -> int:
    """How many linear layers in ``module`` have a bias."""
    return sum(isinstance(m, (nn.Linear, Linear)) and getattr(m, "bias", None) is not None
               for m in module.modules())


@cached
def run_block_parts(seed: int = 0) -> BlockPartsResult:
    """Build a tiny :class:`llmlab.models.gpt2.TransformerLM` and
    :class:`llmlab.models.llama.TransformerLM` (one block each, ``d_model=8``) and
    read off their blocks' parts: classes, sub-module names, position tables, biases.

    Args:
        seed: Seed of the models' weights (a forked RNG: the global one is untouched).
    """
    check_int("seed", seed, minimum=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        g = gpt2.TransformerLM(vocab_size=16, context_length=8, d_model=8, n_layers=1, n_heads=2)
        m = TransformerLM(vocab_size=16, context_length=8, d_model=8, num_layers=1,
                          num_heads=2, d_ff=16)
    gb, mb = g.blocks[0], m.layers[0]
    linears = (nn.Linear, Linear)
    return BlockPartsResult(
        gpt2={
            "embeddings": [n for n in ("tok_emb", "pos_emb") if hasattr(g, n)],
            "norm": type(gb.ln1).__name__,
            "attn": [n for n, c in gb.attn.named_children() if isinstance(c, linears)],
            "ffn": type(gb.ffn).__name__,
            "ffn_parts": [n if isinstance(c, linears) else type(c).__name__
                          for n, c in gb.ffn.named_children() if not isinstance(c, nn.Dropout)],
            "rope": None,
            "linear_biases": _linear_biases(gb),
        },
        llama={
            "embeddings": ["token_embeddings"] + [n for n in ("pos_emb",) if hasattr(m, n)],
            "norm": type(mb.ln1).__name__,
            "attn": [n for n, c in mb.attn.named_children() if isinstance(c, linears)],
            "ffn": type(mb.ffn).__name__,
            "ffn_parts": [n for n, c in mb.ffn.named_children() if isinstance(c, linears)],
            "rope": type(mb.attn.rope).__name__ if mb.attn.rope is not None else None,
            "linear_biases": _linear_biases(mb),
        },
    )


@dataclasses.dataclass
class RopeRotationResult:
    """The same vector at several positions, rotated by RoPE.

    Attributes:
        positions: The positions ``m``.
        d_k: Size of the vector.
        theta: RoPE's base Θ.
        pairs: The pairs of coordinates kept (pair ``k`` is coordinates ``2k, 2k+1``).
        freqs: One per pair in :attr:`pairs`: its angle per position,
            ``θ_k = theta^(−2k/d_k)`` (:func:`llmlab.position.rope_frequencies`).
        rotated: Pair ``k`` -> ``(len(positions), 2)``, the rotated pair at each position.
    """

    positions: list[int]
    d_k: int
    theta: float
    pairs: list[int]
    freqs: list[float]
    rotated: dict[int, torch.Tensor]


def _distinct_ints(name: str, values: object, low: int, high: int) -> list[int]:
    """At least one distinct int, each in ``[low, high]``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    out = [check_int(f"{name}[{i}]", v, minimum=low) for i, v in enumerate(values)]
    if not out:
        raise ValueError(f"{name} must hold at least one value, got none")
    if len(set(out)) != len(out):
        raise ValueError(f"{name} must be distinct, got {out}")
    if max(out) > high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {max(out)}")
    return out


@cached
def run_rope_rotation(positions: tuple[int, ...] = (0, 1, 2, 3), d_k: int = 8,
                      theta: float = 10_000.0, pairs: tuple[int, ...] = (0, 1)
                      ) -> RopeRotationResult:
    """A vector whose every pair is ``(1, 0)`` through a real
    :class:`llmlab.position.RotaryPositionalEmbedding` at each of ``positions``.

    Args:
        positions: Distinct positions, each 0 to 1023.
        d_k: Size of the query/key vectors (even).
        theta: RoPE's base Θ.
        pairs: Distinct pair indices in ``[0, d_k/2)``.
    """
    d_k = check_rope_size("d_k", d_k)
    theta = check_finite_float("theta", theta, minimum=0.0, open_min=True)
    positions = _distinct_ints("positions", positions, 0, 1023)
    pairs = _distinct_ints("pairs", pairs, 0, d_k // 2 - 1)
    rope = RotaryPositionalEmbedding(theta, d_k, max_seq_len=max(positions) + 1)
    x = torch.zeros(len(positions), d_k)
    x[:, 0::2] = 1.0  # every pair (1, 0)
    rotated = rope(x, torch.tensor(positions))  # (len(positions), d_k)
    freqs = rope_frequencies(theta, d_k)  # (d_k/2,), float64
    return RopeRotationResult(positions, d_k, theta, pairs, [float(freqs[k]) for k in pairs],
                              {k: rotated[:, 2 * k: 2 * k + 2] for k in pairs})


# --- 1. initialisation -------------------------------------------------------------


@dataclasses.dataclass
class InitStatisticsResult:
    """Measured weight statistics vs the truncated-normal targets (one row a layer)."""

    names: list[str]
    shapes: list[tuple[int, ...]]
    target_std: list[float]
    predicted_std: list[float]
    measured_std: list[float]
    max_abs: list[float]
    cut: list[float]


@cached
def run_init_statistics(
    linear_shapes: tuple[tuple[int, int], ...] = ((512, 256), (768, 3072)),
    embedding_shape: tuple[int, int] = (1000, 64),
    seed: int = 0,
) -> InitStatisticsResult:
    """Initialise layers and measure their weights' std and largest magnitude."""
    check_type("linear_shapes", linear_shapes, (list, tuple),
               expected="a tuple of (d_in, d_out) pairs")
    if not linear_shapes:
        raise ValueError("linear_shapes must hold at least one (d_in, d_out), got ()")
    for i, shape in enumerate(linear_shapes):
        if len(check_sizes(f"linear_shapes[{i}]", shape)) != 2:
            raise ValueError(
                f"linear_shapes[{i}] must be a pair (d_in, d_out), got {shape!r}")
    if len(check_sizes("embedding_shape", embedding_shape)) != 2:
        raise ValueError("embedding_shape must be a pair (num_embeddings, d), got "
                         f"{embedding_shape!r}")
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    res = InitStatisticsResult([], [], [], [], [], [], [])
    layers: list[tuple[str, torch.nn.Module, float]] = []
    for d_in, d_out in linear_shapes:
        std = math.sqrt(2.0 / (d_in + d_out))
        layers.append((f"Linear({d_in}, {d_out})", Linear(d_in, d_out), std))
    n, d = embedding_shape
    layers.append((f"Embedding({n}, {d})", Embedding(n, d), 1.0))
    for name, layer, std in layers:
        w = layer.weight.detach()
        res.names.append(name)
        res.shapes.append(tuple(w.shape))
        res.target_std.append(std)
        res.predicted_std.append(trunc_normal_std(std))
        res.measured_std.append(float(w.std()))
        res.max_abs.append(float(w.abs().max()))
        res.cut.append(3 * std)
    return res


# --- 2. norms ----------------------------------------------------------------------


@dataclasses.dataclass
class NormComparisonResult:
    """Row statistics of a shifted input and of its LayerNorm / RMSNorm outputs."""

    labels: list[str]
    mean: list[float]
    std: list[float]
    rms: list[float]
    parameters: list[int | None]
    max_diff_layernorm: float
    max_diff_rmsnorm: float


def _row_stats(x: torch.Tensor) -> tuple[float, float, float]:
    x = x.double()
    return (
        float(x.mean(-1).mean()),
        float(x.std(-1, unbiased=False).mean()),
        float(x.pow(2).mean(-1).sqrt().mean()),
    )


@cached
def run_norm_comparison(
    d_model: int = 512, n_rows: int = 64, shift: float = 5.0, scale: float = 3.0,
    seed: int = 0,
) -> NormComparisonResult:
    """Normalise ``scale · N(0, 1) + shift`` with both norms and with PyTorch's."""
    check_int("d_model", d_model)
    check_int("n_rows", n_rows)
    check_finite_float("shift", shift)
    check_finite_float("scale", scale, minimum=0.0, open_min=True)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    x = torch.randn(n_rows, d_model) * scale + shift  # (rows, d_model)
    ln, rms = LayerNorm(d_model), RMSNorm(d_model)
    # give the gains (and LayerNorm's shift) non-trivial values, shared with the refs
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)
        rms.weight.copy_(ln.weight)
    ref_ln = torch.nn.LayerNorm(d_model, eps=1e-5)
    ref_ln.load_state_dict(ln.state_dict())
    ref_rms = torch.nn.RMSNorm(d_model, eps=1e-5)
    ref_rms.load_state_dict(rms.state_dict())
    with torch.no_grad():
        diff_ln = float((ln(x) - ref_ln(x)).abs().max())
        diff_rms = float((rms(x) - ref_rms(x)).abs().max())
        # statistics with unit gains, so they show what the normalisation itself does
        outs = [x, LayerNorm(d_model)(x), RMSNorm(d_model)(x)]
    stats = [_row_stats(t) for t in outs]
    return NormComparisonResult(
        labels=["x", "LayerNorm(x)", "RMSNorm(x)"],
        mean=[s[0] for s in stats],
        std=[s[1] for s in stats],
        rms=[s[2] for s in stats],
        parameters=[None, count_parameters(ln), count_parameters(rms)],
        max_diff_layernorm=diff_ln,
        max_diff_rmsnorm=diff_rms,
    )


@dataclasses.dataclass
class LowPrecisionNormResult:
    """RMSNorm of large activations computed in low precision vs upcast to float32."""

    dtypes: list[str]
    methods: list[str]
    n_inf: list[int]
    n_nan: list[int]
    n_zero: list[int]
    n_total: int
    max_abs_error: list[float]
    scale: float


    def row(self, dtype: str, method: str) -> int:
        """Index of the row for ``dtype`` (``"float16"``) and ``method``
        (``"input_dtype"`` or ``"float32"``)."""
        for i, (d, m) in enumerate(zip(self.dtypes, self.methods)):
            if d == dtype and m == method:
                return i
        raise ValueError(f"no row for dtype={dtype!r}, method={method!r}")


@cached
def run_low_precision_norm(
    d_model: int = 1024, n_rows: int = 4, scale: float = 300.0, seed: int = 0
) -> LowPrecisionNormResult:
    """RMSNorm of ``scale · N(0, 1)`` in fp16 and bf16, naive vs upcast to float32.

    The error is measured against a float64 computation, over finite outputs only
    (``nan`` if none is finite).
    """
    check_int("d_model", d_model)
    check_int("n_rows", n_rows)
    check_finite_float("scale", scale, minimum=0.0, open_min=True)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    x = torch.randn(n_rows, d_model) * scale
    res = LowPrecisionNormResult([], [], [], [], [], x.numel(), [], scale)
    for dtype in (torch.float16, torch.bfloat16):
        x_low = x.to(dtype)
        exact = rms_norm(x_low.double(), upcast=False)  # reference on the same inputs
        for method, upcast in (("input_dtype", False), ("float32", True)):
            y = rms_norm(x_low, upcast=upcast)
            finite = torch.isfinite(y)
            err = (y.double() - exact).abs()[finite]
            res.dtypes.append(str(dtype).removeprefix("torch."))
            res.methods.append(method)
            res.n_inf.append(int(y.isinf().sum()))
            res.n_nan.append(int(y.isnan().sum()))
            res.n_zero.append(int((y == 0).sum()))
            res.max_abs_error.append(float(err.max()) if err.numel() else float("nan"))
    return res


# --- 3. FLOPs vs runtime -----------------------------------------------------------


@dataclasses.dataclass
class FlopsRuntimeResult:
    """FLOPs, bytes moved and measured time of a few ops at one size, on one thread.

    Row ``i`` is op ``ops[i]`` as implemented by ``impls[i]``: ``"torch"`` (PyTorch's
    own op: ``F.rms_norm``, ``F.layer_norm``, ``torch.softmax``, ``F.gelu``, the
    matmul) or ``"llmlab"`` (this course's teaching code, one tensor op per step).
    ``kernels[i]`` counts the ATen ops one call dispatches (views, such as ``detach``,
    move no data and are not counted): 1 is a fused kernel (one
    pass over memory, what ``bytes_moved`` assumes); more means more passes.
    """

    ops: list[str]
    impls: list[str]
    shapes: list[list[tuple[int, ...]]]  # the operands' shapes
    flops: list[float]
    bytes_moved: list[float]
    seconds: list[float]
    kernels: list[int]  # ATen ops dispatched by one call, views not counted
    ridge: float  # FLOP per byte where the measured matmul rate meets copy bandwidth
    machine: str  # the processor, e.g. "AMD EPYC (x86_64)"
    threads: int

    @property
    def intensity(self) -> list[float]:
        return [f / b for f, b in zip(self.flops, self.bytes_moved)]

    def index(self, op: str, impl: str = "torch") -> int:
        for i, (o, m) in enumerate(zip(self.ops, self.impls)):
            if (o, m) == (op, impl):
                return i
        raise ValueError(f"no row for op={op!r}, impl={impl!r}; ops are {sorted(set(self.ops))}")

    def layer(self, impl: str = "torch") -> list[int]:
        """One row per op: ``impl``'s where it has one, PyTorch's otherwise."""
        rows = {}
        for i, (op, m) in enumerate(zip(self.ops, self.impls)):
            if m == impl or op not in rows:
                rows[op] = i
        return list(rows.values())

    def shares(self, impl: str = "torch") -> dict[str, tuple[float, float]]:
        """``{op: (FLOP share, time share)}`` over the rows of :meth:`layer`."""
        rows = self.layer(impl)
        flops = sum(self.flops[i] for i in rows)
        seconds = sum(self.seconds[i] for i in rows)
        return {self.ops[i]: (self.flops[i] / flops, self.seconds[i] / seconds) for i in rows}

    def memory_bound(self, i: int) -> bool:
        """Row ``i``'s arithmetic intensity is below the machine's ridge point."""
        return self.intensity[i] < self.ridge


def _cpu_name() -> str:
    """The processor's model name (Linux's ``/proc/cpuinfo``), and its architecture."""
    name = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    arch = platform.machine()
    return f"{name} ({arch})" if name and name != arch else arch


def _count_kernels(fn, arg) -> int:
    """How many ATen ops one call ``fn(arg)`` dispatches to the backend, views aside."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.n += not func.is_view  # a view (e.g. detach) moves no data
            return func(*args, **(kwargs or {}))

    with Count() as count:
        fn(arg)
    return count.n


def _median_seconds(fn, arg, min_run_time: float) -> float:
    from torch.utils import benchmark

    timer = benchmark.Timer(stmt="fn(arg)", globals={"fn": fn, "arg": arg}, num_threads=1)
    return timer.blocked_autorange(min_run_time=min_run_time).median


@cached(machine_dependent=True, cost=2.3)
def run_flops_vs_runtime(
    seq_len: int = 512, d_model: int = 768, d_head: int = 64,
    min_run_time: float = 0.2, seed: int = 0,
) -> FlopsRuntimeResult:
    """Time a ``d → 4d`` matmul, RMSNorm, LayerNorm, softmax and GELU on one thread.

    FLOPs per element: RMSNorm 4 (square, sum, scale, gain), LayerNorm 7, softmax 5
    (max, subtract, exp, sum, divide), GELU 8 (a nominal count for ``erf``). Bytes are
    the minimum a fused kernel moves: read the input (and weights), write the output,
    float32; the teaching code moves more (each step reads and writes a full tensor).
    ``kernels`` counts the ATen ops each call dispatches (a ``TorchDispatchMode``). The
    ridge point is the measured matmul FLOP/s over the measured bandwidth of a
    large copy into a buffer allocated once (``torch.clone`` would allocate at every
    call and time the page faults of fresh memory too). Cached per machine
    (``machine_dependent``).
    """
    check_int("seq_len", seq_len)
    check_int("d_model", d_model)
    check_int("d_head", d_head)
    check_divisible("d_model", d_model, "d_head", d_head)
    check_finite_float("min_run_time", min_run_time, minimum=0.0, open_min=True)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    n_heads = d_model // d_head
    x = torch.randn(seq_len, d_model)  # (N, d)
    w = torch.randn(d_model, 4 * d_model) / math.sqrt(d_model)  # (d, 4d)
    hidden = torch.randn(seq_len, 4 * d_model)  # (N, 4d), the FFN's hidden layer
    scores = torch.randn(n_heads, seq_len, seq_len)  # (h, N, N) attention scores
    rms, ln = RMSNorm(d_model), LayerNorm(d_model)
    n, d, f4 = seq_len * d_model, d_model, 4  # elements of x, width, bytes per float
    ones, zeros = torch.ones(d), torch.zeros(d)
    specs = [  # op, impl, operands, function, FLOPs, bytes
        ("matmul", "torch", [x, w], lambda t: t @ w, 2 * seq_len * d * 4 * d,
         f4 * (n + d * 4 * d + 4 * n)),
        ("RMSNorm", "llmlab", [x], rms, 4 * n, f4 * (2 * n + d)),
        ("RMSNorm", "torch", [x], lambda t: F.rms_norm(t, (d,), ones, 1e-5), 4 * n,
         f4 * (2 * n + d)),
        ("LayerNorm", "llmlab", [x], ln, 7 * n, f4 * (2 * n + 2 * d)),
        ("LayerNorm", "torch", [x], lambda t: F.layer_norm(t, (d,), ones, zeros, 1e-5),
         7 * n, f4 * (2 * n + 2 * d)),
        ("softmax", "llmlab", [scores], softmax, 5 * scores.numel(), f4 * 2 * scores.numel()),
        ("softmax", "torch", [scores], lambda t: torch.softmax(t, dim=-1),
         5 * scores.numel(), f4 * 2 * scores.numel()),
        ("GELU", "torch", [hidden], F.gelu, 8 * hidden.numel(), f4 * 2 * hidden.numel()),
    ]
    res = FlopsRuntimeResult([], [], [], [], [], [], [], 0.0, _cpu_name(), 1)
    with torch.no_grad():
        for op, impl, operands, fn, flops, nbytes in specs:
            res.ops.append(op)
            res.impls.append(impl)
            res.shapes.append([tuple(t.shape) for t in operands])
            res.flops.append(float(flops))
            res.bytes_moved.append(float(nbytes))
            res.seconds.append(_median_seconds(fn, operands[0], min_run_time))
            res.kernels.append(_count_kernels(fn, operands[0]))
        big = torch.randn(8 * 1024 * 1024)  # 32 MiB: larger than the caches
        out = torch.empty_like(big)  # reused: a fresh tensor per call would time page faults
        copy_s = _median_seconds(out.copy_, big, min_run_time)
    flops_per_s = res.flops[0] / res.seconds[0]
    bytes_per_s = 2 * big.numel() * f4 / copy_s  # read + write
    res.ridge = flops_per_s / bytes_per_s
    return res


# --- 4. feed-forward ---------------------------------------------------------------


@dataclasses.dataclass
class ActivationResult:
    """ReLU, GELU and SiLU at a few points and on a grid (for the plot)."""

    points: list[float]
    values: dict[str, list[float]]
    grid: list[float]
    curves: dict[str, list[float]]


@cached
def run_activation_values(
    points: tuple[float, ...] = (-3.0, -1.0, -0.25, 0.0, 0.25, 1.0, 3.0),
    lo: float = -4.0, hi: float = 3.0, n_grid: int = 141,
) -> ActivationResult:
    """Our ``relu``, ``gelu``, ``silu`` at ``points`` and on ``[lo, hi]``."""
    check_floats("points", points)
    check_finite_float("lo", lo)
    check_finite_float("hi", hi)
    if not lo < hi:
        raise ValueError(f"lo ({lo}) must be below hi ({hi})")
    check_int("n_grid", n_grid, minimum=2)
    fns = {"ReLU": relu, "GELU": gelu, "SiLU": silu}
    xs = torch.tensor(points, dtype=torch.float64)
    grid = torch.linspace(lo, hi, n_grid, dtype=torch.float64)
    return ActivationResult(
        points=list(points),
        values={k: fn(xs).tolist() for k, fn in fns.items()},
        grid=grid.tolist(),
        curves={k: fn(grid).tolist() for k, fn in fns.items()},
    )


@dataclasses.dataclass
class FFNParityResult:
    """ReLU FFN (``d_ff = 4d``) vs SwiGLU (the 8/3 rule), parameters counted in code."""

    d_models: list[int]
    relu_d_ff: list[int]
    relu_params: list[int]
    swiglu_d_ff: list[int]
    swiglu_params: list[int]


@cached
def run_ffn_parity(
    d_models: tuple[int, ...] = (512, 768, 1024, 4096),
) -> FFNParityResult:
    """Build both FFNs on the meta device (no memory) and count their parameters."""
    check_sizes("d_models", d_models)
    res = FFNParityResult([], [], [], [], [])
    for d in d_models:
        relu_ffn = ReLUFFN(d, device="meta")
        swiglu = SwiGLU(d, device="meta")
        res.d_models.append(d)
        res.relu_d_ff.append(relu_ffn.w1.out_features)
        res.relu_params.append(count_parameters(relu_ffn))
        res.swiglu_d_ff.append(swiglu.w1.out_features)
        res.swiglu_params.append(count_parameters(swiglu))
    return res


# --- 5. RoPE -----------------------------------------------------------------------


@dataclasses.dataclass
class RopeCheckResult:
    """Scores ``⟨RoPE(q, m), RoPE(k, n)⟩`` for one fixed pair of vectors ``q, k``."""

    scores: list[list[float]]  # (seq_len, seq_len), row m (query), column n (key)
    max_diagonal_spread: float  # max over offsets of (max − min) along a diagonal
    score_range: float  # max − min over the whole matrix
    max_diff_complex: float  # rotation-of-pairs vs complex formulation
    frequencies: list[float]  # θ_k, k = 0..d_k/2-1
    theta: float
    d_k: int


@cached
def run_rope_check(
    d_k: int = 64, theta: float = 10_000.0, seq_len: int = 16, seed: int = 0
) -> RopeCheckResult:
    """Put one ``q`` at every position ``m``, one ``k`` at every ``n``; score them."""
    check_int("seq_len", seq_len)
    check_int("seed", seed, minimum=0)  # d_k and theta: RotaryPositionalEmbedding checks
    torch.manual_seed(seed)
    rope = RotaryPositionalEmbedding(theta, d_k, seq_len)
    q, k = torch.randn(2, d_k, dtype=torch.float64)
    positions = torch.arange(seq_len)
    qs = rope(q.expand(seq_len, d_k).float(), positions).double()  # (T, d_k)
    ks = rope(k.expand(seq_len, d_k).float(), positions).double()  # (T, d_k)
    scores = qs @ ks.T  # (T, T)
    spread = max(
        float(scores.diagonal(off).max() - scores.diagonal(off).min())
        for off in range(-seq_len + 1, seq_len)
    )
    x = torch.randn(3, seq_len, d_k)
    diff = float((rope(x, positions) - rope_complex(x, positions, theta)).abs().max())
    return RopeCheckResult(
        scores=scores.tolist(),
        max_diagonal_spread=spread,
        score_range=float(scores.max() - scores.min()),
        max_diff_complex=diff,
        frequencies=rope_frequencies(theta, d_k).tolist(),
        theta=theta,
        d_k=d_k,
    )


# --- 6. attention ------------------------------------------------------------------


@dataclasses.dataclass
class AttentionCheckResult:
    """Our causal multi-head attention vs ``F.scaled_dot_product_attention``."""

    labels: list[str]
    max_abs_diff: list[float]
    past_unchanged: bool  # editing the last token leaves earlier outputs unchanged


def _reference_attention(
    attn: MultiHeadSelfAttention, x: torch.Tensor, positions: torch.Tensor | None
) -> torch.Tensor:
    b, t, _ = x.shape
    h = attn.num_heads

    def heads(y: torch.Tensor) -> torch.Tensor:
        return y.view(b, t, h, -1).transpose(1, 2)  # (B, h, T, d_head)

    q = heads(x @ attn.q_proj.weight.T)
    k = heads(x @ attn.k_proj.weight.T)
    v = heads(x @ attn.v_proj.weight.T)
    if positions is not None:  # the complex formulation, independent of the module
        q = rope_complex(q, positions, attn.rope.theta)
        k = rope_complex(k, positions, attn.rope.theta)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return out.transpose(1, 2).reshape(b, t, -1) @ attn.output_proj.weight.T


@cached
def run_attention_check(
    d_model: int = 64, num_heads: int = 4, seq_len: int = 10, batch: int = 2,
    theta: float = 10_000.0, seed: int = 0,
) -> AttentionCheckResult:
    """Compare with PyTorch's fused attention, with and without RoPE."""
    check_int("seq_len", seq_len)
    check_int("batch", batch)
    check_int("seed", seed, minimum=0)  # d_model, num_heads, theta: the modules check
    torch.manual_seed(seed)
    x = torch.randn(batch, seq_len, d_model)
    positions = torch.arange(seq_len)
    plain = MultiHeadSelfAttention(d_model, num_heads)
    roped = MultiHeadSelfAttention(d_model, num_heads, theta=theta, max_seq_len=seq_len)
    with torch.no_grad():
        diffs = [
            float((plain(x) - _reference_attention(plain, x, None)).abs().max()),
            float(
                (roped(x, positions) - _reference_attention(roped, x, positions))
                .abs().max()
            ),
        ]
        edited = x.clone()
        edited[:, -1] = torch.randn(batch, d_model)
        past = torch.allclose(roped(x)[:, :-1], roped(edited)[:, :-1])
    return AttentionCheckResult(
        labels=["no_rope", "rope"],
        max_abs_diff=diffs,
        past_unchanged=past,
    )


# --- 7. whole model ----------------------------------------------------------------


@dataclasses.dataclass
class ParameterCheckResult:
    """Parameters by formula vs by counting the built model (on the meta device)."""

    names: list[str]
    configs: list[LlamaConfig]
    formula: list[int]
    code: list[int]


@cached
def run_parameter_check(
    names: tuple[str, ...] = ("LLAMA_TOY", "CS336_TINYSTORIES", "LLAMA2_7B"),
) -> ParameterCheckResult:
    """Count the named presets both ways."""
    presets = {
        "LLAMA_TOY": LLAMA_TOY, "CS336_TINYSTORIES": CS336_TINYSTORIES,
        "LLAMA2_7B": LLAMA2_7B,
    }
    res = ParameterCheckResult([], [], [], [])
    check_type("names", names, (list, tuple), expected="a tuple of preset names")
    if not names:
        raise ValueError("names must hold at least one preset name, got ()")
    for i, name in enumerate(names):
        check_choice(f"names[{i}]", name, presets)
    for name in names:
        cfg = presets[name]
        res.names.append(name)
        res.configs.append(cfg)
        res.formula.append(cfg.parameter_count())
        res.code.append(count_parameters(TransformerLM.from_config(cfg, device="meta")))
    return res
