"""Fine-tuning the course's base models on a task whose answers can be checked exactly.

Each base model (:mod:`llmlab.pretrained`) learns one question about a line of its
own corpus, answered in one word and then the end-of-text token:

* ``"tang"``: the first half of a couplet, then ``几言？``; the answer ``五言`` or
  ``七言`` (five or seven characters);
* ``"shakespeare"``: a line of the play, then ``Ask or tell?``; the answer ``Ask``
  (the line is a question) or ``Tell`` (it ends with a full stop).

The base models never saw a question, an answer or the end-of-text token after a
line: they write neither answer before fine-tuning. :func:`task_examples` cuts the
examples from the corpus as the base model's training cut it: training prompts from
the first nine tenths of the lines, held-out prompts from the last tenth, which the
base model never trained on; both classes in equal numbers.

:func:`run_finetune` fine-tunes one copy of a base model with
:func:`llmlab.training.train` itself (fully, or LoRA adapters only), and measures:
the held-out exact-match accuracy per class (:func:`llmlab.finetune.exact_match`:
greedy decoding, measured in one forward pass), the trainable parameters and the
optimizer's state (counted from its tensors), the loss on the base model's own
held-out text before and after (what is forgotten), and for LoRA that the adapted
model starts equal to the base model and that the merged model equals the adapted
one. :func:`run_finetune_comparison` runs the comparisons a page shows side by side.

Taught on: "Fine-tuning".
"""

from __future__ import annotations

import dataclasses
import random

import torch

from llmlab.build.cache import cached, part_results
from llmlab.checks import (
    check_bool,
    check_choice,
    check_finite_float,
    check_int,
    check_sizes,
    check_type,
)
from llmlab.finetune import add_lora, end_of_text_id, exact_match, merge_lora, supervised_data
from llmlab.generation import generate
from llmlab.models.llama import LLAMA2_7B, TransformerLM
from llmlab.params import count_parameters
from llmlab.pretrained import NAMES, load, training_text
from llmlab.training import estimate_loss, train
from llmlab.training.optim import AdamW

__all__ = [
    "ANSWERS",
    "LEARNING_RATES",
    "BaseScores",
    "QUESTIONS",
    "FinetuneComparison",
    "FinetuneRun",
    "FinetuneTask",
    "LoRAAtScale",
    "lora_at_scale",
    "run_finetune",
    "run_finetune_comparison",
    "score_base_model",
    "task_examples",
]

QUESTIONS: dict[str, str] = {"tang": "\n几言？", "shakespeare": "\nAsk or tell? "}
"""What follows the line in a prompt, per corpus."""

ANSWERS: dict[str, tuple[str, str]] = {"tang": ("五言", "七言"),
                                       "shakespeare": ("Ask", "Tell")}
"""The two answers per corpus, in class order."""

LEARNING_RATES: dict[str, float] = {"full": 2e-3, "lora": 1e-2}
"""Default learning rate per method: the adapters start at zero and are few, so
they take a larger step (as LoRA's paper and PEFT's examples do)."""

HELD_OUT_TEXT_CHARS = 3_000  # the end of the corpus: what the base model never trained on


@dataclasses.dataclass
class FinetuneTask:
    """The examples of one corpus's task.

    Attributes:
        corpus: One of :data:`llmlab.pretrained.NAMES`.
        train: ``(prompt, answer)`` pairs from the first nine tenths of the lines,
            the two answers alternating.
        held_out: Pairs from the last tenth, the two answers alternating.
        answers: The two answers, in class order.
    """

    corpus: str
    train: list[tuple[str, str]]
    held_out: list[tuple[str, str]]
    answers: tuple[str, str]


def _line_class(corpus: str, line: str) -> tuple[str, int] | None:
    """The part of ``line`` a prompt shows and its class, or None when it has none."""
    line = line.strip()
    if corpus == "tang":
        half = line.split("，")[0]
        return (half, 0 if len(half) == 5 else 1) if len(half) in (5, 7) else None
    if not 15 <= len(line) <= 45 or not line[0].isupper() or line.endswith(":"):
        return None
    if line.endswith("?"):
        return line, 0
    return (line, 1) if line.endswith(".") else None


