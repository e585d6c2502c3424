"""Experiments on multi-head attention and the Transformer block.

* :func:`run_why_multihead`: a one-layer attention model must copy ``x[t-1]``,
  ``x[t-2]`` and ``x[t-4]`` at once; with one head it cannot, with enough heads
  each head takes one offset. Same parameter count for every head count.
* :func:`run_residual_ablation`: an 8-block model learns to copy ``x[t-3]`` with
  Pre-LN or Post-LN residual blocks, but not without residual connections (its
  representations collapse before training starts).

Taught on: "Multi-head attention and the Transformer block (GPT-2 style)".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from llmlab.cache import cached
from llmlab.models.gpt2 import MLP, MultiHeadSelfAttention, TransformerBlock
from llmlab.params import count_parameters
from llmlab.report import fmt_float, fmt_int, fmt_pct, markdown_table

__all__ = [
    "OneLayerAttention",
    "ResidualAblationResult",
    "ResidualRun",
    "WhyMultiheadResult",
    "CopyRuns",
    "collapse_score",
    "evaluate_copy_model",
    "run_copy_runs",
    "run_residual_ablation",
    "run_residual_variant",
    "run_why_multihead",
    "train_copy_model",
    "train_copy_models",
]


# ---------------------------------------------------------------------------
# Demo 3: why several heads
# ---------------------------------------------------------------------------


class OneLayerAttention(nn.Module):
    """Embeddings, one causal attention layer with a residual, a read-out per target.

    ``h = tok(x) + pos(t)``; ``h = h + MHA(h)``; target ``i`` is read by its own
    linear layer. No MLP: whatever reaches position ``t`` from other positions
    must travel through attention.
    """

    def __init__(
        self, vocab_size: int, d_model: int, n_heads: int, seq_len: int, n_targets: int
    ) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        self.attn = MultiHeadSelfAttention(d_model, n_heads, causal=True)
        outs = [nn.Linear(d_model, vocab_size) for _ in range(n_targets)]
        self.outs = nn.ModuleList(outs)  # one read-out per target

    def forward(self, x: Tensor) -> tuple[list[Tensor], Tensor]:
        """Ids ``(B, T)`` -> ``(B, T, V)`` logits per target, and ``(B, H, T, T)``."""
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))  # (B, T, D)
        a, attn = self.attn(h, return_attn=True)  # (B, T, D), (B, H, T, T)
        h = h + a  # (B, T, D)
        return [out(h) for out in self.outs], attn


def _copy_loss(logits: list[Tensor], x: Tensor, offsets: tuple[int, ...]) -> Tensor:
    """Sum over targets of the cross-entropy for ``x[t-k]`` at ``t >= max(k)``."""
    start, T = max(offsets), x.shape[1]
    return sum(
        F.cross_entropy(lg[:, start:].flatten(0, 1), x[:, start - k : T - k].flatten())
        for lg, k in zip(logits, offsets)
    )


@dataclass
class WhyMultiheadResult:
    """Copy-task accuracy per head count, seed and target, and what the heads attend.

    Attributes:
        heads: Head counts compared (same ``d_model`` for all).
        seeds: Training seeds.
        offsets: Targets: position ``t`` predicts ``x[t - k]`` for each ``k``.
        vocab_size: Tokens are uniform over this many ids (chance = ``1/vocab_size``).
        d_model: Width of every model; head ``h`` has ``d_model // heads[i]`` dims.
        accuracy: ``accuracy[i][s][j]``: head count ``i``, seed ``s``, target ``j``.
        n_params: Parameter count per head count.
        offset_attention: ``[i][h][o]``: mean attention weight that head ``h`` of
            the first seed's model with ``heads[i]`` heads puts on offset ``o`` (key
            ``t - o``), averaged over the evaluation queries ``t >= max(offsets)``.
    """

    heads: list[int]
    seeds: list[int]
    offsets: list[int]
    vocab_size: int
    d_model: int
    accuracy: list[list[list[float]]]
    n_params: list[int]
    offset_attention: list[list[list[float]]]

    @property
    def chance(self) -> float:
        return 1.0 / self.vocab_size

    def _index(self, n_heads: int) -> int:
        if n_heads not in self.heads:
            raise ValueError(f"n_heads must be one of {self.heads}, got {n_heads}")
        return self.heads.index(n_heads)

    def target_accuracy(self, n_heads: int) -> list[float]:
        """Accuracy per target, averaged over seeds."""
        runs = self.accuracy[self._index(n_heads)]
        return [sum(r[j] for r in runs) / len(runs) for j in range(len(self.offsets))]

    def worst_target(self, n_heads: int) -> float:
        """Each seed's worst target, averaged over seeds."""
        runs = self.accuracy[self._index(n_heads)]
        return sum(min(r) for r in runs) / len(runs)

    def head_offsets(self, n_heads: int) -> list[int]:
        """The offset each head of the first seed's model attends to most."""
        rows = self.offset_attention[self._index(n_heads)]
        return [max(range(len(row)), key=row.__getitem__) for row in rows]

    def to_markdown(self) -> str:
        headers = ["heads", "d_head"] + [f"x[t−{k}]" for k in self.offsets]
        headers += ["worst target", "parameters"]
        rows = []
        for n_heads, n_params in zip(self.heads, self.n_params):
            accs = [fmt_pct(a) for a in self.target_accuracy(n_heads)]
            worst = fmt_pct(self.worst_target(n_heads))
            d_head = self.d_model // n_heads
            rows.append([n_heads, d_head, *accs, worst, fmt_int(n_params)])
        return markdown_table(headers, rows)

    def to_svg(self) -> str:
        """Heatmap: one row per head (first seed's models), one column per offset."""
        from llmlab.report import heatmap_svg

        rows, labels = [], []
        for n_heads, per_head in zip(self.heads, self.offset_attention):
            for h, row in enumerate(per_head):
                rows.append(row)
                labels.append(f"H={n_heads} · head {h}")
        cols = [f"t−{o}" for o in range(len(rows[0]))]
        return heatmap_svg(
            rows, labels, cols, vmin=0.0, vmax=1.0,
            title="Mean attention by offset (query t, key t−o)",
            xlabel="key position", ylabel="model · head",
        )


