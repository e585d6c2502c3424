"""The course's base models measured: what training for real buys.

:func:`run_base_model` loads a shipped base model (:mod:`llmlab.pretrained`),
scores it on held-out text it never trained on (:func:`held_out_loss`: nats per
token, per character, bits per byte) and samples from it with fixed seeds
(:func:`sample_quality`: the share of known words, of regular verse lines, of
known characters). Nothing is trained here: the build only loads and samples.

Taught on: "Training and generating text".
"""

from __future__ import annotations

import dataclasses

import numpy as np

from llmlab.build.cache import cached
from llmlab.checks import check_choice, check_finite_float, check_floats, check_int
from llmlab.pretrained import NAMES, BaseModelCard, card, load, training_text
from llmlab.training import split_tokens
from llmlab.training.quality import HeldOutLoss, SampleQuality, held_out_loss, sample_quality

__all__ = ["HELD_OUT_CHARS", "BaseModelResult", "run_base_model"]

HELD_OUT_CHARS = 20_000
"""Characters of the validation split :func:`run_base_model` scores by default
(the start of it); the result says how noisy that estimate is
(:attr:`~llmlab.training.quality.HeldOutLoss.standard_error`)."""


@dataclasses.dataclass
class BaseModelResult:
    """A base model, how it was made, and how well it does.

    Attributes:
        card: The model's :class:`~llmlab.pretrained.BaseModelCard` (configuration,
            the whole loss curve, the command, commit, torch version, device and
            wall time of its training).
        n_parameters: Parameters of the loaded model.
        held_out: Its loss on the first ``held_out_chars`` characters of its
            validation split (the last tenth of its tokens, which it never
            trained on).
        held_out_chars: Characters asked for.
        samples: One :class:`SampleQuality` per sampling temperature, each from the
            same seed.
    """

    card: BaseModelCard
    n_parameters: int
    held_out: HeldOutLoss
    held_out_chars: int
    samples: list[SampleQuality]


@cached(cost=4.0)  # seconds on one core: load, score 20,000 characters, sample twice
def run_base_model(
    name: str,
    temperatures: tuple[float, ...] = (1.0, 0.8),
    num_samples: int = 16,
    max_new_tokens: int = 120,
    held_out_chars: int = HELD_OUT_CHARS,
    seed: int = 0,
) -> BaseModelResult:
    """Load the base model ``name``, score it on held-out text and sample from it.

    The held-out text is the start of the model's validation split, as
    ``llmlab-train`` cut it: the last ``validation_fraction`` of the tokens of
    :func:`llmlab.pretrained.training_text`, decoded. Samples continue a line
    break, ``num_samples`` side by side at each temperature, from one seed; by
    default they stay inside the model's context (128 tokens), so that the KV
    cache serves every step.

    Taught on: "Training and generating text".
    """
    check_choice("name", name, NAMES)
    for i, temperature in enumerate(check_floats("temperatures", temperatures)):
        check_finite_float(f"temperatures[{i}]", temperature, minimum=0.0,
                           open_min=True)
    check_int("num_samples", num_samples)
    check_int("max_new_tokens", max_new_tokens)
    check_int("held_out_chars", held_out_chars, minimum=100)
    check_int("seed", seed, minimum=0)
    about = card(name)
    model, tokenizer = load(name)
    ids = np.asarray(tokenizer.encode(training_text(name)), dtype=np.int64)
    _, val_ids = split_tokens(ids, about.training["validation_fraction"])
    text = tokenizer.decode(val_ids)[:held_out_chars]
    samples = [sample_quality(model, tokenizer, name, num_samples=num_samples,
                              max_new_tokens=max_new_tokens, temperature=t, seed=seed)
               for t in temperatures]
    return BaseModelResult(
        card=about, n_parameters=sum(p.numel() for p in model.parameters()),
        held_out=held_out_loss(model, tokenizer, text),
        held_out_chars=held_out_chars, samples=samples,
    )
