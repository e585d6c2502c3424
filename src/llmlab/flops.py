r"""FLOPs of a training step: counted by PyTorch, estimated by formula.

* Counted: :func:`count_flops` runs one forward and one backward pass under
  ``torch.utils.flop_counter.FlopCounterMode`` (on ``device="meta"`` a 7B model
  costs no memory); :func:`count_llama_flops` counts a :class:`LlamaConfig`.
* Estimated: :func:`flops_per_token` is PaLM's
  :math:`6N + 12\,L\,d\,T` (Chowdhery et al., 2022, appendix B): 2 FLOPs per
  multiply-add, forward ``2N`` plus backward ``4N``, and the attention scores
  :math:`QK^\top` and :math:`AV`, which have no parameters. ``N`` is the number of
  weights that multiply an activation: ``config.matmul_parameter_count()`` of a
  :class:`LlamaConfig` or a :class:`~llmlab.models.gpt2.GPT2Config`.

The bytes of training are :mod:`llmlab.memory`'s; what FLOPs cost on a GPU is
:mod:`llmlab.hardware`'s.

Taught on: "Where the compute and the memory go".
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from llmlab.checks import check_int
from llmlab.models.llama import LlamaConfig, TransformerLM
from llmlab.training.loss import cross_entropy

__all__ = [
    "FlopCount",
    "count_flops",
    "count_llama_flops",
    "flops_per_token",
]


# --------------------------------------------------------------------------
# FLOPs: counted
# --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FlopCount:
    """FLOPs of one training step, as ``FlopCounterMode`` counted them.

    ``FlopCounterMode`` counts matrix products (``mm``, ``bmm``, attention
    kernels, convolutions) at 2 FLOPs per multiply-add; element-wise work
    (norms, softmax, SiLU, the optimizer) is not counted.

    Attributes:
        forward: FLOPs of the forward pass (loss included).
        backward: FLOPs of ``loss.backward()`` (recomputation included, when
            blocks are checkpointed).
        by_module: Forward + backward FLOPs of each child of the model
            (``"token_embeddings"``, ``"layers"``, ``"lm_head"``, ...).
        batch_size: Sequences in the batch.
        context_length: Tokens per sequence.
    """

    forward: int
    backward: int
    by_module: dict[str, int]
    batch_size: int
    context_length: int

    @property
    def total(self) -> int:
        """Forward + backward."""
        return self.forward + self.backward

    @property
    def per_token(self) -> float:
        """``total / (batch_size · context_length)``."""
        return self.total / (self.batch_size * self.context_length)


def _module_counts(counter: FlopCounterMode, root: str) -> dict[str, int]:
    """FLOPs per child of the root module, from ``get_flop_counts()``."""
    out: dict[str, int] = {}
    for name, ops in counter.get_flop_counts().items():
        parts = name.split(".")
        if len(parts) >= 2 and parts[0] == root:
            child = parts[1]
            # a ModuleList's items count under the list ("layers"), not per item
            if len(parts) == 2 or (len(parts) == 3 and parts[2].isdigit()):
                out[child] = out.get(child, 0) + sum(ops.values())
    return out


def count_flops(
    model: nn.Module,
    batch_size: int,
    context_length: int,
) -> FlopCount:
    """Count the FLOPs of one forward and backward pass of a language model.

    The batch is ``batch_size`` sequences of ``context_length`` token ids (zeros:
    the count does not depend on the values), created where the model's
    parameters are; on ``device="meta"`` nothing is computed or stored, and the
    count is the same. The gradients are cleared afterwards.

    Args:
        model: Maps int64 ``(B, T)`` ids to ``(B, T, vocab_size)`` logits.
        batch_size: Sequences, ``>= 1``.
        context_length: Tokens per sequence, ``>= 1``.

    Taught on: "Where the compute and the memory go".
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_int("batch_size", batch_size)
    check_int("context_length", context_length)
    parameter = next(model.parameters(), None)
    if parameter is None:
        raise ValueError("model has no parameters: there is nothing to train")
    ids = torch.zeros(batch_size, context_length + 1, dtype=torch.long,
                      device=parameter.device)  # (B, T+1)
    # one counter for both passes, so that backward FLOPs are credited to modules too
    with FlopCounterMode(display=False) as counter:
        loss = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
        forward = counter.get_total_flops()
        loss.backward()
    model.zero_grad(set_to_none=True)
    total = counter.get_total_flops()
    return FlopCount(forward, total - forward,
                     _module_counts(counter, type(model).__name__),
                     batch_size, context_length)


