"""Accelerators and published training runs, and what FLOPs cost on them.

* :data:`ACCELERATORS`: GPUs' peak rates and memory, from their datasheets;
  :data:`PUBLISHED_RUNS`: training runs whose size and cost were published. Every
  outside figure is kept here, with where it comes from.
* :func:`gpu_hours` and :func:`implied_utilisation`: the cost of a run at scale;
  :func:`matmul_flops_per_second` measures this machine's peak.

Taught on: "Where the compute and the memory go".
"""

from __future__ import annotations

import dataclasses
import time

import torch

from llmlab.checks import check_finite_float, check_int, check_type

__all__ = [
    "A100_80GB",
    "ACCELERATORS",
    "H100_SXM",
    "LLAMA2_7B_RUN",
    "NANOGPT_GPT2_RUN",
    "PUBLISHED_RUNS",
    "Accelerator",
    "PublishedRun",
    "gpu_hours",
    "implied_utilisation",
    "matmul_flops_per_second",
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
        memory_bandwidth: Peak bytes per second between that memory and the chip
            (decimal: 2,039 GB/s is 2.039e12).
        source: Where the figures come from.
    """

    name: str
    bf16_flops: float
    memory_bytes: int
    memory_bandwidth: float
    source: str

    @property
    def ridge_intensity(self) -> float:
        """FLOPs per byte of memory traffic at which the chip is as busy computing
        as moving data (``bf16_flops / memory_bandwidth``): work of lower
        arithmetic intensity waits on memory (the roofline model)."""
        return self.bf16_flops / self.memory_bandwidth


A100_80GB = Accelerator(
    name="NVIDIA A100 80GB SXM",
    bf16_flops=312e12,
    memory_bytes=80 * 2**30,
    memory_bandwidth=2.039e12,
    source="NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS "
           "(624 with sparsity), 80GB HBM2e (80 GiB: nvidia-smi shows 81920 MiB), "
           "2,039 GB/s (SXM)",
)
"""The GPU of the Llama 2 runs (and of nanoGPT's GPT-2 run, in its 40GB version)."""

H100_SXM = Accelerator(
    name="NVIDIA H100 SXM",
    bf16_flops=989e12,
    memory_bytes=80 * 2**30,
    memory_bandwidth=3.35e12,
    source="NVIDIA H100 Tensor Core GPU datasheet: BF16 Tensor Core 1,979 TFLOPS "
           "with sparsity, i.e. about 989 dense; 80GB HBM3 (80 GiB, as the A100's), "
           "3.35 TB/s (SXM)",
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
