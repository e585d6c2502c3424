"""lectures/alignment.md: its prose numbers (see tests/prose/__init__.py)."""

from __future__ import annotations

from prose import Assert, Default

AL = "llmlab.experiments.alignment"

# number as written in the prose -> the guards that keep it true
GUARDS: dict[str, list[object]] = {
    # β = 0.05, 0.1 and 0.5; the English counterpart at 0.1
    "0.05": [Default(f"{AL}:run_alignment_comparison", "betas", (0.05, 0.1, 0.5))],
    "0.1": [Default(f"{AL}:run_alignment_comparison", "betas", (0.05, 0.1, 0.5)),
            Assert('run = run_alignment("shakespeare", beta=0.1, samples=4)'),
            Assert("assert abs(half.lines.preferred_share - mid.lines.preferred_share) < 0.05")],
    "0.5": [Default(f"{AL}:run_alignment_comparison", "betas", (0.05, 0.1, 0.5))],
    # 10 steps of 16 pairs at a learning rate of 2 × 10^-4
    "10": [Default(f"{AL}:run_alignment", "steps", 10),
           Default(f"{AL}:run_alignment_comparison", "steps", 10),
           Default(f"{AL}:run_alignment", "lr", 2e-4)],
    "16": [Default(f"{AL}:run_alignment", "batch_size", 16)],
    # 64 training prompts, 32 held out; each line at most 24 new tokens
    "64": [Default(f"{AL}:run_preference_pairs", "train_prompts", 64),
           Default(f"{AL}:run_alignment", "prompts", 64),
           Assert("assert (pairs.train_prompts, pairs.samples, pairs.base.samples) == "
                  "(64, 8, 32 * 8)")],
    "32": [Default(f"{AL}:run_preference_pairs", "held_out_prompts", 32),
           Assert("assert (pairs.train_prompts, pairs.samples, pairs.base.samples) == "
                  "(64, 8, 32 * 8)")],
    "24": [Default(f"{AL}:sample_lines", "max_new_tokens", 24)],
    # a share measured on 256 lines, and how uncertain it is
    "256": [Assert("assert (pairs.train_prompts, pairs.samples, pairs.base.samples) == "
                   "(64, 8, 32 * 8)"),
            Assert("noise = two_standard_errors(base.samples, m=again.samples)")],
    # the Shakespeare shares, 128 lines each (32 prompts, 4 lines a prompt)
    "128": [Assert("assert play.base.samples == play.base_again.samples == "
                   "run.lines.samples == 32 * 4")],
    # the loss starts at log 2 ≈ 0.693
    "0.693": [Assert("assert math.isclose(losses.item(), math.log(2), rel_tol=1e-6)")],
    # training longer: 30 steps, then more than 95% of the training pairs ranked right
    "30": [Assert('longer = {beta: run_alignment("tang", beta=beta, steps=30) '
                  'for beta in (0.1, 0.5)}')],
    "95%": [Assert("assert mid_30.reward_accuracy > 0.95 > mid.reward_accuracy")],
    # exercise 1's margins of ±1000
    "1000": [Assert("assert losses.tolist() == [0.0, 1000.0] and naive[1].isinf()")],
}

# numbers that are not results -> why
ALLOWED: dict[str, str] = {
    "2023": "year of a citation (Rafailov et al., 2023; Gao et al., 2023)",
    "2024": "year of a citation (Rafailov et al., 2024)",
}
