r"""Position-wise feed-forward nets: activations, the ReLU FFN and SwiGLU.

.. math::
    \mathrm{FFN}_\text{ReLU}(x) = W_2\,\mathrm{ReLU}(W_1 x) \qquad
    \mathrm{SwiGLU}(x) = W_2\big(\mathrm{SiLU}(W_1 x) \odot W_3 x\big)

``SwiGLU(d_model, d_ff)`` with ``w1, w2, w3`` is CS336 assignment 1's interface.

Taught on: "The building blocks of a modern (Llama-style) Transformer".
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from llmlab.checks import check_int, check_tensor
from llmlab.layers import Linear

__all__ = ["ReLUFFN", "SwiGLU", "gelu", "relu", "silu", "swiglu_hidden_dim"]


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)``, elementwise, of a floating-point tensor."""
    check_tensor("x", x, "...", "float")
    return torch.clamp(x, min=0)


def gelu(x: Tensor) -> Tensor:
    """Exact GELU, ``x · Φ(x)``, Φ the standard normal CDF (``F.gelu``'s default)."""
    check_tensor("x", x, "...", "float")
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def silu(x: Tensor) -> Tensor:
    """SiLU (Swish), ``x · sigmoid(x)``."""
    check_tensor("x", x, "...", "float")
    return x * torch.sigmoid(x)


def swiglu_hidden_dim(d_model: int, multiple_of: int = 64) -> int:
    """SwiGLU's ``d_ff``: ``8/3 · d_model`` rounded up to a multiple of ``multiple_of``.

    A ReLU FFN with ``d_ff = 4d`` has ``2 · d · 4d = 8d²`` weights; SwiGLU has three
    matrices, ``3 · d · d_ff``, so ``d_ff = 8d/3`` keeps the count equal. Rounding up
    keeps matrix sizes friendly to hardware tiles.
    """
    check_int("d_model", d_model)
    check_int("multiple_of", multiple_of)
    raw = 8 * d_model // 3
    return multiple_of * math.ceil(raw / multiple_of)


class ReLUFFN(nn.Module):
    """The original Transformer's FFN, ``W2 ReLU(W1 x)``, no biases.

    Args:
        d_model: Input and output size.
        d_ff: Hidden size (default ``4 · d_model``).
        device: Where to create the weights.
        dtype: Their dtype.

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.d_model = check_int("d_model", d_model)
        d_ff = 4 * d_model if d_ff is None else check_int("d_ff", d_ff)
        self.w1 = Linear(d_model, d_ff, device=device, dtype=dtype)
        self.w2 = Linear(d_ff, d_model, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``(..., d_model)`` -> ``(..., d_model)``."""
        check_tensor("x", x, "... d_model", like=self.w1.weight, d_model=self.d_model)
        return self.w2(relu(self.w1(x)))  # (..., d_ff) -> (..., d_model)


class SwiGLU(nn.Module):
    """Gated FFN of Llama: ``W2 (SiLU(W1 x) ⊙ W3 x)``, no biases.

    Args:
        d_model: Input and output size.
        d_ff: Hidden size (default :func:`swiglu_hidden_dim`).
        device: Where to create the weights.
        dtype: Their dtype.

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.d_model = check_int("d_model", d_model)
        d_ff = swiglu_hidden_dim(d_model) if d_ff is None else check_int("d_ff", d_ff)
        self.w1 = Linear(d_model, d_ff, device=device, dtype=dtype)
        self.w2 = Linear(d_ff, d_model, device=device, dtype=dtype)
        self.w3 = Linear(d_model, d_ff, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``(..., d_model)`` -> ``(..., d_model)``."""
        check_tensor("x", x, "... d_model", like=self.w1.weight, d_model=self.d_model)
        gate = silu(self.w1(x))  # (..., d_ff)
        return self.w2(gate * self.w3(x))  # (..., d_ff) -> (..., d_model)
