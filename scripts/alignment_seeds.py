"""How far the preference-alignment comparison moves with its seed.

    OMP_NUM_THREADS=1 python scripts/alignment_seeds.py                # seeds 0 to 3
    OMP_NUM_THREADS=1 python scripts/alignment_seeds.py --seeds 0 5 9

Runs :func:`llmlab.experiments.alignment.run_alignment_comparison` on the Tang model
with the page's settings at each seed. A seed is another sample of the whole
experiment: the prompts, the pairs sampled at them, the batches and the lines
measured after training. The page shows seed 0. For each seed the script prints the
share of regular lines of the base model and of each run, each run's gain over the
base model in points, its KL per token and the change of the chosen and the rejected
lines' log-probabilities; then the smallest, median and largest gain of each run over
the seeds. About 20 CPU-seconds a seed; with
``LLMLAB_CACHE_DIR`` set, results already there (a built site's, for seed 0) are
read, not computed.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from llmlab.experiments.alignment import run_alignment_comparison


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3],
                        help="seeds to run (default: 0 1 2 3)")
    args = parser.parse_args()
    if any(seed < 0 for seed in args.seeds):
        print(f"alignment_seeds.py: error: --seeds must be at least 0, got {args.seeds}",
              file=sys.stderr)
        raise SystemExit(2)
    gains: dict[str, list[float]] = {}
    print("| seed | base | run | regular lines | gain (points) | KL / token | "
          "Δ log π chosen | Δ log π rejected |")
    print("|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        comparison = run_alignment_comparison("tang", seed=seed)
        base = comparison.pairs.base.preferred_share
        for run in comparison.runs:
            name = f"DPO β = {run.beta:g}" if run.method == "dpo" else "SFT"
            gain = 100 * (run.lines.preferred_share - base)
            gains.setdefault(name, []).append(gain)
            print(f"| {seed} | {base:.1%} | {name} | {run.lines.preferred_share:.1%} | "
                  f"{gain:+.1f} | {run.lines.kl_per_token:.3f} | "
                  f"{run.chosen_change:+.2f} | {run.rejected_change:+.2f} |")
    print()
    print("| run | smallest gain | median | largest |")
    print("|---|---|---|---|")
    for name, values in gains.items():
        print(f"| {name} | {min(values):+.1f} | {statistics.median(values):+.1f} | "
              f"{max(values):+.1f} |")


if __name__ == "__main__":
    main()
