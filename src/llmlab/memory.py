r"""The memory of training: bytes measured on real tensors, and by formula.

* Measured: :func:`parameter_bytes`, :func:`gradient_bytes`,
  :func:`optimizer_state_bytes` (a sharded tensor counts its local shard), and
  :func:`record_saved_tensors`, which sees every tensor autograd keeps for the
  backward pass (``torch.autograd.graph.saved_tensors_hooks``);
  :func:`checkpointed_layers` recomputes each block instead
  (``torch.utils.checkpoint``).
* Estimated: :func:`training_state_bytes` (16 bytes per parameter with
  AdamW), :func:`activation_elements` (what the forward pass saves),
  :func:`recomputed_block_elements` and :func:`activation_peak_elements` (what
  activation checkpointing holds at its peak, in the backward pass), and
  :func:`zero_bytes_per_device`, the ZeRO stages 1–3 (Rajbhandari et al., 2020).

Taught on: "Where the compute and the memory go".
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections.abc import Iterable, Iterator, Mapping

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from llmlab.checks import (
    check_bool,
    check_choice,
    check_finite_float,
    check_int,
    check_module,
    check_str,
    check_type,
)
from llmlab.models.llama import LlamaConfig

__all__ = [
    "ADAM_STATE_BYTES",
    "SavedTensor",
    "activation_elements",
    "activation_peak_elements",
    "checkpointed_layers",
    "classify_saved",
    "gradient_bytes",
    "optimizer_state_bytes",
    "parameter_bytes",
    "record_saved_tensors",
    "recomputed_block_elements",
    "tensor_bytes",
    "training_state_bytes",
    "zero_bytes_per_device",
]


ADAM_STATE_BYTES = 12
"""Bytes of optimizer state per parameter in mixed-precision Adam: an fp32 master
copy, ``m`` and ``v`` (ZeRO's ``K = 12``, Rajbhandari et al., 2020, section 3.1)."""


# --------------------------------------------------------------------------
# memory: measured
# --------------------------------------------------------------------------
def _local(t: Tensor) -> Tensor:
    """The part of ``t`` this process holds (a DTensor's local shard)."""
    to_local = getattr(t, "to_local", None)
    return to_local() if callable(to_local) else t


def tensor_bytes(tensors: Iterable[Tensor]) -> int:
    """Bytes of the distinct tensors among ``tensors`` held by this process.

    A tensor met twice (a tied weight) counts once; a sharded ``DTensor`` counts
    its local shard (what this rank stores).

    Taught on: "Where the compute and the memory go".
    """
    if isinstance(tensors, Tensor) or not isinstance(tensors, Iterable):
        kind = "a single Tensor" if isinstance(tensors, Tensor) else type(tensors).__name__
        raise TypeError(f"tensors must be an iterable of tensors, got {kind}; wrap one "
                        "tensor in a list: tensor_bytes([t])")
    seen: set[int] = set()
    total = 0
    for i, t in enumerate(tensors):
        check_type(f"tensors[{i}]", t, Tensor, expected="a torch.Tensor")
        if id(t) in seen or t.device.type == "meta":
            continue
        seen.add(id(t))  # t itself: a fresh local shard may reuse a freed id
        local = _local(t)
        total += local.numel() * local.element_size()
    return total


def parameter_bytes(model: nn.Module) -> int:
    """Bytes of ``model``'s parameters held here (local shards when sharded).

    Taught on: "Where the compute and the memory go".
    """
    check_module("model", model)
    return tensor_bytes(model.parameters())


def gradient_bytes(model: nn.Module) -> int:
    """Bytes of the ``.grad`` tensors of ``model``'s parameters held here.

    Taught on: "Where the compute and the memory go".
    """
    check_module("model", model)
    return tensor_bytes(p.grad for p in model.parameters() if p.grad is not None)


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of the tensors in ``optimizer.state`` held here (AdamW: ``m``, ``v``).

    Python numbers (our AdamW's ``step``) take no tensor memory and are not
    counted; ``torch.optim.AdamW`` keeps ``step`` as a 0-d tensor (4 bytes).

    Taught on: "Where the compute and the memory go".
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            "optimizer must be a torch.optim.Optimizer, got "
            f"{type(optimizer).__name__}")
    return tensor_bytes(v for state in optimizer.state.values() for v in state.values()
                        if isinstance(v, Tensor))


@dataclasses.dataclass(frozen=True)
class SavedTensor:
    """One tensor autograd kept for the backward pass (once per storage).

    Attributes:
        shape: Its shape.
        dtype: Its dtype, e.g. ``"float32"``.
        nbytes: Bytes of its storage.
        kind: ``"activation"``; ``"parameter"`` (a weight itself: no extra
            memory); ``"parameter copy"`` (a weight cast to bf16 by autocast);
            ``"buffer"`` (a module buffer, e.g. RoPE's tables).
    """

    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    kind: str


_SAVED_KINDS = ("activation", "parameter", "parameter copy", "buffer")
"""The :attr:`SavedTensor.kind` values."""

_VIEW_BACKWARDS = frozenset({
    "AliasBackward0", "ExpandBackward0", "PermuteBackward0", "ReshapeAliasBackward0",
    "SqueezeBackward0", "SqueezeBackward1", "TBackward0", "TransposeBackward0",
    "UnsqueezeBackward0", "ViewBackward0",
})


def _is_parameter_copy(t: Tensor) -> bool:
    """Whether ``t`` is a cast of a (view of a) parameter: autocast's weight copies."""
    fn = t.grad_fn
    if fn is None or type(fn).__name__ != "ToCopyBackward0":
        return False
    fn = fn.next_functions[0][0]
    while fn is not None and type(fn).__name__ in _VIEW_BACKWARDS:
        fn = fn.next_functions[0][0]
    return fn is not None and type(fn).__name__ == "AccumulateGrad"


def record_saved_tensors(
    model: nn.Module | None = None,
) -> contextlib.AbstractContextManager[list[SavedTensor]]:
    """Record what autograd saves for backward inside the ``with`` block.

    ``torch.autograd.graph.saved_tensors_hooks`` sees every tensor an operation
    saves for its backward pass. A save can be let go at once: an operation whose
    result only reaches detached tensors (a ``.detach()``-ed maximum) is dropped
    from the graph with what it saved. So when the block ends, the list keeps only
    what the graph still holds then: keep the forward's output alive until after
    the ``with``. Several operations often keep the same tensor (the input of
    ``q_proj``, ``k_proj`` and ``v_proj``), and a view shares its base's memory, so
    each storage is recorded once. Run the backward pass after the block: the
    tensors are stored as usual, and come back detached (a first backward works;
    ``create_graph=True`` through them does not).

    Args:
        model: Its parameters and buffers are told apart from activations.

    Yields:
        The list of :class:`SavedTensor`, filled when the block ends.

    Taught on: "Where the compute and the memory go".
    """
    check_module("model", model, optional=True)  # here, not when the block is entered
    return _record_saved_tensors(model)


@contextlib.contextmanager
def _record_saved_tensors(model: nn.Module | None) -> Iterator[list[SavedTensor]]:
    params = ({p.untyped_storage().data_ptr() for p in model.parameters()}
              if model is not None else set())
    buffers = ({b.untyped_storage().data_ptr() for b in model.buffers()}
               if model is not None else set())
    log: list[SavedTensor] = []
    saves: list[tuple[weakref.ref, int, SavedTensor]] = []  # in the order of saving

    def pack(t: Tensor) -> _Saved:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        kind = ("parameter" if ptr in params else "buffer" if ptr in buffers
                else "parameter copy" if _is_parameter_copy(t) else "activation")
        # autograd keeps `held` as long as the graph needs the tensor; detached, it
        # does not hold a saved output's own node (a cycle nothing would free)
        held = _Saved(t.detach())
        saves.append((weakref.ref(held), ptr, SavedTensor(
            tuple(t.shape), str(t.dtype).removeprefix("torch."), storage.nbytes(), kind)))
        return held

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda held: held.tensor):
        yield log
    seen: set[int] = set()  # storages still held are all alive: their addresses differ
    for held, ptr, record in saves:
        if held() is not None and record.nbytes and ptr not in seen:
            seen.add(ptr)
            log.append(record)


