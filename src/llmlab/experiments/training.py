"""Experiments for the lecture on training a language model and generating text.

Each ``run_*`` is seeded, CPU-only, cached, and returns a dataclass of plain data
(numbers, lists, strings; a trained model as its ``state_dict``); the page's
renderers turn it into tables and figures. Every setting is stored in the result so
that the page can print it.

* :func:`run_loss_at_init`: an untrained model's loss is about ``ln(vocab_size)``;
  the naive ``log(softmax)`` overflows where ours does not.
* :func:`run_adamw_check`, :func:`run_lr_schedule`, :func:`run_gradient_clipping`:
  our AdamW, schedule and clipping against PyTorch's.
* :func:`run_training_run`: a tiny Llama-style model trained on English
  (Shakespeare) or Chinese (Tang poems), its text turned into ids by a byte-level
  BPE trained on that corpus (:func:`corpus_tokenizer`, the tokenization
  lecture's runs): loss curves, samples, FLOPs.
* :func:`run_sampling`: one prompt under each decoding rule.
* :func:`run_kv_cache_check`: the cache changes no logit; its memory by formula.
* :func:`run_kv_cache_steps`: what each call of generation feeds and caches (what
  the lecture's diagram of the KV cache draws).
* :func:`run_checkpoint_resume`: a resumed run equals the uninterrupted one.

``time_*`` functions measure speed: cached per machine (``machine_dependent``), so
that both languages of the page show one measurement; each result names the
machine it ran on.

The model settings keep the names of :class:`~llmlab.models.llama.LlamaConfig`
(CS336's ``num_layers``, ``num_heads``), the configuration they describe and that
``llmlab-train`` saves.

Taught on: "Training and generating text".
"""

from __future__ import annotations

import collections
import dataclasses
import io
import math
import platform
import re
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from llmlab.build.cache import cached, part_results
from llmlab.checks import (
    check_choice,
    check_finite_float,
    check_int,
    check_sizes,
    check_str,
    check_type,
)
from llmlab.data import CORPORA, corpus_text
from llmlab.experiments.tokenization import TrainedBPE, run_train_corpus
from llmlab.feed_forward import swiglu_hidden_dim
from llmlab.flops import flops_per_token
from llmlab.functional import softmax
from llmlab.generation import generate, kv_cache_bytes, next_token_probabilities
from llmlab.kv_cache import KVCache
from llmlab.models.llama import LLAMA2_7B, LlamaConfig, TransformerLM
from llmlab.tokenization import ByteTokenizer
from llmlab.training import (
    AdamW,
    TrainEvent,
    cosine_schedule,
    cross_entropy,
    estimate_loss,
    get_batch,
    get_lr_cosine_schedule,
    gradient_clipping,
    load_checkpoint,
    perplexity,
    save_checkpoint,
    split_tokens,
    train,
)
from llmlab.training.quality import (  # the poem-shape measure
    HAN_CHARACTER,
    poem_halves,
    poem_line_halves,
    poem_line_has_shape,
    poem_lines,
    poem_shape_share,
)

__all__ = [
    "CORPORA",
    "CORPUS_STEPS",
    "LECTURE_VOCAB",
    "TOKENIZER_CHARS",
    "TOKENIZER_MERGES",
    "AdamWCheckResult",
    "CheckpointResumeResult",
    "GenerationTiming",
    "GradientClippingResult",
    "KVCacheCheckResult",
    "KVCacheStepsResult",
    "LossAtInitResult",
    "LrScheduleResult",
    "OverfittingResult",
    "HighLearningRateResult",
    "Sample",
    "SamplingResult",
    "ThroughputTiming",
    "TinyLMSettings",
    "TrainingRunResult",
    "block_losses",
    "corpus_ids",
    "corpus_text",
    "corpus_tokenizer",
    "machine_description",
    "poem_halves",
    "poem_line_halves",
    "poem_line_has_shape",
    "poem_lines",
    "poem_shape_share",
    "run_adamw_check",
    "run_checkpoint_resume",
    "run_gradient_clipping",
    "run_high_learning_rate",
    "run_kv_cache_check",
    "run_kv_cache_steps",
    "run_loss_at_init",
    "run_lr_schedule",
    "run_overfitting",
    "run_sampling",
    "run_training_run",
    "time_generation",
    "time_training_throughput",
]

PROMPTS: dict[str, str] = {"shakespeare": "ROMEO:\n"}
"""Prompts for the samples (the Tang prompt is a held-out poem's first line)."""

TOKENIZER_CHARS: dict[str, int] = {"shakespeare": 300_000, "tang": 60_000}
"""Characters each corpus's BPE is trained on (its first ones): the tokenization
lecture's runs, all inside the training split."""

TOKENIZER_MERGES = 1000
"""Merges of those runs; a vocabulary of ``257 + k`` keeps the first ``k``."""

LECTURE_VOCAB = 257 + TOKENIZER_MERGES
"""The lecture runs' vocabulary: 256 bytes, ``<|endoftext|>`` and all 1,000 merges."""

CORPUS_STEPS: dict[str, int] = {"shakespeare": 60, "tang": 120}
"""Default steps of :func:`run_training_run`: the poems' line form needs more."""

CORPUS_SAMPLE_ROWS: dict[str, tuple[int, int, int]] = {
    "shakespeare": (1, 1, 1),
    "tang": (1, 4, 8),
}
"""Default texts sampled at the start, middle and end (more to count lines)."""


@dataclasses.dataclass(frozen=True)
class TinyLMSettings:
    """The model and optimisation settings of a lecture run (printed on the page).

    The first six are the model's :class:`~llmlab.models.llama.LlamaConfig`
    fields, with this lecture's defaults: :attr:`config` is that configuration
    (RoPE's base left at its default), and it is what checks them.

    Attributes:
        vocab_size: Token ids (256: byte-level; more: BPE, see
            :func:`corpus_tokenizer`).
        context_length: Tokens per training window.
        d_model: Width.
        num_layers: Blocks.
        num_heads: Attention heads.
        d_ff: SwiGLU hidden size.
        batch_size: Windows per step.
        steps: Optimiser steps.
        max_lr: Peak learning rate (after warm-up).
        min_lr: Floor of the cosine schedule.
        warmup_iters: Linear warm-up steps.
        weight_decay: AdamW's λ.
        betas: AdamW's (β₁, β₂).
        max_grad_norm: Global gradient-norm clip.
    """

    vocab_size: int = 256
    context_length: int = 64
    d_model: int = 64
    num_layers: int = 2
    num_heads: int = 4
    d_ff: int = 176
    batch_size: int = 16
    steps: int = 150
    max_lr: float = 1e-2
    min_lr: float = 1e-3
    warmup_iters: int = 15
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        self.config  # noqa: B018 - LlamaConfig checks the model's sizes
        for name in ("batch_size", "steps"):
            check_int(name, getattr(self, name))
        check_int("warmup_iters", self.warmup_iters, minimum=0,
                  maximum=self.steps - 1)
        check_finite_float("max_lr", self.max_lr, minimum=0.0, open_min=True)
        check_finite_float("min_lr", self.min_lr, minimum=0.0, maximum=self.max_lr)
        check_finite_float("weight_decay", self.weight_decay, minimum=0.0)
        if len(check_type("betas", self.betas, (tuple, list), expected="a pair")) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2), got {self.betas!r}")
        for i, beta in enumerate(self.betas):
            check_finite_float(f"betas[{i}]", beta, minimum=0.0, maximum=1.0,
                               open_max=True)
        check_finite_float("max_grad_norm", self.max_grad_norm, minimum=0.0,
                           open_min=True)

    @property
    def config(self) -> LlamaConfig:
        """The model's configuration: the fields these settings share with it."""
        return LlamaConfig(**{name: getattr(self, name) for name in _MODEL_FIELDS})

    def model(self) -> TransformerLM:
        """A freshly initialised model of these settings (seed it first)."""
        return TransformerLM.from_config(self.config)

    def optimizer(self, model: nn.Module) -> AdamW:
        """Our AdamW over ``model``'s parameters, with these settings."""
        return AdamW(model.parameters(), lr=self.max_lr, betas=self.betas,
                     weight_decay=self.weight_decay)

    def schedule(self) -> Callable[[int], float]:
        """Warm-up then cosine decay to ``min_lr`` at the last step."""
        return cosine_schedule(self.max_lr, self.min_lr, self.warmup_iters, self.steps)


