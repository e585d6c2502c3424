"""Preference alignment: Direct Preference Optimisation (DPO).

* :mod:`~llmlab.alignment.dpo`: ``sequence_logprobs`` (a response's log-probability
  under a language model), ``dpo_loss`` (the loss of a batch of preference pairs, and
  the implicit rewards), ``implicit_reward_accuracy``.

Taught on: "Preference alignment".
"""

from llmlab.alignment.dpo import dpo_loss, implicit_reward_accuracy, sequence_logprobs

__all__ = ["dpo_loss", "implicit_reward_accuracy", "sequence_logprobs"]
