r"""LoRA: train a low-rank correction of a frozen linear layer.

A linear layer's weight :math:`W` ``(d_out, d_in)`` stays frozen; what is learnt is
:math:`\Delta W = \frac{\alpha}{r} B A`, with :math:`A` ``(r, d_in)`` and
:math:`B` ``(d_out, r)`` for a small rank :math:`r`:

.. math::
    h = x W^\top + \frac{\alpha}{r}\, (x A^\top) B^\top .

:math:`B` starts at zero, so the adapted model starts exactly as the base model;
:math:`A` starts small and random (Kaiming-uniform, as PEFT does), so the first
gradient of :math:`B` is not zero. An adapted layer trains :math:`r (d_{in} +
d_{out})` numbers instead of :math:`d_{in} d_{out}`. After training,
:func:`merge_lora` folds :math:`\Delta W` into :math:`W`: the merged model is a plain
model again, as fast as the base.

Taught on: "Fine-tuning".
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from llmlab.checks import (
    check_finite_float,
    check_int,
    check_module,
    check_strs,
    check_tensor,
    check_type,
)
from llmlab._surgery import LINEAR, named_children, shared
from llmlab.params import count_parameters

__all__ = ["LoRALinear", "add_lora", "merge_lora"]


class LoRALinear(nn.Module):
    r"""A frozen linear layer plus a trainable low-rank update.

    ``forward(x) = base(x) + (alpha / rank) · (x Aᵀ) Bᵀ``. ``A``, ``(rank,
    in_features)``, is Kaiming-uniform (``a=√5``); ``B``, ``(out_features, rank)``,
    is zero, so the layer starts equal to ``base``. The base's parameters are
    frozen.

    Args:
        base: A ``llmlab.layers.Linear`` or ``torch.nn.Linear`` (with or without bias).
        rank: ``r``, at most ``min(in_features, out_features)``.
        alpha: The update's scale is ``alpha / rank``, ``> 0``.

    Attributes:
        lora_A: ``A``, ``(rank, in_features)``, trainable.
        lora_B: ``B``, ``(out_features, rank)``, trainable.
        scaling: ``alpha / rank``.

    Taught on: "Fine-tuning".
    """

    def __init__(self, base: nn.Module, rank: int, alpha: float) -> None:
        super().__init__()
        check_type("base", base, LINEAR,
                   expected="a llmlab.layers.Linear or torch.nn.Linear")
        self.rank = _check_rank(rank, base, "base")
        self.alpha = check_finite_float("alpha", alpha, minimum=0.0, open_min=True)
        self.in_features, self.out_features = base.in_features, base.out_features
        self.scaling = self.alpha / rank
        self.base = base.requires_grad_(False)  # frozen
        like = dict(device=base.weight.device, dtype=base.weight.dtype)
        self.lora_A = nn.Parameter(torch.empty(rank, self.in_features, **like))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))  # as nn.Linear and PEFT
        self.lora_B = nn.Parameter(torch.zeros(self.out_features, rank, **like))

    @property
    def weight(self) -> Tensor:
        """The base layer's (frozen) weight ``W``, for code that reads a layer's
        device and dtype from it (the adapted weight is ``W + scaling · B A``)."""
        return self.base.weight

    def forward(self, x: Tensor) -> Tensor:
        """``(..., in_features)`` -> ``(..., out_features)``."""
        check_tensor("x", x, "... in_features", like=self.lora_A,
                     in_features=self.in_features)
        update = (x @ self.lora_A.T) @ self.lora_B.T  # (..., r) -> (..., d_out)
        return self.base(x) + self.scaling * update  # (..., d_out)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"rank={self.rank}, alpha={self.alpha:g}")


def add_lora(
    model: nn.Module,
    rank: int,
    alpha: float,
    targets: tuple[str, ...] = ("q_proj", "v_proj"),
) -> int:
    """Wrap, in place, every linear layer named in ``targets`` in a :class:`LoRALinear`.

    Every other parameter of ``model`` is frozen, so that an optimizer of its
    trainable parameters updates the adapters only. Nothing is changed when an
    argument is refused.

    Args:
        model: The model to adapt (e.g. a ``TransformerLM``); it must have no adapters.
        rank: ``r`` of every adapter, at most ``min(d_in, d_out)`` of each layer.
        alpha: The adapters' scale is ``alpha / rank``, ``> 0``.
        targets: Attribute names of the layers to adapt (LoRA's paper adapts the
            attention's query and value projections).

    Returns:
        The number of trainable parameters: ``Σ rank · (d_in + d_out)`` over the
        adapted layers.

    Taught on: "Fine-tuning".
    """
    check_module("model", model)
    if any(isinstance(m, LoRALinear) for m in model.modules()):
        raise ValueError("model already has LoRA adapters; merge them (merge_lora) "
                         "before adding others")
    found = list(named_children(model))
    targets = _check_targets(targets, found, model)
    layers = [(path, parent, name, child) for path, parent, name, child in found
              if name in targets]
    for path, _, _, layer in layers:
        _check_rank(rank, layer, path)
    check_finite_float("alpha", alpha, minimum=0.0, open_min=True)
    # freeze everything, then add the trainable adapters
    model.requires_grad_(False)
    for _, parent, name, layer in layers:
        setattr(parent, name, LoRALinear(layer, rank, alpha))
    return count_parameters(model, trainable_only=True)


def merge_lora(model: nn.Module) -> nn.Module:
    """Fold every adapter into its base weight, ``W += scaling · B A``, in place.

    Each :class:`LoRALinear` is replaced by its base layer (of its original class),
    so the merged model computes the adapted model's outputs at the base's cost.
    No parameter is unfrozen (``add_lora`` froze them all).

    Args:
        model: A model with adapters (from :func:`add_lora`), or one ``LoRALinear``.

    Returns:
        ``model``, merged (for a ``LoRALinear``: its base layer, merged).

    Taught on: "Fine-tuning".
    """
    check_module("model", model)
    if isinstance(model, LoRALinear):
        return _merged(model)
    adapted = [(parent, name, child) for _, parent, name, child
               in named_children(model) if isinstance(child, LoRALinear)]
    if not adapted:
        raise ValueError(f"model ({type(model).__name__}) has no LoRA adapters to "
                         "merge; add_lora adds them, and merging removes them")
    for parent, name, layer in adapted:
        setattr(parent, name, _merged(layer))
    return model


@torch.no_grad()
def _merged(layer: LoRALinear) -> nn.Module:
    """``layer``'s base, its weight plus the update ``scaling · B A``."""
    delta = layer.scaling * (layer.lora_B @ layer.lora_A)  # (d_out, r) @ (r, d_in)
    layer.base.weight += delta  # (d_out, d_in)
    return layer.base


# a local composite (rank against a layer's sizes), built from llmlab.checks
def _check_rank(rank: object, layer: nn.Module, where: str) -> int:
    rank = check_int("rank", rank)
    largest = min(layer.in_features, layer.out_features)
    if rank > largest:
        raise ValueError(
            f"rank must be at most min(in_features, out_features) = {largest} of "
            f"{where} ({layer.in_features} -> {layer.out_features}), got {rank}"
        )
    return rank


# a local composite (target names against the model's layers), built from llmlab.checks
def _check_targets(
    targets: object,
    found: list[tuple[str, nn.Module, str, nn.Module]],
    model: nn.Module,
) -> tuple[str, ...]:
    targets = check_strs("targets", targets)
    if not targets:
        raise ValueError("targets must name at least one layer, got ()")
    linear = sorted({name for _, _, name, child in found if isinstance(child, LINEAR)})
    names = ", ".join(map(repr, linear)) or "none"
    for target in targets:
        kinds = {type(child).__name__ for _, _, name, child in found if name == target}
        if not kinds:
            raise ValueError(f"targets names {target!r}, but model has no layer of "
                             f"that name; its linear layers are {names}")
        if not all(isinstance(child, LINEAR) for _, _, name, child in found
                   if name == target):
            raise ValueError(f"targets names {target!r}, which is a "
                             f"{' or '.join(sorted(kinds))}, not a linear layer; the "
                             f"linear layers of model are {names}")
    # a weight shared with another module (an output layer tied to the embedding), or
    # a layer reached under two names, would change in both places when merged
    for path in shared(model, [entry for entry in found if entry[2] in targets]):
        name = path.rpartition(".")[2]
        raise ValueError(f"targets names {name!r}, but {path}.weight is shared "
                         "with another module (tied); merging would change both")
    return targets
