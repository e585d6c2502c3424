r"""Rotary position embedding (RoPE), as a rotation of pairs and as complex numbers.

Pair ``k`` of a query or key at position ``m`` (dimensions ``2k, 2k+1``) is rotated by
the angle ``m·θ_k`` with ``θ_k = Θ^{-2k/d_k}``:

.. math::
    \begin{pmatrix} x'_{2k} \\ x'_{2k+1} \end{pmatrix} =
    \begin{pmatrix} \cos m\theta_k & -\sin m\theta_k \\
                    \sin m\theta_k & \cos m\theta_k \end{pmatrix}
    \begin{pmatrix} x_{2k} \\ x_{2k+1} \end{pmatrix}

Rotations compose, so ``⟨R_m q, R_n k⟩ = ⟨q, R_{n-m} k⟩`` depends on ``m − n`` only.

Taught on: "The building blocks of a modern (Llama-style) Transformer".
"""

from __future__ import annotations

import torch
from einops import rearrange
from torch import Tensor, nn

__all__ = ["RotaryPositionalEmbedding", "rope_complex", "rope_frequencies"]


def _check_d_k(d_k: int) -> None:
    if d_k < 2 or d_k % 2:
        raise ValueError(f"d_k must be even and positive for RoPE's pairs, got {d_k}")


def rope_frequencies(theta: float, d_k: int) -> Tensor:
    """Angular frequencies ``θ_k = theta^(-2k/d_k)``, ``k = 0..d_k/2-1``, float64."""
    _check_d_k(d_k)
    if not 0 < theta < float("inf"):  # NaN fails the comparison too
        raise ValueError(f"theta must be a finite positive number, got {theta}")
    k = torch.arange(d_k // 2, dtype=torch.float64)
    return theta ** (-2 * k / d_k)  # (d_k/2,)


def _check_positions(token_positions: Tensor, max_seq_len: int | None) -> None:
    if token_positions.dtype.is_floating_point or token_positions.dtype == torch.bool:
        raise ValueError(
            f"token_positions must be integers, got dtype {token_positions.dtype}"
        )
    if token_positions.numel() and token_positions.device.type != "meta":
        low, high = int(token_positions.min()), int(token_positions.max())
        if low < 0 or (max_seq_len is not None and high >= max_seq_len):
            raise ValueError(
                f"token_positions must lie in [0, {max_seq_len}) (max_seq_len), "
                f"got values from {low} to {high}"
            )


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
        _check_d_k(d_k)
        if max_seq_len < 1:
            raise ValueError(f"max_seq_len must be positive, got {max_seq_len}")
        self.theta, self.d_k, self.max_seq_len = theta, d_k, max_seq_len
        freqs = rope_frequencies(theta, d_k)  # (d_k/2,)
        positions = torch.arange(max_seq_len, dtype=torch.float64)
        angles = torch.outer(positions, freqs)  # (max_seq_len, d_k/2): m·θ_k
        self.register_buffer("cos", angles.cos().float().to(device), persistent=False)
        self.register_buffer("sin", angles.sin().float().to(device), persistent=False)

    def forward(self, x: Tensor, token_positions: Tensor) -> Tensor:
        """Rotate ``x`` ``(..., seq_len, d_k)`` by its positions ``(..., seq_len)``.

        ``token_positions`` broadcasts against ``x``'s leading dims (e.g. ``(seq_len,)``
        for a whole batch). Returns ``x``'s shape and dtype.
        """
        if x.ndim < 2 or x.shape[-1] != self.d_k:
            raise ValueError(
                f"x must be (..., seq_len, d_k={self.d_k}), got shape {tuple(x.shape)}"
            )
        if token_positions.ndim == 0 or token_positions.shape[-1] != x.shape[-2]:
            raise ValueError(
                f"token_positions must end in seq_len ({x.shape[-2]}), "
                f"got shape {tuple(token_positions.shape)}"
            )
        _check_positions(token_positions, self.max_seq_len)
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

    Computed in float64; returns ``x``'s shape and dtype. ``x`` is ``(..., seq, d_k)``,
    ``token_positions`` ``(..., seq)``.
    """
    if x.ndim < 2:
        raise ValueError(f"x must be (..., seq_len, d_k), got shape {tuple(x.shape)}")
    d_k = x.shape[-1]
    freqs = rope_frequencies(theta, d_k).to(x.device)  # (d_k/2,)
    if token_positions.ndim == 0 or token_positions.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"token_positions must end in seq_len ({x.shape[-2]}), "
            f"got shape {tuple(token_positions.shape)}"
        )
    _check_positions(token_positions, None)
    angles = token_positions.to(torch.float64)[..., None] * freqs  # (..., seq, d_k/2)
    rotor = torch.polar(torch.ones_like(angles), angles)  # e^{i m θ_k}
    z = torch.view_as_complex(
        rearrange(x.to(torch.float64), "... (k two) -> ... k two", two=2).contiguous()
    )  # (..., seq, d_k/2) complex
    out = torch.view_as_real(z * rotor)  # (..., seq, d_k/2, 2)
    return rearrange(out, "... k two -> ... (k two)").to(x.dtype)
