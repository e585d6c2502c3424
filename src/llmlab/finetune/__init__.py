"""Fine-tuning a base model: supervised examples with a masked prompt, and LoRA.

* :mod:`~llmlab.finetune.sft`: ``supervised_example`` (ids and targets of a prompt
  and its response), ``supervised_data`` -> ``SupervisedData`` (from
  :mod:`llmlab.training.data`, where ``llmlab.training.train`` reads it),
  ``IGNORE_INDEX``; ``exact_match`` (whether greedy decoding would write each
  response exactly, from one forward pass).
* :mod:`~llmlab.finetune.lora`: ``LoRALinear``, ``add_lora``, ``merge_lora``.

Training is :func:`llmlab.training.train` itself, given a ``SupervisedData``; the
number of trainable parameters is
``llmlab.params.count_parameters(model, trainable_only=True)``.

Taught on: "Fine-tuning".
"""

from llmlab.finetune.lora import LoRALinear, add_lora, merge_lora
from llmlab.finetune.sft import (
    END_OF_TEXT,
    IGNORE_INDEX,
    SupervisedData,
    end_of_text_id,
    exact_match,
    supervised_data,
    supervised_example,
)

__all__ = [
    "END_OF_TEXT",
    "IGNORE_INDEX",
    "LoRALinear",
    "SupervisedData",
    "add_lora",
    "end_of_text_id",
    "exact_match",
    "merge_lora",
    "supervised_data",
    "supervised_example",
]
