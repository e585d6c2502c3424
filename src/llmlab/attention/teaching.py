"""The teaching progression of self-attention, one change at a time.

``SelfAttentionV1`` (raw parameter matrices) -> ``SelfAttentionV2``
(``nn.Linear``) -> ``CausalAttention`` (mask buffer, dropout) ->
``MultiHeadAttentionWrapper`` (a list of heads) -> ``MultiHeadAttention``
(one projection split into heads, then an output projection).

Class names, constructor signatures (``d_in, d_out, context_length, dropout,
num_heads, qkv_bias``) and the ``mask`` buffer follow chapter 3 of Sebastian
Raschka's *Build a Large Language Model (From Scratch)* (code: the ``ch03`` folder
of ``rasbt/LLMs-from-scratch``), so a reader can put the two side by side; every
module takes ``x`` of shape `(batch, seq_len, d_in)`.

The ``mask`` buffer keeps the book's convention: **True marks a future position**,
one that a query must *not* see (it is filled with ``-inf``). The rest of the
library uses the opposite, PyTorch's: True = "may attend" (see
:func:`llmlab.functional.causal_mask`, which builds both: ``mask`` is its negation).

Taught on: "Self-attention from scratch".
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from llmlab.checks import (
    check_bool,
    check_divisible,
    check_dropout,
    check_int,
    check_tensor,
    check_type,
)
from llmlab.functional import causal_mask, softmax

__all__ = [
    "CausalAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "SelfAttentionV1",
    "SelfAttentionV2",
    "copy_v2_into_v1",
    "mha_from_wrapper",
    "mha_step_shapes",
]


# ---------------------------------------------------------------------------
# 1. trainable Q, K, V as raw parameter matrices
# ---------------------------------------------------------------------------
class SelfAttentionV1(nn.Module):
    """Self-attention with ``nn.Parameter`` matrices ``(d_in, d_out)``.

    Initialised with ``torch.rand`` (uniform in ``[0, 1)``), as in Raschka's chapter 3.

    Taught on: "Self-attention from scratch".
    """

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.d_in, self.d_out = check_int("d_in", d_in), check_int("d_out", d_out)
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: Tensor) -> Tensor:
        """`(batch, seq_len, d_in)` -> `(batch, seq_len, d_out)`."""
        check_tensor("x", x, "batch seq_len d_in", like=self.W_query, d_in=self.d_in)
        queries = x @ self.W_query  # (B, T, d_out)
        keys = x @ self.W_key  # (B, T, d_out)
        values = x @ self.W_value  # (B, T, d_out)
        # swap only the last two dims: (B, T, d) -> (B, d, T)
        scores = queries @ keys.transpose(1, 2)  # (B, T, T)
        weights = softmax(scores / math.sqrt(keys.shape[-1]), dim=-1)  # (B, T, T)
        return weights @ values  # (B, T, d_out)


# ---------------------------------------------------------------------------
# 2. the same with nn.Linear (better init, optional bias)
# ---------------------------------------------------------------------------
class SelfAttentionV2(nn.Module):
    """Self-attention with ``nn.Linear`` projections (bias off by default).

    ``nn.Linear`` stores its weight as ``(d_out, d_in)`` and computes
    ``x @ weight.T``; its default init is uniform in ``(-1/sqrt(d_in), 1/sqrt(d_in))``.

    Taught on: "Self-attention from scratch".
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.d_in, self.d_out = check_int("d_in", d_in), check_int("d_out", d_out)
        check_bool("qkv_bias", qkv_bias)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: Tensor) -> Tensor:
        """`(batch, seq_len, d_in)` -> `(batch, seq_len, d_out)`."""
        check_tensor("x", x, "batch seq_len d_in", like=self.W_query.weight,
                     d_in=self.d_in)
        queries = self.W_query(x)  # (B, T, d_out)
        keys = self.W_key(x)  # (B, T, d_out)
        values = self.W_value(x)  # (B, T, d_out)
        scores = queries @ keys.transpose(1, 2)  # (B, T, T)
        weights = softmax(scores / math.sqrt(keys.shape[-1]), dim=-1)  # (B, T, T)
        return weights @ values  # (B, T, d_out)


@torch.no_grad()
def copy_v2_into_v1(v1: SelfAttentionV1, v2: SelfAttentionV2) -> SelfAttentionV1:
    """Copy ``v2``'s weights into ``v1`` (transposed), in place; returns ``v1``.

    ``nn.Linear`` computes ``x @ W.T`` with ``W`` of shape ``(d_out, d_in)``;
    V1 computes ``x @ W`` with ``W`` of shape ``(d_in, d_out)``.
    """
    check_type("v1", v1, SelfAttentionV1)
    check_type("v2", v2, SelfAttentionV2)
    if (v1.d_in, v1.d_out) != (v2.d_in, v2.d_out):
        raise ValueError(
            f"v1 is (d_in={v1.d_in}, d_out={v1.d_out}) but v2 is "
            f"(d_in={v2.d_in}, d_out={v2.d_out}); they must match"
        )
    if v2.W_query.bias is not None:
        raise ValueError("v2 must have qkv_bias=False: SelfAttentionV1 has no bias")
    for name in ("W_query", "W_key", "W_value"):
        getattr(v1, name).copy_(getattr(v2, name).weight.T)
    return v1