_MODEL_FIELDS = tuple(f.name for f in dataclasses.fields(LlamaConfig)
                      if f.default is dataclasses.MISSING)
""":class:`LlamaConfig`'s required fields: the sizes :class:`TinyLMSettings` gives it."""


def _settings(**overrides: object) -> TinyLMSettings:
    fields = {f.name for f in dataclasses.fields(TinyLMSettings)}
    return TinyLMSettings(**{k: v for k, v in overrides.items() if k in fields})


# --- the corpora's tokenizers (the corpora: llmlab.data; the poem-shape measure:
# llmlab.training.quality) ---------------------------------------------------------


def _tokenizer_parts(corpus: str, vocab_size: int = LECTURE_VOCAB, **_: object) -> list:
    """The BPE run :func:`corpus_tokenizer` cuts its tokenizer from (none for bytes).

    The cache parts of every experiment that calls :func:`corpus_tokenizer`.
    """
    if corpus not in CORPORA or vocab_size == 256:
        return []
    return [(run_train_corpus, dict(corpus=corpus, num_chars=TOKENIZER_CHARS[corpus],
                                    num_merges=TOKENIZER_MERGES))]


def corpus_tokenizer(corpus: str, vocab_size: int):
    """The tokenizer of a lecture run: byte-level BPE trained on ``corpus``.

    ``vocab_size`` 256 is :class:`ByteTokenizer` (no merges, no special token);
    ``257 + k`` (``k`` up to :data:`TOKENIZER_MERGES`) keeps the first ``k``
    merges of the tokenization lecture's run on that corpus (its first
    :data:`TOKENIZER_CHARS` characters), plus ``<|endoftext|>`` at id 256: the
    vocabulary a run of ``k`` merges learns.
    """
    check_choice("corpus", corpus, CORPORA)
    check_int("vocab_size", vocab_size, minimum=256, maximum=257 + TOKENIZER_MERGES)
    runs: list[TrainedBPE] = part_results(_tokenizer_parts, corpus, vocab_size)
    if not runs:
        return ByteTokenizer()
    [run] = runs
    return run.tokenizer(vocab_size - 257)


@cached(parts=_tokenizer_parts, cost=1.0)  # seconds on one core, the Tang poems
def corpus_ids(corpus: str, vocab_size: int) -> np.ndarray:
    """The whole of ``corpus`` as ids of :func:`corpus_tokenizer` (``uint16``).

    Cached: encoded once for every run that trains on it (and the notebook).
    """
    tokenizer = corpus_tokenizer(corpus, vocab_size)
    return np.asarray(tokenizer.encode(corpus_text(corpus)), dtype=np.uint16)


def _corpus_parts(corpus: str, vocab_size: int = LECTURE_VOCAB, **_: object) -> list:
    """The cache parts of every run that trains on :func:`corpus_ids`."""
    return [(corpus_ids, dict(corpus=corpus, vocab_size=vocab_size))]


def _tokens(corpus: str, vocab_size: int) -> tuple[np.ndarray, np.ndarray, str]:
    """``(train, validation, prompt)`` ids and prompt for ``corpus``."""
    train_ids, val_ids = split_tokens(corpus_ids(corpus, vocab_size), 0.1)
    if corpus in PROMPTS:
        prompt = PROMPTS[corpus]
    else:  # the first whole line of the held-out text
        held_out = corpus_tokenizer(corpus, vocab_size).decode(val_ids[:400])
        prompt = next(l for l in held_out.split("\n")[1:] if l) + "\n"
    return train_ids, val_ids, prompt


# --- (1) the loss of an untrained model --------------------------------------------


@dataclasses.dataclass
class LossAtInitResult:
    """Cross-entropy of untrained models against ``ln(vocab_size)``.

    Attributes:
        vocab_sizes: Vocabulary size of each untrained model.
        losses: Its mean cross-entropy on random token ids (nats).
        perplexities: ``exp(loss)``.
        log_vocab: ``ln(vocab_size)``, the loss of a uniform guess.
        torch_losses: ``F.cross_entropy`` on the same logits.
        big_logits: A row of logits with a huge spread.
        naive_loss: ``-log(softmax(big_logits))[target]``: ``inf``.
        stable_loss: :func:`cross_entropy` of the same: finite.
        target: The target of that row.
        d_model, num_layers, context_length, batch_size: Model and batch settings.
    """

    vocab_sizes: list[int]
    losses: list[float]
    perplexities: list[float]
    log_vocab: list[float]
    torch_losses: list[float]
    big_logits: list[float]
    naive_loss: float
    stable_loss: float
    target: int
    d_model: int
    num_layers: int
    context_length: int
    batch_size: int


@cached
def run_loss_at_init(
    vocab_sizes: tuple[int, ...] = (256, 1024, 4096),
    d_model: int = 64,
    num_layers: int = 2,
    context_length: int = 64,
    batch_size: int = 8,
    seed: int = 0,
) -> LossAtInitResult:
    """Loss and perplexity of freshly initialised models, and the overflow demo.

    Taught on: "Training and generating text".
    """
    check_sizes("vocab_sizes", vocab_sizes, minimum=2)
    for name, value in (("d_model", d_model), ("num_layers", num_layers),
                        ("context_length", context_length), ("batch_size", batch_size)):
        check_int(name, value)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    losses, ppls, logv, ref = [], [], [], []
    for vocab_size in vocab_sizes:
        model = TransformerLM(vocab_size, context_length, d_model, num_layers, 4,
                              swiglu_hidden_dim(d_model, 16))
        ids = torch.randint(0, vocab_size, (batch_size, context_length + 1))
        with torch.no_grad():
            logits = model(ids[:, :-1])  # (B, T, V)
        loss = float(cross_entropy(logits, ids[:, 1:]))
        losses.append(loss)
        ppls.append(perplexity(loss))
        logv.append(math.log(vocab_size))
        ref.append(float(F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())))
    big = torch.tensor([[1000.0, 0.0, -1000.0]])
    target = torch.tensor([2])
    naive = float(-torch.log(softmax(big, dim=-1))[0, 2])
    return LossAtInitResult(
        list(vocab_sizes), losses, ppls, logv, ref, big[0].tolist(), naive,
        float(cross_entropy(big, target)), 2, d_model, num_layers, context_length,
        batch_size,
    )


# --- (2) optimiser, schedule, clipping ----------------------------------------------


@dataclasses.dataclass
class AdamWCheckResult:
    """Our AdamW and ``torch.optim.AdamW`` trained side by side from equal weights.

    Attributes:
        steps: Steps taken (the two runs never re-synchronise).
        max_abs_diff: Largest weight difference after each step.
        losses_ours: Training loss of each step, our optimiser.
        losses_torch: The same with ``torch.optim.AdamW``.
        lr, betas, eps, weight_decay: The optimiser settings.
        n_parameters: Parameters of the model trained.
    """

    steps: int
    max_abs_diff: list[float]
    losses_ours: list[float]
    losses_torch: list[float]
    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    n_parameters: int

    @property
    def final_max_abs_diff(self) -> float:
        """The weight difference at the end."""
        return self.max_abs_diff[-1]


