"""Attention before anything is trained: dot products, normalisation, masks.

The helpers here take plain tensors and have no parameters. They are the
steps the trainable modules in :mod:`llmlab.attention.teaching` repeat.

Taught on: "Self-attention from scratch".
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from llmlab.functional import causal_mask, softmax

__all__ = [
    "SimpleAttention",
    "causal_weights_masked",
    "causal_weights_renormalised",
    "cosine_similarity",
    "dot_scores_loop",
    "dot_scores_matmul",
    "dot_scores_torch_dot",
    "simple_self_attention",
    "softmax_naive",
    "sum_normalise",
    "toy_embeddings",
]


def _check_query_keys(query: Tensor, keys: Tensor) -> None:
    if query.ndim != 1:
        raise ValueError(f"query must be 1-D (d,), got shape {tuple(query.shape)}")
    if keys.ndim != 2 or keys.shape[-1] != query.shape[0]:
        raise ValueError(
            f"keys must be 2-D (num_tokens, {query.shape[0]}), "
            f"got shape {tuple(keys.shape)}"
        )


def toy_embeddings(words: list[str], dim: int = 3, seed: int = 0) -> Tensor:
    """Made-up embeddings: one seeded random row in ``[0, 1)`` per word.

    They carry no meaning; they only give the attention steps numbers to work
    on. The same word list, ``dim`` and ``seed`` always give the same tensor.

    Args:
        words: The tokens of a sentence.
        dim: Embedding size ``d_in``.
        seed: Seed of the generator.

    Returns:
        ``(len(words), dim)``.
    """
    if not words:
        raise ValueError("words must hold at least one token, got an empty list")
    if dim < 1:
        raise ValueError(f"dim must be at least 1, got {dim}")
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(len(words), dim, generator=generator)


def dot_scores_loop(query: Tensor, keys: Tensor) -> Tensor:
    """Scores of one query against each key, multiply-and-add by hand.

    Args:
        query: ``(d,)``.
        keys: ``(num_tokens, d)``.

    Returns:
        ``(num_tokens,)``: ``scores[j] = sum_i query[i] * keys[j, i]``.
    """
    _check_query_keys(query, keys)
    scores = torch.empty(keys.shape[0], dtype=query.dtype)
    for j, key in enumerate(keys):
        total = 0.0
        for i in range(query.shape[0]):
            total += float(query[i]) * float(key[i])
        scores[j] = total
    return scores


def dot_scores_torch_dot(query: Tensor, keys: Tensor) -> Tensor:
    """The same scores, one ``torch.dot`` per key. Shapes as :func:`dot_scores_loop`."""
    _check_query_keys(query, keys)
    return torch.stack([torch.dot(query, key) for key in keys])


def dot_scores_matmul(query: Tensor, keys: Tensor) -> Tensor:
    """The same scores as one matrix-vector product ``keys @ query``."""
    _check_query_keys(query, keys)
    return keys @ query  # (num_tokens,)


def cosine_similarity(query: Tensor, keys: Tensor) -> Tensor:
    r"""Cosine of the angle between ``query`` and each key.

    .. math:: \cos\theta_j = \frac{q \cdot k_j}{\lVert q\rVert\,\lVert k_j\rVert}

    Unlike the dot product it ignores the vectors' lengths.
    """
    _check_query_keys(query, keys)
    return (keys @ query) / (keys.norm(dim=-1) * query.norm())


def sum_normalise(scores: Tensor, dim: int = -1) -> Tensor:
    """Divide by the sum: weights sum to 1 but may be negative (or blow up)."""
    return scores / scores.sum(dim=dim, keepdim=True)


def softmax_naive(scores: Tensor, dim: int = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` without the max shift: overflows on large scores.

    Kept to show why :func:`llmlab.functional.softmax` subtracts the maximum.
    """
    exp = scores.exp()
    return exp / exp.sum(dim=dim, keepdim=True)


class SimpleAttention(NamedTuple):
    """What :func:`simple_self_attention` returns."""

    scores: Tensor  # (..., T, T)
    weights: Tensor  # (..., T, T), rows sum to 1
    context: Tensor  # (..., T, d)


def simple_self_attention(x: Tensor) -> SimpleAttention:
    """Self-attention with no trainable weights: the inputs are Q, K and V.

    Args:
        x: ``(num_tokens, d)`` or ``(batch, num_tokens, d)``.

    Returns:
        ``(scores, weights, context)``: scores and weights ``(..., T, T)``
        (weights rows sum to 1), context ``(..., T, d)``.
    """
    if x.ndim not in (2, 3):
        raise ValueError(
            "x must be (num_tokens, d) or (batch, num_tokens, d), "
            f"got shape {tuple(x.shape)}"
        )
    scores = x @ x.transpose(-2, -1)  # (..., T, T): every token against every token
    weights = softmax(scores, dim=-1)  # (..., T, T), rows sum to 1
    context = weights @ x  # (..., T, d): weighted sum of the inputs
    return SimpleAttention(scores, weights, context)


def causal_weights_renormalised(scores: Tensor, scale: float | None = None) -> Tensor:
    """Causal weights, way 1: softmax, zero the future, divide by the row sums.

    Args:
        scores: ``(..., T, T)`` raw scores.
        scale: Divide the scores by this before the softmax (default ``1``).

    Returns:
        ``(..., T, T)`` weights, zero above the diagonal, rows summing to 1.
    """
    _check_square(scores)
    scaled = scores / (scale or 1.0)
    weights = softmax(scaled, dim=-1)  # (..., T, T), the future included
    allowed = causal_mask(scores.shape[-1], device=scores.device)  # (T, T) bool
    kept = weights * allowed  # the future set to 0; rows now sum to < 1
    return kept / kept.sum(dim=-1, keepdim=True)  # renormalise


def causal_weights_masked(scores: Tensor, scale: float | None = None) -> Tensor:
    """Causal weights, way 2: set future scores to ``-inf``, then softmax.

    Same arguments and result as :func:`causal_weights_renormalised`.
    """
    _check_square(scores)
    allowed = causal_mask(scores.shape[-1], device=scores.device)  # (T, T) bool
    masked = scores.masked_fill(~allowed, -math.inf)  # exp(-inf) = 0
    return softmax(masked / (scale or 1.0), dim=-1)


def _check_square(scores: Tensor) -> None:
    if scores.ndim < 2 or scores.shape[-1] != scores.shape[-2]:
        raise ValueError(
            "scores must be (..., T, T) with T queries and T keys, "
            f"got {tuple(scores.shape)}"
        )