def task_examples(corpus: str, n_train: int = 128, n_held_out: int = 32,
                  seed: int = 0) -> FinetuneTask:
    """The task's examples: ``n_train`` training and ``n_held_out`` held-out prompts
    per answer, drawn with ``seed`` from the lines of the base model's corpus.

    Taught on: "Fine-tuning".
    """
    check_choice("corpus", corpus, NAMES)
    check_int("n_train", n_train)
    check_int("n_held_out", n_held_out)
    check_int("seed", seed, minimum=0)
    lines = training_text(corpus).split("\n")
    cut = int(len(lines) * 0.9)  # the base model's validation split is its last tenth
    splits = []
    for part, n, name in ((lines[:cut], n_train, "n_train"),
                          (lines[cut:], n_held_out, "n_held_out")):
        by_class: list[list[tuple[str, str]]] = [[], []]
        for line in part:
            found = _line_class(corpus, line)
            if found is not None:
                shown, label = found
                by_class[label].append((shown + QUESTIONS[corpus], ANSWERS[corpus][label]))
        rng = random.Random(seed)
        for examples in by_class:
            if len(examples) < n:
                raise ValueError(f"the {corpus} corpus has {len(examples)} such lines in "
                                 f"this split, fewer than the {n} asked for ({name})")
            rng.shuffle(examples)
        splits.append([pair for two in zip(by_class[0][:n], by_class[1][:n]) for pair in two])
    return FinetuneTask(corpus, splits[0], splits[1], ANSWERS[corpus])


@dataclasses.dataclass
class FinetuneRun:
    """One fine-tuning run of a base model and what it changed.

    Attributes:
        corpus, method, rank, mask_prompt, steps, batch_size, lr, seed: The settings
            (``rank`` 0 for full fine-tuning).
        total_parameters: Parameters of the model as trained (adapters included).
        trainable: Parameters the optimizer updated.
        optimizer_state_bytes: Bytes of the optimizer's state tensors after training.
        base_accuracy: Held-out exact-match accuracy per answer before fine-tuning.
        accuracy: The same after.
        losses: Training loss per step.
        corpus_loss_before: Loss (nats per token) on the end of the base model's
            corpus, which it never trained on, before fine-tuning.
        corpus_loss_after: The same after.
        init_difference: LoRA: the largest difference between the adapted model's
            logits before training and the base model's (0 when B starts at zero).
        merge_difference: LoRA: the largest difference between the trained adapted
            model's logits and the merged model's.
        outputs: Two held-out prompts and what the fine-tuned model writes
            greedily (its end-of-text left out).
    """

    corpus: str
    method: str
    rank: int
    mask_prompt: bool
    steps: int
    batch_size: int
    lr: float
    seed: int
    total_parameters: int
    trainable: int
    optimizer_state_bytes: int
    base_accuracy: list[float]
    accuracy: list[float]
    losses: list[float]
    corpus_loss_before: float
    corpus_loss_after: float
    init_difference: float | None
    merge_difference: float | None
    outputs: list[tuple[str, str]]

    @property
    def mean_accuracy(self) -> float:
        """Held-out accuracy over both answers (they are equally many)."""
        return sum(self.accuracy) / len(self.accuracy)

    @property
    def trainable_share(self) -> float:
        """Trainable parameters as a share of all of them."""
        return self.trainable / self.total_parameters

    @property
    def forgetting(self) -> float:
        """How much the loss on the base model's held-out text rose (nats per token)."""
        return self.corpus_loss_after - self.corpus_loss_before


def _accuracy_per_answer(model: torch.nn.Module, data, n_answers: int = 2) -> list[float]:
    right = exact_match(model, data).float()  # (N,), the answers alternating
    return [float(right[i::n_answers].mean()) for i in range(n_answers)]


def _corpus_loss(model: torch.nn.Module, ids: torch.Tensor) -> float:
    """Mean loss over 8 evenly spaced windows of the model's context (the same before
    and after fine-tuning, so the difference is the model's alone)."""
    return estimate_loss(model, ids, batch_size=8, context_length=model.context_length,
                         num_batches=1)


@dataclasses.dataclass
class BaseScores:
    """The base model before fine-tuning, as every run of its corpus measures it.

    Attributes:
        accuracy: Held-out exact-match accuracy per answer.
        corpus_loss: Loss (nats per token) on the end of its corpus.
    """

    accuracy: list[float]
    corpus_loss: float


