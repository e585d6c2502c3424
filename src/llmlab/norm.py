r"""LayerNorm and RMSNorm from scratch.

.. math::
    \mathrm{LN}(x) = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} \odot \gamma + \beta
    \qquad
    \mathrm{RMS}(x) = \frac{x}{\sqrt{\tfrac{1}{d}\sum_i x_i^2 + \varepsilon}} \odot g

Both compute in float32 and return the input's dtype: squaring and summing in fp16
overflows once activations pass about 256 (256² = 65,536 > 65,504, fp16's maximum).

Inputs must be floating point (an integer tensor is refused). NaN in ``x`` is not
searched for: it propagates to the output of its own row, as in ``nn.LayerNorm``
and ``nn.RMSNorm`` (a scan would cost a device sync on every call, and the NaN in
the output is the signal). A NaN or negative ``eps`` is refused at construction.

Taught on: "The building blocks of a modern (Llama-style) Transformer".
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["LayerNorm", "RMSNorm", "rms_norm"]


def _check_last_dim(x: Tensor, d_model: int) -> None:
    if x.ndim == 0 or x.shape[-1] != d_model:
        raise ValueError(
            f"x must end in d_model ({d_model}), got shape {tuple(x.shape)}"
        )
    _check_float(x)


def _check_float(x: Tensor) -> None:
    # An integer tensor has no meaningful mean or RMS to divide by.
    if not x.dtype.is_floating_point:
        raise ValueError(f"x must be a floating-point tensor, got dtype {x.dtype}")


def _check_eps(eps: float) -> None:
    # NaN fails both comparisons, so a NaN eps is refused too.
    if not (isinstance(eps, (int, float)) and 0.0 <= eps < float("inf")):
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")


def rms_norm(
    x: Tensor, weight: Tensor | None = None, eps: float = 1e-5, upcast: bool = True
) -> Tensor:
    """Functional RMSNorm over the last dimension.

    Args:
        x: ``(..., d_model)``.
        weight: Optional gain ``(d_model,)``.
        eps: Added to the mean square before the square root.
        upcast: Compute in float32 (the safe way). ``False`` computes in ``x.dtype``,
            which the lecture uses to show the fp16 overflow.

    Returns:
        A tensor of the shape and dtype of ``x``.
    """
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension (..., d_model), got 0-d")
    _check_float(x)
    _check_eps(eps)
    if weight is not None and tuple(weight.shape) != (x.shape[-1],):
        raise ValueError(
            f"weight must have shape (d_model,) = ({x.shape[-1]},), "
            f"got {tuple(weight.shape)}"
        )
    in_dtype = x.dtype
    if upcast:
        x = x.float()
    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)
    y = x / rms  # (..., d_model)
    if weight is not None:
        y = y * weight.to(y.dtype)
    return y.to(in_dtype)


class RMSNorm(nn.Module):
    """Root-mean-square norm: no mean subtraction, no shift, one gain ``weight``.

    Args:
        d_model: Size of the last dimension.
        eps: Numerical floor inside the square root.
        device: Where to create ``weight``.
        dtype: ``weight``'s dtype (the computation is float32 regardless).

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        d_model: int,
        eps: float = 1e-5,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if d_model < 1:
            raise ValueError(f"d_model must be positive, got {d_model}")
        _check_eps(eps)
        self.d_model = d_model
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        """``(..., d_model)`` -> same shape and dtype, computed in float32."""
        _check_last_dim(x, self.d_model)
        return rms_norm(x, self.weight, self.eps, upcast=True)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"


class LayerNorm(nn.Module):
    """Layer normalisation: subtract the mean, divide by the std, scale and shift.

    Parameter names follow ``nn.LayerNorm`` (``weight`` = γ, ``bias`` = β), so a
    state dict moves between the two.

    Args:
        d_model: Size of the last dimension.
        eps: Added to the variance.
        device: Where to create the parameters.
        dtype: Their dtype (the computation is float32 regardless).

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        d_model: int,
        eps: float = 1e-5,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if d_model < 1:
            raise ValueError(f"d_model must be positive, got {d_model}")
        _check_eps(eps)
        self.d_model = d_model
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(d_model, device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        """``(..., d_model)`` -> same shape and dtype, computed in float32."""
        _check_last_dim(x, self.d_model)
        in_dtype = x.dtype
        x = x.float()
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = (x - mean).pow(2).mean(dim=-1, keepdim=True)  # (..., 1), biased
        y = (x - mean) / torch.sqrt(var + self.eps)  # (..., d_model)
        y = y * self.weight.float() + self.bias.float()
        return y.to(in_dtype)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
