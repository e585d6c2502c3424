"""Training a language model from scratch: loss, optimizer, schedule, data, loop.

* :mod:`~llmlab.training.loss`: ``cross_entropy`` (with an ``ignore_index``),
  ``perplexity``.
* :mod:`~llmlab.training.optim`: ``AdamW`` (from its update rule),
  ``gradient_clipping``.
* :mod:`~llmlab.training.schedule`: ``get_lr_cosine_schedule``, ``cosine_schedule``.
* :mod:`~llmlab.training.data`: ``get_batch``, ``split_tokens``; ``SupervisedData``
  and ``IGNORE_INDEX`` (fine-tuning examples, which ``train`` also reads); ``RowData``,
  what any such rows of examples provide (``SupervisedData``, DPO's ``PreferenceData``).
* :mod:`~llmlab.training.checkpoint`: ``save_checkpoint``, ``load_checkpoint``.
* :mod:`~llmlab.training.loop`: ``train`` -> ``TrainResult``, ``estimate_loss``.
* :mod:`~llmlab.training.quality`: ``held_out_loss`` (nats per character, bits per
  byte), ``sample_quality`` (known words, regular verse, known characters).

The interfaces are those of CS336 assignment 1.

Taught on: "Training and generating text" and "Fine-tuning".
"""

from llmlab.training.checkpoint import (
    checkpoint_extra,
    load_checkpoint,
    save_checkpoint,
)
from llmlab.training.data import (
    IGNORE_INDEX,
    RowData,
    SupervisedData,
    get_batch,
    split_tokens,
)
from llmlab.training.loop import TrainEvent, TrainResult, estimate_loss, train
from llmlab.training.loss import cross_entropy, perplexity
from llmlab.training.optim import AdamW, gradient_clipping
from llmlab.training.quality import (
    HeldOutLoss,
    SampleQuality,
    held_out_loss,
    sample_quality,
)
from llmlab.training.schedule import cosine_schedule, get_lr_cosine_schedule

__all__ = [
    "AdamW",
    "HeldOutLoss",
    "IGNORE_INDEX",
    "RowData",
    "SampleQuality",
    "SupervisedData",
    "TrainEvent",
    "TrainResult",
    "checkpoint_extra",
    "cosine_schedule",
    "cross_entropy",
    "estimate_loss",
    "get_batch",
    "get_lr_cosine_schedule",
    "gradient_clipping",
    "held_out_loss",
    "load_checkpoint",
    "perplexity",
    "sample_quality",
    "save_checkpoint",
    "split_tokens",
    "train",
]
