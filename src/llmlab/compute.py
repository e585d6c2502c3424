r"""Where the compute and the memory of training go: FLOPs, bytes, GPU-hours.

* FLOPs, counted: :func:`count_flops` runs one forward and one backward pass under
  ``torch.utils.flop_counter.FlopCounterMode`` (on ``device="meta"`` a 7B model
  costs no memory); :func:`count_llama_flops` counts a :class:`LlamaConfig`.
* FLOPs, estimated: :func:`flops_per_token` is PaLM's
  :math:`6N + 12\,L\,d\,T` (Chowdhery et al., 2022, appendix B): 2 FLOPs per
  multiply-add, forward ``2N`` plus backward ``4N``, and the attention scores
  :math:`QK^\top` and :math:`AV`, which have no parameters.
* Memory, measured: :func:`parameter_bytes`, :func:`gradient_bytes`,
  :func:`optimizer_state_bytes` (a sharded tensor counts its local shard), and
  :func:`record_saved_tensors`, which sees every tensor autograd keeps for the
  backward pass (``torch.autograd.graph.saved_tensors_hooks``);
  :func:`checkpointed_layers` recomputes each block instead
  (``torch.utils.checkpoint``).
* Memory, estimated: :func:`training_state_bytes` (16 bytes per parameter with
  AdamW), :func:`activation_elements` (what the forward pass saves),
  :func:`recomputed_block_elements` and :func:`activation_peak_elements` (what
  activation checkpointing holds at its peak, in the backward pass), and
  :func:`zero_bytes_per_device`, the ZeRO stages 1–3 (Rajbhandari et al., 2020).
* Cost at scale: :func:`gpu_hours` and :func:`implied_utilisation`, with the
  hardware figures kept, with their sources, in :data:`ACCELERATORS` and the
  published runs in :data:`PUBLISHED_RUNS`; :func:`matmul_flops_per_second`
  measures this machine's peak.

Taught on: "Where the compute and the memory go".
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint
from torch.utils.flop_counter import FlopCounterMode

from llmlab.checks import (
    check_bool,
    check_choice,
    check_finite_float,
    check_int,
    check_str,
    check_type,
)
from llmlab.models.gpt2 import GPT2Config
from llmlab.models.llama import LlamaConfig, TransformerLM
from llmlab.training.loss import cross_entropy

__all__ = [
    "A100_80GB",
    "ACCELERATORS",
    "ADAM_STATE_BYTES",
    "H100_SXM",
    "LLAMA2_7B_RUN",
    "NANOGPT_GPT2_RUN",
    "PUBLISHED_RUNS",
    "Accelerator",
    "FlopCount",
    "PublishedRun",
    "SavedTensor",
    "activation_elements",
    "activation_peak_elements",
    "checkpointed_layers",
    "classify_saved",
    "count_flops",
    "count_llama_flops",
    "flops_per_token",
    "gpt2_matmul_parameters",
    "gpu_hours",
    "gradient_bytes",
    "implied_utilisation",
    "llama_matmul_parameters",
    "matmul_flops_per_second",
    "optimizer_state_bytes",
    "parameter_bytes",
    "record_saved_tensors",
    "recomputed_block_elements",
    "tensor_bytes",
    "training_state_bytes",
    "zero_bytes_per_device",
]


# --------------------------------------------------------------------------
# hardware and published runs: every outside figure, with where it comes from
# --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Accelerator:
    """A GPU's peak dense matmul rate and memory, as its maker states them.

    Attributes:
        name: The part, e.g. ``"NVIDIA A100 80GB SXM"``.
        bf16_flops: Peak dense bf16 Tensor Core FLOP/s (no 2:4 sparsity).
        memory_bytes: High-bandwidth memory on the card, in bytes: an "80GB"
            card has 80 GiB (80 · 2³⁰ bytes; ``nvidia-smi`` shows 81920 MiB on an
            A100 80GB).
        source: Where the figures come from.
    """

    name: str
    bf16_flops: float
    memory_bytes: int
    source: str


A100_80GB = Accelerator(
    name="NVIDIA A100 80GB SXM",
    bf16_flops=312e12,
    memory_bytes=80 * 2**30,
    source="NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS "
           "(624 with sparsity), 80GB HBM2e (80 GiB: nvidia-smi shows 81920 MiB)",
)
"""The GPU of the Llama 2 runs (and of nanoGPT's GPT-2 run, in its 40GB version)."""

H100_SXM = Accelerator(
    name="NVIDIA H100 SXM",
    bf16_flops=989e12,
    memory_bytes=80 * 2**30,
    source="NVIDIA H100 Tensor Core GPU datasheet: BF16 Tensor Core 1,979 TFLOPS "
           "with sparsity, i.e. about 989 dense; 80GB HBM3 (80 GiB, as the A100's)",
)
"""The next generation, for comparison."""

ACCELERATORS: dict[str, Accelerator] = {"A100": A100_80GB, "H100": H100_SXM}
"""Accelerators by short name."""


@dataclasses.dataclass(frozen=True)
class PublishedRun:
    """A training run whose size and cost were published.

    Attributes:
        model: Which model.
        tokens: Training tokens.
        gpu_hours: GPU-hours the authors report (or that their report implies).
        accelerator: Short name in :data:`ACCELERATORS`.
        source: The publication, and how the figures were read from it.
    """

    model: str
    tokens: float
    gpu_hours: float
    accelerator: str
    source: str


LLAMA2_7B_RUN = PublishedRun(
    model="Llama 2 7B",
    tokens=2.0e12,
    gpu_hours=184_320,
    accelerator="A100",
    source="Touvron et al. (2023), Llama 2: Open Foundation and Fine-Tuned Chat "
           "Models: Table 1 (2.0T tokens, 4k context) and Table 2 (184,320 "
           "A100-80GB GPU-hours for the 7B model)",
)
"""Llama 2 7B: the published number the estimate is checked against."""

NANOGPT_GPT2_RUN = PublishedRun(
    model="GPT-2 small (124M), nanoGPT reproduction",
    tokens=491_520 * 600_000,
    gpu_hours=8 * 4 * 24,
    accelerator="A100",
    source="karpathy/nanoGPT: README ('a single 8XA100 40GB node in about 4 days') "
           "and config/train_gpt2.py (491,520 tokens per step, 600,000 steps, "
           "about 300B tokens); approximate: 'about 4 days'",
)
"""GPT-2 small as nanoGPT reproduces it (OpenAI did not publish GPT-2's compute)."""

PUBLISHED_RUNS: dict[str, PublishedRun] = {
    "llama2-7b": LLAMA2_7B_RUN, "gpt2-small": NANOGPT_GPT2_RUN,
}
"""Published runs by short name."""

ADAM_STATE_BYTES = 12
"""Bytes of optimizer state per parameter in mixed-precision Adam: an fp32 master
copy, ``m`` and ``v`` (ZeRO's ``K = 12``, Rajbhandari et al., 2020, section 3.1)."""


# --------------------------------------------------------------------------
# FLOPs: counted
# --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FlopCount:
    """FLOPs of one training step, as ``FlopCounterMode`` counted them.

    ``FlopCounterMode`` counts matrix products (``mm``, ``bmm``, attention
    kernels, convolutions) at 2 FLOPs per multiply-add; element-wise work
    (norms, softmax, SiLU, the optimizer) is not counted.

    Attributes:
        forward: FLOPs of the forward pass (loss included).
        backward: FLOPs of ``loss.backward()`` (recomputation included, when
            blocks are checkpointed).
        by_module: Forward + backward FLOPs of each child of the model
            (``"token_embeddings"``, ``"layers"``, ``"lm_head"``, ...).
        batch_size: Sequences in the batch.
        context_length: Tokens per sequence.
    """

    forward: int
    backward: int
    by_module: dict[str, int]
    batch_size: int
    context_length: int

    @property
    def total(self) -> int:
        """Forward + backward."""
        return self.forward + self.backward

    @property
    def per_token(self) -> float:
        """``total / (batch_size · context_length)``."""
        return self.total / (self.batch_size * self.context_length)


def _module_counts(counter: FlopCounterMode, root: str) -> dict[str, int]:
    """FLOPs per child of the root module, from ``get_flop_counts()``."""
    out: dict[str, int] = {}
    for name, ops in counter.get_flop_counts().items():
        parts = name.split(".")
        if len(parts) >= 2 and parts[0] == root:
            child = parts[1]
            # a ModuleList's items count under the list ("layers"), not per item
            if len(parts) == 2 or (len(parts) == 3 and parts[2].isdigit()):
                out[child] = out.get(child, 0) + sum(ops.values())
    return out


def count_flops(
    model: nn.Module,
    batch_size: int,
    context_length: int,
) -> FlopCount:
    """Count the FLOPs of one forward and backward pass of a language model.

    The batch is ``batch_size`` sequences of ``context_length`` token ids (zeros:
    the count does not depend on the values), created where the model's
    parameters are; on ``device="meta"`` nothing is computed or stored, and the
    count is the same. The gradients are cleared afterwards.

    Args:
        model: Maps int64 ``(B, T)`` ids to ``(B, T, vocab_size)`` logits.
        batch_size: Sequences, ``>= 1``.
        context_length: Tokens per sequence, ``>= 1``.

    Taught on: "Where the compute and the memory go".
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_int("batch_size", batch_size)
    check_int("context_length", context_length)
    parameter = next(model.parameters(), None)
    if parameter is None:
        raise ValueError("model has no parameters: there is nothing to train")
    ids = torch.zeros(batch_size, context_length + 1, dtype=torch.long,
                      device=parameter.device)  # (B, T+1)
    # one counter for both passes, so that backward FLOPs are credited to modules too
    with FlopCounterMode(display=False) as counter:
        loss = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
        forward = counter.get_total_flops()
        loss.backward()
    model.zero_grad(set_to_none=True)
    total = counter.get_total_flops()
    return FlopCount(forward, total - forward,
                     _module_counts(counter, type(model).__name__),
                     batch_size, context_length)


def count_llama_flops(
    config: LlamaConfig,
    batch_size: int = 1,
    context_length: int | None = None,
    *,
    layers_counted: int | None = None,
) -> FlopCount:
    """Count a :class:`TransformerLM` of ``config`` on ``device="meta"``.

    Every block is the same, so ``FLOPs(L) = FLOPs(1) + (L - 1) · (FLOPs(2) -
    FLOPs(1))`` exactly; with ``layers_counted=2`` the model is counted with one
    and two blocks and extrapolated to ``config.num_layers`` (a 32-block model
    then costs what a 2-block one does to count).

    Args:
        config: The model.
        batch_size: Sequences.
        context_length: Tokens per sequence (default: ``config.context_length``).
        layers_counted: ``None`` counts every block; ``2`` extrapolates.

    Taught on: "Where the compute and the memory go".
    """
    if not isinstance(config, LlamaConfig):
        raise TypeError(f"config must be a LlamaConfig, got {type(config).__name__}")
    check_int("batch_size", batch_size)
    context_length = config.context_length if context_length is None else context_length
    check_int("context_length", context_length)
    if layers_counted is not None and check_int("layers_counted", layers_counted) != 2:
        raise ValueError(f"layers_counted must be None or 2, got {layers_counted!r}")
    if context_length > config.context_length:
        config = dataclasses.replace(config, context_length=context_length)
    if layers_counted is None or layers_counted >= config.num_layers:
        model = TransformerLM.from_config(config, device="meta")
        return count_flops(model, batch_size, context_length)
    one, two = (count_flops(TransformerLM.from_config(
        dataclasses.replace(config, num_layers=n), device="meta"),
        batch_size, context_length) for n in (1, 2))
    extra = config.num_layers - 1

    def scale(a: int, b: int) -> int:
        return a + extra * (b - a)

    by_module = {k: scale(one.by_module.get(k, 0), two.by_module.get(k, 0))
                 for k in two.by_module}
    return FlopCount(scale(one.forward, two.forward), scale(one.backward, two.backward),
                     by_module, batch_size, context_length)


# --------------------------------------------------------------------------
# FLOPs: estimated
# --------------------------------------------------------------------------
def llama_matmul_parameters(config: LlamaConfig) -> int:
    r"""Parameters of a :class:`TransformerLM` that multiply an activation.

    Every weight of a matrix product: :math:`L\,(4d^2 + 3\,d\,d_{ff}) + d\,V`
    (attention, SwiGLU, the output layer). The embedding table is a lookup, and
    the RMSNorm gains are element-wise: neither costs a multiply-add per
    parameter.

    Taught on: "Where the compute and the memory go".
    """
    check_type("config", config, LlamaConfig,
               hint="a GPT2Config goes to gpt2_matmul_parameters")
    d, layers = config.d_model, config.num_layers
    return layers * (4 * d * d + 3 * d * config.d_ff) + d * config.vocab_size


def gpt2_matmul_parameters(config: GPT2Config) -> int:
    r"""Weights of the matrix products of a GPT-2-style model, :math:`12Ld^2 + dV`.

    Per block ``qkv`` (3d²), ``proj`` (d²) and the MLP (8d²); the output layer is
    the token embedding (tied), a lookup on the way in but a ``d × V`` product on
    the way out. Biases, LayerNorms and positions are element-wise or lookups.

    Taught on: "Where the compute and the memory go".
    """
    check_type("config", config, GPT2Config,
               hint="a LlamaConfig goes to llama_matmul_parameters")
    return 12 * config.n_layers * config.d_model**2 + config.d_model * config.vocab_size


def flops_per_token(
    n_parameters: int,
    num_layers: int = 0,
    d_model: int = 0,
    context_length: int = 0,
) -> float:
    r"""Training FLOPs per token: :math:`6N + 12\,L\,d\,T`.

    ``6N``: each parameter that multiplies an activation costs one multiply-add
    (2 FLOPs) forward and two backward (the gradients of the input and of the
    weight). ``12 L d T``: per layer, the scores :math:`QK^\top` and the
    weighted values :math:`AV` each cost ``2 T d`` forward per token, times 3
    for the backward pass (PaLM, Chowdhery et al., 2022, appendix B). Leave
    ``num_layers`` at 0 for the ``6N`` rule alone.

    Args:
        n_parameters: ``N``, the parameters of the matrix products (see
            :func:`llama_matmul_parameters`).
        num_layers: ``L``.
        d_model: ``d`` (all heads together).
        context_length: ``T``, the tokens each token attends over (the whole
            square of scores is computed, the masked half too).

    Taught on: "Where the compute and the memory go".
    """
    check_int("n_parameters", n_parameters, minimum=0)
    for name, value in (("num_layers", num_layers), ("d_model", d_model),
                        ("context_length", context_length)):
        check_int(name, value, minimum=0)
    return 6.0 * n_parameters + 12.0 * num_layers * d_model * context_length


# --------------------------------------------------------------------------
# memory: measured
# --------------------------------------------------------------------------
def _check_module(model: object, *, optional: bool = False) -> None:
    """``model`` is an ``nn.Module`` (or ``None``, when ``optional``)."""
    if optional and model is None:
        return
    expected = "a torch.nn.Module" + (" or None" if optional else "")
    check_type("model", model, nn.Module, expected=expected)


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
    _check_module(model)
    return tensor_bytes(model.parameters())


def gradient_bytes(model: nn.Module) -> int:
    """Bytes of the ``.grad`` tensors of ``model``'s parameters held here.

    Taught on: "Where the compute and the memory go".
    """
    _check_module(model)
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
    _check_module(model, optional=True)  # here, not when the block is entered
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
    _check_module(model)  # here, not when the block is entered
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


# --------------------------------------------------------------------------
# cost at scale
# --------------------------------------------------------------------------
def _check_accelerator(accelerator: object) -> None:
    check_type("accelerator", accelerator, Accelerator, expected="an Accelerator",
               hint="look one up by name: ACCELERATORS['A100']")


def gpu_hours(total_flops: float, accelerator: Accelerator,
              utilisation: float) -> float:
    """``total_flops / (peak · utilisation) / 3600``: GPU-hours of a training run.

    Args:
        total_flops: FLOPs of the whole run (tokens × FLOPs per token).
        accelerator: Its peak (:attr:`Accelerator.bf16_flops`).
        utilisation: The share of the peak the run sustains (model FLOPs
            utilisation, MFU), in ``(0, 1]``.

    Taught on: "Where the compute and the memory go".
    """
    check_finite_float("total_flops", total_flops, minimum=0.0)
    _check_accelerator(accelerator)
    check_finite_float("utilisation", utilisation, minimum=0.0, maximum=1.0,
                       open_min=True)
    return total_flops / (accelerator.bf16_flops * utilisation) / 3600.0


def implied_utilisation(total_flops: float, hours: float,
                        accelerator: Accelerator) -> float:
    """The utilisation at which ``total_flops`` take ``hours`` GPU-hours.

    Taught on: "Where the compute and the memory go".
    """
    check_finite_float("total_flops", total_flops, minimum=0.0)
    check_finite_float("hours", hours, minimum=0.0, open_min=True)
    _check_accelerator(accelerator)
    return total_flops / (hours * 3600.0 * accelerator.bf16_flops)


def matmul_flops_per_second(size: int = 512, repeats: int = 5,
                            dtype: torch.dtype = torch.float32) -> float:
    """This machine's matmul rate: FLOP/s of a ``size × size`` product (best of runs).

    ``2 · size³`` FLOPs per product, on the CPU with torch's current thread
    count; the best of ``repeats`` timed runs of several products each. A
    machine-dependent number: report it with the machine.

    Taught on: "Where the compute and the memory go".
    """
    check_int("size", size)
    check_int("repeats", repeats)
    check_type("dtype", dtype, torch.dtype, expected="a torch.dtype (e.g. torch.float32)")
    if not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating-point torch.dtype, got {dtype}")
    a = torch.randn(size, size, dtype=dtype)
    b = torch.randn(size, size, dtype=dtype)
    a @ b  # warm-up
    per_run = max(1, int(2e8 // (2 * size**3)))  # about 0.2 GFLOP per timed run
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(per_run):
            a @ b
        best = min(best, time.perf_counter() - start)
    return per_run * 2.0 * size**3 / best
