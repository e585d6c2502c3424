"""Bad inputs of "Multi-head attention and the Transformer block":
llmlab.experiments.multihead, llmlab.report.multihead.

Collected by tests/test_bad_inputs.py (the grouping and the rules:
tests/bad_inputs/__init__.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

import llmlab.experiments.multihead as exp_multihead
import llmlab.report.multihead as report_multihead

from bad_inputs import T, V, Case, case, _ids, _mha, _x


CASES: list[Case] = [
    # --- llmlab.report.multihead ---------------------------------------------------
    case("why_multihead_table of the other result",
         "llmlab.report.multihead.why_multihead_table",
         lambda: report_multihead.why_multihead_table(
             exp_multihead.ResidualRun("pre_ln", 0.0, [], 0.0)), T, "result",
         r"result must be a WhyMultiheadResult, got ResidualRun"),
    case("why_multihead_seed_table of None", "llmlab.report.multihead.why_multihead_seed_table",
         lambda: report_multihead.why_multihead_seed_table(None), T, "result",
         r"result must be a WhyMultiheadResult"),
    case("why_multihead_answer_table of None",
         "llmlab.report.multihead.why_multihead_answer_table",
         lambda: report_multihead.why_multihead_answer_table(None, [(1, 0)]), T, "result",
         r"result must be a WhyMultiheadResult"),
    case("why_multihead_figure of None", "llmlab.report.multihead.why_multihead_figure",
         lambda: report_multihead.why_multihead_figure(None), T, "result",
         r"result must be a WhyMultiheadResult"),
    case("residual_table of None", "llmlab.report.multihead.residual_table",
         lambda: report_multihead.residual_table(None), T, "result",
         r"result must be a ResidualAblationResult"),
    case("residual_figure of None", "llmlab.report.multihead.residual_figure",
         lambda: report_multihead.residual_figure(None), T, "result",
         r"result must be a ResidualAblationResult"),
    # --- llmlab.experiments.multihead ----------------------------------------------
    case("copy runs steps -1", "llmlab.experiments.multihead.run_copy_runs",
         lambda: exp_multihead.run_copy_runs(1, steps=-1), V, "steps",
         r"steps must be an int >= 1, got -1"),
    case("copy runs no seeds", "llmlab.experiments.multihead.run_copy_runs",
         lambda: exp_multihead.run_copy_runs(1, seeds=()), V, "seeds",
         r"seeds must hold at least one value"),
    case("copy runs lr 0", "llmlab.experiments.multihead.run_copy_runs",
         lambda: exp_multihead.run_copy_runs(1, lr=0), V, "lr",
         r"lr must be a finite number in \(0, inf\), got 0"),
    case("why multihead empty heads", "llmlab.experiments.multihead.run_why_multihead",
         lambda: exp_multihead.run_why_multihead(heads=()), V, "heads",
         r"heads must hold at least one value"),
    case("why multihead offset too far", "llmlab.experiments.multihead.run_why_multihead",
         lambda: exp_multihead.run_why_multihead(offsets=(1, 12)), V, "offsets[1]",
         r"offsets\[1\] must be an int in \[1, 11\], got 12"),
    case("why multihead heads do not divide", "llmlab.experiments.multihead.run_why_multihead",
         lambda: exp_multihead.run_why_multihead(heads=(5,)), V, "n_heads",
         r"d_model \(24\) must be divisible by n_heads \(5\)"),
    case("train_copy_model batch 0", "llmlab.experiments.multihead.train_copy_model",
         lambda: exp_multihead.train_copy_model(1, batch_size=0), V, "batch_size",
         r"batch_size must be an int >= 1, got 0"),
    case("evaluate_copy_model of an MHA", "llmlab.experiments.multihead.evaluate_copy_model",
         lambda: exp_multihead.evaluate_copy_model(_mha()), T, "model",
         r"model must be a OneLayerAttention"),
    case("OneLayerAttention targets 0", "llmlab.experiments.multihead.OneLayerAttention",
         lambda: exp_multihead.OneLayerAttention(10, 8, 2, 12, 0), V, "n_targets",
         r"n_targets must be an int >= 1, got 0"),
    case("OneLayerAttention too long", "llmlab.experiments.multihead.OneLayerAttention",
         lambda: exp_multihead.OneLayerAttention(10, 8, 2, 4, 1)(_ids(1, 5)), V, "seq_len",
         r"seq_len is 5, expected 1 <= seq_len <= 4"),
    case("collapse_score one position", "llmlab.experiments.multihead.collapse_score",
         lambda: exp_multihead.collapse_score(_x(2, 1, 4)), V, "hidden",
         r"hidden must have shape \(batch, seq_len, d\).*seq_len is 1, expected seq_len >= 2"),
    case("residual variant unknown kind", "llmlab.experiments.multihead.run_residual_variant",
         lambda: exp_multihead.run_residual_variant("resnet"), V, "kind",
         r"kind must be one of 'pre_ln', 'post_ln', 'no_residual', got 'resnet'"),
    case("residual variant heads", "llmlab.experiments.multihead.run_residual_variant",
         lambda: exp_multihead.run_residual_variant("pre_ln", n_heads=3), V, "n_heads",
         r"d_model \(32\) must be divisible by n_heads \(3\)"),
    case("residual ablation empty kinds", "llmlab.experiments.multihead.run_residual_ablation",
         lambda: exp_multihead.run_residual_ablation(kinds=()), V, "kinds",
         r"kinds must hold at least one of"),
    case("residual ablation window", "llmlab.experiments.multihead.run_residual_ablation",
         lambda: exp_multihead.run_residual_ablation(steps=3, window=4), V, "window",
         r"window must be an int in \[1, 3\], got 4"),
    case("head split heads do not divide", "llmlab.experiments.multihead.run_head_split",
         lambda: exp_multihead.run_head_split(d_model=6, n_heads=4), V, "n_heads",
         r"d_model \(6\) must be divisible by n_heads \(4\)"),
    case("block order pre_ln a str", "llmlab.experiments.multihead.run_block_order",
         lambda: exp_multihead.run_block_order("pre"), T, "pre_ln",
         r"pre_ln must be a bool, got str 'pre'"),
]

# Good-input controls: the same calls done right, which must go through.
GOOD: list[tuple[str, Callable[[], object]]] = [
    ("collapse_score of two positions", lambda: exp_multihead.collapse_score(
        torch.randn(2, 2, 4))),
]