def _offset_profile(attn: Tensor, start: int, n_offsets: int) -> list[list[float]]:
    """``(B, H, T, T)`` -> ``[h][o]``: mean weight on key ``t - o`` (``t >= start``)."""
    T = attn.shape[-1]
    profile = []
    for h in range(attn.shape[1]):
        row = []
        for o in range(n_offsets):
            ts = torch.arange(max(start, o), T)
            row.append(attn[:, h, ts, ts - o].mean().item() if len(ts) else 0.0)
        profile.append(row)
    return profile


def _eval_batch(n_eval: int, seq_len: int, vocab_size: int) -> Tensor:
    """Fresh evaluation sequences, the same for every model and seed."""
    data = torch.Generator().manual_seed(10_000)
    return torch.randint(0, vocab_size, (n_eval, seq_len), generator=data)


def train_copy_model(
    n_heads: int,
    seed: int = 0,
    offsets: tuple[int, ...] = (1, 2, 4),
    vocab_size: int = 10,
    seq_len: int = 12,
    d_model: int = 24,
    steps: int = 1500,
    lr: float = 3e-3,
    batch_size: int = 64,
) -> OneLayerAttention:
    """Train a :class:`OneLayerAttention` on the copy task (Adam, random batches).

    Position ``t >= max(offsets)`` must output ``x[t - k]`` for every ``k``.
    """
    torch.manual_seed(seed)
    model = OneLayerAttention(vocab_size, d_model, n_heads, seq_len, len(offsets))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    data = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randint(0, vocab_size, (batch_size, seq_len), generator=data)
        loss = _copy_loss(model(x)[0], x, offsets)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def evaluate_copy_model(
    model: OneLayerAttention, offsets: tuple[int, ...] = (1, 2, 4), n_eval: int = 2000
) -> tuple[list[float], Tensor]:
    """Accuracy per target on fresh sequences, and the ``(n_eval, H, T, T)`` weights."""
    vocab_size, seq_len = model.tok.num_embeddings, model.pos.num_embeddings
    start = max(offsets)
    x = _eval_batch(n_eval, seq_len, vocab_size)
    with torch.no_grad():
        logits, attn = model(x)
    hits = [lg[:, start:].argmax(-1) == x[:, start - k : seq_len - k] for lg, k in
            zip(logits, offsets)]
    return [h.float().mean().item() for h in hits], attn


