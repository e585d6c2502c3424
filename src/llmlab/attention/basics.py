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

from llmlab.checks import (
    check_finite_float,
    check_int,
    check_reduction,
    check_strs,
    check_tensor,
    check_tensors,
)
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


# a local composite (query against keys), built from llmlab.checks
def _check_query_keys(query: Tensor, keys: Tensor) -> None:
    check_tensors(query=(query, "d", "float"), keys=(keys, "seq_len d", "float"))


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
    check_strs("words", words)
    if not words:
        raise ValueError("words must hold at least one token, got an empty list")
    check_int("dim", dim)
    check_int("seed", seed, minimum=0)
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(len(words), dim, generator=generator)


def dot_scores_loop(query: Tensor, keys: Tensor) -> Tensor:
    """Scores of one query against each key, multiply-and-add by hand.

    Args:
        query: Floating point ``(d,)``.
        keys: ``(seq_len, d)``, the dtype of ``query``.

    Returns:
        ``(seq_len,)``: ``scores[j] = sum_i query[i] * keys[j, i]``.
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
    return keys @ query  # (seq_len,)


def cosine_similarity(query: Tensor, keys: Tensor) -> Tensor:
    r"""Cosine of the angle between ``query`` and each key.

    .. math:: \cos\theta_j = \frac{q \cdot k_j}{\lVert q\rVert\,\lVert k_j\rVert}

    Unlike the dot product it ignores the vectors' lengths.
    """
    _check_query_keys(query, keys)
    return (keys @ query) / (keys.norm(dim=-1) * query.norm())


def sum_normalise(scores: Tensor, dim: int = -1) -> Tensor:
    """Divide by the sum: weights sum to 1 but may be negative (or blow up)."""
    dim = check_reduction("scores", scores, dim)
    return scores / scores.sum(dim=dim, keepdim=True)


def softmax_naive(scores: Tensor, dim: int = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` without the max shift: overflows on large scores.

    Kept to show why :func:`llmlab.functional.softmax` subtracts the maximum.
    """
    dim = check_reduction("scores", scores, dim)
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
        x: Floating point ``(seq_len, d)`` or ``(batch, seq_len, d)``.

    Returns:
        ``(scores, weights, context)``: scores and weights ``(..., T, T)``
        (weights rows sum to 1), context ``(..., T, d)``.
    """
    check_tensor("x", x, ("seq_len d", "batch seq_len d"), "float")
    scores = x @ x.transpose(-2, -1)  # (..., T, T): every token against every token
    weights = softmax(scores, dim=-1)  # (..., T, T), rows sum to 1
    context = weights @ x  # (..., T, d): weighted sum of the inputs
    return SimpleAttention(scores, weights, context)


def causal_weights_renormalised(scores: Tensor, scale: float | None = None) -> Tensor:
    """Causal weights, way 1: softmax, zero the future, divide by the row sums.

    Args:
        scores: Floating point ``(..., T, T)`` raw scores.
        scale: Divide the scores by this (``> 0``) before the softmax; ``None``
            divides by nothing.

    Returns:
        ``(..., T, T)`` weights, zero above the diagonal, rows summing to 1.
    """
    _check_causal(scores, scale)
    scaled = scores if scale is None else scores / scale
    weights = softmax(scaled, dim=-1)  # (..., T, T), the future included
    allowed = causal_mask(scores.shape[-1], device=scores.device)  # (T, T) bool
    kept = weights * allowed  # the future set to 0; rows now sum to < 1
    return kept / kept.sum(dim=-1, keepdim=True)  # renormalise


def causal_weights_masked(scores: Tensor, scale: float | None = None) -> Tensor:
    """Causal weights, way 2: set future scores to ``-inf``, then softmax.

    Same arguments and result as :func:`causal_weights_renormalised`.
    """
    _check_causal(scores, scale)
    allowed = causal_mask(scores.shape[-1], device=scores.device)  # (T, T) bool
    masked = scores.masked_fill(~allowed, -math.inf)  # exp(-inf) = 0
    return softmax(masked if scale is None else masked / scale, dim=-1)


# a local composite (scores and scale), built from llmlab.checks
def _check_causal(scores: Tensor, scale: float | None) -> None:
    check_tensor("scores", scores, "... seq_len seq_len", "float")
    if scale is not None:
        check_finite_float("scale", scale, minimum=0.0, open_min=True)
