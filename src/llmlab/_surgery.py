"""Model surgery shared by LoRA and weight quantization: finding the linear layers of
a model and replacing them in place; and where a model lives (:func:`device_of`).

Private: ``llmlab.finetune`` and ``llmlab.inference`` teach it, each through its own
public functions (``add_lora``, ``merge_lora``, ``quantize_weights``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import torch
from torch import nn

from llmlab.layers import Linear

__all__ = ["LINEAR", "device_of", "named_children", "shared"]

LINEAR = (Linear, nn.Linear)
"""The linear layers LoRA wraps and quantization replaces."""

Entry = tuple[str, nn.Module, str, nn.Module]  # (path, parent, attribute name, child)


def named_children(model: nn.Module) -> Iterator[Entry]:
    """``(path, parent, attribute name, child)`` for every sub-module of ``model``,
    in the model's order (``layers.0.attn.q_proj`` before ``lm_head``); a module
    reached under two names comes twice, once under each."""
    for path, child in model.named_modules(remove_duplicate=False):
        if path:
            parent_path, _, name = path.rpartition(".")
            yield path, model.get_submodule(parent_path), name, child


def shared(model: nn.Module, entries: Iterable[Entry]) -> list[str]:
    """The paths among ``entries`` whose layer is shared: its weight belongs to
    another module as well (an output layer tied to the embedding), or the layer
    itself is reached under two names. Replacing such a layer in one place, or
    changing its weight, would change the other place too."""
    entries = list(entries)
    owners: dict[int, int] = {}  # parameter -> the modules that hold it
    for module in model.modules():
        for p in module.parameters(recurse=False):
            owners[id(p)] = owners.get(id(p), 0) + 1
    seen: dict[int, int] = {}  # layer -> the names it is reached under
    for _, _, _, child in named_children(model):
        seen[id(child)] = seen.get(id(child), 0) + 1
    return [path for path, _, _, child in entries
            if owners.get(id(child.weight), 0) > 1 or seen[id(child)] > 1]


def device_of(model: nn.Module) -> torch.device:
    """Where ``model``'s first parameter (or else buffer) is; the CPU for a module
    that has neither."""
    tensor = next(model.parameters(), None)
    if tensor is None:
        tensor = next(model.buffers(), None)
    return torch.device("cpu") if tensor is None else tensor.device