def _ensemble_logits(
    p: dict[str, Tensor], x: Tensor, n_heads: int, n_targets: int, start: int
) -> Tensor:
    """:class:`OneLayerAttention` for ``E`` models at once: ids ``(E, B, T)``.

    ``p`` holds each parameter of the single model stacked along a new first
    axis (``p["attn.qkv.weight"]`` is ``(E, 3D, D)``), except that the ``K``
    read-outs ``outs.i`` of each model are one ``(K*V, D)`` layer,
    ``p["outs.weight"]`` ``(E, K*V, D)`` and ``p["outs.bias"]`` ``(E, K*V)``
    (see :func:`train_copy_models`). Every step mirrors a line
    of ``OneLayerAttention.forward`` and ``MultiHeadSelfAttention.forward_steps``;
    ``test_seeds_trained_side_by_side_match_one_at_a_time`` keeps them in step.

    Returns the logits of positions ``t >= start`` as ``(E * K, V, B, T - start)``,
    every model's every target in one tensor (row ``e * K + i``: model ``e``,
    target ``i``), with the vocabulary axis in the middle: the layout
    ``F.cross_entropy`` takes for extra axes, so one call scores all of them.

    Why the layouts differ from the module's: PyTorch's CPU kernels for softmax,
    log-softmax and cross-entropy are several times slower when the axis they
    reduce is the *last* one and tiny (10 tokens, 12 keys here) than with the
    same numbers and that axis in the middle. So the attention scores are
    computed transposed, ``(key, query)``, with the softmax over the keys at
    ``dim=-2``, and the logits as ``W @ h^T``, which puts the vocabulary before
    the positions. The numbers are the module's; only their order in memory
    differs.
    """
    E, B, T = x.shape
    D = p["tok.weight"].shape[-1]
    H, Dh = n_heads, D // n_heads
    rows = torch.arange(E)[:, None, None]
    h = p["tok.weight"][rows, x] + p["pos.weight"][:, None, :T]  # (E, B, T, D)
    h = h.view(E, B * T, D)
    # qkv(h) for all E models in one batched matmul, bias added by baddbmm
    qkv_w, qkv_b = p["attn.qkv.weight"], p["attn.qkv.bias"]  # (E, 3D, D), (E, 3D)
    qkv = torch.baddbmm(qkv_b[:, None], h, qkv_w.transpose(1, 2))  # (E, B*T, 3D)
    q, k, v = (  # split into heads; models, batch and heads become one batch axis
        t.reshape(E, B, T, H, Dh).transpose(2, 3).reshape(E * B * H, T, Dh)
        for t in qkv.view(E, B, T, 3 * D).split(D, -1)
    )
    # scores.transpose(-2, -1): row j is key j, column i is query i. One baddbmm
    # scales by 1/sqrt(Dh) and adds the causal mask: -inf where key j > query i,
    # which in this layout is the part below the diagonal
    future = torch.full((T, T), float("-inf")).tril(-1)  # (T_key, T_query)
    scores_t = torch.baddbmm(future, k, q.transpose(1, 2), alpha=1 / math.sqrt(Dh))
    # each query's weights sum to 1 over the keys: softmax along dim -2
    attn_t = torch.softmax(scores_t, dim=-2)  # (E*B*H, T_key, T_query)
    heads = attn_t.transpose(1, 2) @ v  # (E*B*H, T, Dh): attn @ v
    concat = heads.view(E, B, H, T, Dh).transpose(2, 3).reshape(E, B * T, D)
    proj_w, proj_b = p["attn.proj.weight"], p["attn.proj.bias"]  # (E, D, D), (E, D)
    h = h + torch.baddbmm(proj_b[:, None], concat, proj_w.transpose(1, 2))  # residual
    # all K read-outs at once; W @ h^T puts V in the middle
    out_w, out_b = p["outs.weight"], p["outs.bias"]  # (E, K*V, D), (E, K*V)
    logits = torch.baddbmm(out_b[:, :, None], out_w, h.transpose(1, 2))  # (E, K*V, B*T)
    V = out_w.shape[1] // n_targets
    return logits.view(E * n_targets, V, B, T)[..., start:]  # (E*K, V, B, T - start)


