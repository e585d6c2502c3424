"""Batches of next-token prediction windows from a long array of token ids.

A corpus is tokenized once into a 1-D array (on disk, a ``numpy.memmap`` of it, so
a corpus larger than memory works); a batch is ``batch_size`` random windows of
``context_length + 1`` ids, split into inputs and the same ids shifted by one:

    ids      a  b  c  d  e
    inputs   a  b  c  d
    targets  b  c  d  e      (target i is the token after input i)

Taught on: "Training and generating text".
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from llmlab.checks import check_corpus, check_finite_float, check_int

__all__ = ["get_batch", "split_tokens"]

Device = torch.device | str | None


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
