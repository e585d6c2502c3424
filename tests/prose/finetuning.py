"""lectures/finetuning.md: its prose numbers (see tests/prose/__init__.py)."""

from __future__ import annotations

from prose import Assert, Default

FT = "llmlab.experiments.finetune"

# number as written in the prose -> the guards that keep it true
GUARDS: dict[str, list[object]] = {
    # 128 and 32 prompts per answer; 256 = 2 x 128 training examples, and 128 + 128
    "128": [Default(f"{FT}:task_examples", "n_train", 128),
            Assert("assert (len(task.train), len(task.held_out)) == (256, 64)"),
            Assert("r * (128 + 128) * 2 * 4 for r in (1, 4, 8)")],
    "32": [Default(f"{FT}:task_examples", "n_held_out", 32),
           Assert("# 128 and 32 per answer")],
    "256": [Assert("assert (len(task.train), len(task.held_out)) == (256, 64)"),
            Assert("r * (128 + 128) * 2 * 4 for r in (1, 4, 8)")],
    "20": [Default(f"{FT}:run_finetune", "steps", 20),
           Default(f"{FT}:run_finetune_comparison", "steps", 20)],
    "16": [Default(f"{FT}:run_finetune", "batch_size", 16)],
    # the Tang LoRA run of rank 8 gets a mean below 10%
    "10%": [Assert("assert tang.lora[0].mean_accuracy < 0.1")],
    # the learning rates 2 x 10^-3 and 10^-2
    "10": [Assert("assert (tang.full.lr, tang.lora[0].lr) == (2e-3, 1e-2)")],
    "2%": [Assert("assert r4.trainable_share < r8.trainable_share < 0.02")],
    "352": [Assert("layer = LoRALinear(Linear(128, 352), rank, alpha=2.0 * rank)")],
    "50": [Assert("assert scale.trainable_share < 0.001 and scale.full_adamw_bytes > 50 * 2**30"),
           Assert("assert r8.optimizer_state_bytes * 50 < play.full.optimizer_state_bytes")],
}

# numbers that are not results -> why
ALLOWED: dict[str, str] = {
    "1.0": "the gradient-clipping norm run_finetune gives train (max_grad_norm=1.0)",
    "100": "IGNORE_INDEX, -100: PyTorch's convention for a target left out of the loss",
}
