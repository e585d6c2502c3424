"""Save and resume a training run: weights, optimizer state, iteration, RNG states.

Resuming continues the run bit for bit when everything random is restored: the
generator that draws the batches (pass it to both functions) and torch's global
generators (dropout, say), which :func:`load_checkpoint` restores too.

Taught on: "Training and generating text".
"""

from __future__ import annotations

import os
from typing import IO, Any

import torch
from torch import nn

from llmlab.checks import check_int, check_type

__all__ = ["checkpoint_extra", "load_checkpoint", "save_checkpoint"]

PathOrFile = str | os.PathLike | IO[bytes]


def save_checkpoint(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    iteration: int,
    out: PathOrFile,
    generator: torch.Generator | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write everything needed to continue training to ``out``.

    Args:
        model: Its ``state_dict()`` is saved.
        optimizer: Its ``state_dict()`` (AdamW's ``step``, ``m``, ``v``) is saved.
        iteration: Steps done so far, ``>= 0``.
        out: A path or a binary file-like object.
        generator: The batch generator, whose state is saved if given.
        extra: Plain data (numbers, strings, lists, dicts) stored alongside, such
            as the model's configuration.

    Taught on: "Training and generating text".
    """
    check_type("model", model, nn.Module, expected="a torch.nn.Module")
    check_type("optimizer", optimizer, torch.optim.Optimizer,
               expected="a torch.optim.Optimizer")
    check_int("iteration", iteration, minimum=0)
    _check_file("out", out, "write")
    if generator is not None:
        check_type("generator", generator, torch.Generator,
                   expected="a torch.Generator")
    if extra is not None:
        check_type("extra", extra, dict, expected="a dict of plain data")
    rng = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    if generator is not None:
        rng["generator"] = generator.get_state()
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "iteration": iteration,
            "rng": rng,
            "extra": extra or {},
        },
        out,
    )


def load_checkpoint(
    src: PathOrFile,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    generator: torch.Generator | None = None,
    map_location: torch.device | str | None = None,
) -> int:
    """Restore ``model``, ``optimizer`` and RNG states; return the saved iteration.

    Args:
        src: A path or a binary file-like object written by :func:`save_checkpoint`.
        model: Receives the weights (``load_state_dict``, strict).
        optimizer: Receives the optimizer state (``None``: weights only, e.g. to
            generate text).
        generator: Receives the saved batch-generator state, when one was saved.
        map_location: Where to load tensors (e.g. ``"cpu"`` for a GPU checkpoint).

    Returns:
        The iteration saved with the checkpoint.

    Raises:
        TypeError: An argument of the wrong kind.
        ValueError: ``generator`` is given but the checkpoint saved none.

    Taught on: "Training and generating text".
    """
    _check_file("src", src, "read")
    check_type("model", model, nn.Module, expected="a torch.nn.Module")
    if optimizer is not None:
        check_type("optimizer", optimizer, torch.optim.Optimizer,
                   expected="a torch.optim.Optimizer or None")
    if generator is not None:
        check_type("generator", generator, torch.Generator,
                   expected="a torch.Generator")
    checkpoint = torch.load(src, map_location=map_location, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    if optimizer is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
    rng = checkpoint["rng"]
    torch.set_rng_state(rng["torch"].cpu())
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in rng["cuda"]])
    if generator is not None:
        if "generator" not in rng:
            raise ValueError(
                "generator was given, but the checkpoint holds no generator state "
                "(save_checkpoint was called without one)"
            )
        generator.set_state(rng["generator"].cpu())
    return int(checkpoint["iteration"])


def checkpoint_extra(src: PathOrFile) -> dict[str, Any]:
    """The ``extra`` data saved with a checkpoint (without building a model).

    Taught on: "Training and generating text".
    """
    _check_file("src", src, "read")
    return torch.load(src, map_location="cpu", weights_only=True)["extra"]


def _check_file(name: str, value: object, method: str) -> None:
    """A path, or a binary file-like object with ``method`` (``read``, ``write``)."""
    if not isinstance(value, (str, os.PathLike)) and not hasattr(value, method):
        raise TypeError(
            f"{name} must be a path or a binary file object with .{method}(), got "
            f"{type(value).__name__}"
        )
