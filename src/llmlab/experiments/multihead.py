"""Experiments on multi-head attention and the Transformer block.

* :func:`run_why_multihead`: a one-layer attention model must copy ``x[t-1]``,
  ``x[t-2]`` and ``x[t-4]`` at once; with one head it cannot, with enough heads
  each head takes one offset. Same parameter count for every head count. Besides
  the accuracies it records what each read-out answered
  (:meth:`WhyMultiheadResult.answered`): a head that blends two positions hands
  both tokens on, but hardly their order.
* :func:`run_head_split` and :func:`run_block_order`: the shapes of the head
  split and the order in which a block runs its parts, for the lecture's
  diagrams (drawn by :mod:`llmlab.report.diagrams`).
* :func:`run_residual_ablation`: an 8-block model learns to copy ``x[t-3]`` with
  Pre-LN or Post-LN residual blocks, but not without residual connections (its
  representations collapse before training starts).

Every model is built from :mod:`llmlab.models.gpt2` and trained through its own
``forward``; the results are plain data (rendered by :mod:`llmlab.report.multihead`).

Taught on: "Multi-head attention and the Transformer block (GPT-2 style)".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from llmlab.build.cache import cached, part_results
from llmlab.checks import (
    check_choice,
    check_divisible,
    check_finite_float,
    check_int,
    check_sizes,
    check_tensor,
    check_bool,
    check_type,
)
from llmlab.models.gpt2 import MultiHeadSelfAttention, TransformerBlock
from llmlab.params import count_parameters

__all__ = [
    "KINDS",
    "BlockOrderResult",
    "CopyRuns",
    "HeadSplitResult",
    "OneLayerAttention",
    "ResidualAblationResult",
    "ResidualRun",
    "WhyMultiheadResult",
    "collapse_score",
    "evaluate_copy_model",
    "run_block_order",
    "run_copy_runs",
    "run_head_split",
    "run_residual_ablation",
    "run_residual_variant",
    "run_why_multihead",
    "train_copy_model",
]


# ---------------------------------------------------------------------------
# the lecture's diagrams: splitting into heads, the order inside a block
# ---------------------------------------------------------------------------
@dataclass
class HeadSplitResult:
    """``(B, T, D)`` split into ``H`` heads and merged back, on numbered elements.

    The input's entries number the elements of each sequence: ``x[b, t, d] = t·D + d``.

    Attributes:
        shapes: The shape after each call: ``x`` ``(B, T, D)``, ``view``
            ``(B, T, H, D // H)``, ``transpose`` ``(B, H, T, D // H)``,
            ``transpose_back`` ``(B, T, H, D // H)`` and ``merged`` ``(B, T, D)``.
        x: ``(T, D)``, sequence 0 of the input.
        split: ``(T, H, D // H)``, sequence 0 after ``view``.
        heads: ``(H, T, D // H)``, sequence 0 after ``transpose(1, 2)``: one matrix per head.
        back_contiguous: Whether the heads transposed back are contiguous in memory.
        view_without_contiguous_fails: Whether ``.view(B, T, D)`` of them raises
            (it does when a transpose moved more than one position and head).
        round_trip: Whether the merge gives back the input exactly.
    """

    shapes: dict[str, tuple[int, ...]]
    x: Tensor
    split: Tensor
    heads: Tensor
    back_contiguous: bool
    view_without_contiguous_fails: bool
    round_trip: bool


def run_head_split(B: int = 2, T: int = 4, d_model: int = 8, n_heads: int = 2
                   ) -> HeadSplitResult:
    """The calls of :meth:`llmlab.models.gpt2.MultiHeadSelfAttention.forward_steps`
    that split ``(B, T, D)`` into heads and merge them back: ``view``, ``transpose``,
    then ``transpose``, ``contiguous`` and ``view``.

    Args:
        B: Batch size.
        T: Tokens per sequence.
        d_model: Width ``D``, divisible by ``n_heads``.
        n_heads: Number of heads ``H``.
    """
    B, T = check_int("B", B), check_int("T", T)
    D, H = check_int("d_model", d_model), check_int("n_heads", n_heads)
    check_divisible("d_model", D, "n_heads", H)
    Dh = D // H
    x = torch.arange(T * D).view(1, T, D).repeat(B, 1, 1)  # x[b, t, d] = t·D + d
    split = x.view(B, T, H, Dh)  # (B, T, H, Dh)
    heads = split.transpose(1, 2)  # (B, H, T, Dh)
    attended = heads.contiguous()  # attention's output: new memory in (B, H, T, Dh) order
    back = attended.transpose(1, 2)  # (B, T, H, Dh): new strides, same memory
    try:
        back.view(B, T, D)
        view_fails = False
    except RuntimeError:  # "view size is not compatible with input tensor's size and stride"
        view_fails = True
    merged = back.contiguous().view(B, T, D)  # (B, T, D)
    shapes = {"x": tuple(x.shape), "view": tuple(split.shape), "transpose": tuple(heads.shape),
              "transpose_back": tuple(back.shape), "merged": tuple(merged.shape)}
    return HeadSplitResult(shapes, x[0], split[0], heads[0], back.is_contiguous(), view_fails,
                           torch.equal(merged, x))


@dataclass
class BlockOrderResult:
    """The order in which a :class:`llmlab.models.gpt2.TransformerBlock` runs its parts.

    Attributes:
        pre_ln: LayerNorm before each sub-layer (True, GPT-2) or after each add (2017).
        order: ``ln1``, ``attn``, ``ln2`` and ``ffn`` in the order one forward pass
            calls them.
    """

    pre_ln: bool
    order: list[str]


def _call_order(block: nn.Module, names: Sequence[str], *args: object) -> list[str]:
    """The order in which ``block``'s sub-modules ``names`` run in one forward pass."""
    order: list[str] = []
    hooks = [getattr(block, n).register_forward_pre_hook(
        lambda module, inputs, n=n: order.append(n)) for n in names]
    try:
        with torch.no_grad():
            block(*args)
    finally:
        for hook in hooks:
            hook.remove()
    return order


@cached
def run_block_order(pre_ln: bool = True, seed: int = 0) -> BlockOrderResult:
    """Record, with forward pre-hooks, the order of a real block's sub-modules.

    The block (``d_model=8``, 2 heads) is built under a forked RNG seeded with
    ``seed`` and runs once on zeros ``(1, 3, 8)``.

    Args:
        pre_ln: Pre-LN (True) or Post-LN (False).
        seed: Seed of the block's weights.
    """
    check_bool("pre_ln", pre_ln)
    check_int("seed", seed, minimum=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = TransformerBlock(d_model=8, n_heads=2, pre_ln=pre_ln)
    order = _call_order(block, ["ln1", "attn", "ln2", "ffn"], torch.zeros(1, 3, 8))
    return BlockOrderResult(pre_ln, order)


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
        self.vocab_size = check_int("vocab_size", vocab_size)
        self.seq_len = check_int("seq_len", seq_len)
        check_int("n_targets", n_targets)
        check_divisible("d_model", check_int("d_model", d_model), "n_heads",
                        check_int("n_heads", n_heads))
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        self.attn = MultiHeadSelfAttention(d_model, n_heads, causal=True)
        self.outs = nn.ModuleList(nn.Linear(d_model, vocab_size) for _ in range(n_targets))

    def forward(self, x: Tensor) -> tuple[list[Tensor], Tensor]:
        """Ids ``(B, T)`` -> ``(B, T, V)`` logits per target, and ``(B, H, T, T)``."""
        check_tensor("x", x, "batch seq_len", "index:vocab_size",
                     vocab_size=self.vocab_size, seq_len=(1, self.seq_len))
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))  # (B, T, D)
        a, attn = self.attn(h, return_weights=True)  # (B, T, D), (B, H, T, T)
        h = h + a  # (B, T, D)
        return [out(h) for out in self.outs], attn


def _copy_loss(logits: list[Tensor], x: Tensor, offsets: tuple[int, ...]) -> Tensor:
    """Sum over targets of the cross-entropy for ``x[t-k]`` at ``t >= max(k)``."""
    start, T = max(offsets), x.shape[1]
    return sum(
        F.cross_entropy(lg[:, start:].flatten(0, 1), x[:, start - k : T - k].flatten())
        for lg, k in zip(logits, offsets)
    )


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
    steps: int = 600,
    lr: float = 3e-3,
    batch_size: int = 64,
) -> OneLayerAttention:
    """Train a :class:`OneLayerAttention` on the copy task (Adam, random batches).

    Position ``t >= max(offsets)`` must output ``x[t - k]`` for every ``k``.
    Adam runs as PyTorch's fused kernel (``fused=True``): the same update, fewer
    small operations per step.
    """
    offsets = _check_copy_settings((n_heads,), (seed,), offsets, vocab_size, seq_len,
                                   d_model, steps, lr, batch_size, 1)
    torch.manual_seed(seed)
    model = OneLayerAttention(vocab_size, d_model, n_heads, seq_len, len(offsets))
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
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
    accs, attn, _ = _evaluate(model, offsets, n_eval)
    return accs, attn


def _evaluate(
    model: OneLayerAttention, offsets: tuple[int, ...], n_eval: int
) -> tuple[list[float], Tensor, list[list[float]]]:
    """:func:`evaluate_copy_model`, and what each read-out answered (same forward pass).

    ``answers[j][k]`` is the share of target ``j``'s predictions that are the token
    at ``t - offsets[k]``: for ``k == j`` the accuracy, for ``k != j`` only wrong
    predictions count, so ``answers[j][j] + answers[j][k]`` is the share that is
    one of those two tokens.
    """
    check_type("model", model, OneLayerAttention)
    offsets = check_sizes("offsets", offsets, maximum=model.seq_len - 1)
    if len(offsets) != len(model.outs):
        raise ValueError(f"offsets must hold one offset per target of the model "
                         f"({len(model.outs)}), got {offsets}")
    check_int("n_eval", n_eval)
    vocab_size, seq_len = model.tok.num_embeddings, model.pos.num_embeddings
    start = max(offsets)
    x = _eval_batch(n_eval, seq_len, vocab_size)
    with torch.no_grad():
        logits, attn = model(x)
    tokens = [x[:, start - k : seq_len - k] for k in offsets]  # the token at t - k
    answers = []
    for j, lg in enumerate(logits):
        pred = lg[:, start:].argmax(-1)  # (n_eval, T - start)
        right = pred == tokens[j]
        answers.append([(right if k == j else ~right & (pred == tokens[k])).float()
                        .mean().item() for k in range(len(offsets))])
    return [row[j] for j, row in enumerate(answers)], attn, answers


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


@dataclass
class CopyRuns:
    """One head count of :func:`run_why_multihead`.

    Attributes:
        n_heads: Heads of every model.
        accuracy: ``[seed][target]``.
        n_params: Parameters of each model.
        profile: ``[head][offset]``: mean weight on key ``t - offset``, first seed.
        attention: ``[head][query][key]``: mean weights over the evaluation, first seed.
        answers: ``[seed][target][k]``: share of the target's predictions that are the
            token at ``t - offsets[k]`` (the accuracy where ``k`` is the target's own
            offset; elsewhere, only wrong predictions count).
    """

    n_heads: int
    accuracy: list[list[float]]
    n_params: int
    profile: list[list[float]]
    attention: list[list[list[float]]]
    answers: list[list[list[float]]]


# a local composite (the copy task's settings together), built from llmlab.checks
def _check_copy_settings(heads: tuple[int, ...], seeds: tuple[int, ...],
                         offsets: tuple[int, ...], vocab_size: int, seq_len: int,
                         d_model: int, steps: int, lr: float, batch_size: int,
                         n_eval: int) -> tuple[int, ...]:
    """The copy task's settings checked; ``offsets`` as a tuple."""
    check_int("d_model", d_model)
    for n_heads in check_sizes("heads", heads):
        check_divisible("d_model", d_model, "n_heads", n_heads)
    check_sizes("seeds", seeds, minimum=0)
    check_int("seq_len", seq_len, minimum=2)
    offsets = check_sizes("offsets", offsets, maximum=seq_len - 1)
    check_int("vocab_size", vocab_size, minimum=2)
    check_int("steps", steps)
    check_finite_float("lr", lr, minimum=0.0, open_min=True)
    check_int("batch_size", batch_size)
    check_int("n_eval", n_eval)
    return offsets


@cached(cost=3.0)  # seconds on one core: 2 seeds x 600 steps
def run_copy_runs(
    n_heads: int,
    seeds: tuple[int, ...] = (0, 1),
    offsets: tuple[int, ...] = (1, 2, 4),
    vocab_size: int = 10,
    seq_len: int = 12,
    d_model: int = 24,
    steps: int = 600,
    lr: float = 3e-3,
    batch_size: int = 64,
    n_eval: int = 2000,
) -> CopyRuns:
    """Train and evaluate the copy-task model for one head count, every seed."""
    check_int("n_heads", n_heads)
    _check_copy_settings((n_heads,), seeds, offsets, vocab_size, seq_len, d_model, steps,
                         lr, batch_size, n_eval)
    accuracy, answers, profile, attention, n_params = [], [], [], [], 0
    for i, seed in enumerate(seeds):
        model = train_copy_model(n_heads, seed, tuple(offsets), vocab_size, seq_len,
                                 d_model, steps, lr, batch_size)
        accs, attn, seed_answers = _evaluate(model, tuple(offsets), n_eval)
        accuracy.append(accs)
        answers.append(seed_answers)
        if i == 0:  # what each head attends to: the first seed's model
            start = max(offsets)
            profile = _offset_profile(attn, start, start + 4)
            attention = attn.mean(dim=0).tolist()  # (H, T, T) over the evaluation
            n_params = count_parameters(model)
    return CopyRuns(n_heads, accuracy, n_params, profile, attention, answers)


@dataclass
class WhyMultiheadResult:
    """Copy-task accuracy per head count, seed and target, and what the heads attend.

    Attributes:
        heads: Head counts compared (same ``d_model`` for all).
        seeds: Training seeds.
        offsets: Targets: position ``t`` predicts ``x[t - k]`` for each ``k``.
        vocab_size: Tokens are uniform over this many ids (chance = ``1/vocab_size``).
        d_model: Width of every model; each head has ``d_model // heads[i]`` dims.
        steps, lr, batch_size, n_eval: The training and evaluation settings.
        accuracy: ``accuracy[i][s][j]``: head count ``i``, seed ``s``, target ``j``.
        n_params: Parameter count per head count.
        offset_attention: ``[i][h][o]``: mean weight that head ``h`` of the first
            seed's model with ``heads[i]`` heads puts on key ``t - o``.
        answers: ``answers[i][s][j][k]``: share of target ``j``'s predictions that
            are the token at ``t - offsets[k]`` (see :meth:`answered`).
    """

    heads: list[int]
    seeds: list[int]
    offsets: list[int]
    vocab_size: int
    d_model: int
    steps: int
    lr: float
    batch_size: int
    n_eval: int
    accuracy: list[list[list[float]]]
    n_params: list[int]
    offset_attention: list[list[list[float]]]
    answers: list[list[list[list[float]]]]

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

    def ranked(self, n_heads: int, seed: int) -> list[int]:
        """The offsets, from the best-learned target to the worst, for one seed."""
        if seed not in self.seeds:
            raise ValueError(f"seed must be one of {self.seeds}, got {seed}")
        accs = self.accuracy[self._index(n_heads)][self.seeds.index(seed)]
        return [k for _, k in sorted(zip(accs, self.offsets), reverse=True)]

    def answered(self, n_heads: int, seed: int, target: int, source: int) -> float:
        """How often the ``x[t - target]`` read-out gives the token at ``t - source``.

        Its accuracy if ``source == target``; otherwise the share of its predictions
        that are wrong and are that token, so ``answered(h, s, a, a) +
        answered(h, s, a, b)`` is the share that is one of the tokens at ``t - a``
        and ``t - b``.
        """
        if seed not in self.seeds:
            raise ValueError(f"seed must be one of {self.seeds}, got {seed}")
        for name, offset in (("target", target), ("source", source)):
            if offset not in self.offsets:
                raise ValueError(f"{name} must be one of the offsets {self.offsets}, "
                                 f"got {offset}")
        runs = self.answers[self._index(n_heads)][self.seeds.index(seed)]
        return runs[self.offsets.index(target)][self.offsets.index(source)]

    def head_offsets(self, n_heads: int) -> list[int]:
        """The offset each head of the first seed's model attends to most."""
        rows = self.offset_attention[self._index(n_heads)]
        return [max(range(len(row)), key=row.__getitem__) for row in rows]


def _why_multihead_parts(heads: tuple[int, ...], **kwargs) -> list:
    """The independent pieces of :func:`run_why_multihead`: one per head count."""
    return [(run_copy_runs, {"n_heads": h, **kwargs}) for h in heads]


@cached(parts=_why_multihead_parts)
def run_why_multihead(
    heads: tuple[int, ...] = (1, 2, 3, 6),
    seeds: tuple[int, ...] = (0, 1),
    offsets: tuple[int, ...] = (1, 2, 4),
    vocab_size: int = 10,
    seq_len: int = 12,
    d_model: int = 24,
    steps: int = 600,
    lr: float = 3e-3,
    batch_size: int = 64,
    n_eval: int = 2000,
) -> WhyMultiheadResult:
    """Train :class:`OneLayerAttention` to output ``x[t-k]`` for every offset ``k``.

    Every model has the same ``d_model`` (so the same parameters); more heads
    means smaller heads. Adam, uniform random sequences, accuracy on ``n_eval``
    fresh sequences at positions ``t >= max(offsets)``. Each head count is its
    own cached experiment (:func:`run_copy_runs`).

    Raises:
        ValueError: If a head count does not divide ``d_model``, an offset does not
            fit in ``seq_len`` or ``seeds`` is empty.
    """
    _check_copy_settings(heads, seeds, offsets, vocab_size, seq_len, d_model, steps, lr,
                         batch_size, n_eval)
    settings = dict(seeds=seeds, offsets=offsets, vocab_size=vocab_size, seq_len=seq_len,
                    d_model=d_model, steps=steps, lr=lr, batch_size=batch_size,
                    n_eval=n_eval)
    runs = part_results(_why_multihead_parts, heads, **settings)
    return WhyMultiheadResult(
        list(heads), list(seeds), list(offsets), vocab_size, d_model, steps, lr,
        batch_size, n_eval, [r.accuracy for r in runs], [r.n_params for r in runs],
        [r.profile for r in runs], [r.answers for r in runs],
    )


# ---------------------------------------------------------------------------
# Demo 6: residual connections
# ---------------------------------------------------------------------------
class _NoResidualBlock(TransformerBlock):
    """A Pre-LN block without its two residual connections (for the ablation only)."""

    def forward(self, x: Tensor, key_mask: Tensor | None = None) -> Tensor:
        x = self.attn(self.ln1(x), key_mask)  # (B, T, D), no "x +"
        return self.ffn(self.ln2(x))  # (B, T, D)


KINDS = ("pre_ln", "post_ln", "no_residual")


class _DeepModel(nn.Module):
    """Embeddings, ``n_layers`` blocks, LayerNorm, linear; PyTorch's default init."""

    def __init__(self, kind: str, n_layers: int, d_model: int, n_heads: int,
                 vocab_size: int, seq_len: int) -> None:
        super().__init__()
        check_int("n_layers", n_layers)
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


def collapse_score(hidden: Tensor) -> float:
    """Mean cosine similarity between different positions of ``(B, T, D)`` vectors.

    Near 1: every position carries (almost) the same vector, so nothing after
    this layer can tell which token stood where ("rank collapse").
    """
    check_tensor("hidden", hidden, "batch seq_len d", "float", seq_len=(2, None))
    T = hidden.shape[1]
    unit = F.normalize(hidden, dim=-1)
    sim = unit @ unit.transpose(1, 2)  # (B, T, T) cosine similarities
    return sim[:, ~torch.eye(T, dtype=torch.bool)].mean().item()  # off-diagonal


# a local composite (the residual task's settings together), built from llmlab.checks
def _check_residual_settings(n_layers: int, d_model: int, n_heads: int, offset: int,
                             vocab_size: int, seq_len: int, steps: int, lr: float,
                             batch_size: int, n_eval: int, seed: int) -> None:
    for name, value in (("n_layers", n_layers), ("d_model", d_model),
                        ("n_heads", n_heads), ("steps", steps),
                        ("batch_size", batch_size), ("n_eval", n_eval)):
        check_int(name, value)
    check_divisible("d_model", d_model, "n_heads", n_heads)
    check_int("seq_len", seq_len, minimum=2)
    check_int("offset", offset, maximum=seq_len - 1)
    check_int("vocab_size", vocab_size, minimum=2)
    check_finite_float("lr", lr, minimum=0.0, open_min=True)
    check_int("seed", seed, minimum=0)


@dataclass
class ResidualRun:
    """One kind of block in :func:`run_residual_ablation`."""

    kind: str
    collapse: float
    losses: list[float]
    accuracy: float


@cached(cost=3.5)  # seconds on one core, per kind
def run_residual_variant(
    kind: str,
    n_layers: int = 8,
    d_model: int = 32,
    n_heads: int = 4,
    offset: int = 3,
    vocab_size: int = 10,
    seq_len: int = 12,
    steps: int = 100,
    lr: float = 1e-3,
    batch_size: int = 32,
    n_eval: int = 2000,
    seed: int = 0,
) -> ResidualRun:
    """Train one ``kind`` of :func:`run_residual_ablation` (its own cached experiment).

    The collapse score is taken on 16 random sequences before the first step;
    the model trains through its own ``forward``, with PyTorch's Adam.
    """
    check_choice("kind", kind, KINDS)
    _check_residual_settings(n_layers, d_model, n_heads, offset, vocab_size, seq_len,
                             steps, lr, batch_size, n_eval, seed)
    torch.manual_seed(seed)
    model = _DeepModel(kind, n_layers, d_model, n_heads, vocab_size, seq_len)
    with torch.no_grad():
        collapse = collapse_score(model.hidden(torch.randint(0, vocab_size, (16, seq_len))))
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    data = torch.Generator().manual_seed(seed)
    curve = []
    for _ in range(steps):
        x = torch.randint(0, vocab_size, (batch_size, seq_len), generator=data)
        logits = model(x)[:, offset:]  # (B, T - offset, V)
        loss = F.cross_entropy(logits.flatten(0, 1), x[:, :-offset].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(loss.item())
    x = _eval_batch(n_eval, seq_len, vocab_size)
    with torch.no_grad():
        accuracy = (model(x)[:, offset:].argmax(-1) == x[:, :-offset]).float().mean().item()
    return ResidualRun(kind, collapse, curve, accuracy)


@dataclass
class ResidualAblationResult:
    """Training an ``n_layers``-block model with and without residual connections.

    Attributes:
        kinds: ``"pre_ln"``, ``"post_ln"``, ``"no_residual"`` (Pre-LN minus residuals).
        n_layers, d_model, n_heads: The model.
        offset: The task: position ``t`` predicts ``x[t - offset]``.
        vocab_size: Uniform tokens; a guessing model has loss ``ln(vocab_size)``.
        seq_len: Tokens per sequence.
        steps, lr, batch_size: The training.
        n_eval: Fresh sequences the accuracy is measured on (at every position
            ``t >= offset``: :attr:`n_predictions` in all).
        window: Steps averaged for the first and last loss.
        collapse: ``{kind: score}``, :func:`collapse_score` of the last block's
            output at initialisation.
        losses: ``{kind: [loss per training step]}``.
        accuracy: ``{kind: accuracy}`` on fresh sequences after training.
    """

    kinds: list[str]
    n_layers: int
    d_model: int
    n_heads: int
    offset: int
    vocab_size: int
    seq_len: int
    steps: int
    lr: float
    batch_size: int
    n_eval: int
    window: int
    collapse: dict[str, float]
    losses: dict[str, list[float]]
    accuracy: dict[str, float]

    @property
    def chance_loss(self) -> float:
        return math.log(self.vocab_size)

    @property
    def chance(self) -> float:
        """Accuracy of guessing: ``1 / vocab_size``."""
        return 1.0 / self.vocab_size

    @property
    def n_predictions(self) -> int:
        """Predictions behind each accuracy: ``n_eval * (seq_len - offset)``."""
        return self.n_eval * (self.seq_len - self.offset)

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


def _residual_parts(kinds: tuple[str, ...], **kwargs) -> list:
    """The independent pieces of :func:`run_residual_ablation`: one per kind."""
    kwargs.pop("window", None)
    return [(run_residual_variant, {"kind": k, **kwargs}) for k in kinds]


@cached(parts=_residual_parts)
def run_residual_ablation(
    kinds: tuple[str, ...] = KINDS,
    n_layers: int = 8,
    d_model: int = 32,
    n_heads: int = 4,
    offset: int = 3,
    vocab_size: int = 10,
    seq_len: int = 12,
    steps: int = 100,
    lr: float = 1e-3,
    batch_size: int = 32,
    n_eval: int = 2000,
    window: int = 50,
    seed: int = 0,
) -> ResidualAblationResult:
    """Train an ``n_layers``-block model to output ``x[t - offset]``, once per kind.

    Every kind starts from the same seed and sees the same batches. Each kind is
    its own cached experiment (:func:`run_residual_variant`).

    Raises:
        ValueError: On an unknown kind, an offset that does not fit in ``seq_len``
            or a window longer than the training.
    """
    check_type("kinds", kinds, (list, tuple), expected="a tuple of kinds")
    if not kinds:
        raise ValueError(f"kinds must hold at least one of {KINDS}, got ()")
    for i, kind in enumerate(kinds):
        check_choice(f"kinds[{i}]", kind, KINDS)
    _check_residual_settings(n_layers, d_model, n_heads, offset, vocab_size, seq_len,
                             steps, lr, batch_size, n_eval, seed)
    check_int("window", window, maximum=steps)
    settings = dict(n_layers=n_layers, d_model=d_model, n_heads=n_heads, offset=offset,
                    vocab_size=vocab_size, seq_len=seq_len, steps=steps, lr=lr,
                    batch_size=batch_size, n_eval=n_eval, seed=seed)
    runs = part_results(_residual_parts, kinds, **settings)
    return ResidualAblationResult(
        list(kinds), n_layers, d_model, n_heads, offset, vocab_size, seq_len, steps, lr,
        batch_size, n_eval, window, {r.kind: r.collapse for r in runs},
        {r.kind: r.losses for r in runs}, {r.kind: r.accuracy for r in runs},
    )
