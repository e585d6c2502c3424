"""Counting a module's parameters.

The formulas are the configs': ``parameter_count()``, ``parameter_breakdown()``
and ``matmul_parameter_count()`` of :class:`~llmlab.models.gpt2.GPT2Config` and
:class:`~llmlab.models.llama.LlamaConfig` alike; the lectures check them against
:func:`count_parameters`.

Taught on: "Multi-head attention and the Transformer block" (12d² + 13d) and
"Building blocks of a Llama-style Transformer".
"""

from __future__ import annotations

from torch import nn

from llmlab.checks import check_bool, check_type

__all__ = ["count_parameters"]


def count_parameters(module: nn.Module, trainable_only: bool = False) -> int:
    """Number of scalar parameters, each shared (tied) tensor counted once.

    ``module.parameters()`` already yields a tensor shared by two submodules
    only once (e.g. a language model's output layer tied to its embedding).

    Args:
        module: Any ``nn.Module``.
        trainable_only: Count only parameters with ``requires_grad``.
    """
    check_type("module", module, nn.Module, expected="a torch.nn.Module")
    check_bool("trainable_only", trainable_only)
    return sum(
        p.numel() for p in module.parameters() if p.requires_grad or not trainable_only
    )
