r"""Weight quantization: store a linear layer's weight as small integers and scales.

Symmetric absmax quantization at :math:`b` bits maps a group of weights :math:`w`
(a row of ``W``, or ``group_size`` consecutive columns of a row) to integer codes

.. math::
    s = \frac{\max |w|}{q_{max}}, \qquad q = \mathrm{round}(w / s) \in
    [-q_{max}, q_{max}], \qquad q_{max} = 2^{b-1} - 1,

and back to :math:`\hat w = s\, q`. Rounding moves each weight by at most half a
step, :math:`|w - \hat w| \le s / 2`; smaller groups have smaller maxima, hence
smaller steps, at the cost of more scales. A group of zeros gets the scale 1 (its
codes are 0), so that nothing is divided by zero.

:class:`QuantizedLinear` keeps the codes (``int8``, for 4 bits as for 8: the
4-bit codes would be packed two to a byte in a real kernel; :attr:`nbytes` counts
them at their ``bits``) and dequantizes the weight on the fly in ``forward``: it
saves memory, not time. :func:`quantize_weights` swaps, in place, every linear
layer of a model for one.

Taught on: "Faster inference".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from llmlab.checks import (
    check_choice,
    check_divisible,
    check_int,
    check_module,
    check_tensor,
    check_tensors,
    check_type,
)
from llmlab._surgery import LINEAR, named_children, shared

__all__ = [
    "QuantizationReport",
    "QuantizedLinear",
    "dequantize",
    "quantize_tensor",
    "quantize_weights",
]

BITS = (4, 8)  # the widths of the codes


def _qmax(bits: int) -> int:
    """The largest code, ``2^(bits-1) - 1`` (127 at 8 bits, 7 at 4 bits)."""
    return 2 ** (bits - 1) - 1


@torch.no_grad()
def quantize_tensor(
    weight: Tensor, bits: int, group_size: int | None = None
) -> tuple[Tensor, Tensor]:
    """Quantize a weight ``(out_features, in_features)``, symmetric absmax.

    Args:
        weight: A floating-point 2-D weight ``W``, ``(out, in)`` as in ``Linear``.
        bits: The codes' width, 4 or 8.
        group_size: ``None``: one scale per output row; else one per
            ``group_size`` consecutive input columns (it must divide ``in``).

    Returns:
        ``(codes, scales)``: ``int8`` codes ``(out, in)`` in ``[-(2^(b-1)-1),
        2^(b-1)-1]``, and scales of ``weight``'s dtype, ``(out, 1)`` or ``(out,
        in / group_size)``. :func:`dequantize` turns them back.

    Taught on: "Faster inference".
    """
    check_tensor("weight", weight, "out_features in_features", "float")
    bits = _check_bits(bits)
    group = _check_group_size(group_size, weight.shape[1], "weight")
    out_features, in_features = weight.shape
    groups = weight.reshape(out_features, in_features // group, group)  # (out, G, g)
    absmax = groups.abs().amax(dim=-1)  # (out, G)
    scales = torch.where(absmax > 0, absmax / _qmax(bits), torch.ones_like(absmax))
    codes = torch.round(groups / scales[..., None]).clamp(-_qmax(bits), _qmax(bits))
    return codes.to(torch.int8).reshape(out_features, in_features), scales


def dequantize(codes: Tensor, scales: Tensor, group_size: int | None = None) -> Tensor:
    """``codes · scales``, each scale over its group: the weight :func:`quantize_tensor`
    stored, to rounding (at most half a step, ``scale / 2``, from the original).

    Args:
        codes: Integer codes ``(out, in)``.
        scales: Floating-point scales ``(out, 1)`` for ``group_size=None``, else
            ``(out, in / group_size)``.
        group_size: As given to :func:`quantize_tensor`.

    Returns:
        The weight ``(out, in)``, of ``scales``' dtype.

    Taught on: "Faster inference".
    """
    check_tensor("codes", codes, "out_features in_features", "int")
    group = _check_group_size(group_size, codes.shape[1], "codes")
    out_features, in_features = codes.shape
    check_tensors(codes=(codes, "out_features in_features", "int"),
                  scales=(scales, "out_features groups", "float"),
                  sizes=dict(groups=in_features // group))
    groups = codes.reshape(out_features, in_features // group, group)  # (out, G, g)
    return (groups.to(scales.dtype) * scales[..., None]).reshape(out_features, in_features)


class QuantizedLinear(nn.Module):
    """A linear layer whose weight is stored as ``bits``-bit codes and scales.

    ``forward(x) = x Ŵᵀ (+ bias)`` with ``Ŵ = dequantize(codes, scales)``, computed
    anew at every call. The layer has no parameters: it is for inference.

    Args:
        base: A ``llmlab.layers.Linear`` or ``torch.nn.Linear`` (with or without
            bias; the bias is kept as it is, in floating point).
        bits: The codes' width, 4 or 8.
        group_size: ``None`` (a scale per output row) or a divisor of
            ``in_features`` (a scale per group of that many input columns).

    Attributes:
        codes: ``int8`` buffer ``(out_features, in_features)``.
        scales: Buffer ``(out_features, 1)`` or ``(out_features, in_features /
            group_size)``, of the base weight's dtype.
        bias: The base's bias (a buffer), or ``None``.
        bits, group_size, in_features, out_features: As given / of ``base``.

    Taught on: "Faster inference".
    """

    def __init__(self, base: nn.Module, bits: int, group_size: int | None = None) -> None:
        super().__init__()
        check_type("base", base, LINEAR,
                   expected="a llmlab.layers.Linear or torch.nn.Linear")
        self.bits = _check_bits(bits)
        _check_group_size(group_size, base.in_features, "base")
        self.group_size = group_size
        self.in_features, self.out_features = base.in_features, base.out_features
        codes, scales = quantize_tensor(base.weight.detach(), bits, group_size)
        self.register_buffer("codes", codes)
        self.register_buffer("scales", scales)
        bias = getattr(base, "bias", None)
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    @property
    def weight(self) -> Tensor:
        """The weight the layer computes with, dequantized (a new tensor each time),
        for code that reads a layer's device and dtype from its ``weight``."""
        return dequantize(self.codes, self.scales, self.group_size)

    @property
    def nbytes(self) -> int:
        """The bytes of the stored weight: the codes at ``bits`` bits each,
        ``ceil(numel · bits / 8)`` (a 4-bit code is half a byte), plus the scales'
        bytes. The bias, if any, is not counted (it is not quantized)."""
        codes = math.ceil(self.codes.numel() * self.bits / 8)
        return codes + self.scales.numel() * self.scales.element_size()

    def forward(self, x: Tensor) -> Tensor:
        """``(..., in_features)`` -> ``(..., out_features)``."""
        check_tensor("x", x, "... in_features", like=self.scales,
                     in_features=self.in_features)
        y = x @ self.weight.T  # (..., d_in) @ (d_in, d_out)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bits={self.bits}, group_size={self.group_size}, "
                f"bias={self.bias is not None}")


