r"""Rotary position embedding (RoPE), as a rotation of pairs and as complex numbers.

Pair ``k`` of a query or key at position ``m`` (dimensions ``2k, 2k+1``) is rotated by
the angle ``m·θ_k`` with ``θ_k = Θ^{-2k/d_k}``:

.. math::
    \begin{pmatrix} x'_{2k} \\ x'_{2k+1} \end{pmatrix} =
    \begin{pmatrix} \cos m\theta_k & -\sin m\theta_k \\
                    \sin m\theta_k & \cos m\theta_k \end{pmatrix}
    \begin{pmatrix} x_{2k} \\ x_{2k+1} \end{pmatrix}

Rotations compose, so ``⟨R_m q, R_n k⟩ = ⟨q, R_{n-m} k⟩`` depends on ``m − n`` only.

``RotaryPositionalEmbedding(theta, d_k, max_seq_len)`` is CS336 assignment 1's
interface, so it keeps its names: ``d_k`` is a head's width (``d_head`` elsewhere in
the library) and ``max_seq_len`` the longest sequence (``context_length``).

Taught on: "The building blocks of a modern (Llama-style) Transformer".
"""

from __future__ import annotations

import torch
from einops import rearrange
from torch import Tensor, nn

from llmlab.checks import check_finite_float, check_int, check_rope_size, check_tensors

__all__ = ["RotaryPositionalEmbedding", "rope_complex", "rope_frequencies"]


def rope_frequencies(theta: float, d_k: int) -> Tensor:
    """Angular frequencies ``θ_k = theta^(-2k/d_k)``, ``k = 0..d_k/2-1``, float64."""
    check_finite_float("theta", theta, minimum=0.0, open_min=True)
    check_rope_size("d_k", d_k)
    k = torch.arange(d_k // 2, dtype=torch.float64)
    return theta ** (-2 * k / d_k)  # (d_k/2,)


class RotaryPositionalEmbedding(nn.Module):
    """RoPE with precomputed ``cos``/``sin`` tables (buffers, not in the state dict).

    Args:
        theta: The base Θ (10,000 in Llama 1/2).
        d_k: Size of the query/key vectors; must be even.
        max_seq_len: Number of positions the tables cover.
        device: Where to put the tables.

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        theta: float,
        d_k: int,
        max_seq_len: int,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.max_seq_len = check_int("max_seq_len", max_seq_len)
        freqs = rope_frequencies(theta, d_k)  # (d_k/2,), checks theta and d_k
        self.theta, self.d_k = float(theta), d_k
        positions = torch.arange(max_seq_len, dtype=torch.float64)
        angles = torch.outer(positions, freqs)  # (max_seq_len, d_k/2): m·θ_k
        self.register_buffer("cos", angles.cos().float().to(device), persistent=False)
        self.register_buffer("sin", angles.sin().float().to(device), persistent=False)

    def forward(self, x: Tensor, token_positions: Tensor) -> Tensor:
        """Rotate ``x`` ``(..., seq_len, d_k)`` by its positions ``(..., seq_len)``.

        ``token_positions``, integers in ``[0, max_seq_len)``, broadcasts against
        ``x``'s leading dims (e.g. ``(seq_len,)`` for a whole batch). Returns ``x``'s
        shape and dtype.
        """
        positions = (token_positions, "... seq_len", "index:max_seq_len")
        check_tensors(x=(x, "... seq_len d_k", "float"), token_positions=positions,
                      device=self.cos.device,
                      sizes=dict(d_k=self.d_k, max_seq_len=self.max_seq_len))
        cos = self.cos[token_positions]  # (..., seq_len, d_k/2)
        sin = self.sin[token_positions]  # (..., seq_len, d_k/2)
        pairs = rearrange(x, "... (k two) -> ... k two", two=2)
        x1, x2 = pairs.unbind(dim=-1)  # each (..., seq_len, d_k/2)
        rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
        return rearrange(rotated, "... k two -> ... (k two)").to(x.dtype)

    def extra_repr(self) -> str:
        return f"theta={self.theta}, d_k={self.d_k}, max_seq_len={self.max_seq_len}"


def rope_complex(x: Tensor, token_positions: Tensor, theta: float) -> Tensor:
    """Reference RoPE with complex numbers: ``(x_2k + i·x_2k+1) · e^{i·m·θ_k}``.

    Computed in float64; returns ``x``'s shape and dtype. ``x`` is floating point
    ``(..., seq_len, d_k)`` with an even ``d_k``, ``token_positions`` integers
    ``>= 0`` of shape ``(..., seq_len)``.
    """
    check_tensors(x=(x, "... seq_len d_k", "float"),
                  token_positions=(token_positions, "... seq_len", "index:max_seq_len"))
    freqs = rope_frequencies(theta, x.shape[-1]).to(x.device)  # (d_k/2,)
    angles = token_positions.to(torch.float64)[..., None] * freqs  # (..., seq, d_k/2)
    rotor = torch.polar(torch.ones_like(angles), angles)  # e^{i m θ_k}
    z = torch.view_as_complex(
        rearrange(x.to(torch.float64), "... (k two) -> ... k two", two=2).contiguous()
    )  # (..., seq, d_k/2) complex
    out = torch.view_as_real(z * rotor)  # (..., seq, d_k/2, 2)
    return rearrange(out, "... k two -> ... (k two)").to(x.dtype)