@cached(cost=0.4)  # builds optimizers: a child computes it (see CONTRIBUTING)
def run_adamw_check(
    steps: int = 60,
    lr: float = 3e-3,
    betas: tuple[float, float] = (0.9, 0.95),
    eps: float = 1e-8,
    weight_decay: float = 0.1,
    seed: int = 0,
) -> AdamWCheckResult:
    """Train one small model twice, with our AdamW and torch's; compare the weights.

    Taught on: "Training and generating text".
    """
    check_int("steps", steps)
    check_int("seed", seed, minimum=0)  # lr, betas, eps, weight_decay: AdamW checks
    torch.manual_seed(seed)
    ours = TransformerLM(64, 16, 32, 1, 2, 64)
    theirs = TransformerLM(64, 16, 32, 1, 2, 64)
    theirs.load_state_dict(ours.state_dict())
    kwargs = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    opts = AdamW(ours.parameters(), **kwargs), torch.optim.AdamW(
        theirs.parameters(), **kwargs
    )
    data = torch.randint(0, 64, (4096,))
    gen = torch.Generator().manual_seed(seed)
    diffs, losses = [], ([], [])
    for _ in range(steps):
        x, y = get_batch(data, 8, 16, generator=gen)
        for model, opt, record in zip((ours, theirs), opts, losses):
            loss = cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            record.append(loss.item())
        with torch.no_grad():
            diffs.append(max(float((p - q).abs().max())
                             for p, q in zip(ours.parameters(), theirs.parameters())))
    n_params = sum(p.numel() for p in ours.parameters())
    return AdamWCheckResult(steps, diffs, losses[0], losses[1], lr, betas, eps,
                            weight_decay, n_params)


@dataclasses.dataclass
class LrScheduleResult:
    """The cosine schedule's learning rate at every iteration.

    Attributes:
        iterations: ``0 .. total_iters - 1``.
        learning_rates: ``get_lr_cosine_schedule`` at each.
        max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters:
            The schedule's settings.
    """

    iterations: list[int]
    learning_rates: list[float]
    max_learning_rate: float
    min_learning_rate: float
    warmup_iters: int
    cosine_cycle_iters: int


@cached
def run_lr_schedule(
    max_learning_rate: float = 1e-2,
    min_learning_rate: float = 1e-3,
    warmup_iters: int = 15,
    cosine_cycle_iters: int = 150,
    total_iters: int = 180,
    seed: int = 0,
) -> LrScheduleResult:
    """The schedule of the lecture's training runs, and past its end (the floor).

    ``seed`` is unused (the schedule is a formula); it keeps the experiment
    interface.

    Taught on: "Training and generating text".
    """
    check_int("total_iters", total_iters)
    check_int("seed", seed, minimum=0)
    cosine_schedule(max_learning_rate, min_learning_rate, warmup_iters,
                    cosine_cycle_iters)  # checks the settings
    its = list(range(total_iters))
    lrs = [get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate,
                                  warmup_iters, cosine_cycle_iters) for it in its]
    return LrScheduleResult(its, lrs, max_learning_rate, min_learning_rate,
                            warmup_iters, cosine_cycle_iters)


@dataclasses.dataclass
class GradientClippingResult:
    """Clipping one set of gradients with ours and with ``clip_grad_norm_``.

    Attributes:
        max_l2_norm: The clip threshold.
        norm_before: Global gradient norm before clipping (ours).
        norm_after: After our clipping.
        torch_norm_before: What ``clip_grad_norm_`` reports.
        torch_norm_after: Global norm after torch's clipping.
        max_grad_diff: Largest difference between the two clipped gradients.
        direction_cosine: Cosine between the gradient before and after (1: clipping
            only rescales).
    """

    max_l2_norm: float
    norm_before: float
    norm_after: float
    torch_norm_before: float
    torch_norm_after: float
    max_grad_diff: float
    direction_cosine: float


@cached
def run_gradient_clipping(
    max_l2_norm: float = 0.1, seed: int = 0
) -> GradientClippingResult:
    """The gradient of an untrained model's loss, clipped both ways.

    The threshold is below the gradient's norm, so clipping acts.

    Taught on: "Training and generating text".
    """
    check_finite_float("max_l2_norm", max_l2_norm, minimum=0.0, open_min=True)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    a = TransformerLM(256, 32, 64, 2, 4, 176)
    b = TransformerLM(256, 32, 64, 2, 4, 176)
    b.load_state_dict(a.state_dict())
    ids = torch.randint(0, 256, (8, 33))
    for model in (a, b):
        cross_entropy(model(ids[:, :-1]), ids[:, 1:]).backward()
    before = torch.cat([p.grad.flatten() for p in a.parameters()]).clone()
    norm = gradient_clipping(a.parameters(), max_l2_norm)
    torch_norm = float(nn.utils.clip_grad_norm_(b.parameters(), max_l2_norm))
    ours = torch.cat([p.grad.flatten() for p in a.parameters()])
    theirs = torch.cat([p.grad.flatten() for p in b.parameters()])
    cosine = float(F.cosine_similarity(before, ours, dim=0))
    return GradientClippingResult(
        max_l2_norm, norm, float(ours.norm()), torch_norm, float(theirs.norm()),
        float((ours - theirs).abs().max()), cosine,
    )


# --- (3) a training run per corpus --------------------------------------------------


@dataclasses.dataclass
class Sample:
    """Texts generated from the run's prompt at one point of training.

    Attributes:
        iteration: Steps done when they were generated.
        texts: Continuations (without the prompt), drawn side by side as one batch
            with one seeded generator; show the first, count them all.
        shaped_lines: Lines of all ``texts`` with the poem shape (Tang only; see
            :func:`poem_shape_share`, applied to each text).
        lines: Lines counted.
        couplet_lines: Lines that are couplets, halves of any length (Tang only;
            see :func:`poem_halves`).
    """

    iteration: int
    texts: list[str]
    shaped_lines: int
    lines: int
    couplet_lines: int

    @property
    def text(self) -> str:
        """The first continuation, the one to show."""
        return self.texts[0]

    @property
    def line_texts(self) -> list[str]:
        """The lines counted in ``lines``, text by text (:func:`poem_lines`)."""
        return [line for text in self.texts for line in poem_lines(text)]

    @property
    def shape_share(self) -> float:
        """``shaped_lines / lines`` (0.0 when no line was counted)."""
        return self.shaped_lines / self.lines if self.lines else 0.0


