"""Seeded experiments for "Self-attention from scratch".

Each ``run_*`` function seeds itself, runs on the CPU and returns plain data
(rendered by :mod:`llmlab.report.attention`; the lecture's diagrams, a lookup,
the Q/K/V projections and the causal mask, by :mod:`llmlab.report.diagrams`).
The timing is cached per machine: its numbers belong to the machine they were
measured on.

Taught on: "Self-attention from scratch".
"""

from __future__ import annotations

import math
import platform
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from llmlab.attention import CausalAttention, MultiHeadAttention, MultiHeadAttentionWrapper
from llmlab.attention import causal_weights_masked, mha_from_wrapper
from llmlab.build.cache import cached
from llmlab.checks import (
    check_divisible,
    check_dropout,
    check_finite_float,
    check_int,
    check_sizes,
    check_tensor,
    check_type,
)
from llmlab.functional import causal_mask, scaled_dot_product_attention, softmax
from llmlab.layers import Linear

__all__ = [
    "AttentionLookupResult",
    "CausalMaskResult",
    "DropoutDemoResult",
    "LearnedRecallResult",
    "QKVProjectionsResult",
    "RecallAttention",
    "ScalingResult",
    "SummaryRecallResult",
    "TimingResult",
    "run_attention_lookup",
    "run_causal_mask",
    "run_dropout_demo",
    "run_learned_recall",
    "run_qkv_projections",
    "run_scaling_table",
    "run_summary_recall",
    "sdpa_forward",
    "time_attention_variants",
]


# ---------------------------------------------------------------------------
# 1. what a fixed-size summary loses
# ---------------------------------------------------------------------------
@dataclass
class SummaryRecallResult:
    """Recall of the token at a random position, by sequence length.

    Attributes:
        lengths: Sequence lengths tried.
        summary_accuracy: Accuracy when decoding from a fixed ``dim``-sized state.
        attention_accuracy: Accuracy when attending over all the inputs.
        dim: Size of the fixed state (and of each embedding).
        vocab_size: Number of distinct tokens.
        trials: Sequences per length.
    """

    lengths: list[int]
    summary_accuracy: list[float]
    attention_accuracy: list[float]
    dim: int
    vocab_size: int
    trials: int


@cached
def run_summary_recall(
    lengths: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64),
    dim: int = 32,
    vocab_size: int = 100,
    trials: int = 200,
    seed: int = 0,
) -> SummaryRecallResult:
    """Fixed-size state vs attention at recalling one token of a sequence.

    The fixed state is a linear RNN, ``h_t = Q h_{t-1} + e_t`` with a random
    orthogonal ``Q``: it can be undone exactly, yet the other tokens add noise
    to what is recovered, more as the sequence grows. Attention keeps every
    input and picks position ``i`` with a positional query.
    """
    lengths = check_sizes("lengths", lengths)
    check_int("dim", dim)
    check_int("vocab_size", vocab_size, minimum=2)
    check_int("trials", trials)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    vocab = F.normalize(torch.randn(vocab_size, dim), dim=-1)  # (V, d) unit rows
    rotation, _ = torch.linalg.qr(torch.randn(dim, dim))  # (d, d) orthogonal
    summary_acc, attention_acc = [], []
    for n in lengths:
        tokens = torch.randint(vocab_size, (trials, n))  # (N, T)
        emb = vocab[tokens]  # (N, T, d)
        # fixed state: h = sum_t Q^(T-1-t) e_t, one d-vector per sequence
        powers = torch.stack([torch.linalg.matrix_power(rotation, n - 1 - t)
                              for t in range(n)])  # (T, d, d)
        state = torch.einsum("tij,ntj->ni", powers, emb)  # (N, d)
        target = torch.randint(n, (trials,))  # (N,) position to recall
        undo = powers[target].transpose(1, 2)  # (N, d, d): Q^-k = (Q^k)^T
        guess = torch.einsum("nij,nj->ni", undo, state)  # e_target + noise
        answer = tokens[torch.arange(trials), target]  # (N,) the token to recall
        summary_hit = (guess @ vocab.T).argmax(-1) == answer
        # attention: one-hot positional keys, a sharp query for the target
        keys = torch.eye(n)  # (T, T)
        query = 50.0 * keys[target]  # (N, T)
        weights = softmax(query @ keys.T, dim=-1)  # (N, T)
        context = torch.einsum("nt,ntd->nd", weights, emb)  # (N, d)
        attn_hit = (context @ vocab.T).argmax(-1) == answer
        summary_acc.append(summary_hit.float().mean().item())
        attention_acc.append(attn_hit.float().mean().item())
    return SummaryRecallResult(
        list(lengths), summary_acc, attention_acc, dim, vocab_size, trials
    )


