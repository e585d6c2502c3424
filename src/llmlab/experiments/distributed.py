"""Experiments for the lecture on compute, memory and training on many devices.

Each ``run_*`` is seeded, CPU-only, cached, and returns a dataclass of plain data
(numbers, lists, names); the page's renderers turn it into tables. ``time_*`` are
timings, cached per machine (``machine_dependent``), which record the machine and
the thread count.

1. :func:`run_flop_count`: ``FlopCounterMode`` counts against ``6N`` and
   ``6N + 12 L d T``; where ``6N`` is off (embeddings, long contexts).
2. :func:`run_memory_accounting`: parameters, gradients, AdamW state and
   activations, measured against the formulas; fp32 and bf16 autocast;
   activation checkpointing.
3. :func:`run_training_cost` (GPU-hours of GPT-2 small and Llama 2 7B, checked
   against the published runs) and :func:`time_cpu_utilisation` (our own).
4. :func:`run_ddp_check` (DDP on 2 gloo processes equals one process) and
   :func:`time_ddp_communication` (computing vs communicating).
5. :func:`run_fsdp_check` (``fully_shard`` halves what each rank holds, same
   results) and :func:`run_zero_memory` (ZeRO stages 1–3 at scale).

Sections 4 and 5 share one launch, :func:`run_parallel_training`.

Taught on: "Where the compute and the memory go".
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist

from llmlab.build.cache import cached, part_results
from llmlab.checks import check_finite_float, check_int, check_sizes
from llmlab.distributed import (
    AllReduceTimer,
    RankTrainResult,
    _check_batch_share,
    _train_rank,
    all_reduce_seconds,
    launch,
    wrap_ddp,
)
from llmlab.experiments.training import machine_description
from llmlab.flops import count_flops, count_llama_flops, flops_per_token
from llmlab.hardware import (
    A100_80GB,
    ACCELERATORS,
    PUBLISHED_RUNS,
    gpu_hours,
    implied_utilisation,
    matmul_flops_per_second,
)
from llmlab.memory import (
    activation_elements,
    activation_peak_elements,
    checkpointed_layers,
    classify_saved,
    gradient_bytes,
    optimizer_state_bytes,
    parameter_bytes,
    record_saved_tensors,
    recomputed_block_elements,
    training_state_bytes,
    zero_bytes_per_device,
)
from llmlab.models.gpt2 import GPT2_SMALL
from llmlab.models.llama import (
    CS336_TINYSTORIES,
    LLAMA2_7B,
    LLAMA_TOY,
    LlamaConfig,
    TransformerLM,
)
from llmlab.training import AdamW, cross_entropy, get_batch, gradient_clipping, train

__all__ = [
    "MEMORY_CONFIG",
    "PARALLEL_CONFIG",
    "CommunicationTiming",
    "DDPCheckResult",
    "FSDPCheckResult",
    "FlopCountResult",
    "FlopRow",
    "MemoryMode",
    "MemoryResult",
    "ParallelTrainingResult",
    "TrainingCostResult",
    "TrainingCostRow",
    "UtilisationTiming",
    "ZeroMemoryResult",
    "run_ddp_check",
    "run_flop_count",
    "run_fsdp_check",
    "run_memory_accounting",
    "run_parallel_training",
    "run_training_cost",
    "run_zero_memory",
    "time_cpu_utilisation",
    "time_ddp_communication",
]

PARALLEL_CONFIG = LlamaConfig(vocab_size=64, context_length=16, d_model=32,
                              num_layers=2, num_heads=2, d_ff=64)
"""The model trained on two processes (small: every rank trains it in milliseconds)."""


def _config_fields(config: LlamaConfig) -> dict[str, int]:
    return {k: v for k, v in dataclasses.asdict(config).items() if k != "rope_theta"}


# --- 1. FLOPs, counted and estimated -------------------------------------------------


@dataclasses.dataclass
class FlopRow:
    """One configuration's training FLOPs, counted and estimated.

    Attributes:
        name: The preset (``"LLAMA_TOY"``, ...).
        config: Its sizes (``vocab_size``, ``d_model``, ``num_layers``, ...).
        device: Where it was counted: ``"cpu"`` (real tensors) or ``"meta"``.
        layers_counted: Blocks counted (fewer than ``num_layers``: extrapolated
            exactly, every block being the same).
        batch_size: Sequences.
        context_length: Tokens per sequence (``T``).
        n_parameters: All parameters (``N`` of the naive ``6N``).
        n_matmul: Parameters in matrix products (no embedding table, no norms).
        forward: Counted forward FLOPs.
        backward: Counted backward FLOPs.
        by_module: Counted forward + backward FLOPs per child module.
        per_token: Counted FLOPs per token.
        six_n_all: ``6 · n_parameters`` per token.
        six_n: ``6 · n_matmul`` per token.
        with_attention: ``6 · n_matmul + 12 · L · d · T`` per token.
    """

    name: str
    config: dict[str, int]
    device: str
    layers_counted: int
    batch_size: int
    context_length: int
    n_parameters: int
    n_matmul: int
    forward: int
    backward: int
    by_module: dict[str, int]
    per_token: float
    six_n_all: float
    six_n: float
    with_attention: float


@dataclasses.dataclass
class FlopCountResult:
    """FLOPs of ``TransformerLM`` configurations, and of Llama 2 7B as context grows.

    Attributes:
        rows: One per configuration (at its own context length).
        sweep_context_lengths: Context lengths of the 7B sweep.
        sweep: One :class:`FlopRow` per context length, the 7B shape.
        meta_equals_cpu: The toy model counts the same on ``"meta"`` as on the CPU.
        extrapolation_exact: ``CS336_TINYSTORIES`` counted block by block equals
            its count extrapolated from 1 and 2 blocks.
    """

    rows: list[FlopRow]
    sweep_context_lengths: list[int]
    sweep: list[FlopRow]
    meta_equals_cpu: bool
    extrapolation_exact: bool


def _flop_row(name: str, config: LlamaConfig, batch_size: int, context_length: int,
              *, model: TransformerLM | None = None,
              layers_counted: int | None = None) -> FlopRow:
    if model is not None:
        count = count_flops(model, batch_size, context_length)
        device, counted = "cpu", config.num_layers
    else:
        count = count_llama_flops(config, batch_size, context_length,
                                  layers_counted=layers_counted)
        device = "meta"
        counted = min(layers_counted or config.num_layers, config.num_layers)
    n_matmul = config.matmul_parameter_count()
    return FlopRow(
        name=name, config=_config_fields(config), device=device, layers_counted=counted,
        batch_size=batch_size, context_length=context_length,
        n_parameters=config.parameter_count(), n_matmul=n_matmul,
        forward=count.forward, backward=count.backward, by_module=count.by_module,
        per_token=count.per_token,
        six_n_all=flops_per_token(config.parameter_count()),
        six_n=flops_per_token(n_matmul),
        with_attention=flops_per_token(n_matmul, config.num_layers, config.d_model,
                                       context_length),
    )


@cached(cost=1.5)  # counting on "meta" imports torch's Python meta kernels once
def run_flop_count(
    sweep_context_lengths: tuple[int, ...] = (512, 2048, 8192, 32768),
    batch_size: int = 1,
    seed: int = 0,
) -> FlopCountResult:
    """Count one training step of ``TransformerLM`` with ``FlopCounterMode``.

    The toy model is counted on real CPU tensors and on ``"meta"``;
    ``CS336_TINYSTORIES`` block by block and extrapolated; Llama 2 7B
    (extrapolated from 1 and 2 blocks, on ``"meta"``) at its 4096 tokens and at
    every length of ``sweep_context_lengths``.

    Taught on: "Where the compute and the memory go".
    """
    check_sizes("sweep_context_lengths", sweep_context_lengths)
    check_int("batch_size", batch_size)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    toy = TransformerLM.from_config(LLAMA_TOY)
    rows = [_flop_row("LLAMA_TOY", LLAMA_TOY, batch_size, LLAMA_TOY.context_length,
                      model=toy)]
    on_meta = _flop_row("LLAMA_TOY", LLAMA_TOY, batch_size, LLAMA_TOY.context_length)
    meta_equals_cpu = (on_meta.forward, on_meta.backward) == (rows[0].forward,
                                                              rows[0].backward)
    tiny = _flop_row("CS336_TINYSTORIES", CS336_TINYSTORIES, batch_size,
                     CS336_TINYSTORIES.context_length)
    tiny_extrapolated = _flop_row("CS336_TINYSTORIES", CS336_TINYSTORIES, batch_size,
                                  CS336_TINYSTORIES.context_length, layers_counted=2)
    extrapolation_exact = (tiny.forward, tiny.backward) == (tiny_extrapolated.forward,
                                                            tiny_extrapolated.backward)
    rows.append(tiny)
    rows.append(_flop_row("LLAMA2_7B", LLAMA2_7B, batch_size, LLAMA2_7B.context_length,
                          layers_counted=2))
    sweep = [_flop_row("LLAMA2_7B", LLAMA2_7B, batch_size, t, layers_counted=2)
             for t in sweep_context_lengths]
    return FlopCountResult(rows, list(sweep_context_lengths), sweep, meta_equals_cpu,
                           extrapolation_exact)


# --- 2. memory, measured and estimated -----------------------------------------------


MEMORY_CONFIG = LlamaConfig(vocab_size=256, context_length=32, d_model=64,
                            num_layers=2, num_heads=4, d_ff=176)
"""The model measured in :func:`run_memory_accounting`: its four activation sizes
(``B·T·d``, ``B·T·d_ff``, ``B·h·T·T``, ``B·T·V`` at batch 4) all differ."""


@dataclasses.dataclass
class MemoryMode:
    """What one way of running the step keeps for the backward pass.

    Attributes:
        precision: ``"fp32"`` or ``"bf16"`` (``torch.autocast`` on the CPU).
        checkpointing: Blocks run under ``torch.utils.checkpoint``.
        measured: Activation bytes by size family, seen by
            ``saved_tensors_hooks`` (``"other"``: small tensors, e.g. norms' RMS).
        measured_total: Their sum.
        parameter_copies: Bytes of weights cast to bf16 and kept (autocast).
        dtypes: Activation bytes by dtype (``"float32"``, ``"bfloat16"``, ...).
        estimate_elements: :func:`~llmlab.memory.activation_elements`.
        flops: Counted FLOPs of the step (checkpointing recomputes blocks).
    """

    precision: str
    checkpointing: bool
    measured: dict[str, int]
    measured_total: int
    parameter_copies: int
    dtypes: dict[str, int]
    estimate_elements: dict[str, int]
    flops: int


@dataclasses.dataclass
class MemoryResult:
    """Bytes of one training step of a small ``TransformerLM``, measured and estimated.

    Attributes:
        config: The model's sizes.
        batch_size: Sequences.
        context_length: Tokens per sequence.
        n_parameters: Parameters.
        measured_state: ``parameters``, ``gradients``, ``optimizer_state`` bytes of
            the real tensors after one step of our AdamW.
        estimated_state: :func:`~llmlab.memory.training_state_bytes` (fp32).
        family_elements: Elements of one tensor of each size family.
        modes: fp32 and bf16, each without and with checkpointing.
        at_scale: Model-state bytes (``"fp32"`` and ``"mixed"``) for GPT-2 small
            and Llama 2 7B, and for Llama 2 7B the activation bytes of one
            4096-token sequence (bf16, by the formulas): saved in the forward pass
            without checkpointing (``activations_bf16``, also the peak) and with it
            (``activations_bf16_checkpointed``), one block recomputed in the
            backward pass (``activations_bf16_recomputed_block``) and the peak
            with checkpointing (``activations_bf16_checkpointed_peak``): name ->
            numbers.
    """

    config: dict[str, int]
    batch_size: int
    context_length: int
    n_parameters: int
    measured_state: dict[str, int]
    estimated_state: dict[str, int]
    family_elements: dict[str, int]
    modes: list[MemoryMode]
    at_scale: dict[str, dict[str, float]]


def _families(config: LlamaConfig, batch_size: int, t: int) -> dict[str, int]:
    return {"B·T·d": batch_size * t * config.d_model,
            "B·T·d_ff": batch_size * t * config.d_ff,
            "B·h·T·T": batch_size * config.num_heads * t * t,
            "B·T·V": batch_size * t * config.vocab_size}


def _measure_mode(config: LlamaConfig, batch: torch.Tensor, precision: str,
                  checkpointing: bool, seed: int) -> tuple[MemoryMode, dict[str, int]]:
    torch.manual_seed(seed)
    model = TransformerLM.from_config(config)
    optimizer = AdamW(model.parameters())
    b, t = batch.shape[0], batch.shape[1] - 1
    with contextlib.ExitStack() as stack:
        if checkpointing:
            stack.enter_context(checkpointed_layers(model))
        saved = stack.enter_context(record_saved_tensors(model))
        stack.enter_context(torch.autocast("cpu", dtype=torch.bfloat16,
                                           enabled=precision == "bf16"))
        loss = cross_entropy(model(batch[:, :-1]), batch[:, 1:])
    loss.backward()
    optimizer.step()
    state = {"parameters": parameter_bytes(model), "gradients": gradient_bytes(model),
             "optimizer_state": optimizer_state_bytes(optimizer)}
    measured = classify_saved(saved, _families(config, b, t))
    dtypes: dict[str, int] = {}
    for s in saved:
        if s.kind == "activation":
            dtypes[s.dtype] = dtypes.get(s.dtype, 0) + s.nbytes
    with contextlib.ExitStack() as stack:
        if checkpointing:
            stack.enter_context(checkpointed_layers(model))
        stack.enter_context(torch.autocast("cpu", dtype=torch.bfloat16,
                                           enabled=precision == "bf16"))
        flops = count_flops(model, b, t).total
    mode = MemoryMode(
        precision=precision, checkpointing=checkpointing, measured=measured,
        measured_total=sum(measured.values()),
        parameter_copies=sum(s.nbytes for s in saved if s.kind == "parameter copy"),
        dtypes=dtypes,
        estimate_elements=activation_elements(config, b, t,
                                              checkpointing=checkpointing),
        flops=flops,
    )
    return mode, state


@cached(cost=0.6)  # builds optimizers: a child computes it
def run_memory_accounting(batch_size: int = 4, seed: int = 0) -> MemoryResult:
    """Measure what one training step holds, in fp32 and bf16, with and without
    activation checkpointing, and set it against the formulas.

    Taught on: "Where the compute and the memory go".
    """
    check_int("batch_size", batch_size)
    check_int("seed", seed, minimum=0)
    config = MEMORY_CONFIG
    t = config.context_length
    generator = torch.Generator().manual_seed(seed)
    batch = torch.randint(0, config.vocab_size, (batch_size, t + 1),
                          generator=generator)  # (B, T+1)
    modes, state = [], {}
    for precision in ("fp32", "bf16"):
        for checkpointing in (False, True):
            mode, state = _measure_mode(config, batch, precision, checkpointing, seed)
            modes.append(mode)
    at_scale: dict[str, dict[str, float]] = {}
    for name, n_params, llama in (("GPT2_SMALL", GPT2_SMALL.parameter_count(), None),
                                  ("LLAMA2_7B", LLAMA2_7B.parameter_count(),
                                   LLAMA2_7B)):
        row = {f"{precision}_{k}": float(v)
               for precision in ("fp32", "mixed")
               for k, v in training_state_bytes(n_params, precision).items()}
        row["n_parameters"] = float(n_params)
        if llama is not None:  # bf16: 2 bytes an element
            for ckpt in (False, True):
                elements = activation_elements(llama, 1, 4096, checkpointing=ckpt)
                row[f"activations_bf16{'_checkpointed' if ckpt else ''}"] = \
                    2.0 * sum(elements.values())
            block = recomputed_block_elements(llama, 1, 4096)
            row["activations_bf16_recomputed_block"] = 2.0 * sum(block.values())
            row["activations_bf16_checkpointed_peak"] = \
                2.0 * activation_peak_elements(llama, 1, 4096, checkpointing=True)
        at_scale[name] = row
    return MemoryResult(
        config=_config_fields(config), batch_size=batch_size, context_length=t,
        n_parameters=config.parameter_count(), measured_state=state,
        estimated_state=training_state_bytes(config.parameter_count(), "fp32"),
        family_elements=_families(config, batch_size, t), modes=modes,
        at_scale=at_scale,
    )


# --- 3. what training costs at scale -------------------------------------------------


@dataclasses.dataclass
class TrainingCostRow:
    """GPU-hours of one model's training run: estimated, and as published.

    Attributes:
        model: ``"gpt2-small"`` or ``"llama2-7b"`` (keys of ``PUBLISHED_RUNS``).
        accelerator: Key of ``ACCELERATORS`` (``"A100"``).
        n_matmul: Parameters in matrix products.
        num_layers: ``L``.
        d_model: ``d``.
        context_length: ``T`` of the run.
        tokens: Training tokens ``D``.
        flops_per_token_6n: ``6 N``.
        flops_per_token: ``6 N + 12 L d T``.
        total_flops: ``D · (6 N + 12 L d T)``.
        peak_flops: The accelerator's dense bf16 peak.
        utilisation: The utilisation assumed for the estimate.
        estimated_gpu_hours: At that utilisation.
        hours_at_peak: At 100 % of the peak (a floor).
        published_gpu_hours: What the run reported.
        implied_utilisation: The utilisation the published hours imply (with the
            attention term); ``implied_utilisation_6n`` without it.
        implied_utilisation_6n: See above.
    """

    model: str
    accelerator: str
    n_matmul: int
    num_layers: int
    d_model: int
    context_length: int
    tokens: float
    flops_per_token_6n: float
    flops_per_token: float
    total_flops: float
    peak_flops: float
    utilisation: float
    estimated_gpu_hours: float
    hours_at_peak: float
    published_gpu_hours: float
    implied_utilisation: float
    implied_utilisation_6n: float


@dataclasses.dataclass
class TrainingCostResult:
    """GPU-hours of GPT-2 small and Llama 2 7B (rows), from FLOPs and the peak."""

    rows: list[TrainingCostRow]


@cached
def run_training_cost(utilisation: float = 0.4) -> TrainingCostResult:
    """Tokens × FLOPs per token ÷ (peak × utilisation), against the published runs.

    FLOPs per token are :func:`~llmlab.flops.flops_per_token`, which
    :func:`run_flop_count` shows to equal the counted FLOPs of ``TransformerLM``.
    GPT-2 small: nanoGPT's reproduction (about 300B tokens, 1024-token context,
    8 A100 40GB for about 4 days). Llama 2 7B: 2T tokens, 4096-token context,
    184,320 A100-80GB GPU-hours. The sources are in
    ``llmlab.hardware.PUBLISHED_RUNS`` and ``ACCELERATORS``.

    Taught on: "Where the compute and the memory go".
    """
    check_finite_float("utilisation", utilisation, minimum=0.0, maximum=1.0,
                       open_min=True)
    rows = []
    for key, n_matmul, layers, d, t in (
        ("gpt2-small", GPT2_SMALL.matmul_parameter_count(), GPT2_SMALL.n_layers,
         GPT2_SMALL.d_model, GPT2_SMALL.context_length),
        ("llama2-7b", LLAMA2_7B.matmul_parameter_count(), LLAMA2_7B.num_layers,
         LLAMA2_7B.d_model, LLAMA2_7B.context_length),
    ):
        run = PUBLISHED_RUNS[key]
        gpu = ACCELERATORS[run.accelerator]
        per_token = flops_per_token(n_matmul, layers, d, t)
        six_n = flops_per_token(n_matmul)
        total = run.tokens * per_token
        rows.append(TrainingCostRow(
            model=key, accelerator=run.accelerator, n_matmul=n_matmul,
            num_layers=layers,
            d_model=d, context_length=t, tokens=run.tokens, flops_per_token_6n=six_n,
            flops_per_token=per_token, total_flops=total, peak_flops=gpu.bf16_flops,
            utilisation=utilisation,
            estimated_gpu_hours=gpu_hours(total, gpu, utilisation),
            hours_at_peak=gpu_hours(total, gpu, 1.0),
            published_gpu_hours=run.gpu_hours,
            implied_utilisation=implied_utilisation(total, run.gpu_hours, gpu),
            implied_utilisation_6n=implied_utilisation(run.tokens * six_n,
                                                       run.gpu_hours, gpu),
        ))
    return TrainingCostResult(rows)


@dataclasses.dataclass
class UtilisationTiming:
    """Our CPU training step: FLOP/s achieved against the CPU's matmul peak.

    Attributes:
        machine: Processor and threads.
        threads: ``torch.get_num_threads()`` during the measurement.
        peak_flops: Measured FLOP/s of a square fp32 matmul (best of runs).
        matmul_size: Its size.
        step_flops: FLOPs of one forward + backward pass (``6N + 12LdT`` per
            token, equal to ``FlopCounterMode``'s count).
        step_seconds: Median seconds of that forward + backward pass (the
            optimizer's element-wise update is neither counted nor timed).
        achieved_flops: ``step_flops / step_seconds``.
        utilisation: ``achieved_flops / peak_flops``.
        config: The model's sizes.
        batch_size: Sequences per step.
    """

    machine: str
    threads: int
    peak_flops: float
    matmul_size: int
    step_flops: int
    step_seconds: float
    achieved_flops: float
    utilisation: float
    config: dict[str, int]
    batch_size: int


@cached(machine_dependent=True, cost=0.3)
def time_cpu_utilisation(batch_size: int = 16, steps: int = 5, matmul_size: int = 512,
                         seed: int = 0) -> UtilisationTiming:
    """Measured FLOP/s of our forward + backward pass over this CPU's matmul peak.

    Taught on: "Where the compute and the memory go".
    """
    check_int("batch_size", batch_size)
    check_int("steps", steps)
    check_int("matmul_size", matmul_size)
    check_int("seed", seed, minimum=0)
    torch.manual_seed(seed)
    config = LLAMA_TOY
    model = TransformerLM.from_config(config)
    t = config.context_length
    # the formula, which run_flop_count shows equals FlopCounterMode's count (the
    # counter's first use imports torch._dynamo: a second of CPU, not timed here)
    per_token = flops_per_token(config.matmul_parameter_count(), config.num_layers,
                                config.d_model, t)
    step_flops = int(per_token) * batch_size * t
    generator = torch.Generator().manual_seed(seed)
    data = torch.randint(0, config.vocab_size, (4096,), generator=generator)
    times = []
    for i in range(steps + 1):
        x, y = get_batch(data, batch_size, t, generator=generator)
        start = time.perf_counter()
        cross_entropy(model(x), y).backward()  # what the counted FLOPs are
        if i:  # the first step warms up
            times.append(time.perf_counter() - start)
        model.zero_grad(set_to_none=True)
    step_seconds = statistics.median(times)
    peak = matmul_flops_per_second(matmul_size)
    achieved = step_flops / step_seconds
    return UtilisationTiming(machine_description(), torch.get_num_threads(), peak,
                             matmul_size, step_flops, step_seconds, achieved,
                             achieved / peak, _config_fields(config), batch_size)


# --- 4 and 5. DDP and FSDP on two processes ------------------------------------------


@dataclasses.dataclass
class ParallelTrainingResult:
    """DDP and FSDP on ``world_size`` gloo processes against one process.

    The same model (:data:`PARALLEL_CONFIG`, seeded), batches and AdamW settings
    in three runs: one process with the course's ``train`` (the reference), DDP,
    FSDP. Differences are max absolute differences.

    Attributes:
        world_size: Processes.
        backend: The process group's backend.
        steps: Optimizer steps.
        batch_size: Windows per step, all ranks together.
        context_length: Tokens per window.
        config: The model's sizes.
        n_parameters: Its parameters.
        tolerance: ``(rtol, atol)`` of the equality checks (``torch.allclose``).
        single_losses: The reference's loss per step.
        single_grad_norms: Its gradient norm before clipping, per step.
        ddp_losses: DDP's loss of the whole batch per step (ranks agree exactly).
        ddp_local_losses: Each rank's loss on its half, per step.
        ddp_grad_norms: Rank 0's gradient norm before clipping, per step.
        ddp_gradient_diff: Per rank: its first gradients (after the all-reduce)
            against the reference's gradients of the whole batch.
        ddp_gradients_equal: Each rank's gradients allclose to the reference's.
        ddp_ranks_identical: Every rank ends with bit-identical parameters.
        ddp_loss_diff: DDP's losses against the reference's.
        ddp_parameter_diff: DDP's final parameters against the reference's.
        ddp_bytes: Per rank: ``parameters``, ``gradients``, ``optimizer_state``.
        fsdp_losses: FSDP's loss of the whole batch per step.
        fsdp_gradient_diff: Per rank: its first (full) gradients against DDP's.
        fsdp_loss_diff: FSDP's losses against DDP's.
        fsdp_parameter_diff: FSDP's final (gathered) parameters against DDP's.
        fsdp_bytes: Per rank, as ``ddp_bytes``: what each rank stores.
        fsdp_parameter_type: Type of an FSDP parameter (``"DTensor"``).
    """

    world_size: int
    backend: str
    steps: int
    batch_size: int
    context_length: int
    config: dict[str, int]
    n_parameters: int
    tolerance: tuple[float, float]
    single_losses: list[float]
    single_grad_norms: list[float]
    ddp_losses: list[float]
    ddp_local_losses: list[list[float]]
    ddp_grad_norms: list[float]
    ddp_gradient_diff: list[float]
    ddp_gradients_equal: bool
    ddp_ranks_identical: bool
    ddp_loss_diff: float
    ddp_parameter_diff: float
    ddp_bytes: list[dict[str, int]]
    fsdp_losses: list[float]
    fsdp_gradient_diff: list[float]
    fsdp_loss_diff: float
    fsdp_parameter_diff: float
    fsdp_bytes: list[dict[str, int]]
    fsdp_parameter_type: str


def _ddp_and_fsdp(config: LlamaConfig, data: np.ndarray, steps: int, batch_size: int,
                  lr: float, seed: int) -> list[RankTrainResult]:
    """One rank: train with DDP, then with FSDP, in the same process group (one
    launch: :func:`~llmlab.distributed.parallel_train`'s ranks, twice)."""
    return [_train_rank(config, data, strategy=s, steps=steps, batch_size=batch_size,
                        context_length=config.context_length, lr=lr, weight_decay=0.01,
                        max_grad_norm=1.0, seed=seed)
            for s in ("ddp", "fsdp")]


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def _bytes(run: RankTrainResult) -> dict[str, int]:
    return {"parameters": run.parameter_bytes, "gradients": run.gradient_bytes,
            "optimizer_state": run.optimizer_state_bytes}


def _single_process(config: LlamaConfig, data: np.ndarray, steps: int, batch_size: int,
                    lr: float, seed: int):
    """The reference: ``train`` on one process, and the first batch's gradients."""
    torch.manual_seed(seed)
    model = TransformerLM.from_config(config)
    x, y = get_batch(data, batch_size, config.context_length,
                     generator=torch.Generator().manual_seed(seed))
    cross_entropy(model(x), y).backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    optimizer = AdamW(model.parameters(), lr=lr)
    record = train(model, optimizer, data, steps=steps, batch_size=batch_size,
                   seed=seed)
    final = {n: p.detach().clone() for n, p in model.named_parameters()}
    return record, grads, final


# a local composite (the launches' arguments together), built from llmlab.checks
def _check_parallel(world_size: object, steps: object, batch_size: object,
                    seed: object) -> None:
    """The arguments of the launches, checked before any process starts."""
    check_int("world_size", world_size)
    check_int("steps", steps)
    _check_batch_share(batch_size, world_size)  # the launcher's own check, before any launch
    check_int("seed", seed, minimum=0)


@cached(cost=4.0, processes="world_size")  # DDP then FSDP
def run_parallel_training(world_size: int = 2, steps: int = 4, batch_size: int = 8,
                          seed: int = 0) -> ParallelTrainingResult:
    """Train the same model on one process, with DDP, and with FSDP; compare.

    The two parallel runs share one launch of ``world_size`` gloo processes.
    Raises ``AssertionError`` if a DDP rank's gradients differ from the whole
    batch's single-process gradients beyond the tolerance.

    Taught on: "Where the compute and the memory go".
    """
    _check_parallel(world_size, steps, batch_size, seed)
    config, lr = PARALLEL_CONFIG, 1e-3
    generator = torch.Generator().manual_seed(seed)
    data = torch.randint(0, config.vocab_size, (4096,), generator=generator).numpy()
    ranks = launch(_ddp_and_fsdp, (config, data, steps, batch_size, lr, seed),
                   world_size=world_size, backend="gloo", timeout=120.0)
    ddp, fsdp = [r[0] for r in ranks], [r[1] for r in ranks]
    single, grads, final = _single_process(config, data, steps, batch_size, lr, seed)
    rtol, atol = 1e-5, 1e-6

    def close(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
        return all(torch.allclose(a[k], b[k], rtol=rtol, atol=atol) for k in a)

    gradients_equal = all(close(r.first_gradients, grads) for r in ddp)
    if not gradients_equal:
        raise AssertionError(
            "a DDP rank's gradients differ from the single-process gradients: max "
            f"|diff| {[_max_diff(r.first_gradients, grads) for r in ddp]}")
    return ParallelTrainingResult(
        world_size=world_size, backend=ddp[0].backend, steps=steps,
        batch_size=batch_size, context_length=config.context_length,
        config=_config_fields(config), n_parameters=config.parameter_count(),
        tolerance=(rtol, atol), single_losses=single.losses,
        single_grad_norms=single.grad_norms, ddp_losses=ddp[0].losses,
        ddp_local_losses=[r.local_losses for r in ddp],
        ddp_grad_norms=ddp[0].grad_norms,
        ddp_gradient_diff=[_max_diff(r.first_gradients, grads) for r in ddp],
        ddp_gradients_equal=gradients_equal,
        ddp_ranks_identical=all(
            all(torch.equal(r.final_parameters[k], ddp[0].final_parameters[k])
                for k in r.final_parameters) for r in ddp),
        ddp_loss_diff=max(abs(a - b) for a, b in zip(ddp[0].losses, single.losses)),
        ddp_parameter_diff=_max_diff(ddp[0].final_parameters, final),
        ddp_bytes=[_bytes(r) for r in ddp],
        fsdp_losses=fsdp[0].losses,
        fsdp_gradient_diff=[_max_diff(f.first_gradients, d.first_gradients)
                            for f, d in zip(fsdp, ddp)],
        fsdp_loss_diff=max(abs(a - b) for a, b in zip(fsdp[0].losses, ddp[0].losses)),
        fsdp_parameter_diff=_max_diff(fsdp[0].final_parameters,
                                      ddp[0].final_parameters),
        fsdp_bytes=[_bytes(r) for r in fsdp],
        fsdp_parameter_type=fsdp[0].parameter_type,
    )


def _parallel_parts(world_size: int, steps: int, batch_size: int, seed: int,
                    **_: object) -> list:
    """The one run both checks read (cache parts)."""
    return [(run_parallel_training, dict(world_size=world_size, steps=steps,
                                         batch_size=batch_size, seed=seed))]


@dataclasses.dataclass
class DDPCheckResult:
    """DDP on two processes against one process (the fields of
    :class:`ParallelTrainingResult` that section 4 shows)."""

    world_size: int
    backend: str
    steps: int
    batch_size: int
    n_parameters: int
    tolerance: tuple[float, float]
    single_losses: list[float]
    ddp_losses: list[float]
    ddp_local_losses: list[list[float]]
    single_grad_norms: list[float]
    ddp_grad_norms: list[float]
    gradient_diff: list[float]
    gradients_equal: bool
    ranks_identical: bool
    loss_diff: float
    parameter_diff: float
    bytes_per_rank: list[dict[str, int]]


@cached(parts=_parallel_parts)
def run_ddp_check(world_size: int = 2, steps: int = 4, batch_size: int = 8,
                  seed: int = 0) -> DDPCheckResult:
    """Each DDP rank's gradients equal the whole batch's; the losses equal.

    Taught on: "Where the compute and the memory go".
    """
    _check_parallel(world_size, steps, batch_size, seed)
    [r] = part_results(_parallel_parts, world_size, steps, batch_size, seed)
    return DDPCheckResult(
        r.world_size, r.backend, r.steps, r.batch_size, r.n_parameters, r.tolerance,
        r.single_losses, r.ddp_losses, r.ddp_local_losses, r.single_grad_norms,
        r.ddp_grad_norms, r.ddp_gradient_diff, r.ddp_gradients_equal,
        r.ddp_ranks_identical, r.ddp_loss_diff, r.ddp_parameter_diff, r.ddp_bytes)


@dataclasses.dataclass
class FSDPCheckResult:
    """FSDP (``fully_shard``) on two processes against DDP.

    Attributes:
        world_size: Processes.
        backend: ``"gloo"``.
        steps: Optimizer steps.
        n_parameters: Parameters of the model.
        parameter_type: What a parameter becomes (``"DTensor"``).
        ddp_bytes: Per rank, what DDP stores (everything, on every rank).
        fsdp_bytes: Per rank, what FSDP stores (its shards).
        shares: Per rank, FSDP's bytes over DDP's, per kind (about ``1/world_size``).
        ddp_losses: DDP's losses.
        fsdp_losses: FSDP's losses.
        gradient_diff: Per rank, FSDP's first full gradients against DDP's.
        loss_diff: FSDP's losses against DDP's.
        parameter_diff: Final parameters against DDP's.
    """

    world_size: int
    backend: str
    steps: int
    n_parameters: int
    parameter_type: str
    ddp_bytes: list[dict[str, int]]
    fsdp_bytes: list[dict[str, int]]
    shares: list[dict[str, float]]
    ddp_losses: list[float]
    fsdp_losses: list[float]
    gradient_diff: list[float]
    loss_diff: float
    parameter_diff: float


@cached(parts=_parallel_parts)
def run_fsdp_check(world_size: int = 2, steps: int = 4, batch_size: int = 8,
                   seed: int = 0) -> FSDPCheckResult:
    """``fully_shard`` on gloo: each rank holds its share; results as DDP's.

    Taught on: "Where the compute and the memory go".
    """
    _check_parallel(world_size, steps, batch_size, seed)
    [r] = part_results(_parallel_parts, world_size, steps, batch_size, seed)
    shares = [{k: f[k] / d[k] for k in f} for f, d in zip(r.fsdp_bytes, r.ddp_bytes)]
    return FSDPCheckResult(
        r.world_size, r.backend, r.steps, r.n_parameters, r.fsdp_parameter_type,
        r.ddp_bytes, r.fsdp_bytes, shares, r.ddp_losses, r.fsdp_losses,
        r.fsdp_gradient_diff, r.fsdp_loss_diff, r.fsdp_parameter_diff)


@dataclasses.dataclass
class ZeroMemoryResult:
    """Model-state bytes per GPU under ZeRO stages 0–3.

    Attributes:
        models: Names (``"GPT2_SMALL"``, ``"LLAMA2_7B"``).
        n_parameters: Their parameters.
        n_devices: GPU counts.
        stages: ``0`` (plain DDP) to ``3``.
        bytes_per_device: ``[model][device count][stage]`` -> total bytes.
        gpu_memory: Memory of one A100 80GB, for comparison.
        paper_check: ZeRO's own example (7.5B parameters, 64 GPUs), stages 0–3,
            computed here: the paper reports 120, 31.4, 16.6 and 1.9 GB.
    """

    models: list[str]
    n_parameters: list[int]
    n_devices: list[int]
    stages: list[int]
    bytes_per_device: list[list[list[float]]]
    gpu_memory: int
    paper_check: list[float]


@cached
def run_zero_memory(n_devices: tuple[int, ...] = (8, 64, 512)) -> ZeroMemoryResult:
    """ZeRO stages 0–3 for GPT-2 small and Llama 2 7B on ``n_devices`` GPUs.

    Taught on: "Where the compute and the memory go".
    """
    check_sizes("n_devices", n_devices)
    models = {"GPT2_SMALL": GPT2_SMALL.parameter_count(),
              "LLAMA2_7B": LLAMA2_7B.parameter_count()}
    stages = [0, 1, 2, 3]
    table = [[[zero_bytes_per_device(n, d, s)["total"] for s in stages]
              for d in n_devices] for n in models.values()]
    paper = [zero_bytes_per_device(7.5e9, 64, s)["total"] for s in stages]
    return ZeroMemoryResult(list(models), list(models.values()), list(n_devices),
                            stages, table, A100_80GB.memory_bytes, paper)


@dataclasses.dataclass
class CommunicationTiming:
    """A DDP step on gloo processes: computing against communicating.

    Attributes:
        machine: Processor and threads per process.
        threads: Threads per process.
        world_size: Processes.
        config: The model's sizes.
        batch_size: Windows per step, all ranks.
        gradient_bytes: Bytes all-reduced per step (every gradient, fp32).
        buckets: DDP's buckets per step.
        compute_seconds: Per rank, median seconds of forward + backward without
            communicating (``no_sync``).
        synced_seconds: Per rank, median seconds of the same forward + backward
            with DDP's all-reduce of the gradients.
        difference_seconds: Per rank, each timed step's synced minus compute
            seconds (their spread is the noise of the difference).
        optimizer_seconds: Per rank, median seconds of clipping + AdamW.
        hook_seconds: Per rank, median per step of the buckets' all-reduce
            times, from launch to completion (they overlap the backward pass,
            and include waiting for the slower rank).
        all_reduce_seconds: Per rank, median seconds of one blocking all-reduce
            of ``gradient_bytes``.
    """

    machine: str
    threads: int
    world_size: int
    config: dict[str, int]
    batch_size: int
    gradient_bytes: int
    buckets: int
    compute_seconds: list[float]
    synced_seconds: list[float]
    difference_seconds: list[list[float]]
    optimizer_seconds: list[float]
    hook_seconds: list[float]
    all_reduce_seconds: list[float]


def _timing_rank(config: LlamaConfig, data: np.ndarray, steps: int, batch_size: int,
                 seed: int) -> dict[str, float | int | str | list[float]]:
    """One rank of :func:`time_ddp_communication`."""
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(seed)
    model = wrap_ddp(TransformerLM.from_config(config))
    timer = AllReduceTimer()
    model.register_comm_hook(None, timer.hook)
    optimizer = AdamW(model.parameters())
    generator = torch.Generator().manual_seed(seed)
    rows = slice(rank * (batch_size // world), (rank + 1) * (batch_size // world))
    times: dict[str, list[float]] = {"compute": [], "synced": [], "optimizer": [],
                                     "hook": []}
    for i in range(steps + 1):
        x, y = get_batch(data, batch_size, config.context_length, generator=generator)
        x, y = x[rows], y[rows]  # this rank's share
        # forward + backward without the all-reduce: computing only
        dist.barrier()
        start = time.perf_counter()
        with model.no_sync():
            cross_entropy(model(x), y).backward()
        compute = time.perf_counter() - start
        optimizer.zero_grad(set_to_none=True)
        # the same with DDP's all-reduce of the gradients
        dist.barrier()
        timer.reset()
        start = time.perf_counter()
        cross_entropy(model(x), y).backward()
        synced = time.perf_counter() - start
        # the update, the same on every rank
        start = time.perf_counter()
        gradient_clipping(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i:  # the first step warms up
            for key, value in (("compute", compute), ("synced", synced),
                               ("optimizer", time.perf_counter() - start),
                               ("hook", sum(timer.seconds))):
                times[key].append(value)
    numel = sum(p.numel() for p in model.parameters())
    out: dict[str, float | int | str | list[float]] = {k: statistics.median(v)
                                                       for k, v in times.items()}
    differences = [s - c for s, c in zip(times["synced"], times["compute"])]
    out.update(buckets=len(timer.seconds), all_reduce=all_reduce_seconds(numel),
               differences=differences,
               bytes=4 * numel, machine=machine_description(),
               threads=torch.get_num_threads())
    return out


@cached(machine_dependent=True, processes="world_size", cost=3.0)
def time_ddp_communication(world_size: int = 2, steps: int = 5, batch_size: int = 16,
                           seed: int = 0) -> CommunicationTiming:
    """Time computing and communicating in DDP steps on ``world_size`` gloo processes.

    Taught on: "Where the compute and the memory go".
    """
    _check_parallel(world_size, steps, batch_size, seed)
    config = MEMORY_CONFIG
    generator = torch.Generator().manual_seed(seed)
    data = torch.randint(0, config.vocab_size, (4096,), generator=generator).numpy()
    ranks = launch(_timing_rank, (config, data, steps, batch_size, seed),
                   world_size=world_size, backend="gloo", timeout=120.0)
    return CommunicationTiming(
        machine=ranks[0]["machine"], threads=ranks[0]["threads"], world_size=world_size,
        config=_config_fields(config), batch_size=batch_size,
        gradient_bytes=ranks[0]["bytes"], buckets=ranks[0]["buckets"],
        compute_seconds=[r["compute"] for r in ranks],
        synced_seconds=[r["synced"] for r in ranks],
        difference_seconds=[r["differences"] for r in ranks],
        optimizer_seconds=[r["optimizer"] for r in ranks],
        hook_seconds=[r["hook"] for r in ranks],
        all_reduce_seconds=[r["all_reduce"] for r in ranks],
    )