def train_copy_models(
    n_heads: int,
    seeds: tuple[int, ...] = (0, 1, 2),
    offsets: tuple[int, ...] = (1, 2, 4),
    vocab_size: int = 10,
    seq_len: int = 12,
    d_model: int = 24,
    steps: int = 1500,
    lr: float = 3e-3,
    batch_size: int = 64,
) -> list[OneLayerAttention]:
    """:func:`train_copy_model` for several seeds at once (the fast path).

    Each seed's model starts from the same initial weights and sees the same
    batches as with :func:`train_copy_model`; the models are trained side by
    side as one stacked tensor per parameter. The loss is the *sum* of the
    models' losses, so each model's gradient is its own, and Adam is
    element-wise, so each model gets exactly its own update. Only the order of
    floating-point sums differs, so weights agree to rounding, not bit for bit.
    Training a tiny model is dominated by per-operation overhead, which this
    pays once for all seeds instead of once per seed. Two more savings, neither
    of which changes what is computed: :func:`_ensemble_logits` lays tensors out
    the way PyTorch's CPU kernels are fast at (see there) and scores every target
    with one cross-entropy call, and Adam runs as one fused kernel over all
    parameters (``fused=True``) instead of a loop of small operations.
    """
    models = []
    for seed in seeds:
        torch.manual_seed(seed)  # the same initial weights as train_copy_model
        models.append(OneLayerAttention(vocab_size, d_model, n_heads, seq_len, len(offsets)))

    def stack(tensors: list[Tensor]) -> Tensor:  # (E, ...): one trainable tensor
        return torch.stack([t.detach() for t in tensors]).clone().requires_grad_()

    names = [n for n, _ in models[0].named_parameters() if not n.startswith("outs.")]
    stacked = {name: stack([dict(m.named_parameters())[name] for m in models])
               for name in names}
    # each model's K read-outs (V, D) as one (K*V, D) layer: one matmul per step
    # for all of them, and nothing to concatenate again at every step
    stacked["outs.weight"] = stack([torch.cat([o.weight for o in m.outs]) for m in models])
    stacked["outs.bias"] = stack([torch.cat([o.bias for o in m.outs]) for m in models])
    # fused=True: one kernel computes Adam's update for every tensor; the CPU
    # default runs a loop of small tensor operations per parameter
    opt = torch.optim.Adam(stacked.values(), lr=lr, fused=True)
    streams = [torch.Generator().manual_seed(seed) for seed in seeds]
    start, E, K = max(offsets), len(seeds), len(offsets)
    for _ in range(steps):
        x = torch.stack([
            torch.randint(0, vocab_size, (batch_size, seq_len), generator=g) for g in streams
        ])  # (E, B, T): each seed's own batch
        logits = _ensemble_logits(stacked, x, n_heads, K, start)  # (E*K, V, B, T')
        targets = torch.stack(
            [x[:, :, start - k : seq_len - k] for k in offsets], 1
        ).flatten(0, 1)  # (E*K, B, T'): row e*K + i is x[t - offsets[i]] of model e
        # every (model, target) pair has B*T' predictions, so E*K * (mean over all)
        # = sum over models and targets of each one's mean, as in train_copy_model
        loss = E * K * F.cross_entropy(logits, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        for i, model in enumerate(models):
            for name in names:
                model.get_parameter(name).copy_(stacked[name][i])
            for j, out in enumerate(model.outs):  # rows j*V .. (j+1)*V - 1 of the read-out
                out.weight.copy_(stacked["outs.weight"][i].chunk(len(offsets))[j])
                out.bias.copy_(stacked["outs.bias"][i].chunk(len(offsets))[j])
    return models


@dataclass
class CopyRuns:
    """One head count of :func:`run_why_multihead`: every seed's accuracy per
    target, and where the first seed's heads look (by offset, and as full maps)."""

    n_heads: int
    accuracy: list[list[float]]  # [seed][target]
    n_params: int
    profile: list[list[float]]  # [head][offset], first seed
    attention: list[list[list[float]]]  # [head][query][key], first seed, mean weights


@cached(cost=7.0)  # seconds, per head count (3 seeds side by side)
def run_copy_runs(
    n_heads: int,
    seeds: tuple[int, ...] = (0, 1, 2),
    offsets: tuple[int, ...] = (1, 2, 4),
    vocab_size: int = 10,
    seq_len: int = 12,
    d_model: int = 24,
    steps: int = 1500,
    lr: float = 3e-3,
    batch_size: int = 64,
    n_eval: int = 2000,
    fast: bool = True,
) -> CopyRuns:
    """Train and evaluate the copy-task model for one head count and every seed.

    ``fast=True`` trains the seeds side by side (:func:`train_copy_models`);
    ``fast=False`` is the reference path, one model after another
    (:func:`train_copy_model`). Evaluation is the same module code either way.
    """
    if d_model % n_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
    args = (tuple(offsets), vocab_size, seq_len, d_model, steps, lr, batch_size)
    if fast:
        models = train_copy_models(n_heads, tuple(seeds), *args)
    else:
        models = [train_copy_model(n_heads, seed, *args) for seed in seeds]
    accuracy, profile, attention = [], [], []
    for i, model in enumerate(models):
        accs, attn = evaluate_copy_model(model, tuple(offsets), n_eval)
        accuracy.append(accs)
        if i == 0:  # what each head attends to: first seed
            start = max(offsets)
            profile = _offset_profile(attn, start, start + 4)
            attention = attn.mean(dim=0).tolist()  # (H, T, T) over the evaluation
    return CopyRuns(n_heads, accuracy, count_parameters(models[0]), profile, attention)


def _why_multihead_parts(heads: tuple[int, ...], **kwargs) -> list:
    """The independent pieces of :func:`run_why_multihead`: one per head count."""
    return [(run_copy_runs, {"n_heads": h, **kwargs}) for h in heads]


@cached(parts=_why_multihead_parts)
def run_why_multihead(
    heads: tuple[int, ...] = (1, 2, 3, 6),
    seeds: tuple[int, ...] = (0, 1, 2),
    offsets: tuple[int, ...] = (1, 2, 4),
    vocab_size: int = 10,
    seq_len: int = 12,
    d_model: int = 24,
    steps: int = 1500,
    lr: float = 3e-3,
    batch_size: int = 64,
    n_eval: int = 2000,
    fast: bool = True,
) -> WhyMultiheadResult:
    """Train :class:`OneLayerAttention` to output ``x[t-k]`` for every offset ``k``.

    Every model has the same ``d_model`` (so the same parameters); more heads
    means smaller heads. Adam, uniform random sequences, accuracy on ``n_eval``
    fresh sequences at positions ``t >= max(offsets)``. The offset profile
    (:attr:`WhyMultiheadResult.offset_attention`) is taken from the first seed.
    Each head count is its own cached experiment (:func:`run_copy_runs`);
    ``fast`` picks how the seeds are trained (see there).

    Returns:
        A :class:`WhyMultiheadResult`.

    Raises:
        ValueError: If a head count does not divide ``d_model`` or an offset does
            not fit in ``seq_len``.
    """
    for n_heads in heads:
        if d_model % n_heads:
            raise ValueError(
                f"d_model ({d_model}) must be divisible by n_heads ({n_heads})"
            )
    if not offsets or min(offsets) < 1 or max(offsets) >= seq_len:
        raise ValueError(f"offsets must be in [1, seq_len={seq_len}), got {offsets}")
    if not seeds:
        raise ValueError("seeds must name at least one seed, got an empty tuple")
    # the same calls, with the same arguments, that a build prefetches as parts
    runs = [part(**kwargs) for part, kwargs in _why_multihead_parts(
        heads, seeds=seeds, offsets=offsets, vocab_size=vocab_size, seq_len=seq_len,
        d_model=d_model, steps=steps, lr=lr, batch_size=batch_size, n_eval=n_eval,
        fast=fast,
    )]
    return WhyMultiheadResult(
        list(heads), list(seeds), list(offsets), vocab_size, d_model,
        [r.accuracy for r in runs], [r.n_params for r in runs], [r.profile for r in runs],
    )


# ---------------------------------------------------------------------------
# Demo 6: residual connections
# ---------------------------------------------------------------------------


class _NoResidualBlock(TransformerBlock):
    """A Pre-LN block without its two residual connections (for the ablation only)."""

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        x = self.attn(self.ln1(x), pad_mask)  # (B, T, D), no "x +"
        return self.ffn(self.ln2(x))  # (B, T, D)


KINDS = ("pre_ln", "post_ln", "no_residual")


class _DeepModel(nn.Module):
    """Embeddings, ``n_layers`` blocks, LayerNorm, linear; PyTorch's default init."""

    def __init__(
        self, kind: str, n_layers: int, d_model: int, n_heads: int, vocab_size: int,
        seq_len: int,
    ) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        if kind == "no_residual":
            blocks = [_NoResidualBlock(d_model, n_heads) for _ in range(n_layers)]
        else:
            pre = kind == "pre_ln"
            blocks = [TransformerBlock(d_model, n_heads, pre) for _ in range(n_layers)]
        self.blocks = nn.ModuleList(blocks)
        self.ln = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab_size)

    def hidden(self, x: Tensor) -> Tensor:
        """The last block's output ``(B, T, D)``."""
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))  # (B, T, D)
        for block in self.blocks:
            h = block(h)  # (B, T, D)
        return h

    def forward(self, x: Tensor) -> Tensor:
        return self.out(self.ln(self.hidden(x)))  # (B, T, V)


