"""Bias-free ``Linear`` and ``Embedding`` with the CS336 assignment 1 initialisation.

Modern LLMs (Llama, PaLM, Qwen, ...) drop the bias of every projection: it saves a
little memory traffic, and several teams report steadier training without it.

The interface is CS336 assignment 1's, so its names stay: ``Linear(in_features,
out_features)`` with ``weight`` ``(out_features, in_features)``, ``Embedding(
num_embeddings, embedding_dim)``; state dicts load from code written against it.

Taught on: "The building blocks of a modern (Llama-style) Transformer".
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from llmlab.checks import check_finite_float, check_int, check_tensor

__all__ = ["Embedding", "Linear", "trunc_normal_std"]


def trunc_normal_std(std: float, cut: float = 3.0) -> float:
    r"""Standard deviation of ``N(0, std²)`` truncated to ``[-cut·std, cut·std]``.

    .. math::
        \sigma_\text{trunc} = \sigma \sqrt{1 - \frac{2c\,\varphi(c)}{2\Phi(c) - 1}}

    Truncation removes the tails, so the samples spread a little less than ``std``.

    Args:
        std: The untruncated standard deviation, ``> 0``.
        cut: Where to truncate, in units of ``std``, ``> 0``.
    """
    check_finite_float("std", std, minimum=0.0, open_min=True)
    check_finite_float("cut", cut, minimum=0.0, open_min=True)
    phi = math.exp(-0.5 * cut * cut) / math.sqrt(2 * math.pi)  # density at the cut
    mass = math.erf(cut / math.sqrt(2))  # P(|z| < cut) = 2Φ(c) − 1
    return std * math.sqrt(1 - 2 * cut * phi / mass)


class Linear(nn.Module):
    """``y = x Wᵀ``, no bias; ``weight`` is ``(out_features, in_features)``.

    Initialised from a normal with std ``√(2 / (in + out))``, truncated at ±3 std.

    Args:
        in_features: Size of the last dimension of the input (``d_in``).
        out_features: Size of the last dimension of the output (``d_out``).
        device: Where to create the weight (``"meta"`` builds no storage).
        dtype: The weight's dtype.

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_features = check_int("in_features", in_features)
        self.out_features = check_int("out_features", out_features)
        std = math.sqrt(2.0 / (in_features + out_features))
        weight = torch.empty(out_features, in_features, device=device, dtype=dtype)
        nn.init.trunc_normal_(weight, mean=0.0, std=std, a=-3 * std, b=3 * std)
        self.weight = nn.Parameter(weight)

    def forward(self, x: Tensor) -> Tensor:
        """``(..., in_features)`` -> ``(..., out_features)``."""
        check_tensor("x", x, "... in_features", like=self.weight,
                     in_features=self.in_features)
        # matmul folds the leading dims into one matrix product; the einsum
        # "... i, o i -> ... o" runs as a batched one, slower forward and backward
        return x @ self.weight.T  # (..., d_in) @ (d_in, d_out)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


class Embedding(nn.Module):
    """A lookup table: token id -> a row of ``weight`` ``(num_embeddings, d)``.

    Initialised from a normal with std 1, truncated at ±3.

    Args:
        num_embeddings: Vocabulary size.
        embedding_dim: Size of each vector (``d_model``).
        device: Where to create the weight.
        dtype: The weight's dtype.

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.num_embeddings = check_int("num_embeddings", num_embeddings)
        self.embedding_dim = check_int("embedding_dim", embedding_dim)
        weight = torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype)
        nn.init.trunc_normal_(weight, mean=0.0, std=1.0, a=-3.0, b=3.0)
        self.weight = nn.Parameter(weight)

    def forward(self, token_ids: Tensor) -> Tensor:
        """Integer ``(...)`` in ``[0, num_embeddings)`` -> ``(..., embedding_dim)``."""
        check_tensor("token_ids", token_ids, "...", "index:num_embeddings",
                     device=self.weight.device, num_embeddings=self.num_embeddings)
        return self.weight[token_ids]  # (..., embedding_dim)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"
