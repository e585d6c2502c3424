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

``RMSNorm(d_model, eps, device, dtype)`` is CS336 assignment 1's interface.

Taught on: "The building blocks of a modern (Llama-style) Transformer".
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from llmlab.checks import check_bool, check_finite_float, check_int, check_tensors

__all__ = ["LayerNorm", "RMSNorm", "rms_norm"]


def rms_norm(
    x: Tensor, weight: Tensor | None = None, eps: float = 1e-5, upcast: bool = True
) -> Tensor:
    """Functional RMSNorm over the last dimension.

    Args:
        x: Floating point ``(..., d_model)``.
        weight: Optional gain ``(d_model,)``, on ``x``'s device.
        eps: Added to the mean square before the square root.
        upcast: Compute in float32 (the safe way). ``False`` computes in ``x.dtype``,
            which the lecture uses to show the fp16 overflow.

    Returns:
        A tensor of the shape and dtype of ``x``.
    """
    check_tensors(x=(x, "... d_model", "float"), weight=(weight, "d_model", "float?"),
                  same_dtype=False)  # both are computed in float32 (with upcast)
    check_finite_float("eps", eps, minimum=0.0)
    check_bool("upcast", upcast)
    return _rms_norm(x, weight, eps, upcast)


def _rms_norm(x: Tensor, weight: Tensor | None, eps: float, upcast: bool) -> Tensor:
    """:func:`rms_norm` on checked arguments."""
    in_dtype = x.dtype
    if upcast:
        x = x.float()
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1): 1/RMS
    y = x * inv_rms  # (..., d_model): one rsqrt per row, then a multiply per element
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
        self.d_model = check_int("d_model", d_model)
        self.eps = check_finite_float("eps", eps, minimum=0.0)
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        """``(..., d_model)`` -> same shape and dtype, computed in float32."""
        check_tensors(x=(x, "... d_model", "float"), device=self.weight.device,
                      sizes=dict(d_model=self.d_model))
        return _rms_norm(x, self.weight, self.eps, upcast=True)

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
        self.d_model = check_int("d_model", d_model)
        self.eps = check_finite_float("eps", eps, minimum=0.0)
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(d_model, device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        """``(..., d_model)`` -> same shape and dtype, computed in float32."""
        check_tensors(x=(x, "... d_model", "float"), device=self.weight.device,
                      sizes=dict(d_model=self.d_model))
        in_dtype = x.dtype
        x = x.float()
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = (x - mean).pow(2).mean(dim=-1, keepdim=True)  # (..., 1), biased
        y = (x - mean) / torch.sqrt(var + self.eps)  # (..., d_model)
        y = y * self.weight.float() + self.bias.float()
        return y.to(in_dtype)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