def _attention_fast(attn: MultiHeadSelfAttention, x: Tensor) -> Tensor:
    """``attn(x)`` of a causal attention without padding or dropout, for training.

    The lines of ``MultiHeadSelfAttention.forward_steps``, reading the module's
    own weights, except that scores, causal mask, softmax and ``attn @ v`` are
    one call of PyTorch's fused attention kernel. It computes the same weights
    but skips the separate softmax over the tiny last axis of ``(B, H, T, T)``
    scores, which is slow on CPU (see :func:`_ensemble_logits`).
    """
    B, T, D = x.shape
    H, Dh = attn.n_heads, attn.d_head
    qkv = F.linear(x, attn.qkv.weight, attn.qkv.bias)  # (B, T, 3D)
    q, k, v = (t.view(B, T, H, Dh).transpose(1, 2) for t in qkv.split(D, dim=2))
    # softmax(q k^T / sqrt(Dh), keys after the query masked) @ v: (B, H, T, Dh)
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    concat = heads.transpose(1, 2).reshape(B, T, D)  # (B, T, D)
    return F.linear(concat, attn.proj.weight, attn.proj.bias)  # (B, T, D)


def _mlp_fast(mlp: MLP, x: Tensor) -> Tensor:
    """``mlp(x)`` without dropout: ``proj(GELU(fc(x)))`` on the module's weights."""
    hidden = F.linear(x, mlp.fc.weight, mlp.fc.bias)  # (B, T, 4D)
    hidden = F.gelu(hidden, approximate=mlp.act.approximate)  # "tanh", as GPT-2
    return F.linear(hidden, mlp.proj.weight, mlp.proj.bias)  # (B, T, D)