class _Saved:
    """A tensor as autograd stores it for backward; a weak reference to the holder
    shows when autograd lets the save go."""

    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor


def classify_saved(saved: Iterable[SavedTensor], sizes: dict[str, int],
                   kinds: tuple[str, ...] = ("activation",)) -> dict[str, int]:
    """Bytes of saved tensors by size family: which tensor shape each one has.

    Args:
        saved: From :func:`record_saved_tensors`.
        sizes: Family name -> element count, e.g. ``{"B·T·d": B*T*d, ...}``; a
            tensor with another element count goes under ``"other"``.
        kinds: Which :attr:`SavedTensor.kind` to include.

    Raises:
        ValueError: Two families have the same element count (ambiguous).

    Taught on: "Where the compute and the memory go".
    """
    check_type("sizes", sizes, Mapping, expected="a dict of family name -> elements")
    for name, n in sizes.items():
        check_str("a key of sizes", name)
        check_int(f"sizes[{name!r}]", n)
    if isinstance(kinds, str):
        raise TypeError(f"kinds must be a tuple of kinds, got str {kinds!r}; write "
                        f"kinds=({kinds!r},)")
    check_type("kinds", kinds, (tuple, list, set, frozenset),
               expected="a tuple of kinds")
    for kind in kinds:
        check_choice("kinds", kind, _SAVED_KINDS)
    by_numel = {n: name for name, n in sizes.items()}
    if len(by_numel) != len(sizes):
        raise ValueError(f"sizes must have distinct element counts, got {sizes}")
    out = {name: 0 for name in (*sizes, "other")}
    for i, t in enumerate(check_type("saved", saved, Iterable,
                                     expected="an iterable of SavedTensor")):
        check_type(f"saved[{i}]", t, SavedTensor)
        if t.kind in kinds:
            numel = 1
            for n in t.shape:
                numel *= n
            out[by_numel.get(numel, "other")] += t.nbytes
    return out


