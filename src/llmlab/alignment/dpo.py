r"""Direct Preference Optimisation: learning from pairs of a preferred response
(chosen, :math:`y_w`) and a dispreferred one (rejected, :math:`y_l`) to one prompt.

A policy :math:`\pi_\theta` is trained against a frozen reference
:math:`\pi_\text{ref}` (the fine-tuned model it starts from). The implicit reward of a
response is how much more likely the policy makes it than the reference does,

.. math::
    r(x, y) = \beta \left(\log \pi_\theta(y \mid x) - \log \pi_\text{ref}(y \mid x)\right),

and the loss of a pair is that of a logistic model which prefers the chosen response:

.. math::
    \ell = -\log \sigma\left(r(x, y_w) - r(x, y_l)\right).

:math:`\log \pi(y \mid x)` is a sum of per-token log-probabilities over the response
(:func:`sequence_logprobs`). ``-log σ(m)`` is computed as ``-logsigmoid(m)``, which is
exact at any margin; ``log(sigmoid(m))`` rounds ``σ(-1000)`` to 0 and returns ``inf``.

:func:`dpo_loss` takes its arguments in the order of TRL's ``DPOTrainer.dpo_loss``.

Taught on: "Preference alignment".
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from llmlab.checks import (
    check_finite_float,
    check_logits,
    check_module,
    check_tensor,
    check_tensors,
    check_token_ids,
)

__all__ = ["dpo_loss", "implicit_reward_accuracy", "sequence_logprobs"]


def sequence_logprobs(model: nn.Module, input_ids: Tensor, response_mask: Tensor) -> Tensor:
    r"""The log-probability of each row's response under ``model``.

    .. math::
        \log \pi(y \mid x) = \sum_{t \ge 1,\ \text{mask}_t} \log p(x_t \mid x_{<t}),

    where the token at position ``t`` is predicted by the logits at ``t - 1``.

    Args:
        model: A language model: ``model(input_ids)`` gives logits
            ``(batch, seq_len, vocab_size)``.
        input_ids: Integer ``(batch, seq_len)``: prompt then response (then padding).
        response_mask: Boolean ``(batch, seq_len)``, True at the response's tokens;
            False at position 0 (nothing predicts the first token) and at least one
            True per row.

    Returns:
        Float32 ``(batch,)``. Gradients flow to ``model`` (for the reference model,
        call it under ``torch.no_grad()``). fp16 and bf16 logits are computed in
        float32.

    Taught on: "Preference alignment".
    """
    check_module("model", model)
    _check_response_mask(input_ids, response_mask)
    logits = model(input_ids)  # (B, T, V)
    check_logits("model(input_ids)", logits)
    sizes = check_tensor("model(input_ids)", logits, "batch seq_len vocab_size", "float",
                         batch=input_ids.shape[0], seq_len=input_ids.shape[1])
    check_token_ids("input_ids", input_ids, sizes["vocab_size"])
    # position t is predicted by the logits at t - 1
    log_probs = F.log_softmax(logits[:, :-1].float(), dim=-1)  # (B, T-1, V)
    targets = input_ids[:, 1:]  # (B, T-1)
    token_logps = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T-1)
    mask = response_mask[:, 1:]  # (B, T-1)
    return token_logps.where(mask, 0.0).sum(dim=-1)  # (B,)


# a local composite (the mask against the ids), built from llmlab.checks
def _check_response_mask(input_ids: Tensor, response_mask: Tensor) -> None:
    """``input_ids`` and ``response_mask`` of one ``(batch, seq_len)`` shape, a mask
    False at position 0 and True somewhere in each row."""
    check_tensors(input_ids=(input_ids, "batch seq_len", "int"),
                  response_mask=(response_mask, "batch seq_len", "bool"))
    if response_mask.device.type == "meta":
        return
    first = response_mask[:, 0].nonzero().flatten().tolist()  # rows True at 0
    if first:
        raise ValueError(
            f"response_mask is True at position 0 in row(s) {first[:5]}; the first "
            "token has nothing before it to predict it, expected False there (the "
            "prompt comes first)")
    empty = (~response_mask.any(dim=-1)).nonzero().flatten().tolist()  # rows
    if empty:
        raise ValueError(
            f"response_mask selects no token in row(s) {empty[:5]}; expected at "
            "least one True (a response token) per row")


def dpo_loss(
    policy_chosen_logps: Tensor,
    policy_rejected_logps: Tensor,
    reference_chosen_logps: Tensor,
    reference_rejected_logps: Tensor,
    beta: float,
) -> tuple[Tensor, Tensor, Tensor]:
    r"""The DPO loss of each preference pair, and the implicit rewards.

    Args:
        policy_chosen_logps: Float ``(batch,)``, :math:`\log \pi_\theta(y_w \mid x)`
            (from :func:`sequence_logprobs`).
        policy_rejected_logps: Float ``(batch,)``, :math:`\log \pi_\theta(y_l \mid x)`.
        reference_chosen_logps: Float ``(batch,)``, :math:`\log \pi_\text{ref}(y_w \mid x)`.
        reference_rejected_logps: Float ``(batch,)``,
            :math:`\log \pi_\text{ref}(y_l \mid x)`.
        beta: The strength :math:`\beta > 0` of the pull towards the reference
            (commonly 0.1).

    Returns:
        ``(losses, chosen_rewards, rejected_rewards)``, each ``(batch,)``:
        ``losses = -logsigmoid(chosen_rewards - rejected_rewards)`` (take its mean to
        train) and the rewards ``beta * (policy - reference)``, detached (they are
        for watching training, as in TRL).

    Taught on: "Preference alignment".
    """
    check_tensors(
        policy_chosen_logps=(policy_chosen_logps, "batch", "float"),
        policy_rejected_logps=(policy_rejected_logps, "batch", "float"),
        reference_chosen_logps=(reference_chosen_logps, "batch", "float"),
        reference_rejected_logps=(reference_rejected_logps, "batch", "float"),
    )
    beta = check_finite_float("beta", beta, minimum=0.0, open_min=True)
    chosen = beta * (policy_chosen_logps - reference_chosen_logps)  # (B,)
    rejected = beta * (policy_rejected_logps - reference_rejected_logps)  # (B,)
    losses = -F.logsigmoid(chosen - rejected)  # (B,), exact at any margin
    return losses, chosen.detach(), rejected.detach()


def implicit_reward_accuracy(chosen_rewards: Tensor, rejected_rewards: Tensor) -> float:
    """The share of pairs whose chosen response has the higher implicit reward (a tie
    counts as wrong).

    Args:
        chosen_rewards: Float ``(batch,)``, from :func:`dpo_loss`.
        rejected_rewards: Float ``(batch,)``, from :func:`dpo_loss`.

    Taught on: "Preference alignment".
    """
    check_tensors(chosen_rewards=(chosen_rewards, "batch", "float"),
                  rejected_rewards=(rejected_rewards, "batch", "float"))
    return (chosen_rewards > rejected_rewards).float().mean().item()
