"""Stateless building blocks shared by every attention variant.

``softmax`` and ``scaled_dot_product_attention`` follow the CS336 assignment 1
interface (so they keep its names, ``Q, K, V`` and ``d_k``); ``causal_mask`` is the
one mask every causal variant uses. Masks are boolean with True = "may attend", as
in ``F.scaled_dot_product_attention``.

Taught on: "Self-attention from scratch" (softmax, masks) and
"Building blocks of a Llama-style Transformer" (attention with a boolean mask).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from llmlab.checks import check_int, check_reduction, check_tensors

__all__ = ["causal_mask", "scaled_dot_product_attention", "softmax"]


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    r"""Numerically stable softmax along ``dim``.

    .. math:: \mathrm{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},\quad m = \max_j x_j

    Subtracting the maximum changes nothing mathematically but keeps every
    exponent at most 0, so ``exp`` cannot overflow. A row that is all ``-inf``
    (every position masked) gives ``nan``, as ``torch.softmax`` does.

    Args:
        x: Floating point, any shape with at least one element along ``dim``.
        dim: The dimension that sums to 1.

    Returns:
        A tensor of the shape and dtype of ``x``.
    """
    dim = check_reduction("x", x, dim)
    # the shift changes no output, so no gradient needs to flow through the maximum
    shifted = x - x.amax(dim=dim, keepdim=True).detach()
    exp = shifted.exp()
    return exp * exp.sum(dim=dim, keepdim=True).reciprocal()  # 1/sum once per row


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> Tensor:
    """Boolean ``(seq_len, seq_len)`` mask, True where a query may attend.

    Row ``i`` is True for keys ``0..i``: no position sees the future. This is the
    library's one convention (that of ``F.scaled_dot_product_attention``'s
    boolean ``attn_mask``), and every causal module builds its mask here.
    """
    check_int("seq_len", seq_len)
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def scaled_dot_product_attention(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None
) -> Tensor:
    r"""Attention with any leading batch dims.

    .. math:: \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V

    Args:
        Q: ``(..., n_queries, d_k)``.
        K: ``(..., n_keys, d_k)``.
        V: ``(..., n_keys, d_v)``.
        mask: Optional boolean ``(..., n_queries, n_keys)`` (broadcastable);
            True means "may attend".

    Returns:
        ``(..., n_queries, d_v)``.

    Raises:
        TypeError: A non-tensor argument.
        ValueError: On mismatched feature or key dimensions, leading dims that do
            not broadcast, an empty sequence, non-floating or mixed-dtype Q/K/V,
            a non-boolean mask or one that does not broadcast, tensors on
            different devices.
    """
    check_tensors(Q=(Q, "... n_queries d_k", "float"), K=(K, "... n_keys d_k", "float"),
                  V=(V, "... n_keys d_v", "float"),
                  mask=(mask, "... n_queries n_keys", "bool?"), broadcast="mask")
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # (..., n_q, n_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)  # (..., n_q, n_k), rows sum to 1
    return weights @ V  # (..., n_q, d_v)
