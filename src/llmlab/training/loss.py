r"""Cross-entropy of next-token predictions, and perplexity.

For logits :math:`o` over a vocabulary and the true next token :math:`x`,

.. math::
    \ell = -\log \mathrm{softmax}(o)_x = \log \sum_j e^{o_j - m} - (o_x - m),
    \qquad m = \max_j o_j,

averaged over every position. Subtracting the maximum keeps each exponent at most 0,
so no term overflows; ``log(softmax(o))`` instead rounds a tiny probability to 0
and returns ``inf``.

Fine-tuning averages over some positions only: a target equal to ``ignore_index``
(by convention -100, as in PyTorch) counts for nothing, and the mean is over the
others (a prompt's tokens and padding are not to be learnt).

Taught on: "Training and generating text" and "Fine-tuning".
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from llmlab.checks import check_int, check_logits, check_tensor, check_token_ids

__all__ = ["cross_entropy", "perplexity"]


def cross_entropy(
    logits: Tensor, targets: Tensor, ignore_index: int | None = None
) -> Tensor:
    """Mean negative log-likelihood of ``targets`` under ``logits``.

    Args:
        logits: Float ``(..., vocab_size)``, unnormalised scores.
        targets: Integer ``(...)`` in ``[0, vocab_size)``, the true next tokens
            (or ``ignore_index``).
        ignore_index: Targets equal to it do not count (``-100`` by convention,
            ``llmlab.training.data.IGNORE_INDEX``); ``None``: every target counts.

    Returns:
        A 0-d tensor: the mean over every leading (batch, position) index whose
        target counts. fp16 and bf16 logits are computed in float32.

    Raises:
        ValueError: Besides bad shapes and ids, ``targets`` that are all
            ``ignore_index`` (no token to average over).

    Taught on: "Training and generating text" and "Fine-tuning".
    """
    counted = _check_cross_entropy(logits, targets, ignore_index)  # (...,) or None
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    # the shift is a constant for the loss (no gradient needs to flow through it)
    shifted = logits - logits.amax(dim=-1, keepdim=True).detach()  # (..., V), max 0
    log_normaliser = shifted.exp().sum(dim=-1).log()  # (...,): log Σ_j e^{o_j - m}
    if counted is None:  # every target counts
        target_logit = shifted.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (...,)
        return (log_normaliser - target_logit).mean()
    # an ignored target is read as id 0 (gather needs an id), then left out of the mean
    ids = targets.where(counted, 0)  # (...,)
    target_logit = shifted.gather(-1, ids.unsqueeze(-1)).squeeze(-1)  # (...,)
    return (log_normaliser - target_logit)[counted].mean()  # over counted targets


# a local composite (targets against logits), built from llmlab.checks
def _check_cross_entropy(
    logits: Tensor, targets: Tensor, ignore_index: int | None
) -> Tensor | None:
    """The checks of :func:`cross_entropy`; with ``ignore_index``, the boolean
    ``(...)`` mask of the targets that count."""
    check_logits("logits", logits)
    if not isinstance(targets, Tensor) or targets.shape != logits.shape[:-1]:
        shape = tuple(targets.shape) if isinstance(targets, Tensor) else targets
        raise ValueError(
            f"targets must have shape {tuple(logits.shape[:-1])} (logits without "
            f"vocab_size), got {shape}"
        )
    if ignore_index is None:
        check_token_ids("targets", targets, logits.shape[-1])
    else:
        check_int("ignore_index", ignore_index, minimum=None)
        check_tensor("targets", targets, "...", "int")
    if targets.device != logits.device:
        raise ValueError(f"targets is on {targets.device} but logits is on "
                         f"{logits.device}; move it (e.g. targets.to(logits.device))")
    if ignore_index is None:
        return None
    counted = targets != ignore_index  # (...,)
    if targets.device.type != "meta":
        if not counted.any():
            raise ValueError(
                f"targets selects no token: every one of its {targets.numel()} values "
                f"is ignore_index ({ignore_index}); expected at least one to count")
        check_token_ids("targets", targets[counted], logits.shape[-1])
    return counted


def perplexity(loss: float | Tensor) -> float:
    """``exp(loss)``: the size of a uniform choice that is as surprising.

    A model that spreads its bets evenly over ``k`` tokens has loss ``ln k`` and
    perplexity ``k``, so an untrained model scores about ``vocab_size``.

    Args:
        loss: A mean cross-entropy in nats (a float or a 0-d tensor), ``>= 0``.

    Taught on: "Training and generating text".
    """
    if isinstance(loss, Tensor):
        if loss.numel() != 1:
            raise ValueError(f"loss must be one number, got shape {tuple(loss.shape)}")
        loss = loss.item()
    if isinstance(loss, bool) or not isinstance(loss, (int, float)):
        raise TypeError(
            f"loss must be a float or a 0-d tensor, got {type(loss).__name__}"
        )
    if not loss >= 0:  # NaN fails too
        raise ValueError(f"loss must be a number >= 0 (nats), got {loss}")
    return math.exp(loss)
