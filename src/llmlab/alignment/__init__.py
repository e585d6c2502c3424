"""Preference alignment: Direct Preference Optimisation (DPO).

* :mod:`~llmlab.alignment.dpo`: ``sequence_logprobs`` (a response's log-probability
  under a language model), ``dpo_loss`` (the loss of a batch of preference pairs, and
  the implicit rewards), ``implicit_reward_accuracy``; ``PreferenceData`` (pairs as
  rows that :func:`llmlab.training.train` trains on with the DPO loss).

Taught on: "Preference alignment".
"""

from llmlab.alignment.dpo import (
    PreferenceData,
    dpo_loss,
    implicit_reward_accuracy,
    sequence_logprobs,
)

__all__ = ["PreferenceData", "dpo_loss", "implicit_reward_accuracy", "sequence_logprobs"]