class RecallAttention(nn.Module):
    """Embeddings, one :class:`~llmlab.attention.CausalAttention`, a read-out.

    The input is the sequence ``x`` (token plus position embedding at each
    position) followed by one query token that asks for position ``i``: an
    embedding of ``i`` alone, with no token in it. The read-out sees only the
    attention output at that last position, so whatever it knows about the
    token at ``i`` came through the attention weights.

    Taught on: "Self-attention from scratch".
    """

    def __init__(self, vocab_size: int, d_model: int, context_length: int) -> None:
        super().__init__()
        self.vocab_size = check_int("vocab_size", vocab_size, minimum=2)
        self.context_length = check_int("context_length", context_length)
        check_int("d_model", d_model)
        self.tok = nn.Embedding(vocab_size, d_model)  # what the token is
        self.pos = nn.Embedding(context_length, d_model)  # where it is
        self.ask = nn.Embedding(context_length, d_model)  # "which position do I want"
        self.attn = CausalAttention(d_model, d_model, context_length + 1, dropout=0.0)
        self.out = nn.Linear(d_model, vocab_size)

    def forward(self, x: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
        """Ids ``(B, T)`` and positions ``(B,)`` -> logits ``(B, V)``, weights ``(B, T)``.

        The weights are what the query token gives each position of ``x``.
        """
        found = check_tensor("x", x, "batch seq_len", "index:vocab_size",
                             vocab_size=self.vocab_size,
                             seq_len=(1, self.context_length, "context_length"))
        check_tensor("target", target, "batch", "index:seq_len", **found)  # in [0, T)
        seq_len = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(seq_len, device=x.device))  # (B, T, D)
        h = torch.cat([h, self.ask(target)[:, None]], dim=1)  # (B, T + 1, D)
        context, weights = self.attn(h, return_weights=True)  # (B, T+1, D), (B, T+1, T+1)
        return self.out(context[:, -1]), weights[:, -1, :seq_len]  # (B, V), (B, T)


@dataclass
class LearnedRecallResult:
    """Recall by a trained attention layer, by sequence length.

    Attributes:
        lengths: Sequence lengths evaluated (training used the longest).
        accuracy: Share of fresh sequences whose asked-for token was recalled.
        target_weight: Mean attention weight the query put on the asked position.
        d_model: Size of every embedding and of the attention's ``d_out``.
        vocab_size: Number of distinct tokens.
        steps: Adam steps of training.
        batch_size: Sequences per step.
        lr: Adam's learning rate.
        trials: Fresh sequences per length for the evaluation.
        seed: Seed of the weights and of the data.
    """

    lengths: list[int]
    accuracy: list[float]
    target_weight: list[float]
    d_model: int
    vocab_size: int
    steps: int
    batch_size: int
    lr: float
    trials: int
    seed: int


@cached(cost=2.5)
def run_learned_recall(
    lengths: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64),
    d_model: int = 32,
    vocab_size: int = 100,
    steps: int = 300,
    batch_size: int = 64,
    lr: float = 1e-2,
    trials: int = 200,
    seed: int = 0,
) -> LearnedRecallResult:
    """Train a :class:`RecallAttention` to fetch the token at an asked position.

    Training: random sequences of the longest length, a random position asked
    for each, cross-entropy on the token found there (Adam). Nothing is built
    in: which key answers which query is learned. Evaluation: fresh sequences
    of each length, ``trials`` of them.
    """
    lengths = check_sizes("lengths", lengths)
    check_int("d_model", d_model)
    check_int("vocab_size", vocab_size, minimum=2)
    check_int("steps", steps, minimum=0)
    check_int("batch_size", batch_size)
    check_finite_float("lr", lr, minimum=0.0, open_min=True)
    check_int("trials", trials)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    longest = max(lengths)
    model = RecallAttention(vocab_size, d_model, longest)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    data = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randint(vocab_size, (batch_size, longest), generator=data)  # (B, T)
        target = torch.randint(longest, (batch_size,), generator=data)  # (B,)
        logits, _ = model(x, target)  # (B, V)
        loss = F.cross_entropy(logits, x[torch.arange(batch_size), target])
        opt.zero_grad()
        loss.backward()
        opt.step()
    accuracy, target_weight = [], []
    with torch.no_grad():
        for n in lengths:
            x = torch.randint(vocab_size, (trials, n), generator=data)  # (N, n)
            target = torch.randint(n, (trials,), generator=data)  # (N,)
            logits, weights = model(x, target)  # (N, V), (N, n)
            rows = torch.arange(trials)
            accuracy.append((logits.argmax(-1) == x[rows, target]).float().mean().item())
            target_weight.append(weights[rows, target].mean().item())
    return LearnedRecallResult(list(lengths), accuracy, target_weight, d_model, vocab_size,
                               steps, batch_size, lr, trials, seed)