class _Checkpointed(nn.Module):
    """Run ``block`` under ``torch.utils.checkpoint``: keep its inputs only."""

    def __init__(self, block: nn.Module) -> None:
        super().__init__()
        self.block = block

    def forward(self, *args: object) -> Tensor:
        return checkpoint(self.block, *args, use_reentrant=False)


def checkpointed_layers(model: nn.Module) -> contextlib.AbstractContextManager[nn.Module]:
    """Inside the block, every entry of ``model.layers`` is activation-checkpointed.

    A checkpointed block keeps only its input for the backward pass; the backward
    pass runs its forward again to get the rest (one more forward pass of the
    blocks, about a third more FLOPs). The model's own ``forward`` is unchanged:
    its blocks are wrapped while the ``with`` lasts, then put back.

    Taught on: "Where the compute and the memory go".
    """
    check_module("model", model)  # here, not when the block is entered
    layers = getattr(model, "layers", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
        got = ("no .layers" if layers is None else f".layers of type "
               f"{type(layers).__name__}" if not isinstance(layers, nn.ModuleList)
               else "an empty .layers")
        raise ValueError("model must have a non-empty nn.ModuleList .layers to "
                         f"checkpoint (as TransformerLM has), got a "
                         f"{type(model).__name__} with {got}")
    return _checkpointed_layers(model, layers)


@contextlib.contextmanager
def _checkpointed_layers(model: nn.Module, layers: nn.ModuleList) -> Iterator[nn.Module]:
    original = list(layers)
    try:
        for i, block in enumerate(original):
            layers[i] = _Checkpointed(block)
        yield model
    finally:
        for i, block in enumerate(original):
            layers[i] = block


# --------------------------------------------------------------------------
# memory: estimated
# --------------------------------------------------------------------------
def training_state_bytes(n_parameters: int, precision: str = "fp32") -> dict[str, int]:
    """Bytes of parameters, gradients and AdamW state for ``n_parameters``.

    * ``"fp32"``: 4 + 4 + 8 (``m`` and ``v``) = 16 bytes per parameter.
    * ``"mixed"`` (bf16 weights and gradients, fp32 master weights and
      moments, as in ZeRO's accounting): 2 + 2 + 12 = 16 bytes per parameter.
      ``torch.autocast`` keeps fp32 weights and gradients instead (4 + 4 + 8)
      and casts weights on the fly: the same 16 bytes, less activation memory.

    Taught on: "Where the compute and the memory go".
    """
    check_int("n_parameters", n_parameters, minimum=0)
    if precision == "fp32":
        per = (4, 4, 8)
    elif precision == "mixed":
        per = (2, 2, ADAM_STATE_BYTES)
    else:
        raise ValueError(f"precision must be 'fp32' or 'mixed', got {precision!r}")
    return dict(zip(("parameters", "gradients", "optimizer_state"),
                    (k * n_parameters for k in per)))


ACTIVATION_FAMILIES = ("B·T·d", "B·T·d_ff", "B·h·T·T", "B·T·V")


def activation_elements(
    config: LlamaConfig,
    batch_size: int,
    context_length: int | None = None,
    *,
    checkpointing: bool = False,
) -> dict[str, int]:
    r"""What a :class:`TransformerLM` must keep for backward, in elements by family.

    The tensors each step's backward needs, and no more:

    * per block: the input of ``ln1`` and of ``ln2``, the shared input of
      ``q/k/v_proj``, ``Q`` and ``K`` after RoPE, ``V``, the input of
      ``output_proj`` and the shared input of ``w1``/``w3``: :math:`8\,BTd`; the
      SiLU input, its output, ``w3 x`` and the product fed to ``w2``:
      :math:`4\,BT d_{ff}`; the attention weights: :math:`B h T^2`;
    * after the blocks: the inputs of ``ln_final`` and ``lm_head`` (:math:`2\,BTd`)
      and the softmax of the logits (:math:`BTV`).

    With ``checkpointing`` a block keeps only its input (:math:`BTd`); its other
    tensors come back, one block at a time, during the backward pass
    (:func:`recomputed_block_elements`). This counts what the forward pass saves;
    the peak of a checkpointed step comes later: :func:`activation_peak_elements`.

    Returns:
        ``{"B·T·d": n, "B·T·d_ff": n, "B·h·T·T": n, "B·T·V": n}``.

    Taught on: "Where the compute and the memory go".
    """
    check_type("config", config, LlamaConfig)
    check_int("batch_size", batch_size)
    t = config.context_length if context_length is None else context_length
    check_int("context_length", t)
    check_bool("checkpointing", checkpointing)
    btd = batch_size * t * config.d_model
    per_block = ((1, 0, 0) if checkpointing else (8, 4, 1))
    layers = config.num_layers
    return {
        "B·T·d": layers * per_block[0] * btd + 2 * btd,
        "B·T·d_ff": layers * per_block[1] * batch_size * t * config.d_ff,
        "B·h·T·T": layers * per_block[2] * batch_size * config.num_heads * t * t,
        "B·T·V": batch_size * t * config.vocab_size,
    }


def recomputed_block_elements(
    config: LlamaConfig,
    batch_size: int,
    context_length: int | None = None,
) -> dict[str, int]:
    r"""What one checkpointed block brings back in the backward pass, in elements.

    Its forward pass runs again and keeps, until the block's backward is done,
    the tensors :func:`activation_elements` counts per block without
    checkpointing, less the block's input (the input of ``ln1``), which the
    checkpoint saved and the recomputation reads: :math:`7\,BTd + 4\,BTd_{ff} +
    BhT^2`.

    Returns:
        ``{"B·T·d": n, "B·T·d_ff": n, "B·h·T·T": n, "B·T·V": 0}``.

    Taught on: "Where the compute and the memory go".
    """
    full = activation_elements(config, batch_size, context_length)
    saved = activation_elements(config, batch_size, context_length, checkpointing=True)
    layers = config.num_layers
    per_block = {family: (full[family] - saved[family]) // layers
                 for family in ACTIVATION_FAMILIES}  # (8 - 1) BTd, 4 BTd_ff, BhT²
    return per_block


def activation_peak_elements(
    config: LlamaConfig,
    batch_size: int,
    context_length: int | None = None,
    *,
    checkpointing: bool = False,
) -> int:
    r"""The most activation elements held at once in a step, by the formulas.

    * Without ``checkpointing``: everything :func:`activation_elements` counts,
      all held when the forward pass ends.
    * With it, the larger of two moments. When the forward pass ends: what it
      saved (every block's input and the tensors after the blocks). When the
      backward pass recomputes the last block: every block's input
      (:math:`L\,BTd`) and that block's :func:`recomputed_block_elements`; the
      tensors after the blocks have been used, and freed, by then. Each earlier
      block is recomputed with fewer inputs still held.

    Gradients on their way back, weights and optimizer state are not counted.

    Taught on: "Where the compute and the memory go".
    """
    saved = activation_elements(config, batch_size, context_length,
                                checkpointing=checkpointing)
    if not checkpointing:
        return sum(saved.values())
    t = config.context_length if context_length is None else context_length
    inputs = config.num_layers * batch_size * t * config.d_model
    block = recomputed_block_elements(config, batch_size, context_length)
    return max(sum(saved.values()), inputs + sum(block.values()))


def zero_bytes_per_device(
    n_parameters: float,
    n_devices: int,
    stage: int,
    optimizer_bytes: int = ADAM_STATE_BYTES,
) -> dict[str, float]:
    r"""Model-state bytes per GPU under ZeRO stage ``stage`` (0 = plain DDP).

    Mixed-precision Adam keeps :math:`2\Psi` (bf16 weights) + :math:`2\Psi` (bf16
    gradients) + :math:`K\Psi` (fp32 master weights, ``m``, ``v``; ``K = 12``)
    bytes for :math:`\Psi` parameters. Stage 1 shards the optimizer state over
    the :math:`N_d` GPUs, stage 2 the gradients too, stage 3 the weights too
    (Rajbhandari et al., 2020, figure 1): for :math:`\Psi = 7.5` billion on 64
    GPUs, 120, 31.4, 16.6 and 1.9 GB. Activations come on top.

    Returns:
        ``{"parameters": ..., "gradients": ..., "optimizer_state": ..., "total": ...}``.

    Taught on: "Where the compute and the memory go".
    """
    check_finite_float("n_parameters", n_parameters, minimum=0.0)
    check_int("n_devices", n_devices)
    check_int("stage", stage, minimum=0)
    if stage > 3:
        raise ValueError(f"stage must be 0, 1, 2 or 3, got {stage}")
    check_int("optimizer_bytes", optimizer_bytes, minimum=0)
    psi = float(n_parameters)
    shard = {k: 1.0 / n_devices if stage >= s else 1.0
             for k, s in (("optimizer_state", 1), ("gradients", 2), ("parameters", 3))}
    out = {"parameters": 2 * psi * shard["parameters"],
           "gradients": 2 * psi * shard["gradients"],
           "optimizer_state": optimizer_bytes * psi * shard["optimizer_state"]}
    out["total"] = sum(out.values())
    return out

