"""Training and generation speed, side by side, in one run (one thread).

    OMP_NUM_THREADS=1 python benchmarks/training.py            # 3 repetitions each
    OMP_NUM_THREADS=1 python benchmarks/training.py --reps 5 --skip-experiments

What it measures, each over ``--reps`` repetitions (median, min, max):

* training tokens/s of our ``TransformerLM`` + ``cross_entropy`` + ``AdamW`` +
  ``gradient_clipping`` against the same model and batch built from PyTorch's own
  pieces (``nn.RMSNorm``, fused ``F.scaled_dot_product_attention``, ``nn.Linear``,
  ``F.cross_entropy``, ``torch.optim.AdamW``, ``clip_grad_norm_``), interleaved, as a
  ratio (ours / PyTorch's; the target is at least 0.7);
* generated tokens/s with and without the KV cache, and the milliseconds of one
  step as the text grows;
* the CPU seconds of the lecture's cached experiments, computed (not looked up),
  one after another, with their default arguments.

These machines are shared and noisy: compare numbers taken in the same run.
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

import torch  # noqa: E402

from llmlab.experiments import training as exp  # noqa: E402
from llmlab.training import AdamW  # noqa: E402


def _stats(values: list[float]) -> str:
    return (f"median {statistics.median(values):10,.1f}  min {min(values):10,.1f}  "
            f"max {max(values):10,.1f}")


def bench_training(reps: int, steps: int) -> None:
    settings = exp.TinyLMSettings()
    print(f"\n## training throughput (tokens/s; batch {settings.batch_size} x "
          f"{settings.context_length}, d_model {settings.d_model}, "
          f"{settings.num_layers} layers, {steps} steps a repetition)", flush=True)

    def each(i: int, ours: float, theirs: float) -> None:
        print(f"  rep {i + 1}: ours {ours:9,.0f}  pytorch {theirs:9,.0f}  "
              f"ratio {ours / theirs:.3f}", flush=True)

    t = exp.time_training_throughput(repeats=reps, steps=steps, settings=settings,
                                     on_repeat=each)
    ratios = [a / b for a, b in zip(t.ours, t.torch)]
    print(f"  ours      {_stats(t.ours)}")
    print(f"  pytorch   {_stats(t.torch)}")
    print(f"  ratio     median {statistics.median(ratios):.3f}  min {min(ratios):.3f}"
          f"  max {max(ratios):.3f}  (median/median {t.ratio:.3f}; target >= 0.7)",
          flush=True)


def bench_generation(reps: int, context_length: int) -> None:
    print(f"\n## generation (tokens/s, greedy, 1 sequence, text grown from 1 to "
          f"{context_length} tokens)", flush=True)
    cached, uncached, runs = [], [], []
    for i in range(reps):
        g = exp.time_generation(context_length=context_length, repeats=1)
        cached.append(g.tokens_per_s_cached)
        uncached.append(g.tokens_per_s_uncached)
        runs.append(g)
        print(f"  rep {i + 1}: with cache {g.tokens_per_s_cached:8,.0f}  without "
              f"{g.tokens_per_s_uncached:8,.0f}  speed-up "
              f"{g.tokens_per_s_cached / g.tokens_per_s_uncached:.2f}x", flush=True)
    print(f"  with cache     {_stats(cached)}")
    print(f"  without cache  {_stats(uncached)}")
    print("  ms per step at text length (median of reps): "
          + ", ".join(
              f"{n}: {statistics.median(r.ms_cached[k] for r in runs):.2f} vs "
              f"{statistics.median(r.ms_uncached[k] for r in runs):.2f}"
              for k, n in enumerate(runs[0].lengths)), flush=True)


EXPERIMENTS = [
    ("run_loss_at_init", {}),
    ("run_adamw_check", {}),
    ("run_lr_schedule", {}),
    ("run_gradient_clipping", {}),
    ("run_training_run", {"corpus": "shakespeare"}),
    ("run_training_run", {"corpus": "tang"}),
    ("run_sampling", {}),  # its training run is computed above; counted there
    ("run_kv_cache_check", {}),
    ("run_checkpoint_resume", {}),
]


def bench_experiments(reps: int) -> None:
    print("\n## the lecture's cached experiments (CPU seconds, computed, one thread)",
          flush=True)
    os.environ["LLMLAB_CACHE"] = "0"  # no disk layer: nothing stored or read
    from llmlab import cache

    totals = []
    per: dict[str, list[float]] = {}
    for i in range(reps):
        total = 0.0
        for name, kwargs in EXPERIMENTS:
            fn = getattr(exp, name)
            label = name + "".join(f"({v})" for v in kwargs.values())
            cache.clear_memory()
            if name == "run_sampling":  # keep the training run it reads in memory
                exp.run_training_run(corpus="shakespeare")
                start = time.process_time()
                fn(**kwargs)
            else:
                start = time.process_time()
                fn.uncached(**kwargs)
            seconds = time.process_time() - start
            per.setdefault(label, []).append(seconds)
            total += seconds
        totals.append(total)
        print(f"  rep {i + 1}: total {total:.2f} s", flush=True)
    for label, values in per.items():
        print(f"  {label:38s} median {statistics.median(values):6.2f}  "
              f"min {min(values):6.2f}  max {max(values):6.2f}")
    print(f"  {'total':38s} median {statistics.median(totals):6.2f}  "
          f"min {min(totals):6.2f}  max {max(totals):6.2f}  (budget about 12)",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20,
                        help="timed training steps per repetition")
    parser.add_argument("--context-length", type=int, default=256,
                        help="text length the generation benchmark grows to")
    parser.add_argument("--skip-experiments", action="store_true")
    args = parser.parse_args()
    if args.reps < 3:
        parser.error("--reps must be at least 3")
    torch.set_num_threads(1)
    print(f"# benchmarks/training.py on {exp.machine_description()}, torch "
          f"{torch.__version__}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    AdamW([torch.nn.Parameter(torch.ones(1))])  # torch.optim's one-off imports
    bench_training(args.reps, args.steps)
    bench_generation(args.reps, args.context_length)
    if not args.skip_experiments:
        bench_experiments(args.reps)


if __name__ == "__main__":
    main()