def _deep_logits_fast(model: _DeepModel, x: Tensor, offset: int) -> Tensor:
    """``model(x)[:, offset:]`` as ``(B, V, T - offset)``: the fast path's training forward.

    Mirrors ``_DeepModel.forward``, ``TransformerBlock.forward`` and
    ``_NoResidualBlock.forward`` line by line on the model's own parameters, so
    gradients land in the model. Attention and MLP are :func:`_attention_fast`
    and :func:`_mlp_fast` (the model has no dropout and only causal attention).
    The logits come as ``W @ h^T``, with the vocabulary in the middle, the
    layout in which PyTorch's CPU cross-entropy is fast (see
    :func:`_ensemble_logits`). ``test_residual_fast_path_follows_the_reference``
    keeps this in step with the modules.
    """
    h = model.tok(x) + model.pos(torch.arange(x.shape[1]))  # (B, T, D)
    for block in model.blocks:
        if isinstance(block, _NoResidualBlock):
            h = _attention_fast(block.attn, block.ln1(h))  # no "h +"
            h = _mlp_fast(block.ffn, block.ln2(h))
        elif block.pre_ln:
            h = h + _attention_fast(block.attn, block.ln1(h))
            h = h + _mlp_fast(block.ffn, block.ln2(h))
        else:  # Post-LN
            h = block.ln1(h + _attention_fast(block.attn, h))
            h = block.ln2(h + _mlp_fast(block.ffn, h))
    h = model.ln(h)[:, offset:]  # (B, T - offset, D)
    # out(h) = h W^T + b, computed as W h^T + b: (V, D) @ (B, D, T') -> (B, V, T')
    return model.out.weight @ h.transpose(1, 2) + model.out.bias[:, None]


def collapse_score(hidden: Tensor) -> float:
    """Mean cosine similarity between different positions of ``(B, T, D)`` vectors.

    Near 1: every position carries (almost) the same vector, so nothing after
    this layer can tell which token stood where ("rank collapse").
    """
    if hidden.ndim != 3 or hidden.shape[1] < 2:
        raise ValueError(
            "hidden must have shape (batch, seq_len >= 2, d), got "
            f"{tuple(hidden.shape)}"
        )
    T = hidden.shape[1]
    unit = F.normalize(hidden, dim=-1)
    sim = unit @ unit.transpose(1, 2)  # (B, T, T) cosine similarities
    return sim[:, ~torch.eye(T, dtype=torch.bool)].mean().item()  # off-diagonal