def _task_data(corpus: str, device: str = "cpu"):
    """The task, the base model (on ``device``), its tokenizer, the held-out examples
    and the end of its corpus."""
    task = task_examples(corpus)
    model, tokenizer = load(corpus, device)
    held_out = supervised_data(tokenizer, task.held_out)
    corpus_ids = torch.tensor(tokenizer.encode(training_text(corpus)[-HELD_OUT_TEXT_CHARS:]))
    return task, model, tokenizer, held_out, corpus_ids


@cached(cost=0.3)  # seconds on one core: load, two forward passes
def score_base_model(corpus: str) -> BaseScores:
    """The base model ``corpus`` scored once for all its runs: its held-out
    accuracy per answer and its loss on the end of its corpus.

    Taught on: "Fine-tuning".
    """
    check_choice("corpus", corpus, NAMES)
    _, model, _, held_out, corpus_ids = _task_data(corpus)
    return BaseScores(_accuracy_per_answer(model, held_out), _corpus_loss(model, corpus_ids))


def _finetune_parts(corpus: str, **_: object) -> list:
    return [(score_base_model, dict(corpus=corpus))]


@cached(parts=_finetune_parts, cost=1.6)  # seconds on one core: load, 20 steps
def run_finetune(
    corpus: str,
    method: str = "full",
    rank: int = 4,
    mask_prompt: bool = True,
    steps: int = 20,
    batch_size: int = 16,
    lr: float | None = None,
    seed: int = 0,
    device: str = "cpu",
) -> FinetuneRun:
    """Fine-tune the base model ``corpus`` on its task (:func:`task_examples`).

    ``method="full"`` trains every parameter; ``"lora"`` adds LoRA adapters of
    ``rank`` (``alpha = 2 · rank``, so the scale ``alpha / rank`` stays 2) to the
    query and value projections and trains those alone. AdamW without weight
    decay, a constant learning rate (``lr``, default :data:`LEARNING_RATES`),
    gradients clipped at norm 1, the loop of :func:`llmlab.training.train`.
    ``device`` is where the model trains (``"cuda"`` on a GPU); the pages train on
    the CPU.

    Taught on: "Fine-tuning".
    """
    check_choice("corpus", corpus, NAMES)
    check_choice("method", method, tuple(LEARNING_RATES))
    check_int("rank", rank, minimum=0 if method == "full" else 1)
    check_bool("mask_prompt", mask_prompt)
    check_int("steps", steps)
    check_int("batch_size", batch_size)
    lr = LEARNING_RATES[method] if lr is None else check_finite_float(
        "lr", lr, minimum=0.0, open_min=True)
    check_int("seed", seed, minimum=0)
    check_type("device", device, str, expected="a device name such as 'cpu' or 'cuda'")
    rank = rank if method == "lora" else 0
    [base] = part_results(_finetune_parts, corpus=corpus)
    task, model, tokenizer, held_out, corpus_ids = _task_data(corpus, device)
    train_data = supervised_data(tokenizer, task.train, mask_prompt=mask_prompt)
    init_difference = merge_difference = None
    torch.manual_seed(seed)  # LoRA's A: the same draw in every process
    if method == "lora":
        probe = held_out.inputs[:4].to(device)  # (4, T)
        with torch.no_grad():
            base_logits = model(probe)
        add_lora(model, rank, 2.0 * rank)
        with torch.no_grad():
            init_difference = float((model(probe) - base_logits).abs().max())
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = AdamW(trainable, lr=lr, weight_decay=0.0)
    result = train(model, optimizer, train_data, steps=steps, batch_size=batch_size,
                   max_grad_norm=1.0, seed=seed)
    accuracy = _accuracy_per_answer(model, held_out)
    after = _corpus_loss(model, corpus_ids)
    total = count_parameters(model)
    n_trainable = count_parameters(model, trainable_only=True)
    state_bytes = sum(t.numel() * t.element_size() for state in optimizer.state.values()
                      for t in state.values() if isinstance(t, torch.Tensor))
    if method == "lora":
        with torch.no_grad():
            inputs = held_out.inputs.to(device)  # (N, T)
            adapted = model(inputs)
            merge_lora(model)
            merge_difference = float((model(inputs) - adapted).abs().max())
    eot = end_of_text_id(tokenizer)
    outputs = []
    for prompt, _ in task.held_out[:2]:  # one of each answer
        written = generate(model, tokenizer.encode(prompt), 4, greedy=True,
                           eos_token_id=eot)
        outputs.append((prompt, tokenizer.decode([t for t in written if t != eot])))
    return FinetuneRun(
        corpus=corpus, method=method, rank=rank, mask_prompt=mask_prompt, steps=steps,
        batch_size=batch_size, lr=lr, seed=seed, total_parameters=total,
        trainable=n_trainable, optimizer_state_bytes=state_bytes,
        base_accuracy=base.accuracy, accuracy=accuracy, losses=list(result.losses),
        corpus_loss_before=base.corpus_loss, corpus_loss_after=after,
        init_difference=init_difference, merge_difference=merge_difference,
        outputs=outputs)


