"""Stateless building blocks shared by every attention variant.

``softmax`` and ``scaled_dot_product_attention`` follow the CS336 assignment 1
interface; ``causal_mask`` is the one mask every causal variant uses.

Taught on: "Self-attention from scratch" (softmax, masks) and
"Building blocks of a Llama-style Transformer" (attention with a boolean mask).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["causal_mask", "scaled_dot_product_attention", "softmax"]


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    r"""Numerically stable softmax along ``dim``.

    .. math:: \mathrm{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},\quad m = \max_j x_j

    Subtracting the maximum changes nothing mathematically but keeps every
    exponent at most 0, so ``exp`` cannot overflow. A row that is all ``-inf``
    (every position masked) gives ``nan``, as ``torch.softmax`` does.

    Args:
        x: Any shape.
        dim: The dimension that sums to 1.

    Returns:
        A tensor of the shape and dtype of ``x``.
    """
    if x.ndim == 0:
        raise ValueError("softmax needs at least one dimension, got a 0-d tensor")
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dim={dim} is out of range for a tensor with {x.ndim} dims")
    shifted = x - x.amax(dim=dim, keepdim=True)
    exp = shifted.exp()
    return exp / exp.sum(dim=dim, keepdim=True)


def causal_mask(n_tokens: int, device: torch.device | str | None = None) -> Tensor:
    """Boolean ``(n_tokens, n_tokens)`` mask, True where a query may attend.

    Row ``i`` is True for keys ``0..i``: no position sees the future.
    """
    if not isinstance(n_tokens, int) or isinstance(n_tokens, bool) or n_tokens < 1:
        raise ValueError(f"n_tokens must be a positive int, got {n_tokens!r}")
    return torch.ones(n_tokens, n_tokens, dtype=torch.bool, device=device).tril()


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
        ValueError: On mismatched feature or key dimensions, an empty sequence,
            non-floating Q/K/V or a non-boolean mask.
    """
    if Q.ndim < 2 or K.ndim < 2 or V.ndim < 2:
        raise ValueError(
            f"Q, K, V need at least 2 dims (..., seq, d); got {Q.ndim}, {K.ndim}, {V.ndim}"
        )
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"{name} must be floating point, got dtype {t.dtype}")
    if Q.shape[-2] == 0 or K.shape[-2] == 0:
        raise ValueError(
            "Q and K need at least one position (n_queries >= 1, n_keys >= 1); "
            f"got {Q.shape[-2]} queries and {K.shape[-2]} keys"
        )
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must share d_k; got {Q.shape[-1]} and {K.shape[-1]}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"K and V must have the same number of keys; got {K.shape[-2]} and {V.shape[-2]}"
        )
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # (..., n_q, n_k)
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be a boolean tensor (True = may attend), got {mask.dtype}")
        # torch.broadcast_shapes would say the same, but its first call imports
        # sympy (about 1.4 s of CPU in every build process); broadcasting two
        # tensors is checked in C++ and only makes views
        try:
            torch.broadcast_tensors(mask, scores)
        except RuntimeError:
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' "
                f"shape {tuple(scores.shape)} (..., n_queries, n_keys)"
            ) from None
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)  # (..., n_q, n_k), rows sum to 1
    return weights @ V  # (..., n_q, d_v)