@dataclasses.dataclass
class TrainingRunResult:
    """One tiny model trained on one corpus, its ids from :func:`corpus_tokenizer`.

    Attributes:
        corpus: ``"shakespeare"`` or ``"tang"``.
        settings: Model and optimisation settings (``vocab_size`` included).
        tokenizer: ``"bpe"`` (byte-level BPE trained on the corpus) or ``"bytes"``
            (token ids are UTF-8 bytes).
        num_merges: The BPE's merges (``vocab_size - 257``; 0 for bytes).
        tokenizer_chars: Characters the BPE was trained on, the corpus's first
            (inside the training split; 0 for bytes).
        train_tokens: Tokens in the training split (first 90 % of the ids).
        val_tokens: Tokens in the validation split (last 10 %).
        train_chars, val_chars: Characters those tokens decode to.
        n_parameters: All parameters.
        n_non_embedding: Parameters without the token-embedding table (a lookup,
            no multiply-adds); the output layer is counted.
        n_matmul: Parameters that multiply an activation
            (``config.matmul_parameter_count()``: no embedding table, no norm gains).
        tokens_seen: Training tokens processed (``steps · batch · context``).
        flops: :func:`llmlab.flops.flops_per_token` (``6·n_matmul + 12·L·d·T``, the
            attention scores included) times ``tokens_seen``.
        iterations: Steps done after each step.
        train_losses: Training loss per step.
        learning_rates: Learning rate per step.
        grad_norms: Gradient norm before clipping, per step.
        val_iterations: Where validation loss was measured.
        val_losses: Validation loss there, each over the same ``eval_batches ·
            batch_size`` windows spread over the validation split.
        eval_batches: Forward passes per point of that curve.
        eval_windows: Windows per block below (``eval_batches · batch_size``: a
            block holds as many tokens as a point of the curve).
        val_block_losses: The trained model's loss on each block of consecutive
            windows of the validation split, the blocks disjoint and covering it.
        train_block_losses: The same model on as many blocks of the training
            split, evenly spaced (eval mode, no update: the two are comparable).
        log_vocab: ``ln(vocab_size)``, the loss of a uniform guess.
        prompt: The prompt of the samples.
        sample_temperature: Their sampling temperature.
        sample_tokens: Tokens per sample text.
        samples: Samples at the start, the middle and the end of training.
        corpus_shaped_lines, corpus_lines: The poem-shape count of the validation
            text itself (Tang only; a reference for the samples).
        corpus_couplet_lines: Its couplet lines (:func:`poem_halves`).
        corpus_half_lengths: ``(length, halves)`` pairs over those lines' halves,
            shortest first.
        char_tokens: ``(tokens, characters)`` pairs: how many of the validation
            text's Chinese characters take 1, 2, 3 tokens, each encoded alone (Tang
            only; fewest tokens first).
        state_dict: The trained weights (CPU tensors).
    """

    corpus: str
    settings: TinyLMSettings
    tokenizer: str
    num_merges: int
    tokenizer_chars: int
    train_tokens: int
    val_tokens: int
    train_chars: int
    val_chars: int
    n_parameters: int
    n_non_embedding: int
    n_matmul: int
    tokens_seen: int
    flops: float
    iterations: list[int]
    train_losses: list[float]
    learning_rates: list[float]
    grad_norms: list[float]
    val_iterations: list[int]
    val_losses: list[float]
    eval_batches: int
    eval_windows: int
    val_block_losses: list[float]
    train_block_losses: list[float]
    log_vocab: float
    prompt: str
    sample_temperature: float
    sample_tokens: int
    samples: list[Sample]
    corpus_shaped_lines: int
    corpus_lines: int
    corpus_couplet_lines: int
    corpus_half_lengths: list[tuple[int, int]]
    char_tokens: list[tuple[int, int]]
    state_dict: dict[str, Tensor]

    @property
    def final_val_loss(self) -> float:
        """Validation loss after the last step."""
        return self.val_losses[-1]

    @property
    def block_tokens(self) -> int:
        """Tokens scored per block (and per point of the validation curve)."""
        return self.eval_windows * self.settings.context_length

    @property
    def held_out_loss(self) -> float:
        """The trained model's mean loss over the whole validation split."""
        return statistics.mean(self.val_block_losses)

    @property
    def held_out_error(self) -> float:
        """Standard error of :attr:`held_out_loss` (block spread / √blocks)."""
        return _standard_error(self.val_block_losses)

    @property
    def block_spread(self) -> float:
        """Standard deviation of the validation blocks' losses: the noise of one
        point of the curve, which scores as many tokens as a block."""
        return statistics.stdev(self.val_block_losses)

    @property
    def train_split_loss(self) -> float:
        """The trained model's mean loss on the training blocks."""
        return statistics.mean(self.train_block_losses)

    @property
    def train_split_error(self) -> float:
        """Standard error of :attr:`train_split_loss`."""
        return _standard_error(self.train_block_losses)

    @property
    def chars_per_token(self) -> float:
        """Characters per token of the validation text."""
        return self.val_chars / self.val_tokens

    @property
    def val_loss_vs_uniform(self) -> float:
        """``final_val_loss / ln(vocab_size)``: far below 1 once it has learnt."""
        return self.final_val_loss / self.log_vocab

    @property
    def corpus_shape_share(self) -> float:
        """Share of the validation text's lines with the poem shape (Tang)."""
        if not self.corpus_lines:
            return 0.0
        return self.corpus_shaped_lines / self.corpus_lines

    @property
    def clipped_steps(self) -> int:
        """Steps whose gradient norm exceeded ``settings.max_grad_norm``."""
        return sum(norm > self.settings.max_grad_norm for norm in self.grad_norms)

    def model(self) -> TransformerLM:
        """The trained model, rebuilt from :attr:`state_dict` (in eval mode)."""
        model = self.settings.model()
        model.load_state_dict(self.state_dict)
        return model.eval()


def _standard_error(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values))


def block_losses(model: nn.Module, ids: np.ndarray, windows: int, context_length: int,
                 num_blocks: int | None = None) -> list[float]:
    """Loss of ``model`` on disjoint blocks of ``windows`` consecutive windows of ``ids``.

    Each block is one :func:`~llmlab.training.estimate_loss` call (one forward pass
    of ``windows`` windows of ``context_length`` tokens, each window's targets its
    inputs shifted by one). ``num_blocks`` blocks evenly spaced over ``ids``, or
    (``None``) as many as fit: then the blocks cover ``ids``.

    Taught on: "Training and generating text".
    """
    check_type("model", model, nn.Module, expected="a torch.nn.Module")
    check_int("windows", windows)
    check_int("context_length", context_length)
    size = windows * context_length  # tokens scored per block
    fit = (len(ids) - 1) // size
    if fit < 2:
        raise ValueError(f"ids holds {len(ids)} tokens: fewer than two blocks of "
                         f"{size} (windows · context_length)")
    n = fit if num_blocks is None else check_int("num_blocks", num_blocks, minimum=2,
                                                  maximum=fit)
    starts = np.linspace(0, len(ids) - size - 1, n).round().astype(np.int64)
    return [estimate_loss(model, ids[s:s + size + 1], windows, context_length, 1)
            for s in starts]


