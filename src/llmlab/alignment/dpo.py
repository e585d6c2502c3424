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

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from llmlab._surgery import device_of
from llmlab.checks import (
    check_finite_float,
    check_int,
    check_logits,
    check_module,
    check_sizes,
    check_tensor,
    check_tensors,
    check_token_ids,
    check_type,
)
from llmlab.training.data import IGNORE_INDEX, RowData, SupervisedData

__all__ = ["PreferenceData", "dpo_loss", "implicit_reward_accuracy", "sequence_logprobs"]


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


class PreferenceData(RowData):
    """Preference pairs as rows for :func:`llmlab.training.train`, with the DPO loss.

    Each pair is ``(prompt_ids, chosen_ids, rejected_ids)``: one prompt and two
    responses to it, as token ids. A row holds the pair's two sequences, prompt then
    response, right-padded with ``pad_id`` (under a causal mask, padding on the right
    changes no log-probability that counts). The reference model's log-probability
    of each response is computed once, here, under ``torch.no_grad()``: it never
    changes while the policy trains, so training runs one model, not two (TRL's
    ``precompute_ref_log_probs``).

    Args:
        pairs: ``(prompt_ids, chosen_ids, rejected_ids)``, at least one; each a
            non-empty list of token ids.
        reference: The frozen model the policy starts from (usually the policy's
            own starting weights); or its log-probabilities of the pairs, float
            ``(N, 2)`` (chosen, rejected), computed before (as
            :meth:`policy_logps` of that model computes them).
        beta: DPO's :math:`\\beta > 0`.
        pad_id: The id the rows are padded with (any valid id).

    Attributes:
        input_ids: int64 ``(N, 2, T)``: per pair, chosen then rejected.
        response_mask: bool ``(N, 2, T)``: True at the responses' tokens.
        reference_logps: float32 ``(N, 2)``: the reference's log-probability of
            the chosen and the rejected response.
        beta: :math:`\\beta`.
        context_length: ``T``, the longest sequence.

    Taught on: "Preference alignment".
    """

    def __init__(self, pairs: list[tuple[list[int], list[int], list[int]]],
                 reference: nn.Module | Tensor, beta: float, pad_id: int) -> None:
        check_type("pairs", pairs, (list, tuple),
                   expected="a list of (prompt_ids, chosen_ids, rejected_ids)")
        if not pairs:
            raise ValueError("pairs is empty; expected at least one (prompt_ids, "
                             "chosen_ids, rejected_ids)")
        if isinstance(reference, Tensor):
            check_tensor("reference", reference, "pairs two", "float", pairs=len(pairs),
                         two=2)
            vocab_size = None
        else:
            check_module("reference", reference)
            vocab_size = getattr(reference, "vocab_size", None)
        largest = None if vocab_size is None else vocab_size - 1
        for i, pair in enumerate(pairs):
            check_type(f"pairs[{i}]", pair, (list, tuple),
                       expected="a (prompt_ids, chosen_ids, rejected_ids) triple")
            if len(pair) != 3:
                raise ValueError(f"pairs[{i}] must be (prompt_ids, chosen_ids, "
                                 f"rejected_ids), got {len(pair)} items")
            for j, part in enumerate(("prompt_ids", "chosen_ids", "rejected_ids")):
                check_sizes(f"pairs[{i}][{j}] ({part})", pair[j], minimum=0,
                            maximum=largest)
        self.beta = check_finite_float("beta", beta, minimum=0.0, open_min=True)
        check_int("pad_id", pad_id, minimum=0, maximum=largest)
        self.context_length = max(len(p) + max(len(c), len(r)) for p, c, r in pairs)
        shape = (len(pairs), 2, self.context_length)  # (N, 2, T)
        self.input_ids = torch.full(shape, pad_id, dtype=torch.int64)
        self.response_mask = torch.zeros(shape, dtype=torch.bool)
        for row, (prompt, *responses) in enumerate(pairs):
            for k, response in enumerate(responses):  # 0: chosen, 1: rejected
                end = len(prompt) + len(response)
                self.input_ids[row, k, :end] = torch.tensor(list(prompt) + list(response))
                self.response_mask[row, k, len(prompt):end] = True
        self.pad_id = pad_id
        self._ends = (self.response_mask.long() * torch.arange(self.context_length)
                      ).amax(dim=(1, 2)) + 1  # (N,): where each pair's tokens end
        self.reference_logps = torch.zeros(len(pairs), 2)  # read by rows() while measured
        self.reference_logps = (reference.detach().float().cpu()
                                if isinstance(reference, Tensor)
                                else self.policy_logps(reference))  # (N, 2)

    def __len__(self) -> int:
        """The number of pairs, ``N``."""
        return self.input_ids.shape[0]

    def __repr__(self) -> str:
        return (f"PreferenceData({len(self)} pairs, beta={self.beta}, "
                f"context_length={self.context_length})")

    def rows(self, index: Tensor, device=None) -> tuple[Tensor, ...]:
        """``(input_ids, response_mask, reference_logps)`` of the pairs ``index``:
        ``(B, 2, T')``, ``(B, 2, T')`` and ``(B, 2)`` on ``device``, where ``T'`` is
        the longest of these rows (the padding all rows share is cut off)."""
        width = int(self._ends[index].max())
        return (self.input_ids[index, :, :width].to(device),
                self.response_mask[index, :, :width].to(device),
                self.reference_logps[index].to(device))

    def loss(self, model: nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
        """The mean DPO loss (:func:`dpo_loss`) of ``model`` as the policy on
        ``batch``: one forward pass over the chosen and rejected rows together."""
        input_ids, response_mask, reference = batch
        policy = _pair_logprobs(model, input_ids, response_mask)  # (B, 2)
        losses, _, _ = dpo_loss(policy[:, 0], policy[:, 1], reference[:, 0],
                                reference[:, 1], self.beta)
        return losses.mean()

    def policy_logps(self, model: nn.Module, chunk: int = 32) -> Tensor:
        """``model``'s log-probability of every pair's two responses: float32
        ``(N, 2)``, chosen then rejected (no gradients; ``chunk`` pairs a pass)."""
        check_module("model", model)
        check_int("chunk", chunk)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                return torch.cat([
                    _pair_logprobs(model, *self.rows(torch.arange(n, min(n + chunk, len(self))),
                                                     device_of(model))[:2]).cpu()
                    for n in range(0, len(self), chunk)])  # (N, 2)
        finally:
            model.train(was_training)

    def rewards(self, policy_logps: Tensor) -> tuple[Tensor, Tensor]:
        """The implicit rewards ``(chosen, rejected)``, float ``(N,)`` each, of a
        policy whose log-probabilities of the pairs are ``policy_logps`` (``(N, 2)``
        on the CPU, where the reference's are: from :meth:`policy_logps`)."""
        check_tensor("policy_logps", policy_logps, "pairs two", "float", pairs=len(self),
                     two=2)
        if policy_logps.device != self.reference_logps.device:
            raise ValueError(f"policy_logps is on {policy_logps.device}; expected it on "
                             f"{self.reference_logps.device}, where the reference's "
                             "log-probabilities are (policy_logps.cpu())")
        _, chosen, rejected = dpo_loss(policy_logps[:, 0], policy_logps[:, 1],
                                       self.reference_logps[:, 0],
                                       self.reference_logps[:, 1], self.beta)
        return chosen, rejected

    def chosen_only(self) -> SupervisedData:
        """The chosen responses as supervised fine-tuning examples (the prompt
        masked, the same tokens): the baseline that learns from the chosen half of
        each pair and never sees the rejected one."""
        examples = []
        for ids, mask in zip(self.input_ids[:, 0], self.response_mask[:, 0]):
            end = int(mask.nonzero().max()) + 1
            targets = torch.where(mask[1:end], ids[1:end], IGNORE_INDEX).tolist()
            examples.append((ids[:end].tolist(), targets + [IGNORE_INDEX]))
        return SupervisedData(examples, pad_id=self.pad_id)


def _pair_logprobs(model: nn.Module, input_ids: Tensor, response_mask: Tensor) -> Tensor:
    """:func:`sequence_logprobs` of ``(B, 2, T)`` pairs in one forward pass: ``(B, 2)``."""
    b, k, t = input_ids.shape
    return sequence_logprobs(model, input_ids.reshape(b * k, t),
                             response_mask.reshape(b * k, t)).reshape(b, k)
