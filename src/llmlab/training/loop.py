"""The training loop: sample a batch, compute the loss, backpropagate, clip, step.

One function serves the lecture, the example notebook, ``llmlab-train`` and training
on several processes (``llmlab.distributed`` runs it on every rank, each keeping its
``batch_rows`` of the batch). It never prints: pass ``callback`` to see each step as
it happens (a progress bar, a checkpoint every so often), and read the returned
:class:`TrainResult`.

Fine-tuning runs the same loop: its data is a ``SupervisedData`` (prompts and
responses) instead of a corpus, its batches are random rows of it, and its loss
leaves out the targets marked ``IGNORE_INDEX``. Preference alignment runs it too:
its data, :class:`llmlab.alignment.PreferenceData`, is rows of preference pairs
whose loss is DPO's. Any :class:`RowData` brings its own loss.

Taught on: "Training and generating text", "Fine-tuning" and "Preference alignment".
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from llmlab._surgery import device_of
from llmlab.checks import (
    check_callable,
    check_corpus,
    check_finite_float,
    check_int,
    check_type,
)
from llmlab.training.data import RowData, get_batch
from llmlab.training.loss import cross_entropy
from llmlab.training.optim import gradient_clipping

__all__ = ["TrainEvent", "TrainResult", "estimate_loss", "train"]

Dataset = np.ndarray | Tensor | RowData


@dataclasses.dataclass(frozen=True)
class TrainEvent:
    """What :func:`train` hands its callback after each step.

    Attributes:
        iteration: Steps completed in the whole run (a resumed run counts on).
        loss: Training loss of this step's batch, or of its ``batch_rows`` (nats
            per token).
        learning_rate: The rate this step used.
        grad_norm: Global gradient norm before clipping (``None``: no clipping).
        val_loss: Validation loss, when it was measured after this step.
        tokens_seen: Training tokens this process trained on in this call so far.
        seconds: Wall time of this call so far.

    Taught on: "Training and generating text".
    """

    iteration: int
    loss: float
    learning_rate: float
    grad_norm: float | None
    val_loss: float | None
    tokens_seen: int
    seconds: float


@dataclasses.dataclass
class TrainResult:
    """A record of one call of :func:`train`, as plain numbers.

    Attributes:
        iterations: Steps completed after each step (``start + 1 .. start + steps``).
        losses: Training loss of each step's batch (of its ``batch_rows``, if given).
        learning_rates: Learning rate of each step.
        grad_norms: Gradient norm before clipping of each step (empty: no clipping).
        val_iterations: Steps completed when validation loss was measured (the
            start, every ``eval_every`` steps, the end).
        val_losses: Validation loss at those points.
        tokens_seen: The tokens this process trained on: ``steps · rows ·
            context_length`` for a corpus (``rows``: ``batch_size``, or as many as
            ``batch_rows`` keeps); for :class:`RowData`, the elements of each batch's
            first tensor, padding included (a ``PreferenceData`` batch holds two
            sequences a row).
        seconds: Wall time of the call, validation included.
        batch_size: Windows per batch.
        context_length: Tokens per window.
        rows_drawn: For :class:`RowData`, the rows each step trained on (its
            ``batch_rows`` share, if given), as :meth:`RowData.draw` picked them: one
            list per step. Empty for a corpus.

    Taught on: "Training and generating text".
    """

    iterations: list[int]
    losses: list[float]
    learning_rates: list[float]
    grad_norms: list[float]
    val_iterations: list[int]
    val_losses: list[float]
    tokens_seen: int
    seconds: float
    batch_size: int
    context_length: int
    rows_drawn: list[list[int]] = dataclasses.field(default_factory=list)


@torch.no_grad()
def estimate_loss(
    model: nn.Module,
    dataset: Dataset,
    batch_size: int,
    context_length: int,
    num_batches: int = 8,
    device: torch.device | str | None = None,
) -> float:
    """Mean loss over fixed, evenly spaced windows (or rows) of ``dataset``.

    The windows are the same at every call (no randomness is drawn), so successive
    measurements differ only because the model changed, and measuring does not
    disturb the training run's random state.

    Args:
        model: Maps ``(B, T)`` ids to ``(B, T, vocab_size)`` logits.
        dataset: 1-D integer token ids, more than ``context_length`` of them; or
            :class:`RowData` such as a ``SupervisedData`` (its rows, its own
            loss), no wider than ``context_length``.
        batch_size: Windows per forward pass.
        context_length: Tokens per window.
        num_batches: Forward passes; ``batch_size · num_batches`` windows in all.
        device: Where to run (default: where the model's parameters are).

    Taught on: "Training and generating text", "Fine-tuning" and "Preference alignment".
    """
    check_type("model", model, nn.Module, expected="a torch.nn.Module")
    if not isinstance(dataset, RowData):
        check_corpus("dataset", dataset)
    check_int("batch_size", batch_size)
    check_int("context_length", context_length)
    check_int("num_batches", num_batches)
    _check_dataset("dataset", dataset, context_length)
    device = device if device is not None else device_of(model)
    rows = isinstance(dataset, RowData)
    if rows:  # evenly spaced rows
        starts = np.linspace(0, len(dataset) - 1, batch_size * num_batches)
    else:  # evenly spaced window starts
        starts = np.linspace(0, len(dataset) - context_length - 1,
                             batch_size * num_batches)
    starts = starts.round().astype(np.int64)  # (n_windows,)
    was_training = model.training
    model.eval()
    total = 0.0
    for batch in np.split(starts, num_batches):
        if rows:
            loss = dataset.loss(model, dataset.rows(torch.from_numpy(batch), device))
        else:
            index = batch[:, None] + np.arange(context_length + 1)  # (B, T+1)
            windows = torch.as_tensor(np.asarray(dataset[index], dtype=np.int64))
            windows = windows.to(device)  # (B, T+1)
            loss = cross_entropy(model(windows[:, :-1]), windows[:, 1:])
        total += float(loss)
    model.train(was_training)
    return total / num_batches


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    train_data: Dataset,
    *,
    steps: int,
    batch_size: int,
    context_length: int | None = None,
    val_data: Dataset | None = None,
    eval_every: int | None = None,
    eval_batches: int = 8,
    lr_schedule: Callable[[int], float] | None = None,
    max_grad_norm: float | None = 1.0,
    seed: int = 0,
    generator: torch.Generator | None = None,
    start_iteration: int = 0,
    device: torch.device | str | None = None,
    callback: Callable[[TrainEvent], None] | None = None,
    batch_rows: slice | None = None,
    after_backward: Callable[[int], None] | None = None,
) -> TrainResult:
    """Train ``model`` for ``steps`` steps: of next-token prediction on a corpus, or
    of the loss a :class:`RowData` brings (fine-tuning's, DPO's).

    Args:
        model: Maps int64 ``(B, T)`` ids to ``(B, T, vocab_size)`` logits.
        optimizer: Updates ``model``'s parameters (e.g. our ``AdamW``).
        train_data: 1-D integer token ids to sample windows from; or
            :class:`RowData` to sample rows from, with its own loss: a
            ``SupervisedData`` (fine-tuning: the targets marked
            ``IGNORE_INDEX`` left out), a ``PreferenceData`` (DPO).
        steps: Steps to take in this call, ``>= 1``.
        batch_size: Windows (or rows) per step.
        context_length: Tokens per window (default: ``model.context_length``; for
            ``RowData``, its longest example, or ``val_data``'s if longer).
        val_data: Held-out token ids (or ``RowData``); ``None`` skips
            validation.
        eval_every: Measure validation loss every this many steps (and always at
            the start and the end of the call).
        eval_batches: Forward passes per validation measurement.
        lr_schedule: ``schedule(iteration) -> lr``, applied before each step
            (see ``cosine_schedule``); ``None`` keeps the optimizer's rate.
        max_grad_norm: Clip the global gradient norm to this; ``None``: no clipping.
        seed: Seeds the batch generator (``torch.Generator().manual_seed(seed)``)
            when ``generator`` is not given. Each step draws its batch from it, and
            nothing else does (for ``RowData``: one :meth:`RowData.draw` a step).
        generator: The batch generator (its state carries over between calls, so a
            resumed run draws the batches the uninterrupted run would have drawn).
        start_iteration: Steps already done (the schedule continues from there).
        device: Where batches go (default: where the model's parameters are).
        callback: Called with a :class:`TrainEvent` after every step.
        batch_rows: Train on these rows of each step's batch only, a slice of its
            ``batch_size`` windows (``None``: all of them). Data parallelism: every
            process draws the same batch (the same ``seed``) and keeps its own rows.
        after_backward: ``after_backward(iteration)``, called after each backward
            pass, before clipping (the gradients are there to read).

    Returns:
        A :class:`TrainResult` of plain numbers.

    Taught on: "Training and generating text", "Fine-tuning" and "Preference alignment".
    """
    check_type("model", model, nn.Module, expected="a torch.nn.Module")
    context_length = _check_train_args(
        train_data, steps=steps, batch_size=batch_size, context_length=context_length,
        model_context_length=getattr(model, "context_length", None), val_data=val_data,
        eval_every=eval_every, eval_batches=eval_batches, max_grad_norm=max_grad_norm,
        seed=seed, start_iteration=start_iteration, batch_rows=batch_rows)
    check_type("optimizer", optimizer, torch.optim.Optimizer,
               expected="a torch.optim.Optimizer")
    for name, fn in (("lr_schedule", lr_schedule), ("callback", callback),
                     ("after_backward", after_backward)):
        if fn is not None:
            check_callable(name, fn)
    if generator is not None:
        check_type("generator", generator, torch.Generator,
                   expected="a torch.Generator")
    if generator is None:
        generator = torch.Generator().manual_seed(seed)
    device = device if device is not None else device_of(model)
    rows = isinstance(train_data, RowData)
    result = TrainResult([], [], [], [], [], [], 0, 0.0, batch_size, context_length)
    start = time.perf_counter()

    def validate(iteration: int) -> float:
        loss = estimate_loss(model, val_data, batch_size, context_length, eval_batches,
                             device)
        result.val_iterations.append(iteration)
        result.val_losses.append(loss)
        return loss

    if val_data is not None:
        validate(start_iteration)
    model.train()
    for it in range(start_iteration, start_iteration + steps):
        # the schedule sets this step's learning rate
        if lr_schedule is not None:
            for group in optimizer.param_groups:
                group["lr"] = lr_schedule(it)
        lr = float(optimizer.param_groups[0]["lr"])
        # forward: random windows (or rows) -> logits -> loss
        if rows:  # examples: the data's own loss (cross-entropy, DPO, ...)
            index = train_data.draw(batch_size, generator)  # (B,)
            batch = train_data.rows(index, device)  # (B, ...) each
            kept = index if batch_rows is None else index[batch_rows]
            result.rows_drawn.append(kept.tolist())
        else:  # a corpus: next-token cross-entropy over every target
            batch = get_batch(train_data, batch_size, context_length, device,
                              generator)  # (B, T) each
        if batch_rows is not None:  # this process's share of the batch
            batch = tuple(t[batch_rows] for t in batch)
        if rows:
            loss = train_data.loss(model, batch)
        else:
            inputs, targets = batch
            loss = cross_entropy(model(inputs), targets)  # (B, T, V) -> ()
        # backward, clip, update
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if after_backward is not None:
            after_backward(it)
        norm = None
        if max_grad_norm is not None:
            norm = gradient_clipping(model.parameters(), max_grad_norm)
            result.grad_norms.append(norm)
        optimizer.step()
        # bookkeeping
        done = it + 1
        result.iterations.append(done)
        result.losses.append(loss.item())
        result.learning_rates.append(lr)
        result.tokens_seen += batch[0].numel()
        val_loss = None
        last = done == start_iteration + steps
        if val_data is not None and (last or (eval_every and done % eval_every == 0)):
            val_loss = validate(done)
            model.train()
        if callback is not None:
            callback(TrainEvent(done, result.losses[-1], lr, norm, val_loss,
                                result.tokens_seen, time.perf_counter() - start))
    result.seconds = time.perf_counter() - start
    return result


# a local composite (the arguments of train() together), built from llmlab.checks
def _check_train_args(
    train_data: Dataset,
    *,
    steps: int,
    batch_size: int,
    context_length: int | None,
    model_context_length: int | None = None,
    val_data: Dataset | None = None,
    eval_every: int | None = None,
    eval_batches: int = 8,
    max_grad_norm: float | None = 1.0,
    seed: int = 0,
    start_iteration: int = 0,
    batch_rows: slice | None = None,
) -> int:
    """What :func:`train` checks of its arguments but the model, optimizer and
    callables (``llmlab.distributed`` checks the same before it starts a process);
    the context length (default: ``model_context_length``, or the longest example
    of row data)."""
    check_int("steps", steps)
    check_int("batch_size", batch_size)
    if batch_rows is not None:
        _check_batch_rows(batch_rows, batch_size)
    datasets = [(n, d) for n, d in (("train_data", train_data), ("val_data", val_data))
                if d is not None]
    if context_length is None and isinstance(train_data, RowData):
        # as long as the longest example (val_data's too, if it is row data)
        widths = [(n, d.context_length) for n, d in datasets
                  if isinstance(d, RowData)]
        name, context_length = max(widths, key=lambda item: item[1])
        if model_context_length is not None and context_length > model_context_length:
            raise ValueError(
                f"{name} holds an example of {context_length} tokens, more than the "
                f"model's context_length ({model_context_length})"
            )
    if context_length is None:
        context_length = model_context_length
        if context_length is None:
            raise ValueError("context_length is required for a model without "
                             ".context_length")
    check_int("context_length", context_length)
    if model_context_length is not None and context_length > model_context_length:
        raise ValueError(
            f"context_length ({context_length}) exceeds the model's context_length "
            f"({model_context_length})"
        )
    if eval_every is not None:
        check_int("eval_every", eval_every)
    check_int("eval_batches", eval_batches)
    if max_grad_norm is not None:
        check_finite_float("max_grad_norm", max_grad_norm, minimum=0.0, open_min=True)
    check_int("seed", seed, minimum=0)
    check_int("start_iteration", start_iteration, minimum=0)
    for name, data in datasets:
        _check_dataset(name, data, context_length)
    return context_length


# a local composite (a corpus or row data against the context length), built
# from llmlab.checks
def _check_dataset(name: str, data: Dataset, context_length: int) -> None:
    if isinstance(data, RowData):
        if data.context_length > context_length:
            raise ValueError(
                f"{name} holds an example of {data.context_length} tokens, more than "
                f"context_length ({context_length})"
            )
        return
    n_tokens = len(check_corpus(name, data))
    if n_tokens <= context_length:
        raise ValueError(
            f"{name} has {n_tokens} tokens; it must hold more than context_length "
            f"({context_length})"
        )


# a local composite (batch_rows against batch_size), built from llmlab.checks
def _check_batch_rows(batch_rows: object, batch_size: int) -> None:
    check_type("batch_rows", batch_rows, slice,
               expected="a slice of the batch's rows (e.g. slice(0, 4))")
    try:
        kept = len(range(batch_size)[batch_rows])
    except (TypeError, ValueError) as error:  # slice('a'), a step of 0
        raise ValueError(f"batch_rows must be a slice of ints with a step >= 1, got "
                         f"{batch_rows}") from error
    if batch_rows.step is not None and batch_rows.step < 1:
        raise ValueError(f"batch_rows must be a slice of ints with a step >= 1, got "
                         f"{batch_rows}")
    if kept == 0:
        raise ValueError(f"batch_rows ({batch_rows}) keeps none of the batch_size "
                         f"({batch_size}) rows")