@cached(parts=_corpus_parts, cost=6.0)  # seconds on one core, per corpus
def run_training_run(
    corpus: str = "shakespeare",
    steps: int | None = None,
    vocab_size: int = LECTURE_VOCAB,
    batch_size: int = 16,
    context_length: int = 64,
    d_model: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    d_ff: int = 176,
    max_lr: float = 1e-2,
    eval_every: int = 20,
    eval_batches: int = 4,
    sample_rows: tuple[int, int, int] | None = None,
    sample_tokens: int = 100,
    sample_temperature: float = 0.6,
    seed: int = 0,
) -> TrainingRunResult:
    """Train a tiny Llama-style model on ``corpus`` with our loop, AdamW and schedule.

    The corpus becomes ids with :func:`corpus_tokenizer` (byte-level BPE trained
    on that corpus; by default with all :data:`TOKENIZER_MERGES` merges, 256 is
    plain bytes); the last 10 % of the ids is held out for validation. Warm-up is a
    tenth of the steps, the cosine ends at ``steps`` at a tenth of ``max_lr``.
    The validation curve scores ``eval_batches · batch_size`` windows per point;
    the trained model is then scored on the whole validation split and on as many
    tokens of the training split, block by block (:func:`block_losses`).
    ``steps`` and ``sample_rows`` (texts sampled at the start, the middle and the
    end) default to :data:`CORPUS_STEPS` and :data:`CORPUS_SAMPLE_ROWS`. Samples
    are drawn with their own seeded generator (the batches' generator is not
    touched), so they change nothing else.

    Taught on: "Training and generating text".
    """
    check_choice("corpus", corpus, CORPORA)
    steps = CORPUS_STEPS[corpus] if steps is None else check_int("steps", steps,
                                                                  minimum=2)
    rows = CORPUS_SAMPLE_ROWS[corpus] if sample_rows is None else sample_rows
    if len(check_sizes("sample_rows", rows)) != 3:
        raise ValueError("sample_rows must be 3 counts (start, middle, end), got "
                         f"{rows!r}")
    check_int("eval_every", eval_every)
    check_int("eval_batches", eval_batches)
    check_int("sample_tokens", sample_tokens)
    check_finite_float("sample_temperature", sample_temperature, minimum=0.0,
                       open_min=True)
    check_int("seed", seed, minimum=0)
    tokenizer = corpus_tokenizer(corpus, vocab_size)
    settings = _settings(vocab_size=vocab_size, steps=steps, batch_size=batch_size,
                         context_length=context_length, d_model=d_model,
                         num_layers=num_layers, num_heads=num_heads, d_ff=d_ff,
                         max_lr=max_lr, min_lr=max_lr / 10,
                         warmup_iters=max(1, steps // 10))
    train_ids, val_ids, prompt = _tokens(corpus, vocab_size)
    torch.manual_seed(seed)
    model = settings.model()
    samples: list[Sample] = []

    def sample(iteration: int, n_rows: int) -> None:
        texts = generate(model, [tokenizer.encode(prompt)] * n_rows, sample_tokens,
                         temperature=sample_temperature,
                         generator=torch.Generator().manual_seed(seed))
        texts = [tokenizer.decode(row) for row in texts]
        tang = corpus == "tang"
        counts = [poem_shape_share(t) if tang else (0, 0) for t in texts]
        couplets = sum(len(poem_halves(t)) for t in texts) if tang else 0
        samples.append(Sample(iteration, texts, sum(c[0] for c in counts),
                              sum(c[1] for c in counts), couplets))

    def at_middle(event: TrainEvent) -> None:
        if event.iteration == steps // 2:
            sample(event.iteration, rows[1])

    sample(0, rows[0])
    result = train(model, settings.optimizer(model), train_ids, steps=steps,
                   batch_size=batch_size, val_data=val_ids, eval_every=eval_every,
                   eval_batches=eval_batches, lr_schedule=settings.schedule(),
                   max_grad_norm=settings.max_grad_norm, seed=seed, callback=at_middle)
    sample(steps, rows[2])
    windows = eval_batches * batch_size
    val_blocks = block_losses(model, val_ids, windows, context_length)
    train_blocks = block_losses(model, train_ids, windows, context_length,
                                len(val_blocks))
    n_params = sum(p.numel() for p in model.parameters())
    n_non_embedding = n_params - model.token_embeddings.weight.numel()
    config = settings.config
    n_matmul = config.matmul_parameter_count()
    per_token = flops_per_token(n_matmul, config.num_layers, config.d_model,
                                config.context_length)
    val_text = tokenizer.decode(val_ids)
    train_text = tokenizer.decode(train_ids)
    corpus_shape, halves, char_tokens = (0, 0), [], {}
    if corpus == "tang":
        corpus_shape, halves = poem_shape_share(val_text), poem_halves(val_text)
        chars = collections.Counter(c for c in val_text if re.fullmatch(HAN_CHARACTER, c))
        for c, n in chars.items():
            k = len(tokenizer.encode(c))
            char_tokens[k] = char_tokens.get(k, 0) + n
    half_lengths = collections.Counter(n for pair in halves for n in pair)
    return TrainingRunResult(
        corpus=corpus, settings=settings,
        tokenizer="bytes" if vocab_size == 256 else "bpe",
        num_merges=max(0, vocab_size - 257),
        tokenizer_chars=0 if vocab_size == 256 else TOKENIZER_CHARS[corpus],
        train_tokens=len(train_ids), val_tokens=len(val_ids),
        train_chars=len(train_text), val_chars=len(val_text),
        n_parameters=n_params,
        n_non_embedding=n_non_embedding, n_matmul=n_matmul,
        tokens_seen=result.tokens_seen, flops=per_token * result.tokens_seen,
        iterations=result.iterations, train_losses=result.losses,
        learning_rates=result.learning_rates, grad_norms=result.grad_norms,
        val_iterations=result.val_iterations, val_losses=result.val_losses,
        eval_batches=eval_batches, eval_windows=windows,
        val_block_losses=val_blocks, train_block_losses=train_blocks,
        log_vocab=math.log(settings.vocab_size), prompt=prompt,
        sample_temperature=sample_temperature, sample_tokens=sample_tokens,
        samples=samples,
        corpus_shaped_lines=corpus_shape[0], corpus_lines=corpus_shape[1],
        corpus_couplet_lines=len(halves),
        corpus_half_lengths=sorted(half_lengths.items()),
        char_tokens=sorted(char_tokens.items()),
        state_dict={k: v.detach().clone() for k, v in model.state_dict().items()},
    )


# --- (3b) the same loop, pushed: a high learning rate, a tiny corpus -----------------


@dataclasses.dataclass
class HighLearningRateResult:
    """A short run of the lecture's model at a high peak learning rate.

    Attributes:
        corpus: The corpus trained on.
        settings: Model and optimisation settings (``max_lr`` the high one).
        iterations: Steps done after each step.
        train_losses: Training loss per step.
        grad_norms: Gradient norm before clipping, per step.
    """

    corpus: str
    settings: TinyLMSettings
    iterations: list[int]
    train_losses: list[float]
    grad_norms: list[float]

    @property
    def clipped_steps(self) -> int:
        """Steps whose gradient norm exceeded the threshold (and were clipped)."""
        return sum(norm > self.settings.max_grad_norm for norm in self.grad_norms)


@cached(parts=_corpus_parts, cost=2.0)
def run_high_learning_rate(
    corpus: str = "shakespeare",
    max_lr: float = 5e-2,
    steps: int = 30,
    seed: int = 0,
) -> HighLearningRateResult:
    """:func:`run_training_run`'s model and loop for ``steps`` steps at ``max_lr``.

    Warm-up is a tenth of the steps; the gradient is clipped at the lecture's
    threshold. No validation, no samples: only what the gradient norm does.

    Taught on: "Training and generating text".
    """
    check_choice("corpus", corpus, CORPORA)
    check_int("steps", steps, minimum=2)
    check_int("seed", seed, minimum=0)  # max_lr: TinyLMSettings checks it
    settings = _settings(vocab_size=LECTURE_VOCAB, steps=steps, max_lr=max_lr,
                         min_lr=max_lr / 10, warmup_iters=max(1, steps // 10))
    train_ids, _, _ = _tokens(corpus, LECTURE_VOCAB)
    torch.manual_seed(seed)
    model = settings.model()
    result = train(model, settings.optimizer(model), train_ids, steps=steps,
                   batch_size=settings.batch_size, lr_schedule=settings.schedule(),
                   max_grad_norm=settings.max_grad_norm, seed=seed)
    return HighLearningRateResult(corpus, settings, result.iterations, result.losses,
                                  result.grad_norms)


@dataclasses.dataclass
class OverfittingResult:
    """The lecture's model trained over and over on a tiny slice of a corpus.

    Attributes:
        corpus: The corpus.
        settings: Model and optimisation settings.
        train_tokens: Tokens of the slice trained on (the training split's first).
        iterations: Steps done after each step.
        train_losses: Training loss per step (batches drawn from the slice).
        val_iterations: Where validation loss was measured.
        val_losses: Loss on the validation split there.
        tokens_seen: Tokens trained on, repeats included.
    """

    corpus: str
    settings: TinyLMSettings
    train_tokens: int
    iterations: list[int]
    train_losses: list[float]
    val_iterations: list[int]
    val_losses: list[float]
    tokens_seen: int

    @property
    def epochs(self) -> float:
        """Passes over the slice: ``tokens_seen / train_tokens``."""
        return self.tokens_seen / self.train_tokens

    @property
    def best_val_iteration(self) -> int:
        """The step at which validation loss was lowest."""
        return self.val_iterations[self.val_losses.index(min(self.val_losses))]


@cached(parts=_corpus_parts, cost=3.0)
def run_overfitting(
    corpus: str = "shakespeare",
    train_tokens: int = 2048,
    steps: int = 60,
    batch_size: int = 8,
    eval_every: int = 10,
    seed: int = 0,
) -> OverfittingResult:
    """Train the lecture's model on the first ``train_tokens`` tokens only.

    The validation split is the whole corpus's last tenth, as in
    :func:`run_training_run`; the schedule is the lecture's (warm-up a tenth of
    the steps, cosine to a tenth of the peak).

    Taught on: "Training and generating text".
    """
    check_choice("corpus", corpus, CORPORA)
    check_int("steps", steps, minimum=2)
    check_int("eval_every", eval_every)
    check_int("seed", seed, minimum=0)
    settings = _settings(vocab_size=LECTURE_VOCAB, steps=steps, batch_size=batch_size,
                         warmup_iters=max(1, steps // 10))
    check_int("train_tokens", train_tokens, minimum=settings.context_length + 1)
    train_ids, val_ids, _ = _tokens(corpus, LECTURE_VOCAB)
    check_int("train_tokens", train_tokens, maximum=len(train_ids))
    torch.manual_seed(seed)
    model = settings.model()
    result = train(model, settings.optimizer(model), train_ids[:train_tokens],
                   steps=steps, batch_size=batch_size, val_data=val_ids,
                   eval_every=eval_every, eval_batches=2, lr_schedule=settings.schedule(),
                   max_grad_norm=settings.max_grad_norm, seed=seed)
    return OverfittingResult(corpus, settings, train_tokens, result.iterations,
                             result.losses, result.val_iterations, result.val_losses,
                             result.tokens_seen)


# --- (4) decoding rules -------------------------------------------------------------


@dataclasses.dataclass
class SamplingResult:
    """One prompt continued under several decoding rules, and the next-token odds.

    Attributes:
        corpus: The training run whose model is used.
        prompt: The prompt.
        rules: A name per rule: ``"greedy"``, ``"temperature=0.5"``, ...
        texts: The continuation under each rule (same seed for all).
        max_new_tokens: Tokens generated per rule.
        top_tokens: The most likely next tokens after the prompt (as text;
            ``"\\n"`` for a newline; a token that is part of a character decodes
            to U+FFFD).
        vocab_size: The model's vocabulary.
        distributions: For each of ``distribution_rules``, the probability of each
            of ``top_tokens``.
        distribution_rules: The rules whose next-token distribution is shown.
        kept: Number of tokens with non-zero probability under each of those.
        entropies: Entropy (nats) of each of those distributions.
    """

    corpus: str
    prompt: str
    rules: list[str]
    texts: list[str]
    max_new_tokens: int
    vocab_size: int
    top_tokens: list[str]
    distributions: list[list[float]]
    distribution_rules: list[str]
    kept: list[int]
    entropies: list[float]


_RULES: dict[str, dict] = {
    "greedy": dict(greedy=True),
    "temperature=0.5": dict(temperature=0.5),
    "temperature=1.0": dict(temperature=1.0),
    "temperature=1.5": dict(temperature=1.5),
    "top_k=5": dict(top_k=5),
    "top_p=0.9": dict(top_p=0.9),
}


def _sampling_parts(corpus: str, **_: object) -> list:
    """The training run :func:`run_sampling` continues the prompt with."""
    return [(run_training_run, dict(corpus=corpus))]


@cached(parts=_sampling_parts, cost=0.7)
def run_sampling(
    corpus: str = "shakespeare",
    prompt: str = "ROMEO:\nThou art",
    max_new_tokens: int = 80,
    n_top: int = 10,
    seed: int = 0,
) -> SamplingResult:
    """Continue ``prompt`` with the trained model of :func:`run_training_run`.

    Taught on: "Training and generating text".
    """
    check_choice("corpus", corpus, CORPORA)
    check_str("prompt", prompt, nonempty=True)
    check_int("max_new_tokens", max_new_tokens)
    check_int("n_top", n_top, maximum=LECTURE_VOCAB)
    check_int("seed", seed, minimum=0)
    [run] = part_results(_sampling_parts, corpus)
    model = run.model()
    tokenizer = corpus_tokenizer(corpus, run.settings.vocab_size)
    ids = tokenizer.encode(prompt)
    texts = []
    for settings in _RULES.values():
        out = generate(model, ids, max_new_tokens, **settings,
                       generator=torch.Generator().manual_seed(seed))
        texts.append(tokenizer.decode(out))
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0, -1]  # (V,)
    order = logits.argsort(descending=True)[:n_top].tolist()
    rules = ["temperature=1.0", "temperature=0.5", "temperature=1.5", "top_k=5",
             "top_p=0.9"]
    dists, kept, entropies = [], [], []
    for rule in rules:
        probs = next_token_probabilities(logits, **_RULES[rule])
        dists.append([float(probs[i]) for i in order])
        kept.append(int((probs > 0).sum()))
        nz = probs[probs > 0]
        entropies.append(float(-(nz * nz.log()).sum()))
    top_tokens = [tokenizer.decode([i]) for i in order]
    return SamplingResult(corpus, prompt, list(_RULES), texts, max_new_tokens,
                          run.settings.vocab_size, top_tokens, dists, rules, kept,
                          entropies)


# --- (5) the KV cache ---------------------------------------------------------------


@dataclasses.dataclass
class KVCacheCheckResult:
    """Logits with the cache against the full recomputation; memory by formula.

    Attributes:
        prompt_lengths: Tokens fed at once before decoding one at a time.
        max_abs_diff: For each, the largest logit difference over every position
            up to the context length.
        tokens: Tokens cached, for the memory rows.
        formula_bytes: ``kv_cache_bytes`` for each.
        tensor_bytes: The cached tensors' ``nbytes`` for each.
        llama2_7b_bytes_per_token: The formula for Llama 2 7B, fp16, per token.
        llama2_7b_full_context_bytes: The same for its full 4,096-token context.
        num_layers, num_heads, d_head, context_length, vocab_size, d_model: The
            model checked.
    """

    prompt_lengths: list[int]
    max_abs_diff: list[float]
    tokens: list[int]
    formula_bytes: list[int]
    tensor_bytes: list[int]
    llama2_7b_bytes_per_token: int
    llama2_7b_full_context_bytes: int
    num_layers: int
    num_heads: int
    d_head: int
    context_length: int
    vocab_size: int
    d_model: int


@cached(cost=0.4)
def run_kv_cache_check(
    prompt_lengths: tuple[int, ...] = (1, 8, 32, 63),
    context_length: int = 64,
    d_model: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    seed: int = 0,
) -> KVCacheCheckResult:
    """Feed a prompt, then one token at a time up to the context, with the cache.

    Taught on: "Training and generating text".
    """
    check_int("context_length", context_length, minimum=2)
    check_sizes("prompt_lengths", prompt_lengths, maximum=context_length)
    check_int("seed", seed, minimum=0)  # d_model, num_layers, num_heads: LlamaConfig
    torch.manual_seed(seed)
    model = TransformerLM(256, context_length, d_model, num_layers, num_heads,
                          swiglu_hidden_dim(d_model, 16)).eval()
    ids = torch.randint(0, 256, (1, context_length))
    diffs, tokens, formula, real = [], [], [], []
    with torch.no_grad():
        full = model(ids)  # (1, T, V): every position recomputed at once
        for n in prompt_lengths:
            cache = KVCache(num_layers, context_length)
            parts = [model(ids[:, :n], kv_cache=cache)]
            for t in range(n, context_length):
                parts.append(model(ids[:, t:t + 1], kv_cache=cache))
            diffs.append(float((torch.cat(parts, 1) - full).abs().max()))
        cache = KVCache(num_layers, context_length)
        for t in range(context_length):
            model(ids[:, t:t + 1], kv_cache=cache)
            if (t + 1) in (1, 16, 32, context_length):
                tokens.append(t + 1)
                real.append(cache.nbytes())
                formula.append(kv_cache_bytes(num_layers, num_heads,
                                              d_model // num_heads, t + 1))
    big = LLAMA2_7B
    per_token = kv_cache_bytes(big.num_layers, big.kv_heads,
                               big.d_model // big.num_heads, 1, bytes_per_element=2)
    return KVCacheCheckResult(
        list(prompt_lengths), diffs, tokens, formula, real, per_token,
        per_token * big.context_length, num_layers, num_heads, d_model // num_heads,
        context_length, 256, d_model,
    )


@dataclasses.dataclass
class KVCacheStepsResult:
    """What each call of generation with a :class:`~llmlab.kv_cache.KVCache` feeds and caches.

    Attributes:
        fed: Positions fed by each call: the prompt's length, then 1 per new token.
        key_shapes: After each call, the shape of block 0's cached keys,
            ``(B, num_heads, T, d_head)``.
        num_layers: Blocks of the model.
        num_heads: Heads per block.
        d_head: Size of each head.
    """

    fed: list[int]
    key_shapes: list[tuple[int, ...]]
    num_layers: int
    num_heads: int
    d_head: int


@cached
def run_kv_cache_steps(prompt_len: int = 3, new_tokens: int = 3, seed: int = 0
                       ) -> KVCacheStepsResult:
    """Feed a small :class:`~llmlab.models.llama.TransformerLM` (2 blocks, 2 heads of
    4) a prompt of ``prompt_len`` tokens in one call, then ``new_tokens`` tokens one
    call each, with one :class:`~llmlab.kv_cache.KVCache`; record what each call fed
    and the shape of block 0's cached keys after it.

    Args:
        prompt_len: Tokens of the prompt.
        new_tokens: Tokens generated after it.
        seed: Seed of the model's weights (under a forked RNG) and of the token ids.
    """
    prompt_len = check_int("prompt_len", prompt_len)
    new_tokens = check_int("new_tokens", new_tokens)
    check_int("seed", seed, minimum=0)
    num_layers, num_heads, d_model, vocab = 2, 2, 8, 16
    total = prompt_len + new_tokens
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = TransformerLM(vocab, total, d_model, num_layers, num_heads, 16).eval()
    ids = torch.randint(0, vocab, (1, total), generator=torch.Generator().manual_seed(seed))
    cache = KVCache(num_layers, total)
    fed: list[int] = []
    shapes: list[tuple[int, ...]] = []
    with torch.no_grad():
        for n in (prompt_len, *[1] * new_tokens):
            start = cache.seq_len
            model(ids[:, start:start + n], kv_cache=cache)
            fed.append(n)
            shapes.append(tuple(cache.layers[0].keys.shape))
    return KVCacheStepsResult(fed, shapes, num_layers, num_heads, d_model // num_heads)


# --- (6) checkpoint and resume ------------------------------------------------------


@dataclasses.dataclass
class CheckpointResumeResult:
    """``2N`` steps straight vs ``N`` steps, save, load into fresh objects, ``N`` more.

    Attributes:
        steps_each: N.
        weights_equal: ``torch.equal`` for every parameter after ``2N`` steps.
        losses_equal: The per-step losses of both runs are identical.
        max_abs_diff: Largest weight difference (0.0 when equal).
        without_generator_equal: The same comparison when the batch generator's
            state is *not* restored (a fresh generator with the same seed).
        without_generator_max_abs_diff: Its largest weight difference.
        checkpoint_bytes: Size of the checkpoint file.
        checkpoint_keys: What the checkpoint holds.
    """

    steps_each: int
    weights_equal: bool
    losses_equal: bool
    max_abs_diff: float
    without_generator_equal: bool
    without_generator_max_abs_diff: float
    checkpoint_bytes: int
    checkpoint_keys: list[str]


@cached(cost=0.2)  # builds optimizers: a child computes it
def run_checkpoint_resume(steps_each: int = 5, seed: int = 0) -> CheckpointResumeResult:
    """Resume equality on a small model, and what goes wrong without the RNG state.

    Taught on: "Training and generating text".
    """
    check_int("steps_each", steps_each)
    check_int("seed", seed, minimum=0)
    data = torch.randint(0, 64, (4096,), generator=torch.Generator().manual_seed(seed))
    settings = _settings(vocab_size=64, context_length=16, d_model=32, num_layers=1,
                         num_heads=2, d_ff=64, steps=2 * steps_each, warmup_iters=2)

    def fresh(model_seed: int) -> tuple[TransformerLM, AdamW]:
        torch.manual_seed(model_seed)
        model = settings.model()
        return model, settings.optimizer(model)

    def run(model, opt, gen, start):
        return train(model, opt, data, steps=steps_each, batch_size=4,
                     lr_schedule=settings.schedule(), generator=gen,
                     start_iteration=start).losses

    straight, opt = fresh(seed)
    gen = torch.Generator().manual_seed(seed)
    straight_losses = run(straight, opt, gen, 0) + run(straight, opt, gen, steps_each)
    first, opt1 = fresh(seed)
    gen1 = torch.Generator().manual_seed(seed)
    losses = run(first, opt1, gen1, 0)
    buffer = io.BytesIO()
    save_checkpoint(first, opt1, steps_each, buffer, generator=gen1)
    outcomes = []
    for restore_generator in (True, False):
        buffer.seek(0)
        model, opt2 = fresh(seed + 1)  # other weights: all must come from the file
        gen2 = torch.Generator().manual_seed(seed)
        start = load_checkpoint(buffer, model, opt2,
                                generator=gen2 if restore_generator else None)
        resumed = run(model, opt2, gen2, start)
        diff = max(float((p - q).detach().abs().max())
                   for p, q in zip(straight.parameters(), model.parameters()))
        equal = all(torch.equal(p, q)
                    for p, q in zip(straight.parameters(), model.parameters()))
        outcomes.append((equal, diff, losses + resumed == straight_losses))
    buffer.seek(0)
    keys = sorted(torch.load(buffer, weights_only=True))
    return CheckpointResumeResult(
        steps_each, outcomes[0][0], outcomes[0][2], outcomes[0][1], outcomes[1][0],
        outcomes[1][1], len(buffer.getvalue()), keys,
    )


# --- timings (machine-dependent, cached per machine) --------------------------------


def machine_description() -> str:
    """Processor and torch threads, e.g. ``"Intel Xeon ... (x86_64), 1 thread"``."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    name = f"{line.split(':', 1)[1].strip()} ({platform.machine()})"
                    break
    except OSError:
        pass
    threads = torch.get_num_threads()
    return f"{name}, {threads} thread{'s' if threads > 1 else ''}"


@dataclasses.dataclass
class ThroughputTiming:
    """Training speed of the lecture's model, loop and optimiser, and its parts.

    Attributes:
        machine: Processor and threads.
        tokens_per_s: Tokens/s of each repetition: ``steps`` steps of :func:`train`
            (``TransformerLM``, ``cross_entropy``, our ``AdamW``,
            ``gradient_clipping``), after a few warm-up steps.
        settings: The model and batch.
        steps: Timed steps per repetition.
        n_non_embedding: Parameters without the token embeddings.
        n_matmul: Parameters that multiply an activation.
        flops_per_token: :func:`llmlab.flops.flops_per_token` of the model at its
            context length (``6·n_matmul + 12·L·d·T``).
        forward_backward_seconds: Seconds of one forward and backward pass of a
            batch alone (what :func:`llmlab.flops.count_flops` counts), per repeat.
        eval_batch_seconds: Seconds of one validation forward pass
            (:func:`~llmlab.training.estimate_loss`, one batch), per repeat.
        decode_token_seconds: Seconds per generated token, one text with the KV
            cache (:func:`~llmlab.generation.generate`), per repeat.
        encode_chars_per_s: Characters per second of the BPE tokenizer's
            ``encode`` on the first 100,000 characters of Shakespeare.
    """

    machine: str
    tokens_per_s: list[float]
    settings: TinyLMSettings
    steps: int
    n_non_embedding: int
    n_matmul: int
    flops_per_token: float
    forward_backward_seconds: list[float]
    eval_batch_seconds: list[float]
    decode_token_seconds: list[float]
    encode_chars_per_s: float

    @property
    def median_tokens_per_s(self) -> float:
        """The median over repetitions."""
        return statistics.median(self.tokens_per_s)

    @property
    def batch_tokens(self) -> int:
        """Tokens per training step: ``batch_size · context_length``."""
        return self.settings.batch_size * self.settings.context_length

    @property
    def step_seconds(self) -> float:
        """Seconds per training step (median tokens/s)."""
        return self.batch_tokens / self.median_tokens_per_s

    @property
    def flops_per_s(self) -> float:
        """Model FLOPs per second of whole training steps."""
        return self.flops_per_token * self.median_tokens_per_s

    @property
    def forward_backward_flops_per_s(self) -> float:
        """Model FLOPs per second of the forward and backward pass alone."""
        seconds = statistics.median(self.forward_backward_seconds)
        return self.flops_per_token * self.batch_tokens / seconds


def _throughput_parts(settings: TinyLMSettings | None = None, **_: object) -> list:
    vocab_size = LECTURE_VOCAB if settings is None else settings.vocab_size
    return _tokenizer_parts("shakespeare", vocab_size)


def _median_seconds(fn: Callable[[], object], repeats: int) -> list[float]:
    """Seconds of each of ``repeats`` calls of ``fn``, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


@cached(parts=_throughput_parts, machine_dependent=True, cost=2.6)
def time_training_throughput(
    repeats: int = 3,
    steps: int = 10,
    settings: TinyLMSettings | None = None,
) -> ThroughputTiming:
    """Tokens/s of :func:`train` on Shakespeare batches, ``repeats`` times, and the
    time of each part of a lecture run: a forward + backward pass, a validation
    batch, a generated token, the tokenizer's characters per second.

    The batches come from the first 100,000 characters, encoded with the
    tokenizer of a lecture run of ``settings.vocab_size``.

    Cached per machine (``machine_dependent``): the numbers belong to the machine
    they ran on, which the result names.

    Taught on: "Training and generating text".
    """
    check_int("repeats", repeats)
    check_int("steps", steps)
    settings = TinyLMSettings(vocab_size=LECTURE_VOCAB) if settings is None else settings
    check_type("settings", settings, TinyLMSettings)
    tokenizer = corpus_tokenizer("shakespeare", settings.vocab_size)
    text = corpus_text("shakespeare")[:100_000]  # speed does not depend on the text
    start = time.perf_counter()
    train_ids = np.asarray(tokenizer.encode(text), dtype=np.uint16)
    encode_rate = len(text) / (time.perf_counter() - start)
    torch.manual_seed(0)
    model = settings.model()
    opt = settings.optimizer(model)
    gen = torch.Generator().manual_seed(0)
    done, rates = 0, []
    for i in range(repeats + 1):
        n = 3 if i == 0 else steps  # the first call warms up, not counted
        r = train(model, opt, train_ids, steps=n, batch_size=settings.batch_size,
                  lr_schedule=settings.schedule(), max_grad_norm=settings.max_grad_norm,
                  generator=gen, start_iteration=done)
        done += n
        if i:
            rates.append(r.tokens_seen / r.seconds)
    x, y = get_batch(train_ids, settings.batch_size, settings.context_length,
                     generator=gen)

    def forward_backward() -> None:
        cross_entropy(model(x), y).backward()
        model.zero_grad(set_to_none=True)

    fwd_bwd = _median_seconds(forward_backward, steps)
    window = settings.batch_size * settings.context_length + 1
    evals = _median_seconds(lambda: estimate_loss(
        model, train_ids[:window], settings.batch_size, settings.context_length, 1),
        repeats)
    new_tokens = 20
    decode = [t / new_tokens for t in _median_seconds(lambda: generate(
        model, train_ids[:4].tolist(), new_tokens,
        generator=torch.Generator().manual_seed(0)), repeats)]
    model.train()
    n_non_embedding = (sum(p.numel() for p in model.parameters())
                       - model.token_embeddings.weight.numel())
    config = settings.config
    per_token = flops_per_token(config.matmul_parameter_count(), config.num_layers,
                                config.d_model, config.context_length)
    return ThroughputTiming(machine_description(), rates, settings, steps,
                            n_non_embedding, config.matmul_parameter_count(), per_token,
                            fwd_bwd, evals, decode, encode_rate)


@dataclasses.dataclass
class GenerationTiming:
    """Milliseconds per generated token, with and without the KV cache.

    Attributes:
        machine: Processor and threads.
        lengths: Text length (prompt + generated) at which each time is measured.
        ms_cached: Time of the step that produced the token at that length, with
            the cache (median over repetitions).
        ms_uncached: The same, recomputing the whole text.
        tokens_per_s_cached: Whole generation, tokens/s, with the cache.
        tokens_per_s_uncached: The same without.
        settings: The model (untrained: speed does not depend on the weights).
    """

    machine: str
    lengths: list[int]
    ms_cached: list[float]
    ms_uncached: list[float]
    tokens_per_s_cached: float
    tokens_per_s_uncached: float
    settings: TinyLMSettings


@cached(machine_dependent=True, cost=2.0)
def time_generation(
    context_length: int = 128,
    d_model: int = 64,
    num_layers: int = 2,
    repeats: int = 3,
    vocab_size: int = LECTURE_VOCAB,
) -> GenerationTiming:
    """Time each generated token as the text grows from 1 to ``context_length``.

    The model is untrained (speed does not depend on the weights), with the
    lecture runs' vocabulary by default: the output layer is part of each step.

    Cached per machine (``machine_dependent``), like :func:`time_training_throughput`.

    Taught on: "Training and generating text".
    """
    check_int("context_length", context_length, minimum=2)
    check_int("repeats", repeats)
    settings = _settings(vocab_size=vocab_size, context_length=context_length,
                         d_model=d_model, num_layers=num_layers,
                         d_ff=swiglu_hidden_dim(d_model, 16))
    torch.manual_seed(0)
    model = settings.model().eval()
    steps = context_length - 1
    per_step = {True: [], False: []}
    totals = {True: [], False: []}
    with torch.no_grad():
        for _ in range(repeats):
            for use_cache in (True, False):
                ids = torch.zeros(1, 1, dtype=torch.long)
                cache = KVCache(num_layers, context_length) if use_cache else None
                times = []
                start = time.perf_counter()
                for t in range(steps):
                    tic = time.perf_counter()
                    if use_cache:
                        logits = model(ids[:, -1:], kv_cache=cache)[0, -1]
                    else:
                        logits = model(ids)[0, -1]
                    token = logits.argmax().view(1, 1)
                    ids = torch.cat((ids, token), dim=1)
                    times.append(time.perf_counter() - tic)
                totals[use_cache].append(steps / (time.perf_counter() - start))
                per_step[use_cache].append(times)
    marks = sorted({1, *range(16, steps + 1, 16), steps})  # text lengths - 1
    med = {use: [1e3 * statistics.median(run[m - 1] for run in per_step[use])
                 for m in marks] for use in (True, False)}
    return GenerationTiming(machine_description(), [m + 1 for m in marks],
                            med[True], med[False], statistics.median(totals[True]),
                            statistics.median(totals[False]), settings)