@dataclass
class ResidualAblationResult:
    """Training an ``n_layers``-block model with and without residual connections.

    Attributes:
        kinds: ``"pre_ln"``, ``"post_ln"``, ``"no_residual"`` (Pre-LN minus residuals).
        n_layers: Number of blocks.
        offset: The task: position ``t`` predicts ``x[t - offset]``.
        vocab_size: Uniform tokens; a guessing model has loss ``ln(vocab_size)``.
        window: Steps averaged for the first and last loss.
        collapse: ``{kind: score}``, :func:`collapse_score` of the last block's
            output at initialisation.
        losses: ``{kind: [loss per training step]}``.
        accuracy: ``{kind: accuracy}`` on fresh sequences after training.
    """

    kinds: list[str]
    n_layers: int
    offset: int
    vocab_size: int
    window: int
    collapse: dict[str, float]
    losses: dict[str, list[float]]
    accuracy: dict[str, float]

    LABELS = {
        "pre_ln": "Pre-LN",
        "post_ln": "Post-LN",
        "no_residual": "Pre-LN, no residual",
    }

    @property
    def chance_loss(self) -> float:
        return math.log(self.vocab_size)

    def _curve(self, kind: str) -> list[float]:
        if kind not in self.losses:
            raise ValueError(f"kind must be one of {self.kinds}, got {kind!r}")
        return self.losses[kind]

    def first_loss(self, kind: str) -> float:
        """Mean training loss over the first ``window`` steps."""
        return sum(self._curve(kind)[: self.window]) / self.window

    def last_loss(self, kind: str) -> float:
        """Mean training loss over the last ``window`` steps."""
        return sum(self._curve(kind)[-self.window :]) / self.window

    def to_markdown(self) -> str:
        headers = [
            "block", "collapse at init", f"loss, first {self.window} steps",
            f"loss, last {self.window} steps", "accuracy",
        ]
        rows = [
            [self.LABELS[k], fmt_float(self.collapse[k]), fmt_float(self.first_loss(k)),
             fmt_float(self.last_loss(k)), fmt_pct(self.accuracy[k])]
            for k in self.kinds
        ]
        return markdown_table(headers, rows)

    def to_svg(self) -> str:
        """Training-loss curves of every kind, with the guessing loss ``ln V``."""
        from llmlab.report import line_plot_svg

        series = {
            self.LABELS[k]: (range(1, len(self.losses[k]) + 1), self.losses[k])
            for k in self.kinds
        }
        return line_plot_svg(
            series, title=f"{self.n_layers} blocks, predict x[t−{self.offset}]",
            xlabel="training step", ylabel="cross-entropy loss",
            hlines={f"ln {self.vocab_size} (guessing)": self.chance_loss},
        )


@dataclass
class ResidualRun:
    """One kind of block in :func:`run_residual_ablation`."""

    kind: str
    collapse: float
    losses: list[float]
    accuracy: float