# ---------------------------------------------------------------------------
# 5. why divide by sqrt(d_k)
# ---------------------------------------------------------------------------
@dataclass
class ScalingResult:
    """How dot products and softmax behave as ``d_k`` grows.

    Per ``d_k``: variance of ``q . k`` for standard normal ``q, k``, with and
    without dividing by ``sqrt(d_k)``; the mean largest softmax weight over
    ``num_keys`` keys; the mean Frobenius norm of the softmax Jacobian
    ``diag(p) - p p^T`` (how much gradient flows back through the softmax).
    """

    d_ks: list[int]
    var_raw: list[float]
    var_scaled: list[float]
    max_weight_raw: list[float]
    max_weight_scaled: list[float]
    jacobian_raw: list[float]
    jacobian_scaled: list[float]
    num_keys: int
    trials: int


def _jacobian_norm(p: Tensor) -> Tensor:
    """Frobenius norm of ``diag(p) - p p^T`` for each row of ``p``."""
    jac = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (N, n, n)
    return jac.flatten(-2).norm(dim=-1)  # (N,)


@cached(cost=0.8)
def run_scaling_table(
    d_ks: tuple[int, ...] = (4, 16, 64, 256, 1024),
    num_keys: int = 16,
    trials: int = 1000,
    seed: int = 0,
) -> ScalingResult:
    """Variance of dot products and peakedness of softmax, by ``d_k``."""
    d_ks = check_sizes("d_ks", d_ks)
    check_int("num_keys", num_keys, minimum=2)
    check_int("trials", trials, minimum=2)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    out: dict[str, list[float]] = {k: [] for k in
                                   ("vr", "vs", "mr", "ms", "jr", "js")}
    for d_k in d_ks:
        q = torch.randn(trials, 1, d_k)  # (N, 1, d_k)
        k = torch.randn(trials, num_keys, d_k)  # (N, n, d_k)
        raw = (q @ k.transpose(1, 2)).squeeze(1)  # (N, n)
        scaled = raw / math.sqrt(d_k)
        p_raw, p_scaled = softmax(raw, dim=-1), softmax(scaled, dim=-1)
        out["vr"].append(raw.var().item())
        out["vs"].append(scaled.var().item())
        out["mr"].append(p_raw.amax(-1).mean().item())
        out["ms"].append(p_scaled.amax(-1).mean().item())
        out["jr"].append(_jacobian_norm(p_raw).mean().item())
        out["js"].append(_jacobian_norm(p_scaled).mean().item())
    return ScalingResult(
        list(d_ks), out["vr"], out["vs"], out["mr"], out["ms"], out["jr"], out["js"],
        num_keys, trials,
    )


# ---------------------------------------------------------------------------
# the lecture's diagrams: a lookup, the Q/K/V projections, the causal mask
# (drawn by llmlab.report.diagrams)
# ---------------------------------------------------------------------------
@dataclass
class AttentionLookupResult:
    """One query looking up ``n_keys`` (key, value) pairs, on numbers with one decimal.

    Attributes:
        query: ``(d_k,)``.
        keys: ``(n_keys, d_k)``.
        values: ``(n_keys, d_v)``.
        scores: ``(n_keys,)``, ``keys @ query / √d_k``.
        weights: ``(n_keys,)``, the softmax of the scores (they sum to 1).
        output: ``(d_v,)``, :func:`llmlab.functional.scaled_dot_product_attention`
            of the query, ``weights @ values``.
    """

    query: Tensor
    keys: Tensor
    values: Tensor
    scores: Tensor
    weights: Tensor
    output: Tensor


