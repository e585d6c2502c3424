"""Save and resume a training run: weights, optimizer state, iteration, RNG states.

Resuming continues the run bit for bit when everything random is restored: the
generator that draws the batches (pass it to both functions) and torch's global
generators (dropout, say), which :func:`load_checkpoint` restores too.

Nothing is lost on the way: a save to a path writes a temporary file next to it and
renames it over the target, so an interrupted save leaves the previous checkpoint
whole; a load checks the whole file against the model and optimizer before it
changes either of them (or the global random state).

Taught on: "Training and generating text".
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import torch
from torch import nn

from llmlab.checks import check_file, check_int, check_type

__all__ = ["checkpoint_extra", "load_checkpoint", "save_checkpoint"]

PathOrFile = str | os.PathLike | IO[bytes]


def save_checkpoint(
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    iteration: int,
    out: PathOrFile,
    generator: torch.Generator | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write everything needed to continue training to ``out``.

    A path is written whole or not at all: the checkpoint goes to a temporary file
    in the same folder, which then replaces ``out`` (``os.replace``), so a save
    that fails or is killed leaves the previous file as it was.

    Args:
        model: Its ``state_dict()`` is saved.
        optimizer: Its ``state_dict()`` (AdamW's ``step``, ``m``, ``v``) is saved;
            ``None`` saves the weights alone: a checkpoint to generate from, which
            cannot resume training (the course's shipped base models are such).
        iteration: Steps done so far, ``>= 0``.
        out: A path (in a folder that exists) or a binary file-like object.
        generator: The batch generator, whose state is saved if given.
        extra: Plain data (numbers, strings, lists, dicts) stored alongside, such
            as the model's configuration.

    Raises:
        TypeError: An argument of the wrong kind.
        ValueError: ``iteration < 0``, or ``out`` is a folder or in a folder that
            does not exist.

    Taught on: "Training and generating text".
    """
    check_type("model", model, nn.Module, expected="a torch.nn.Module")
    if optimizer is not None:
        check_type("optimizer", optimizer, torch.optim.Optimizer,
                   expected="a torch.optim.Optimizer or None")
    check_int("iteration", iteration, minimum=0)
    check_file("out", out, "write")
    if generator is not None:
        check_type("generator", generator, torch.Generator,
                   expected="a torch.Generator")
    if extra is not None:
        check_type("extra", extra, dict, expected="a dict of plain data")
    path = None
    if isinstance(out, (str, os.PathLike)):
        path = Path(out)
        if not path.parent.is_dir():
            raise ValueError(f"out ({str(out)!r}) is in a folder that does not exist "
                             f"({str(path.parent)!r}); create it first")
        if path.is_dir():
            raise ValueError(f"out ({str(out)!r}) is a folder; expected a file path "
                             "such as folder/checkpoint.pt")
    rng = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    if generator is not None:
        rng["generator"] = generator.get_state()
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": {} if optimizer is None else optimizer.state_dict(),
        "iteration": iteration,
        "rng": rng,
        "extra": extra or {},
    }
    if path is None:
        torch.save(checkpoint, out)
        return
    # a temporary file of this process, renamed over the target once complete
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as file:
            torch.save(checkpoint, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def load_checkpoint(
    src: PathOrFile,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    generator: torch.Generator | None = None,
    map_location: torch.device | str | None = None,
) -> int:
    """Restore ``model``, ``optimizer`` and RNG states; return the saved iteration.

    With ``optimizer=None`` only the weights are loaded (and ``generator``'s state,
    if given): torch's global random state is restored only to resume a run.
    Weights are cast to the model's dtype (a float16 checkpoint loads into a
    float32 model).

    Everything is checked before anything changes: that ``src`` is a checkpoint,
    that its weights have the model's names and shapes (strict), that its
    optimizer state fits ``optimizer`` and that it holds a generator state when
    ``generator`` is given. A load that fails leaves the model, the optimizer and
    the random states as they were.

    Args:
        src: A path or a binary file-like object written by :func:`save_checkpoint`.
        model: Receives the weights (``load_state_dict``, strict).
        optimizer: Receives the optimizer state (``None``: weights only, e.g. to
            generate text).
        generator: Receives the saved batch-generator state.
        map_location: Where to load tensors (e.g. ``"cpu"`` for a GPU checkpoint).

    Returns:
        The iteration saved with the checkpoint.

    Raises:
        TypeError: An argument of the wrong kind.
        ValueError: ``src`` is missing or not a checkpoint, does not fit ``model``
            or ``optimizer``, or holds no generator state for ``generator``.

    Taught on: "Training and generating text".
    """
    check_file("src", src, "read")
    check_type("model", model, nn.Module, expected="a torch.nn.Module")
    if optimizer is not None:
        check_type("optimizer", optimizer, torch.optim.Optimizer,
                   expected="a torch.optim.Optimizer or None")
    if generator is not None:
        check_type("generator", generator, torch.Generator,
                   expected="a torch.Generator")
    checkpoint = _read(src, map_location)
    _match_model_state(checkpoint["model"], model)
    if optimizer is not None:
        if not checkpoint["optimizer"]:
            raise ValueError("optimizer was given, but src holds no optimizer state: "
                             "it was saved with optimizer=None (weights only), to "
                             "generate from, and cannot resume training")
        _match_optimizer_state(checkpoint["optimizer"], optimizer)
    rng = checkpoint["rng"]
    if generator is not None:
        if "generator" not in rng:
            raise ValueError(
                "generator was given, but src holds no generator state "
                "(save_checkpoint was called without one)"
            )
        _match_rng("generator", rng["generator"], generator.get_state())
    _match_rng("torch", rng["torch"], torch.get_rng_state())
    # everything fits: now change things
    model.load_state_dict(checkpoint["model"])
    if optimizer is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
        torch.set_rng_state(rng["torch"].cpu())
        if "cuda" in rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([s.cpu() for s in rng["cuda"]])
    if generator is not None:
        generator.set_state(rng["generator"].cpu())
    return checkpoint["iteration"]


def checkpoint_extra(src: PathOrFile) -> dict[str, Any]:
    """The ``extra`` data saved with a checkpoint (without building a model).

    Raises:
        TypeError: ``src`` is not a path or a binary file object.
        ValueError: ``src`` is missing or not a checkpoint.

    Taught on: "Training and generating text".
    """
    check_file("src", src, "read")
    return _read(src, "cpu")["extra"]


_KEYS = ("model", "optimizer", "iteration", "rng", "extra")


def _read(src: PathOrFile, map_location: Any) -> dict[str, Any]:
    """The checkpoint in ``src``, its keys and kinds checked (``ValueError`` if not)."""
    shown = (f"src ({os.fspath(src)!r})" if isinstance(src, (str, os.PathLike))
             else f"src (a {type(src).__name__})")
    if isinstance(src, (str, os.PathLike)) and not Path(src).is_file():
        what = "is a folder" if Path(src).is_dir() else "does not exist"
        raise ValueError(f"{shown} {what}; expected a checkpoint file")
    not_ours = f"{shown} is not a checkpoint written by save_checkpoint"
    try:
        checkpoint = torch.load(src, map_location=map_location, weights_only=True)
    except OSError:
        raise
    except Exception as err:  # torch's errors differ by how the file is broken
        if "zip archive" in str(err):
            reason = "it is truncated or damaged"
        elif isinstance(src, (str, os.PathLike)) and not os.path.getsize(src):
            reason = "it is empty"
        else:
            reason = "torch.load cannot read it"
        raise ValueError(f"{not_ours}: {reason}") from None
    if not isinstance(checkpoint, dict):
        raise ValueError(f"{not_ours}: it holds a {type(checkpoint).__name__}, "
                         f"expected a dict with keys {', '.join(_KEYS)}")
    missing = [k for k in _KEYS if k not in checkpoint]
    if missing:
        raise ValueError(f"{not_ours}: it lacks {', '.join(map(repr, missing))}")
    kinds = {"model": Mapping, "optimizer": Mapping, "iteration": int, "rng": Mapping,
             "extra": dict}
    for key, kind in kinds.items():
        value = checkpoint[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{not_ours}: its {key!r} is a {type(value).__name__}")
    if not isinstance(checkpoint["rng"].get("torch"), torch.Tensor):
        raise ValueError(f"{not_ours}: its 'rng' lacks torch's generator state")
    return checkpoint


def _shape(shape: torch.Size) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _listed(names: list[str], most: int = 3) -> str:
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _match_model_state(saved: Mapping[str, Any], model: nn.Module) -> None:
    """The saved weights have exactly the model's names and shapes."""
    own = model.state_dict()
    missing = [k for k in own if k not in saved]
    unexpected = [k for k in saved if k not in own]
    if missing or unexpected:
        parts = ([f"missing in src: {_listed(missing)}"] if missing else []) + (
            [f"not in model: {_listed(unexpected)}"] if unexpected else [])
        raise ValueError(f"model does not fit the checkpoint src: its weights have "
                         f"other names ({'; '.join(parts)})")
    for key, mine in own.items():
        theirs = saved[key]
        if isinstance(mine, torch.Tensor) and (
                not isinstance(theirs, torch.Tensor) or theirs.shape != mine.shape):
            got = (_shape(theirs.shape) if isinstance(theirs, torch.Tensor)
                   else type(theirs).__name__)
            raise ValueError(f"model does not fit the checkpoint src: {key} has shape "
                             f"{_shape(mine.shape)} in model but {got} in src")


# optimizer state entries shaped like their parameter (ours, torch's Adam and SGD)
_PARAMETER_SHAPED = ("m", "v", "exp_avg", "exp_avg_sq", "max_exp_avg_sq",
                    "momentum_buffer")


def _match_optimizer_state(saved: Mapping[str, Any],
                           optimizer: torch.optim.Optimizer) -> None:
    """What ``Optimizer.load_state_dict`` checks, and each state's shape."""
    wrong = "optimizer does not fit the checkpoint src"
    groups, state = saved.get("param_groups"), saved.get("state")
    if not isinstance(groups, list) or not isinstance(state, Mapping) or not all(
            isinstance(g, Mapping) and isinstance(g.get("params"), list)
            for g in groups):
        raise ValueError(f"{wrong}: src holds no optimizer state_dict "
                         "(param_groups and state)")
    if len(groups) != len(optimizer.param_groups):
        raise ValueError(f"{wrong}: src has {len(groups)} parameter groups, the "
                         f"optimizer {len(optimizer.param_groups)}")
    params: dict[Any, torch.Tensor] = {}
    for i, (theirs, mine) in enumerate(zip(groups, optimizer.param_groups)):
        if len(theirs["params"]) != len(mine["params"]):
            raise ValueError(f"{wrong}: parameter group {i} holds "
                             f"{len(theirs['params'])} parameters in src but "
                             f"{len(mine['params'])} in the optimizer")
        params.update(zip(theirs["params"], mine["params"]))
    for key, entries in state.items():
        if key not in params:
            raise ValueError(f"{wrong}: src has state for parameter {key!r}, which "
                             "is in none of its parameter groups")
        if not isinstance(entries, Mapping):
            raise ValueError(f"{wrong}: the state of parameter {key!r} is a "
                             f"{type(entries).__name__}")
        shape = params[key].shape
        for name in _PARAMETER_SHAPED:
            value = entries.get(name)
            if isinstance(value, torch.Tensor) and value.shape != shape:
                raise ValueError(f"{wrong}: its {name!r} of parameter {key} has shape "
                                 f"{_shape(value.shape)} in src, but the parameter "
                                 f"has {_shape(shape)}")


def _match_rng(name: str, saved: object, current: torch.Tensor) -> None:
    """A saved generator state that ``set_state`` will take (same size, bytes)."""
    if not isinstance(saved, torch.Tensor) or saved.dtype != torch.uint8 or (
            saved.shape != current.shape):
        raise ValueError(f"src's {name} generator state does not fit this generator "
                         f"(another kind of generator?)")