def _train_deep_model(
    kind: str, n_layers: int, d_model: int, n_heads: int, offset: int, vocab_size: int,
    seq_len: int, steps: int, lr: float, batch_size: int, seed: int, fast: bool,
) -> tuple[_DeepModel, float, list[float]]:
    """The trained model, its collapse score at initialisation, and its loss curve.

    See :func:`run_residual_variant` for ``fast``.
    """
    torch.manual_seed(seed)
    model = _DeepModel(kind, n_layers, d_model, n_heads, vocab_size, seq_len)
    probe = torch.randint(0, vocab_size, (16, seq_len))
    with torch.no_grad():
        collapse = collapse_score(model.hidden(probe))
    # fused=True: one kernel computes Adam's update for every parameter;
    # None (the default) runs a loop of small tensor operations per parameter
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True if fast else None)
    data = torch.Generator().manual_seed(seed)
    curve = []
    for _ in range(steps):
        x = torch.randint(0, vocab_size, (batch_size, seq_len), generator=data)
        if fast:
            logits = _deep_logits_fast(model, x, offset)  # (B, V, T - offset)
            loss = F.cross_entropy(logits, x[:, :-offset])  # classes along axis 1
        else:
            logits = model(x)[:, offset:]  # (B, T - offset, V)
            loss = F.cross_entropy(logits.flatten(0, 1), x[:, :-offset].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(loss.item())
    return model, collapse, curve


def _deep_accuracy(model: _DeepModel, offset: int, n_eval: int) -> float:
    """Accuracy of ``x[t - offset]`` on fresh sequences, with the module's forward."""
    x = _eval_batch(n_eval, model.pos.num_embeddings, model.tok.num_embeddings)
    with torch.no_grad():
        pred = model(x)[:, offset:].argmax(-1)
    return (pred == x[:, :-offset]).float().mean().item()


@cached(cost=16.0)  # seconds, per kind
def run_residual_variant(
    kind: str,
    n_layers: int = 8,
    d_model: int = 64,
    n_heads: int = 4,
    offset: int = 3,
    vocab_size: int = 10,
    seq_len: int = 12,
    steps: int = 300,
    lr: float = 1e-3,
    batch_size: int = 64,
    n_eval: int = 2000,
    seed: int = 0,
    fast: bool = True,
) -> ResidualRun:
    """Train one ``kind`` of :func:`run_residual_ablation` (its own cached experiment).

    ``fast=False`` is the reference path: the module's forward and PyTorch's
    default Adam. ``fast=True`` trains the same model, from the same initial
    weights on the same batches, with a functional copy of its forward
    (:func:`_deep_logits_fast`: fused attention, logits laid out for a fast
    cross-entropy) and Adam as one fused kernel (``fused=True``). Only the order
    of floating-point operations differs, so with residual connections loss
    curves and weights agree to rounding, not bit for bit. Without them the
    training is chaotic: rounding differences grow until, after about 50 steps,
    the two runs are different samples of the same noisy plateau near
    ``ln(vocab_size)``. The collapse score and the evaluation use the module's
    own forward either way.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    model, collapse, curve = _train_deep_model(
        kind, n_layers, d_model, n_heads, offset, vocab_size, seq_len, steps, lr,
        batch_size, seed, fast,
    )
    return ResidualRun(kind, collapse, curve, _deep_accuracy(model, offset, n_eval))


def _residual_parts(kinds: tuple[str, ...], **kwargs) -> list:
    """The independent pieces of :func:`run_residual_ablation`: one per kind."""
    kwargs.pop("window", None)
    return [(run_residual_variant, {"kind": k, **kwargs}) for k in kinds]


@cached(parts=_residual_parts)
def run_residual_ablation(
    kinds: tuple[str, ...] = KINDS,
    n_layers: int = 8,
    d_model: int = 64,
    n_heads: int = 4,
    offset: int = 3,
    vocab_size: int = 10,
    seq_len: int = 12,
    steps: int = 300,
    lr: float = 1e-3,
    batch_size: int = 64,
    n_eval: int = 2000,
    window: int = 50,
    seed: int = 0,
    fast: bool = True,
) -> ResidualAblationResult:
    """Train an ``n_layers``-block model to output ``x[t - offset]``, once per kind.

    Every kind starts from the same seed and sees the same batches. The collapse
    score is measured on 16 random sequences before the first step. Each kind is
    its own cached experiment (:func:`run_residual_variant`); ``fast`` picks how
    it is trained (see there).

    Returns:
        A :class:`ResidualAblationResult`.

    Raises:
        ValueError: On an unknown kind or an offset that does not fit in ``seq_len``.
    """
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"kinds must be among {KINDS}, got {kind!r}")
    if not 1 <= offset < seq_len:
        raise ValueError(f"offset must be in [1, seq_len={seq_len}), got {offset}")
    if not 1 <= window <= steps:
        raise ValueError(f"window must be in [1, steps={steps}], got {window}")
    # the same calls, with the same arguments, that a build prefetches as parts
    runs = [part(**kwargs) for part, kwargs in _residual_parts(
        kinds, n_layers=n_layers, d_model=d_model, n_heads=n_heads, offset=offset,
        vocab_size=vocab_size, seq_len=seq_len, steps=steps, lr=lr,
        batch_size=batch_size, n_eval=n_eval, seed=seed, fast=fast,
    )]
    collapse = {r.kind: r.collapse for r in runs}
    losses = {r.kind: r.losses for r in runs}
    accuracy = {r.kind: r.accuracy for r in runs}
    return ResidualAblationResult(
        list(kinds), n_layers, offset, vocab_size, window, collapse, losses, accuracy
    )