def run_attention_lookup(n_keys: int = 4, d_k: int = 3, d_v: int = 3, seed: int = 0
                         ) -> AttentionLookupResult:
    """A small seeded lookup: the scores ``q·kᵢ/√d_k``, their softmax and the output.

    The query, keys and values are ``N(0, 1)`` draws rounded to one decimal (in
    float64), so that a reader can redo the arithmetic.

    Args:
        n_keys: Number of (key, value) pairs, at least 2.
        d_k: Size of the query and the keys.
        d_v: Size of the values.
        seed: Seed of the numbers (a generator of its own: the global RNG is untouched).
    """
    n_keys = check_int("n_keys", n_keys, minimum=2)
    d_k, d_v = check_int("d_k", d_k), check_int("d_v", d_v)
    check_int("seed", seed, minimum=0)
    g = torch.Generator().manual_seed(seed)

    def example(*shape: int) -> Tensor:  # N(0, 1), rounded to one decimal
        return torch.randn(*shape, generator=g, dtype=torch.float64).round(decimals=1)

    q, keys, values = example(d_k), example(n_keys, d_k), example(n_keys, d_v)
    scores = keys @ q / math.sqrt(d_k)  # (n_keys,)
    weights = softmax(scores, dim=-1)  # (n_keys,), sums to 1
    out = scaled_dot_product_attention(q[None], keys, values)[0]  # (d_v,) = weights @ V
    return AttentionLookupResult(q, keys, values, scores, weights, out)


@dataclass
class QKVProjectionsResult:
    """An input ``x`` through three :class:`llmlab.layers.Linear` projections.

    Attributes:
        x: ``(T, d_model)``, one row per token.
        outputs: ``q_proj``, ``k_proj``, ``v_proj`` (the Llama-style attention's names) -> ``(T, d_k)``.
        weight_shapes: The same names -> each weight's shape, ``(d_k, d_model)``.
    """

    x: Tensor
    outputs: dict[str, Tensor]
    weight_shapes: dict[str, tuple[int, ...]]


@cached
def run_qkv_projections(T: int = 4, d_model: int = 6, d_k: int = 4, seed: int = 0
                        ) -> QKVProjectionsResult:
    """``x`` ``(T, d_model)`` through ``q_proj``, ``k_proj``, ``v_proj`` (``d_model -> d_k``).

    Seeds a forked RNG: the input and the three layers' weights are the same on
    every call, and the global RNG is left as it was.

    Args:
        T: Number of tokens.
        d_model: Size of each input vector.
        d_k: Size of each query, key and value.
        seed: Seed of the input and the weights.
    """
    T, d_model, d_k = check_int("T", T), check_int("d_model", d_model), check_int("d_k", d_k)
    check_int("seed", seed, minimum=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        x = torch.randn(T, d_model)
        projections = {name: Linear(d_model, d_k) for name in ("q_proj", "k_proj", "v_proj")}
        with torch.no_grad():
            outputs = {name: proj(x) for name, proj in projections.items()}  # each (T, d_k)
    shapes = {name: tuple(p.weight.shape) for name, p in projections.items()}
    return QKVProjectionsResult(x, outputs, shapes)


@dataclass
class CausalMaskResult:
    """:func:`llmlab.functional.causal_mask` and the softmax weights it leaves.

    Attributes:
        mask: ``(T, T)`` bool, True where query ``i`` may attend to key ``j`` (``j <= i``).
        scores: ``(T, T)`` seeded ``N(0, 1)`` scores.
        weights: ``(T, T)``, the softmax of the scores with the masked ones set to
            ``−∞``: zeros above the diagonal, each row summing to 1.
    """

    mask: Tensor
    scores: Tensor
    weights: Tensor


def run_causal_mask(T: int = 5, seed: int = 0) -> CausalMaskResult:
    """The causal mask of ``T`` positions applied to seeded random scores.

    Args:
        T: Number of positions, at least 2.
        seed: Seed of the scores (a generator of its own: the global RNG is untouched).
    """
    T = check_int("T", T, minimum=2)
    check_int("seed", seed, minimum=0)
    mask = causal_mask(T)  # (T, T), True = may attend
    scores = torch.randn(T, T, generator=torch.Generator().manual_seed(seed))
    weights = softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)  # (T, T)
    return CausalMaskResult(mask, scores, weights)


# ---------------------------------------------------------------------------
# 8. dropout on the attention weights
# ---------------------------------------------------------------------------
@dataclass
class DropoutDemoResult:
    """Causal attention weights before and after dropout (training mode).

    Attributes:
        p: Dropout probability.
        weights: ``(T, T)`` causal weights.
        dropped: ``(T, T)`` the same after ``nn.Dropout(p)`` in training mode.
        eval_output: ``(T, T)`` after the same layer in eval mode.
    """

    p: float
    weights: Tensor
    dropped: Tensor
    eval_output: Tensor

    @property
    def zeroed_fraction(self) -> float:
        """Share of the nonzero weights that dropout set to zero."""
        alive = self.weights > 0
        return ((self.dropped == 0) & alive).sum().item() / alive.sum().item()

    @property
    def survivor_ratios(self) -> Tensor:
        """``dropped / weights`` for the weights that survived."""
        kept = self.dropped != 0
        return self.dropped[kept] / self.weights[kept]


