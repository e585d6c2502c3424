"""Argument checks shared by the training and generation code.

Each check raises a ``ValueError`` (``TypeError`` when the argument is not even the
right kind of object) whose message names the argument, what it got and what was
expected, and returns the value so that a caller can check and assign in one line.

Taught on: "Training and generating text".
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor

__all__ = [
    "check_finite_float",
    "check_int",
    "check_token_ids",
]


def check_int(name: str, value: object, *, minimum: int = 1) -> int:
    """``value`` as an int ``>= minimum``; bools and floats are refused.

    Raises:
        TypeError: ``value`` is not an integer (``2.0`` and ``True`` are not).
        ValueError: ``value < minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return int(value)


def check_finite_float(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    open_min: bool = False,
    open_max: bool = False,
) -> float:
    """``value`` as a finite float in the given range (NaN and inf are refused).

    ``open_min``/``open_max`` exclude the bound itself, e.g. ``temperature > 0``
    is ``minimum=0.0, open_min=True``.

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: ``value`` is NaN, infinite or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        kind = type(value).__name__
        raise TypeError(f"{name} must be a number, got {kind} {value!r}")
    value = float(value)
    low = "" if minimum is None else ("(" if open_min else "[") + f"{minimum:g}"
    high = "" if maximum is None else f"{maximum:g}" + (")" if open_max else "]")
    wanted = f"a finite number in {low or '(-inf'}, {high or 'inf)'}"
    if not math.isfinite(value):
        raise ValueError(f"{name} must be {wanted}, got {value}")
    if minimum is not None and (value < minimum or (open_min and value == minimum)):
        raise ValueError(f"{name} must be {wanted}, got {value:g}")
    if maximum is not None and (value > maximum or (open_max and value == maximum)):
        raise ValueError(f"{name} must be {wanted}, got {value:g}")
    return value


def check_token_ids(name: str, ids: Tensor, vocab_size: int | None = None) -> Tensor:
    """An integer tensor of token ids in ``[0, vocab_size)``, at least one element.

    Raises:
        TypeError: ``ids`` is not a tensor.
        ValueError: Empty, not integer (floats, bools) or out of range.
    """
    if not isinstance(ids, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(ids).__name__}")
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    if ids.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(ids.shape)}); expected ids")
    if vocab_size is not None and ids.device.type != "meta":
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= vocab_size:
            raise ValueError(
                f"{name} must lie in [0, {vocab_size}) (vocab_size), "
                f"got values from {low} to {high}"
            )
    return ids
