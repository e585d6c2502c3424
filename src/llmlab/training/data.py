"""Batches of next-token prediction windows from a long array of token ids.

A corpus is tokenized once into a 1-D array (on disk, a ``numpy.memmap`` of it, so
a corpus larger than memory works); a batch is ``batch_size`` random windows of
``context_length + 1`` ids, split into inputs and the same ids shifted by one:

    ids      a  b  c  d  e
    inputs   a  b  c  d
    targets  b  c  d  e      (target i is the token after input i)

Fine-tuning reads examples instead, each a prompt and its response:
:class:`SupervisedData` holds them padded into one table, with the targets that are
not to be learnt (the prompt's, the padding's) set to :data:`IGNORE_INDEX`, and a
batch is ``batch_size`` random rows of it.

Both are :class:`RowData`: examples in rows, a batch of random rows, and a loss of
their own that :func:`llmlab.training.train` calls. Preference pairs
(:class:`llmlab.alignment.PreferenceData`) are rows of the same kind, with the DPO
loss.

Taught on: "Training and generating text", "Fine-tuning" and "Preference alignment".
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from llmlab.checks import (
    check_corpus,
    check_finite_float,
    check_int,
    check_sizes,
    check_type,
)
from llmlab.training.loss import cross_entropy

__all__ = ["IGNORE_INDEX", "RowData", "SupervisedData", "get_batch", "split_tokens"]

Device = torch.device | str | None

IGNORE_INDEX = -100
"""A target that counts for nothing in the loss (PyTorch's ``ignore_index`` default,
and LLMs-from-scratch's): a prompt token not to be learnt, or padding."""


def get_batch(
    dataset: np.ndarray | Tensor,
    batch_size: int,
    context_length: int,
    device: Device = None,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Sample ``batch_size`` windows uniformly from ``dataset``.

    Args:
        dataset: Integer ``(n_tokens,)`` array of token ids (``numpy`` array,
            ``numpy.memmap`` or CPU tensor); needs ``n_tokens > context_length``.
        batch_size: Windows per batch, ``>= 1``.
        context_length: Tokens per window, ``>= 1``.
        device: Where the batch goes (``"cpu"``, ``"cuda:0"``, ...). A device that
            does not exist raises torch's own error.
        generator: Source of the window starts; pass a seeded one to make runs
            reproducible (``None``: torch's global generator).

    Returns:
        ``(inputs, targets)``, int64 ``(batch_size, context_length)`` each, with
        ``targets[b, i] == dataset[start_b + i + 1]``.

    Raises:
        ValueError: Any bad argument but the device (as CS336's tests expect): a
            dataset that is not a 1-D integer array or is too short, sizes that are
            not positive ints.
        RuntimeError: From torch, for a device that does not exist (a CPU-only
            build of torch raises ``AssertionError`` for CUDA devices).

    Taught on: "Training and generating text".
    """
    try:
        n_tokens = len(check_corpus("dataset", dataset))
        check_int("batch_size", batch_size)
        check_int("context_length", context_length)
    except TypeError as err:  # CS336's interface: a ValueError for every bad value
        raise ValueError(str(err)) from None
    if n_tokens <= context_length:
        raise ValueError(
            f"dataset has {n_tokens} tokens; a window needs context_length + 1 = "
            f"{context_length + 1}, so it must hold more than context_length"
        )
    # every start s with s + context_length < n_tokens is equally likely
    starts = torch.randint(0, n_tokens - context_length, (batch_size,),
                           generator=generator)  # (B,)
    offsets = torch.arange(context_length + 1)  # (T+1,)
    index = (starts[:, None] + offsets).numpy()  # (B, T+1)
    if isinstance(dataset, Tensor):
        windows = dataset[torch.from_numpy(index)].to(torch.int64)
    else:
        windows = torch.from_numpy(np.asarray(dataset[index], dtype=np.int64))
    windows = windows.to(device)  # (B, T+1) on the target device
    return windows[:, :-1], windows[:, 1:]  # inputs, next-token targets


def split_tokens(
    tokens: np.ndarray, validation_fraction: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """Split a corpus into ``(train, validation)``: the last part is held out.

    A contiguous tail (not random windows) keeps validation text the model never
    saw in training, even in part.

    Taught on: "Training and generating text".
    """
    n_tokens = len(check_corpus("tokens", tokens))
    check_finite_float("validation_fraction", validation_fraction, minimum=0.0,
                       maximum=1.0, open_min=True, open_max=True)
    cut = n_tokens - int(round(n_tokens * validation_fraction))
    if not 0 < cut < n_tokens:
        raise ValueError(
            f"tokens ({n_tokens}) are too few to split with validation_fraction "
            f"{validation_fraction}"
        )
    return tokens[:cut], tokens[cut:]


class RowData:
    """Training examples held as rows: what :func:`llmlab.training.train` draws random
    rows from and asks for the loss of, instead of windows of a corpus.

    A subclass sets ``context_length`` (its widest row, in tokens) and defines
    :meth:`__len__`, :meth:`rows` (the tensors of some rows, each with the rows
    first) and :meth:`loss` (a scalar to minimise, from the model and such
    tensors). :meth:`draw` picks random rows and :meth:`batch` gives their tensors; a
    loop that trains on part of a batch (``batch_rows``) slices every tensor along its
    first dimension.

    Taught on: "Fine-tuning" and "Preference alignment".
    """

    context_length: int

    def __len__(self) -> int:
        raise NotImplementedError

    def rows(self, index: Tensor, device: Device = None) -> tuple[Tensor, ...]:
        """The tensors of the rows ``index`` (int64 ``(B,)``), on ``device``."""
        raise NotImplementedError

    def loss(self, model: torch.nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
        """The scalar loss of ``model`` on ``batch`` (from :meth:`rows`)."""
        raise NotImplementedError

    def draw(self, batch_size: int, generator: torch.Generator | None = None) -> Tensor:
        """The indices of ``batch_size`` rows drawn uniformly at random, with
        replacement: int64 ``(batch_size,)``, one ``torch.randint`` from ``generator``
        (``None``: torch's global generator; a seeded one makes runs reproducible).
        A row may come twice in one batch, and some rows in no batch of a short run."""
        check_int("batch_size", batch_size)
        if generator is not None:
            check_type("generator", generator, torch.Generator,
                       expected="a torch.Generator")
        return torch.randint(0, len(self), (batch_size,), generator=generator)  # (B,)

    def batch(
        self,
        batch_size: int,
        generator: torch.Generator | None = None,
        device: Device = None,
    ) -> tuple[Tensor, ...]:
        """:meth:`rows` of the rows :meth:`draw` picks, on ``device``."""
        return self.rows(self.draw(batch_size, generator), device)


class SupervisedData(RowData):
    """Supervised fine-tuning examples, right-padded into one ``(N, T)`` table.

    Each example is ``(input_ids, targets)``, two lists of one length: ``targets[i]``
    is the token to predict after ``input_ids[i]``, or :data:`IGNORE_INDEX` where
    nothing is to be learnt (see :func:`llmlab.finetune.supervised_example`). They
    are padded on the right to the longest, inputs with ``pad_id`` and targets with
    ``IGNORE_INDEX``, so that padding never counts::

        inputs   p  p  r  r  <eot> pad pad
        targets  ·  r  r  <eot> ·   ·   ·       (· = IGNORE_INDEX)

    Under a causal mask a position sees only the ones before it, so padding on the
    right changes no logit that counts; ``pad_id`` only has to be a valid id.

    Args:
        examples: ``(input_ids, targets)`` pairs of lists of ints, at least one; every
            example needs a target that counts.
        pad_id: The id inputs are padded with (e.g. the end-of-text id).
        context_length: The longest example allowed (the model's context length);
            ``None``: no bound.

    Attributes:
        inputs: int64 ``(N, T)``, the padded input ids.
        targets: int64 ``(N, T)``, the padded targets.
        context_length: ``T``, the length of the longest example.

    Taught on: "Fine-tuning".
    """

    def __init__(
        self,
        examples: list[tuple[list[int], list[int]]],
        pad_id: int,
        context_length: int | None = None,
    ) -> None:
        check_type("examples", examples, (list, tuple),
                   expected="a list of (input_ids, targets) pairs")
        if not examples:
            raise ValueError("examples is empty; expected at least one (input_ids, "
                             "targets) pair")
        check_int("pad_id", pad_id, minimum=0)
        if context_length is not None:
            check_int("context_length", context_length)
        examples = [_check_example(i, pair, context_length)
                    for i, pair in enumerate(examples)]
        self.context_length = max(len(ids) for ids, _ in examples)  # T
        shape = (len(examples), self.context_length)  # (N, T)
        self.inputs = torch.full(shape, pad_id, dtype=torch.int64)
        self.targets = torch.full(shape, IGNORE_INDEX, dtype=torch.int64)
        for row, (ids, targets) in enumerate(examples):
            self.inputs[row, :len(ids)] = torch.tensor(ids)
            self.targets[row, :len(targets)] = torch.tensor(targets)

    def __len__(self) -> int:
        """The number of examples, ``N``."""
        return self.inputs.shape[0]

    def __repr__(self) -> str:
        return (f"SupervisedData({len(self)} examples, "
                f"context_length={self.context_length})")

    def rows(self, index: Tensor, device: Device = None) -> tuple[Tensor, Tensor]:
        """``(inputs, targets)`` of the rows ``index``: int64 ``(B, context_length)``
        each, on ``device``."""
        return self.inputs[index].to(device), self.targets[index].to(device)  # (B, T)

    def loss(self, model: torch.nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
        """Mean cross-entropy over the targets that count (not :data:`IGNORE_INDEX`)."""
        inputs, targets = batch
        return cross_entropy(model(inputs), targets, IGNORE_INDEX)


# a local composite (one example's ids and targets together), built from llmlab.checks
def _check_example(
    i: int, pair: object, context_length: int | None
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    name = f"examples[{i}]"
    check_type(name, pair, (list, tuple), expected="an (input_ids, targets) pair")
    if len(pair) != 2:
        raise ValueError(f"{name} must be an (input_ids, targets) pair, got "
                         f"{len(pair)} items")
    ids = check_sizes(f"{name}[0]", pair[0], minimum=0)  # input ids
    targets = check_sizes(f"{name}[1]", pair[1], minimum=IGNORE_INDEX)
    if len(ids) != len(targets):
        raise ValueError(f"{name} has {len(ids)} input ids but {len(targets)} "
                         "targets; expected one target per input")
    wrong = [t for t in targets if IGNORE_INDEX < t < 0]
    if wrong:
        raise ValueError(f"{name}[1] must hold token ids >= 0 or IGNORE_INDEX "
                         f"({IGNORE_INDEX}), got {wrong[0]}")
    if all(t == IGNORE_INDEX for t in targets):
        raise ValueError(f"{name} has no target that counts (all are IGNORE_INDEX); "
                         "expected at least one token to learn")
    if context_length is not None and len(ids) > context_length:
        raise ValueError(f"{name} has {len(ids)} tokens, more than context_length "
                         f"({context_length}); shorten it or leave it out")
    return ids, targets