@cached
def run_dropout_demo(p: float = 0.5, seq_len: int = 6, seed: int = 123
                     ) -> DropoutDemoResult:
    """Apply ``nn.Dropout(p)`` to a causal weight matrix, in train and eval mode."""
    check_dropout("p", p)  # in [0, 1): p = 1 would keep no weight
    check_int("seq_len", seq_len)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    weights = causal_weights_masked(torch.randn(seq_len, seq_len))  # (T, T)
    layer = torch.nn.Dropout(p)
    dropped = layer.train()(weights)
    eval_output = layer.eval()(weights)
    return DropoutDemoResult(p, weights, dropped, eval_output)


# ---------------------------------------------------------------------------
# 12. speed
# ---------------------------------------------------------------------------
def sdpa_forward(mha: MultiHeadAttention, x: Tensor) -> Tensor:
    """``mha(x)`` with the core computed by ``F.scaled_dot_product_attention``.

    Uses ``mha``'s projections and ``is_causal=True`` instead of its mask
    buffer; dropout applies only in training mode, as in ``mha``.
    """
    check_type("mha", mha, MultiHeadAttention)
    check_tensor("x", x, "batch seq_len d_in", like=mha.W_query.weight, d_in=mha.d_in,
                 seq_len=(1, mha.context_length, "context_length"))
    b, seq_len, _ = x.shape
    h, hd = mha.num_heads, mha.d_head
    q = mha.W_query(x).view(b, seq_len, h, hd).transpose(1, 2)  # (B, H, T, hd)
    k = mha.W_key(x).view(b, seq_len, h, hd).transpose(1, 2)  # (B, H, T, hd)
    v = mha.W_value(x).view(b, seq_len, h, hd).transpose(1, 2)  # (B, H, T, hd)
    p = mha.dropout.p if mha.training else 0.0
    context = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
    context = context.transpose(1, 2).reshape(b, seq_len, mha.d_out)  # (B, T, D)
    return mha.out_proj(context)


@dataclass
class TimingResult:
    """Median forward time of three implementations of the same function.

    Attributes:
        names: Variant names.
        seconds: Median seconds per forward call.
        max_abs_diff: Largest difference of any variant's output from the first's.
        shape: ``(batch, seq_len, d_model)`` of the input.
        num_heads: Heads (the teaching variants' ``num_heads``).
        threads: Threads the timer ran with.
    """

    names: list[str]
    seconds: list[float]
    max_abs_diff: float
    shape: tuple[int, int, int]
    num_heads: int
    threads: int
    machine: str


@cached(machine_dependent=True, cost=0.8)
def time_attention_variants(
    batch: int = 2,
    seq_len: int = 64,
    d_model: int = 64,
    num_heads: int = 8,
    min_run_time: float = 0.2,
    seed: int = 0,
) -> TimingResult:
    """Time the wrapper, batched heads and PyTorch's fused attention (1 thread).

    All three compute the same function (the batched module is built from the
    wrapper's weights with an identity output projection), in eval mode and
    without gradients. Cached per machine (``machine_dependent``): the numbers
    describe the machine they were measured on, which ``machine`` names.
    """
    from torch.utils import benchmark

    for name, value in (("batch", batch), ("seq_len", seq_len), ("d_model", d_model),
                        ("num_heads", num_heads)):
        check_int(name, value)
    check_divisible("d_model", d_model, "num_heads", num_heads)
    check_finite_float("min_run_time", min_run_time, minimum=0.0, open_min=True)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    wrapper = MultiHeadAttentionWrapper(
        d_model, d_model // num_heads, seq_len, 0.0, num_heads
    ).eval()
    mha = mha_from_wrapper(wrapper).eval()
    x = torch.randn(batch, seq_len, d_model)
    variants = {
        "MultiHeadAttentionWrapper": wrapper,
        "MultiHeadAttention": mha,
        "F.scaled_dot_product_attention": lambda t: sdpa_forward(mha, t),
    }
    names, seconds, outputs = [], [], []
    with torch.no_grad():
        for name, fn in variants.items():
            outputs.append(fn(x))
            timer = benchmark.Timer(
                stmt="fn(x)", globals={"fn": fn, "x": x}, num_threads=1
            )
            names.append(name)
            seconds.append(timer.blocked_autorange(min_run_time=min_run_time).median)
    diff = max((o - outputs[0]).abs().max().item() for o in outputs[1:])
    shape = (batch, seq_len, d_model)
    return TimingResult(names, seconds, diff, shape, num_heads, 1, platform.machine())