@dataclass(frozen=True)
class QuantizationReport:
    """What :func:`quantize_weights` did.

    Attributes:
        bits, group_size: As given.
        layers: The names of the replaced layers (``"layers.0.attn.q_proj"``).
        skipped: The names of the linear layers left in floating point because
            their weight is shared with another module (tied, as GPT-2's
            ``lm_head`` and token embedding).
        float_bytes: The bytes of the replaced layers' weights before.
        quantized_bytes: Their bytes after, codes plus scales
            (Σ :attr:`QuantizedLinear.nbytes`).
        max_abs_error: The largest ``|W − Ŵ|`` over the replaced weights.

    Taught on: "Faster inference".
    """

    bits: int
    group_size: int | None
    layers: tuple[str, ...]
    skipped: tuple[str, ...]
    float_bytes: int
    quantized_bytes: int
    max_abs_error: float

    @property
    def compression(self) -> float:
        """``float_bytes / quantized_bytes`` (about 4 for float32 weights at 8 bits)."""
        return self.float_bytes / self.quantized_bytes


@torch.no_grad()
def quantize_weights(
    model: nn.Module, bits: int, group_size: int | None = None
) -> QuantizationReport:
    """Replace, in place, every linear layer of ``model`` by a :class:`QuantizedLinear`.

    A layer whose weight is shared with another module (tied: GPT-2's ``lm_head``
    *is* the token embedding) is skipped and named in the report's ``skipped``:
    quantizing it would either untie it (two copies, more memory, not less) or
    change the embedding too. Nothing is changed when an argument is refused.

    Args:
        model: A model with at least one untied ``llmlab.layers.Linear`` or
            ``torch.nn.Linear``.
        bits: The codes' width, 4 or 8.
        group_size: ``None`` (a scale per output row) or a divisor of every
            replaced layer's ``in_features``.

    Returns:
        A :class:`QuantizationReport`.

    Taught on: "Faster inference".
    """
    check_module("model", model)
    bits = _check_bits(bits)
    linear = [(path, parent, name, child) for path, parent, name, child
              in named_children(model) if isinstance(child, LINEAR)]
    tied = tuple(shared(model, linear))  # tied weights, layers reached under two names
    layers = [entry for entry in linear if entry[0] not in tied]
    if not layers:
        found = (f"its linear layers {', '.join(tied)} are tied to other modules"
                 if tied else "it has none")
        raise ValueError(f"model ({type(model).__name__}) has no linear layer to "
                         f"quantize (a llmlab.layers.Linear or torch.nn.Linear); {found}")
    for path, _, _, layer in layers:
        _check_group_size(group_size, layer.in_features, path)
    float_bytes = quantized_bytes = 0
    max_error = 0.0
    for _, parent, name, layer in layers:
        quantized = QuantizedLinear(layer, bits, group_size)
        weight = layer.weight.detach()
        float_bytes += weight.numel() * weight.element_size()
        quantized_bytes += quantized.nbytes
        max_error = max(max_error, float((weight - quantized.weight).abs().max()))
        setattr(parent, name, quantized)
    return QuantizationReport(bits, group_size, tuple(p for p, *_ in layers), tied,
                              float_bytes, quantized_bytes, max_error)


def _check_bits(bits: object) -> int:
    return check_choice("bits", check_int("bits", bits), BITS)


# a local composite (group_size against a layer's width), built from llmlab.checks
def _check_group_size(group_size: object, in_features: int, where: str) -> int:
    """The group's width: ``group_size``, or ``in_features`` for ``None`` (a row)."""
    if group_size is None:
        return in_features
    check_int("group_size", group_size)
    check_divisible(f"in_features of {where}", in_features, "group_size", group_size,
                    reason="every group holds group_size columns")
    return group_size
