"""How far the runs a lecture compares move with the seed.

    OMP_NUM_THREADS=1 python scripts/seeds.py alignment              # seeds 0 to 3
    OMP_NUM_THREADS=1 python scripts/seeds.py alignment-longer
    OMP_NUM_THREADS=1 python scripts/seeds.py finetuning --seeds 0 5 9
    OMP_NUM_THREADS=1 python scripts/seeds.py inference

A page shows one sample of each experiment, at seed 0. Before its prose says that one
run beats another, run the comparison at other seeds: a difference that holds at
seed 0 alone is one sample, and the page must say so (or not say it). For each seed
the script prints the numbers the lecture's prose compares, then the smallest, median
and largest of one of them over the seeds:

* ``alignment``: ``run_alignment_comparison("tang")``. The share of regular lines of
  the base model (sampled twice: the second sample shows how far a share moves with
  nothing trained) and of each run, each run's gain over the base model's first
  sample in points (the spread), its KL per token and the change of the chosen and
  the rejected lines' log-probabilities. About 20 CPU-seconds a seed.
* ``alignment-longer``: ``run_alignment("tang", beta=β, steps=n)`` for β = 0.1 and
  0.5, n = 10 and 30 (the 30-step run takes the 10-step run's steps first, then 20
  more). The base model's two samples, and each run's share of regular lines, KL per
  token, share of couplet lines with a first half of four characters, reward
  accuracy and log-ratio margin on the training pairs, the change of the chosen and
  the rejected lines' log-probabilities, and agreement with the judge on the
  held-out pairs; the spread: the change of the share from 10 to 30 steps, in
  points. About 30 CPU-seconds a seed (with the comparison's 10-step runs cached).
* ``finetuning``: ``run_finetune_comparison("tang", ranks=(8,))`` and
  ``run_finetune_comparison("shakespeare")``. Each run's held-out accuracy per answer,
  its mean (the spread) and what it forgot (nats per token). About 17 CPU-seconds a seed.
* ``inference``: ``run_gqa_comparison()``. The validation loss of each number of
  key/value heads and its difference from multi-head attention (the spread). About
  5 CPU-seconds a seed.

A seed is another sample of the whole experiment (prompts, pairs, batches,
initialisation, the lines measured). With ``LLMLAB_CACHE_DIR`` set, results already
there (a built site's, for seed 0) are read, not computed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable

from llmlab.experiments.alignment import (
    run_alignment,
    run_alignment_comparison,
    run_preference_pairs,
)
from llmlab.experiments.finetune import run_finetune_comparison
from llmlab.experiments.inference import run_gqa_comparison

Spread = dict[str, list[float]]  # a run's name -> the spread's measure at each seed


def alignment(seed: int, spread: Spread) -> list[list[str]]:
    comparison = run_alignment_comparison("tang", seed=seed)
    base = comparison.pairs.base.preferred_share
    again = comparison.pairs.base_again.preferred_share
    rows = []
    for run in comparison.runs:
        name = f"DPO β = {run.beta:g}" if run.method == "dpo" else "SFT"
        gain = 100 * (run.lines.preferred_share - base)
        spread.setdefault(name, []).append(gain)
        rows.append([f"{seed}", f"{base:.1%}", f"{again:.1%}", name,
                     f"{run.lines.preferred_share:.1%}", f"{gain:+.1f}",
                     f"{run.lines.kl_per_token:.3f}", f"{run.chosen_change:+.2f}",
                     f"{run.rejected_change:+.2f}"])
    return rows


def alignment_longer(seed: int, spread: Spread) -> list[list[str]]:
    pairs = run_preference_pairs("tang", seed=seed)
    base = [f"{seed}", f"{pairs.base.preferred_share:.1%}",
            f"{pairs.base_again.preferred_share:.1%}"]
    rows = []
    for beta in (0.1, 0.5):
        short, longer = (run_alignment("tang", beta=beta, steps=n, seed=seed) for n in (10, 30))
        name = f"DPO β = {beta:g}"
        spread.setdefault(name, []).append(
            100 * (longer.lines.preferred_share - short.lines.preferred_share))
        rows += [[*base, name, f"{run.steps}", f"{run.lines.preferred_share:.1%}",
                  f"{run.lines.kl_per_token:.3f}", f"{run.lines.halves_share(4):.1%}",
                  f"{run.reward_accuracy:.1%}", f"{run.margin:.2f}",
                  f"{run.chosen_change:+.2f}", f"{run.rejected_change:+.2f}",
                  f"{run.held_out_accuracy:.1%}"]
                 for run in (short, longer)]
    return rows


def finetuning(seed: int, spread: Spread) -> list[list[str]]:
    rows = []
    for comparison in (run_finetune_comparison("tang", ranks=(8,), seed=seed),
                       run_finetune_comparison("shakespeare", seed=seed)):
        for run in comparison.runs:
            name = (f"LoRA r = {run.rank}" if run.method == "lora" else
                    "full, masked" if run.mask_prompt else "full, not masked")
            name = f"{comparison.corpus}: {name}"
            spread.setdefault(name, []).append(100 * run.mean_accuracy)
            rows.append([f"{seed}", name, " / ".join(f"{a:.1%}" for a in run.accuracy),
                         f"{run.mean_accuracy:.1%}", f"{run.forgetting:.3f}"])
    return rows


def inference(seed: int, spread: Spread) -> list[list[str]]:
    gqa = run_gqa_comparison(seed=seed)
    rows = []
    for kv, loss in zip(gqa.kv_heads, gqa.val_loss):
        name = f"{kv} key/value heads"
        spread.setdefault(name, []).append(loss - gqa.val_loss[0])
        rows.append([f"{seed}", name, f"{loss:.3f}", f"{loss - gqa.val_loss[0]:+.3f}"])
    return rows


# lecture -> (one seed's rows, their columns, what the spread measures, its format)
LECTURES: dict[str, tuple[Callable[[int, Spread], list[list[str]]], list[str], str, str]] = {
    "alignment": (alignment, ["seed", "base", "base again", "run", "regular lines",
                              "gain (points)", "KL / token", "Δ log π chosen",
                              "Δ log π rejected"], "gain (points)", "{:+.1f}"),
    "alignment-longer": (alignment_longer, ["seed", "base", "base again", "run", "steps",
                                            "regular lines", "KL / token",
                                            "first half of 4", "reward accuracy",
                                            "margin", "Δ log π chosen",
                                            "Δ log π rejected", "held-out agreement"],
                         "change of regular lines from 10 to 30 steps (points)", "{:+.1f}"),
    "finetuning": (finetuning, ["seed", "run", "accuracy per answer", "mean",
                                "forgetting (nats / token)"], "mean accuracy (%)", "{:.1f}"),
    "inference": (inference, ["seed", "model", "validation loss", "minus multi-head"],
                  "validation loss minus multi-head's", "{:+.3f}"),
}


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(prog="seeds.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("lecture", choices=sorted(LECTURES),
                        help="the lecture whose comparison to run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3],
                        help="seeds to run (default: 0 1 2 3)")
    args = parser.parse_args()
    if any(seed < 0 for seed in args.seeds):
        print(f"seeds.py: error: --seeds must be at least 0, got {args.seeds}",
              file=sys.stderr)
        raise SystemExit(2)
    rows_of, columns, measure, form = LECTURES[args.lecture]
    spread: Spread = {}
    print(_row(columns))
    print(_row(["---"] * len(columns)))
    for seed in args.seeds:
        for row in rows_of(seed, spread):
            print(_row(row), flush=True)
    print()
    print(f"{measure} over seeds {', '.join(map(str, args.seeds))}:")
    print()
    print(_row(["run", "smallest", "median", "largest"]))
    print(_row(["---"] * 4))
    for name, values in spread.items():
        print(_row([name, *(form.format(v) for v in
                            (min(values), statistics.median(values), max(values)))]))


if __name__ == "__main__":
    main()