# ---------------------------------------------------------------------------
# 3. causal attention: mask buffer + dropout on the weights
# ---------------------------------------------------------------------------
class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout on the attention weights.

    The mask is a buffer: it is not trained, yet it moves with ``.to()`` and
    is saved in the ``state_dict`` with the parameters. As in Raschka's chapter 3
    (where it holds 1s) it is True above the diagonal, at the future positions a
    query must not see.

    Taught on: "Self-attention from scratch".
    """

    mask: Tensor

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        self.d_in, self.d_out = check_int("d_in", d_in), check_int("d_out", d_out)
        self.context_length = check_int("context_length", context_length)
        check_dropout("dropout", dropout)
        check_bool("qkv_bias", qkv_bias)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # True above the diagonal: the future positions a query must not see
        self.register_buffer("mask", ~causal_mask(context_length))

    def forward(
        self, x: Tensor, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]:
        """`(batch, seq_len, d_in)` -> `(batch, seq_len, d_out)`.

        With ``return_weights=True`` also returns the `(batch, seq_len, seq_len)`
        weights that were used (after dropout).
        """
        check_tensor("x", x, "batch seq_len d_in", like=self.W_query.weight,
                     d_in=self.d_in, seq_len=(1, self.context_length, "context_length"))
        seq_len = x.shape[1]
        queries = self.W_query(x)  # (B, T, d_out)
        keys = self.W_key(x)  # (B, T, d_out)
        values = self.W_value(x)  # (B, T, d_out)
        scores = queries @ keys.transpose(1, 2)  # (B, T, T)
        # the mask was built for context_length tokens: cut it to T x T
        future = self.mask[:seq_len, :seq_len]  # (T, T) bool, True = future
        scores = scores.masked_fill(future, -math.inf)  # (B, T, T)
        weights = softmax(scores / math.sqrt(keys.shape[-1]), dim=-1)  # (B, T, T)
        weights = self.dropout(weights)  # zero some weights, scale the rest
        context = weights @ values  # (B, T, d_out)
        return (context, weights) if return_weights else context


# ---------------------------------------------------------------------------
# 4. multi-head, way 1: a list of independent heads
# ---------------------------------------------------------------------------
class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent :class:`CausalAttention` heads, concatenated.

    Each head outputs ``d_out`` features, so the result has
    ``num_heads * d_out``. Heads run one after the other.

    Taught on: "Self-attention from scratch".
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        check_int("num_heads", num_heads)
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        )
        self.d_in, self.d_out, self.num_heads = d_in, d_out, num_heads
        self.context_length = context_length

    def forward(
        self, x: Tensor, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]:
        """`(batch, seq_len, d_in)` -> `(batch, seq_len, num_heads * d_out)`.

        With ``return_weights=True`` also returns the weights stacked as
        `(batch, num_heads, seq_len, seq_len)`.
        """
        check_tensor("x", x, "batch seq_len d_in", like=self.heads[0].W_query.weight,
                     d_in=self.d_in, seq_len=(1, self.context_length, "context_length"))
        outputs = [head(x, return_weights=True) for head in self.heads]
        context = torch.cat([c for c, _ in outputs], dim=-1)  # (B, T, H * d_out)
        if not return_weights:
            return context
        return context, torch.stack([w for _, w in outputs], dim=1)  # (B, H, T, T)


# ---------------------------------------------------------------------------
# 5. multi-head, way 2: one projection, split into heads
# ---------------------------------------------------------------------------
class MultiHeadAttention(nn.Module):
    """Causal multi-head attention with batched heads and an output projection.

    One ``(d_in -> d_out)`` projection each for Q, K and V, viewed as
    ``num_heads`` heads of ``d_head = d_out // num_heads`` features. The ``mask``
    buffer is True at future positions, as in :class:`CausalAttention`.

    Taught on: "Self-attention from scratch"; used on "Multi-head attention
    and the Transformer block".
    """

    mask: Tensor

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        self.d_in, self.d_out = check_int("d_in", d_in), check_int("d_out", d_out)
        self.context_length = check_int("context_length", context_length)
        self.num_heads = check_int("num_heads", num_heads)
        check_divisible("d_out", d_out, "num_heads", num_heads)
        check_dropout("dropout", dropout)
        check_bool("qkv_bias", qkv_bias)
        self.d_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # mixes what the heads found
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", ~causal_mask(context_length))  # True = future

    def forward(
        self, x: Tensor, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]:
        """`(batch, seq_len, d_in)` -> `(batch, seq_len, d_out)`.

        With ``return_weights=True`` also returns the weights used (after
        dropout), `(batch, num_heads, seq_len, seq_len)`.
        """
        check_tensor("x", x, "batch seq_len d_in", like=self.W_query.weight,
                     d_in=self.d_in, seq_len=(1, self.context_length, "context_length"))
        b, seq_len, _ = x.shape
        h, hd = self.num_heads, self.d_head
        # project, then split the last dim into heads: d_out -> (H, hd)
        queries = self.W_query(x).view(b, seq_len, h, hd)  # (B, T, H, hd)
        keys = self.W_key(x).view(b, seq_len, h, hd)  # (B, T, H, hd)
        values = self.W_value(x).view(b, seq_len, h, hd)  # (B, T, H, hd)
        # heads next to the batch dim, so each head is one matrix product
        queries = queries.transpose(1, 2)  # (B, H, T, hd)
        keys = keys.transpose(1, 2)  # (B, H, T, hd)
        values = values.transpose(1, 2)  # (B, H, T, hd)
        scores = queries @ keys.transpose(2, 3)  # (B, H, T, T)
        future = self.mask[:seq_len, :seq_len]  # (T, T), True = future; over B, H
        scores = scores.masked_fill(future, -math.inf)  # (B, H, T, T)
        weights = softmax(scores / math.sqrt(hd), dim=-1)  # (B, H, T, T)
        weights = self.dropout(weights)  # the dropped weights are the ones used
        context = (weights @ values).transpose(1, 2)  # (B, T, H, hd)
        # transpose made it non-contiguous; view needs contiguous memory
        context = context.contiguous().view(b, seq_len, self.d_out)  # (B, T, D)
        out = self.out_proj(context)  # (B, T, d_out): mix the heads
        return (out, weights) if return_weights else out


@torch.no_grad()
def mha_step_shapes(
    mha: MultiHeadAttention, x: Tensor
) -> list[tuple[str, tuple[int, ...]]]:
    """``(step, shape)`` for each step of ``mha.forward(x)``, in order."""
    check_type("mha", mha, MultiHeadAttention)
    check_tensor("x", x, "batch seq_len d_in", like=mha.W_query.weight, d_in=mha.d_in,
                 seq_len=(1, mha.context_length, "context_length"))
    b, t, _ = x.shape
    h, hd = mha.num_heads, mha.d_head
    steps: list[tuple[str, Tensor]] = [("x", x)]
    q = mha.W_query(x)
    steps.append(("W_query(x)", q))
    q = q.view(b, t, h, hd)
    steps.append((".view(b, T, H, hd)", q))
    q = q.transpose(1, 2)
    steps.append((".transpose(1, 2)", q))
    k = mha.W_key(x).view(b, t, h, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3)
    steps.append(("queries @ keys.transpose(2, 3)", scores))
    v = mha.W_value(x).view(b, t, h, hd).transpose(1, 2)
    context = softmax(scores, dim=-1) @ v
    steps.append(("weights @ values", context))
    context = context.transpose(1, 2)
    steps.append((".transpose(1, 2)", context))
    context = context.contiguous().view(b, t, mha.d_out)
    steps.append((".contiguous().view(b, T, d_out)", context))
    steps.append(("out_proj(...)", mha.out_proj(context)))
    return [(name, tuple(t.shape)) for name, t in steps]


@torch.no_grad()
def mha_from_wrapper(wrapper: MultiHeadAttentionWrapper) -> MultiHeadAttention:
    """A :class:`MultiHeadAttention` computing the same function as ``wrapper``.

    Head ``i``'s ``(d_out, d_in)`` projection becomes rows
    ``i * d_out : (i + 1) * d_out`` of the big projection, and the output
    projection is set to the identity, so the two modules agree exactly.
    """
    check_type("wrapper", wrapper, MultiHeadAttentionWrapper)
    first = wrapper.heads[0]
    mha = MultiHeadAttention(
        wrapper.d_in,
        wrapper.d_out * wrapper.num_heads,
        wrapper.context_length,
        first.dropout.p,
        wrapper.num_heads,
        qkv_bias=first.W_query.bias is not None,
    )
    for name in ("W_query", "W_key", "W_value"):
        layers = [getattr(head, name) for head in wrapper.heads]
        target = getattr(mha, name)
        target.weight.copy_(torch.cat([lin.weight for lin in layers], dim=0))
        if target.bias is not None:
            target.bias.copy_(torch.cat([lin.bias for lin in layers], dim=0))
    mha.out_proj.weight.copy_(torch.eye(mha.d_out))
    mha.out_proj.bias.zero_()
    return mha.to(first.W_query.weight.device, first.W_query.weight.dtype)