def count_llama_flops(
    config: LlamaConfig,
    batch_size: int = 1,
    context_length: int | None = None,
    *,
    layers_counted: int | None = None,
) -> FlopCount:
    """Count a :class:`TransformerLM` of ``config`` on ``device="meta"``.

    Every block is the same, so ``FLOPs(L) = FLOPs(1) + (L - 1) · (FLOPs(2) -
    FLOPs(1))`` exactly; with ``layers_counted=2`` the model is counted with one
    and two blocks and extrapolated to ``config.num_layers`` (a 32-block model
    then costs what a 2-block one does to count).

    Args:
        config: The model.
        batch_size: Sequences.
        context_length: Tokens per sequence (default: ``config.context_length``).
        layers_counted: ``None`` counts every block; ``2`` extrapolates.

    Taught on: "Where the compute and the memory go".
    """
    if not isinstance(config, LlamaConfig):
        raise TypeError(f"config must be a LlamaConfig, got {type(config).__name__}")
    check_int("batch_size", batch_size)
    context_length = config.context_length if context_length is None else context_length
    check_int("context_length", context_length)
    if layers_counted is not None and check_int("layers_counted", layers_counted) != 2:
        raise ValueError(f"layers_counted must be None or 2, got {layers_counted!r}")
    if context_length > config.context_length:
        config = dataclasses.replace(config, context_length=context_length)
    if layers_counted is None or layers_counted >= config.num_layers:
        model = TransformerLM.from_config(config, device="meta")
        return count_flops(model, batch_size, context_length)
    one, two = (count_flops(TransformerLM.from_config(
        dataclasses.replace(config, num_layers=n), device="meta"),
        batch_size, context_length) for n in (1, 2))
    extra = config.num_layers - 1

    def scale(a: int, b: int) -> int:
        return a + extra * (b - a)

    by_module = {k: scale(one.by_module.get(k, 0), two.by_module.get(k, 0))
                 for k in two.by_module}
    return FlopCount(scale(one.forward, two.forward), scale(one.backward, two.backward),
                     by_module, batch_size, context_length)


# --------------------------------------------------------------------------
# FLOPs: estimated
# --------------------------------------------------------------------------
def flops_per_token(
    n_parameters: int,
    num_layers: int = 0,
    d_model: int = 0,
    context_length: int = 0,
) -> float:
    r"""Training FLOPs per token: :math:`6N + 12\,L\,d\,T`.

    ``6N``: each parameter that multiplies an activation costs one multiply-add
    (2 FLOPs) forward and two backward (the gradients of the input and of the
    weight). ``12 L d T``: per layer, the scores :math:`QK^\top` and the
    weighted values :math:`AV` each cost ``2 T d`` forward per token, times 3
    for the backward pass (PaLM, Chowdhery et al., 2022, appendix B). Leave
    ``num_layers`` at 0 for the ``6N`` rule alone.

    Args:
        n_parameters: ``N``, the parameters of the matrix products (a
            config's ``matmul_parameter_count()``).
        num_layers: ``L``.
        d_model: ``d`` (all heads together).
        context_length: ``T``, the tokens each token attends over (the whole
            square of scores is computed, the masked half too).

    Taught on: "Where the compute and the memory go".
    """
    check_int("n_parameters", n_parameters, minimum=0)
    for name, value in (("num_layers", num_layers), ("d_model", d_model),
                        ("context_length", context_length)):
        check_int(name, value, minimum=0)
    return 6.0 * n_parameters + 12.0 * num_layers * d_model * context_length
