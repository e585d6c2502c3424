"""The fine-tuning lecture's runs, timed per device.

    OMP_NUM_THREADS=1 python benchmarks/finetune.py                  # CPU, 3 repetitions
    python benchmarks/finetune.py --devices cpu cuda --reps 3        # on a GPU machine

Runs what the page "Fine-tuning" runs, :func:`llmlab.experiments.finetune.run_finetune`
for each base model: full fine-tuning with the prompt masked and not, then LoRA of
ranks 1, 4 and 8 on the query and value projections, 20 steps each, with the page's
defaults. Computed, never looked up: the in-process memo is cleared before each run,
and no disk cache is read (``LLMLAB_CACHE_DIR`` is left unset). The base model's own
scores, a part every run shares, are computed once before the clock starts.

Prints, per device and corpus, the seconds of each run and of the whole set over
``--reps`` repetitions after one warm-up set (median, min, max), and the accuracy per
answer each run reached, so the devices' results can be compared as well as their
speed (a GPU's float rounding differs from the CPU's: the accuracies may differ a
little, not much).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))  # this checkout's llmlab, not an installed one
os.environ.pop("LLMLAB_CACHE_DIR", None)  # compute every run

import torch  # noqa: E402

from llmlab.build.cache import clear_memory  # noqa: E402
from llmlab.experiments.finetune import run_finetune, score_base_model  # noqa: E402
from llmlab.pretrained import NAMES  # noqa: E402

RUNS = ([("full, masked", dict(method="full", mask_prompt=True)),
         ("full, unmasked", dict(method="full", mask_prompt=False))]
        + [(f"LoRA rank {r}", dict(method="lora", rank=r)) for r in (1, 4, 8)])


def _stats(values: list[float]) -> str:
    return (f"median {statistics.median(values):6.2f}  min {min(values):6.2f}  "
            f"max {max(values):6.2f}")


def bench(corpus: str, device: str, reps: int) -> None:
    print(f"\n## {corpus} on {device}"
          + (f" ({torch.get_num_threads()} threads)" if device == "cpu" else ""))
    seconds: dict[str, list[float]] = {label: [] for label, _ in RUNS}
    totals, accuracy = [], {}
    for rep in range(reps + 1):  # the first set warms up
        total = 0.0
        for label, kwargs in RUNS:
            clear_memory()
            score_base_model(corpus)  # shared by every run: not timed
            start = time.perf_counter()
            run = run_finetune(corpus, device=device, **kwargs)
            took = time.perf_counter() - start
            total += took
            if rep:
                seconds[label].append(took)
            accuracy[label] = run.accuracy
        if rep:
            totals.append(total)
    for label, _ in RUNS:
        print(f"  {label:<16} s {_stats(seconds[label])}   accuracy per answer "
              + " / ".join(f"{a:.2f}" for a in accuracy[label]))
    print(f"  {'all five runs':<16} s {_stats(totals)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", default=["cpu"])
    parser.add_argument("--corpora", nargs="+", default=list(NAMES), choices=NAMES)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print(f"torch {torch.__version__}"
          + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""))
    for corpus in args.corpora:
        for device in args.devices:
            bench(corpus, device, args.reps)


if __name__ == "__main__":
    main()