@dataclasses.dataclass
class FinetuneComparison:
    """Full fine-tuning with the prompt masked and not, then LoRA at several ranks.

    Attributes:
        corpus: The base model.
        full: Full fine-tuning, the prompt masked out of the loss.
        unmasked: Full fine-tuning, the prompt learnt as well.
        lora: One LoRA run per rank (the prompt masked).
    """

    corpus: str
    full: FinetuneRun
    unmasked: FinetuneRun
    lora: list[FinetuneRun]

    @property
    def runs(self) -> list[FinetuneRun]:
        """Every run, in the order a table lists them."""
        return [self.full, self.unmasked, *self.lora]


def _comparison_parts(corpus: str, ranks: tuple[int, ...], steps: int, seed: int) -> list:
    common = dict(corpus=corpus, steps=steps, seed=seed)
    return ([(run_finetune, dict(common, method="full", rank=0, mask_prompt=True)),
             (run_finetune, dict(common, method="full", rank=0, mask_prompt=False))]
            + [(run_finetune, dict(common, method="lora", rank=r, mask_prompt=True))
               for r in ranks])


@cached(parts=_comparison_parts)
def run_finetune_comparison(
    corpus: str, ranks: tuple[int, ...] = (1, 4, 8), steps: int = 20, seed: int = 0
) -> FinetuneComparison:
    """:func:`run_finetune` fully (prompt masked, then not) and with LoRA of each of
    ``ranks``; each run a part of its own, computed side by side.

    Taught on: "Fine-tuning".
    """
    check_choice("corpus", corpus, NAMES)
    check_sizes("ranks", ranks, nonempty=False)
    check_int("steps", steps)
    check_int("seed", seed, minimum=0)
    runs = part_results(_comparison_parts, corpus=corpus, ranks=tuple(ranks), steps=steps,
                        seed=seed)
    return FinetuneComparison(corpus, runs[0], runs[1], runs[2:])


@dataclasses.dataclass
class LoRAAtScale:
    """LoRA on Llama 2 7B, counted from its configuration (weights on the meta device).

    Attributes:
        rank: The adapters' rank.
        total_parameters: The base model's parameters.
        trainable: The adapters' parameters (query and value projections).
        full_adamw_bytes: AdamW's two float32 moments for every parameter.
        lora_adamw_bytes: The same for the adapters only.
    """

    rank: int
    total_parameters: int
    trainable: int
    full_adamw_bytes: int
    lora_adamw_bytes: int

    @property
    def trainable_share(self) -> float:
        """Adapter parameters as a share of the base model's."""
        return self.trainable / self.total_parameters


def lora_at_scale(rank: int = 8) -> LoRAAtScale:
    """Build Llama 2 7B on the meta device (no memory), add LoRA of ``rank`` with
    :func:`llmlab.finetune.add_lora` and count.

    Taught on: "Fine-tuning".
    """
    check_int("rank", rank)
    model = TransformerLM.from_config(LLAMA2_7B, device="meta")
    total = count_parameters(model)
    trainable = add_lora(model, rank, 2.0 * rank)
    moments = 2 * 4  # AdamW keeps m and v, float32 each
    return LoRAAtScale(rank, total, trainable, total * moments, trainable * moments)
