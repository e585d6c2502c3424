"""Bad inputs of "Preference alignment": llmlab.alignment (DPO: ``sequence_logprobs``,
``dpo_loss``, ``implicit_reward_accuracy``, ``PreferenceData``),
llmlab.experiments.alignment and llmlab.report.alignment.

Collected by tests/test_bad_inputs.py (the grouping and the rules:
tests/bad_inputs/__init__.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from llmlab.alignment import (
    PreferenceData,
    dpo_loss,
    implicit_reward_accuracy,
    sequence_logprobs,
)
from llmlab.experiments import alignment as ex
from llmlab.pretrained import load
from llmlab.report import alignment as rep

from bad_inputs import NAN, T, V, Case, _ids, _llama_lm, _x, case


def _mask(*rows: tuple[int, int]) -> torch.Tensor:
    """A ``(len(rows), 4)`` response mask, True on ``[start, stop)`` of each row."""
    mask = torch.zeros(len(rows), 4, dtype=torch.bool)
    for i, (start, stop) in enumerate(rows):
        mask[i, start:stop] = True
    return mask


def _logps(model: nn.Module | object, mask: torch.Tensor) -> torch.Tensor:
    return sequence_logprobs(model, _ids(mask.shape[0], mask.shape[1]), mask)


def _dpo(beta: object = 0.1, **logps: torch.Tensor):
    args = {"pc": _x(3), "pr": _x(3), "rc": _x(3), "rr": _x(3)} | logps
    return dpo_loss(args["pc"], args["pr"], args["rc"], args["rr"], beta)


def _pairs_of(corpus: str) -> ex.PreferencePairs:
    """Pairs of ``corpus`` with nothing in them: enough for a table's checks."""
    lines = ex.LineStats(samples=1, preferred=0, unfinished=1, repetition=0.0, halves={},
                         kl_per_token=0.0, examples=[None])
    return ex.PreferencePairs(corpus=corpus, samples=2, train=[], held_out=[],
                              train_reference=[], held_out_reference=[], examples=[],
                              held_out_prompts=["\n"], chosen_halves={},
                              rejected_halves={}, base=lines, base_again=lines,
                              train_prompts=1)


CASES: list[Case] = [
    # --- sequence_logprobs -------------------------------------------------------------
    case("sequence_logprobs mask selects no token", "llmlab.alignment.sequence_logprobs",
         lambda: _logps(_llama_lm(), _mask((2, 4), (4, 4))), V, "response_mask",
         r"response_mask selects no token in row\(s\) \[1\]; expected at least one True"),
    case("sequence_logprobs mask True at position 0",
         "llmlab.alignment.sequence_logprobs",
         lambda: _logps(_llama_lm(), _mask((0, 4), (2, 4))), V, "response_mask",
         r"response_mask is True at position 0 in row\(s\) \[0\]; the first token has "
         r"nothing before it to predict it, expected False there"),
    case("sequence_logprobs integer mask", "llmlab.alignment.sequence_logprobs",
         lambda: _logps(_llama_lm(), _mask((2, 4)).long()), V, "response_mask",
         r"response_mask must be a boolean tensor, got dtype torch\.int64"),
    case("sequence_logprobs mask shorter than the ids",
         "llmlab.alignment.sequence_logprobs",
         lambda: sequence_logprobs(_llama_lm(), _ids(2, 4), _mask((2, 4), (1, 3))[:, :3]),
         V, "response_mask", r"response_mask must have shape \(batch, seq_len\), got "
         r"shape \(2, 3\): seq_len is 3, but input_ids has seq_len 4"),
    case("sequence_logprobs mask of one row", "llmlab.alignment.sequence_logprobs",
         lambda: sequence_logprobs(_llama_lm(), _ids(2, 4), _mask((2, 4))[0]), V,
         "response_mask", r"response_mask must have shape \(batch, seq_len\), got a "
         r"1-D tensor of shape \(4,\)"),
    case("sequence_logprobs float ids", "llmlab.alignment.sequence_logprobs",
         lambda: sequence_logprobs(_llama_lm(), _x(1, 4), _mask((2, 4))), V, "input_ids",
         r"input_ids must be an integer tensor, got dtype torch\.float32"),
    case("sequence_logprobs of a state dict", "llmlab.alignment.sequence_logprobs",
         lambda: _logps(_llama_lm().state_dict(), _mask((2, 4))), T, "model",
         r"model must be a torch\.nn\.Module, got OrderedDict"),
    case("sequence_logprobs model without logits", "llmlab.alignment.sequence_logprobs",
         lambda: _logps(nn.Identity(), _mask((2, 4))), V, "model",
         r"model\(input_ids\) must be a floating-point \(\.\.\., vocab_size\) tensor, "
         r"got shape \(1, 4\) and dtype torch\.int64"),
    # --- dpo_loss ------------------------------------------------------------------
    case("dpo_loss shapes differ", "llmlab.alignment.dpo_loss",
         lambda: _dpo(pr=_x(4)), V, "policy_rejected_logps",
         r"policy_rejected_logps must have shape \(batch,\), got shape \(4,\): batch is "
         r"4, but policy_chosen_logps has batch 3"),
    case("dpo_loss 2-D log-probs", "llmlab.alignment.dpo_loss",
         lambda: _dpo(rr=_x(3, 1)), V, "reference_rejected_logps",
         r"reference_rejected_logps must have shape \(batch,\), got a 2-D tensor"),
    case("dpo_loss integer log-probs", "llmlab.alignment.dpo_loss",
         lambda: _dpo(pc=_ids(3)), V, "policy_chosen_logps",
         r"policy_chosen_logps must be a floating-point tensor, got dtype torch\.int64"),
    case("dpo_loss dtypes differ", "llmlab.alignment.dpo_loss",
         lambda: _dpo(rc=_x(3, dtype=torch.float64)), V, "reference_chosen_logps",
         r"reference_chosen_logps has dtype torch\.float64 but policy_chosen_logps has "
         r"torch\.float32"),
    case("dpo_loss log-probs a list", "llmlab.alignment.dpo_loss",
         lambda: _dpo(pc=[0.0, 0.0, 0.0]), T, "policy_chosen_logps",
         r"policy_chosen_logps must be a torch\.Tensor, got list"),
    case("dpo_loss beta 0", "llmlab.alignment.dpo_loss",
         lambda: _dpo(0.0), V, "beta", r"beta must be a finite number in \(0, inf\), got 0"),
    case("dpo_loss beta negative", "llmlab.alignment.dpo_loss",
         lambda: _dpo(-0.1), V, "beta",
         r"beta must be a finite number in \(0, inf\), got -0\.1"),
    case("dpo_loss beta NaN", "llmlab.alignment.dpo_loss",
         lambda: _dpo(NAN), V, "beta", r"beta must be a finite number in \(0, inf\), got nan"),
    case("dpo_loss beta inf", "llmlab.alignment.dpo_loss",
         lambda: _dpo(float("inf")), V, "beta",
         r"beta must be a finite number in \(0, inf\), got inf"),
    case("dpo_loss beta a bool", "llmlab.alignment.dpo_loss",
         lambda: _dpo(True), T, "beta", r"beta must be a number, got bool True"),
    # --- implicit_reward_accuracy --------------------------------------------------
    case("implicit_reward_accuracy shapes differ",
         "llmlab.alignment.implicit_reward_accuracy",
         lambda: implicit_reward_accuracy(_x(3), _x(2)), V, "rejected_rewards",
         r"rejected_rewards must have shape \(batch,\), got shape \(2,\): batch is 2, "
         r"but chosen_rewards has batch 3"),
    case("implicit_reward_accuracy of a bool mask",
         "llmlab.alignment.implicit_reward_accuracy",
         lambda: implicit_reward_accuracy(_x(3, dtype=torch.bool), _x(3)), V,
         "chosen_rewards", r"chosen_rewards must be a floating-point tensor, got dtype "
         r"torch\.bool"),
]

def _tang_tokenizer():
    return load("tang")[1]


def _pairs(**kw: object) -> PreferenceData:
    args = dict(pairs=[([1, 2], [3], [4, 5])], reference=_llama_lm(), beta=0.1, pad_id=0) | kw
    return PreferenceData(**args)


CASES += [
    # --- PreferenceData ------------------------------------------------------------
    case("PreferenceData of no pairs", "llmlab.alignment.PreferenceData",
         lambda: _pairs(pairs=[]), V, "pairs", r"pairs is empty; expected at least one"),
    case("PreferenceData pair of two", "llmlab.alignment.PreferenceData",
         lambda: _pairs(pairs=[([1], [2])]), V, "pairs[0]",
         r"pairs\[0\] must be \(prompt_ids, chosen_ids, rejected_ids\), got 2 items"),
    case("PreferenceData empty response", "llmlab.alignment.PreferenceData",
         lambda: _pairs(pairs=[([1], [], [2])]), V, "pairs[0][1] (chosen_ids)",
         r"pairs\[0\]\[1\] \(chosen_ids\)"),
    case("PreferenceData id outside the vocabulary", "llmlab.alignment.PreferenceData",
         lambda: _pairs(pairs=[([1], [2], [10**6])]), V, "pairs[0][2] (rejected_ids)[0]",
         r"pairs\[0\]\[2\] \(rejected_ids\)\[0\] must be an int in \[0, \d+\], got 1000000"),
    case("PreferenceData beta 0", "llmlab.alignment.PreferenceData",
         lambda: _pairs(beta=0.0), V, "beta", r"beta must be a finite number in \(0, inf\), got 0"),
    case("PreferenceData reference a dict", "llmlab.alignment.PreferenceData",
         lambda: _pairs(reference={}), T, "reference",
         r"reference must be a torch\.nn\.Module, got dict"),
    case("PreferenceData reference log-probs of another shape",
         "llmlab.alignment.PreferenceData",
         lambda: _pairs(reference=torch.zeros(2, 2)), V, "reference",
         r"reference must have shape \(pairs=1, two=2\), got shape \(2, 2\): pairs is 2, "
         r"expected pairs = 1"),
    # --- llmlab.experiments.alignment ----------------------------------------------
    case("two_standard_errors of no lines", "llmlab.experiments.alignment.two_standard_errors",
         lambda: ex.two_standard_errors(0), V, "n", r"n must be an int >= 1, got 0"),
    case("two_standard_errors of a share above 1",
         "llmlab.experiments.alignment.two_standard_errors",
         lambda: ex.two_standard_errors(10, 1.5), V, "p", r"p must be a finite number in \[0"),
    case("two_standard_errors q without m", "llmlab.experiments.alignment.two_standard_errors",
         lambda: ex.two_standard_errors(10, q=0.3), V, "m",
         r"m is None but q is given; expected m"),
    case("two_standard_errors m 0", "llmlab.experiments.alignment.two_standard_errors",
         lambda: ex.two_standard_errors(10, m=0), V, "m", r"m must be an int >= 1, got 0"),
    case("prefers of a corpus not shipped", "llmlab.experiments.alignment.prefers",
         lambda: ex.prefers("odes", "x"), V, "corpus", r"corpus must be one of"),
    case("prefers of bytes", "llmlab.experiments.alignment.prefers",
         lambda: ex.prefers("tang", b"x"), T, "line", r"line must be a line of text, or None"),
    case("repetition of None", "llmlab.experiments.alignment.repetition",
         lambda: ex.repetition("tang", None), T, "line", r"line must be a line of text"),
    case("line_prompts n 0", "llmlab.experiments.alignment.line_prompts",
         lambda: ex.line_prompts("tang", 0), V, "n", r"n must be an int >= 1, got 0"),
    case("line_prompts more than there are", "llmlab.experiments.alignment.line_prompts",
         lambda: ex.line_prompts("tang", 10**6, held_out=True), V, "n",
         r"n \(1000000\) is more than the \d+ prompt lines there are"),
    case("sample_lines without a tokenizer", "llmlab.experiments.alignment.sample_lines",
         lambda: ex.sample_lines(_llama_lm(), None, ["a"], 2), T, "tokenizer",
         r"tokenizer must be a BPE Tokenizer, got NoneType"),
    case("sample_lines no prompts", "llmlab.experiments.alignment.sample_lines",
         lambda: ex.sample_lines(_llama_lm(), _tang_tokenizer(), [], 2), V, "prompts",
         r"prompts is empty; expected at least one prompt"),
    case("sample_lines one string of prompts", "llmlab.experiments.alignment.sample_lines",
         lambda: ex.sample_lines(_llama_lm(), _tang_tokenizer(), "ab", 2), T, "prompts",
         r"prompts must be a list of str, got str"),
    case("sample_lines an empty prompt", "llmlab.experiments.alignment.sample_lines",
         lambda: ex.sample_lines(_llama_lm(), _tang_tokenizer(), ["a", ""], 2), V,
         "prompts[1]", r"prompts\[1\] must be a non-empty"),
    case("sample_lines samples 0", "llmlab.experiments.alignment.sample_lines",
         lambda: ex.sample_lines(_llama_lm(), _tang_tokenizer(), ["a"], 0), V, "samples",
         r"samples must be an int >= 1, got 0"),
    case("line_prompts held_out a string", "llmlab.experiments.alignment.line_prompts",
         lambda: ex.line_prompts("tang", 2, held_out="yes"), T, "held_out",
         r"held_out must be True or False"),
    case("run_preference_pairs one sample", "llmlab.experiments.alignment.run_preference_pairs",
         lambda: ex.run_preference_pairs("tang", samples=1), V, "samples",
         r"samples must be an int >= 2, got 1"),
    case("run_alignment method ppo", "llmlab.experiments.alignment.run_alignment",
         lambda: ex.run_alignment("tang", method="ppo"), V, "method",
         r"method must be one of"),
    case("run_alignment one sample", "llmlab.experiments.alignment.run_alignment",
         lambda: ex.run_alignment("tang", samples=1), V, "samples",
         r"samples must be an int >= 2, got 1"),
    case("run_alignment beta negative", "llmlab.experiments.alignment.run_alignment",
         lambda: ex.run_alignment("tang", beta=-1.0), V, "beta",
         r"beta must be a finite number in \(0, inf\), got -1"),
    case("run_alignment_comparison seed -1",
         "llmlab.experiments.alignment.run_alignment_comparison",
         lambda: ex.run_alignment_comparison("tang", seed=-1), V, "seed",
         r"seed must be an int >= 0, got -1"),
    case("run_alignment_comparison no betas",
         "llmlab.experiments.alignment.run_alignment_comparison",
         lambda: ex.run_alignment_comparison("tang", betas=()), V, "betas",
         r"betas is empty; expected at least one β"),
    case("run_alignment_comparison beta NaN",
         "llmlab.experiments.alignment.run_alignment_comparison",
         lambda: ex.run_alignment_comparison("tang", betas=(0.1, NAN)), V, "betas[1]",
         r"betas\[1\] must be a finite number in \(0, inf\), got nan"),
    # --- llmlab.report.alignment ---------------------------------------------------
    case("run_name of a string", "llmlab.report.alignment.run_name",
         lambda: rep.run_name("dpo"), T, "run", r"run must be an? AlignmentRun, got str"),
    case("pairs_table of a list", "llmlab.report.alignment.pairs_table",
         lambda: rep.pairs_table([]), T, "pairs", r"pairs must be an? PreferencePairs, got list"),
    case("lines_table without pairs", "llmlab.report.alignment.lines_table",
         lambda: rep.lines_table(pairs=None), T, "pairs",
         r"pairs must be an? PreferencePairs, got NoneType"),
    case("PreferenceData rewards on another device", "llmlab.alignment.PreferenceData",
         lambda: PreferenceData([([1], [2], [3])], _x(1, 2), 0.1, pad_id=0).rewards(
             torch.zeros(1, 2, device="meta")), V, "policy_logps",
         r"policy_logps is on meta; expected it on cpu"),
    case("rewards_table of the pairs", "llmlab.report.alignment.rewards_table",
         lambda: rep.rewards_table([]), T, "runs[0]",
         r"runs\[0\] must be an? AlignmentRun, got list"),
    case("agreement_table of nothing", "llmlab.report.alignment.agreement_table",
         lambda: rep.agreement_table(), V, "runs", r"runs is empty"),
    case("agreement_table of a comparison", "llmlab.report.alignment.agreement_table",
         lambda: rep.agreement_table("tang"), T, "runs[0]",
         r"runs\[0\] must be an? AlignmentRun, got str"),
    case("samples_table without pairs", "llmlab.report.alignment.samples_table",
         lambda: rep.samples_table(pairs=None), T, "pairs",
         r"pairs must be an? PreferencePairs, got NoneType"),
    case("steps_table without pairs", "llmlab.report.alignment.steps_table",
         lambda: rep.steps_table(pairs=None), T, "pairs",
         r"pairs must be an? PreferencePairs, got NoneType"),
    case("steps_table of Shakespeare's pairs", "llmlab.report.alignment.steps_table",
         lambda: rep.steps_table(pairs=_pairs_of("shakespeare")), V, "pairs",
         r"pairs must be the Tang model's .*got corpus 'shakespeare'"),
    case("steps_table first_half 0", "llmlab.report.alignment.steps_table",
         lambda: rep.steps_table(pairs=_pairs_of("tang"), first_half=0), V, "first_half",
         r"first_half must be an int >= 1, got 0"),
    case("halves_figure of a run", "llmlab.report.alignment.halves_figure",
         lambda: rep.halves_figure(None), T, "comparison",
         r"comparison must be an? AlignmentComparison, got NoneType"),
    case("loss_figure of a run", "llmlab.report.alignment.loss_figure",
         lambda: rep.loss_figure(None), T, "comparison",
         r"comparison must be an? AlignmentComparison, got NoneType"),
]

# Good-input controls: the same calls done right, which must go through.
GOOD: list[tuple[str, Callable[[], object]]] = [
    ("sequence_logprobs of the last token only",
     lambda: _logps(_llama_lm(), _mask((3, 4), (1, 2)))),
    ("dpo_loss of a tiny beta", lambda: _dpo(1e-9)),
    ("dpo_loss of an int beta", lambda: _dpo(1)),
    ("dpo_loss of one pair", lambda: _dpo(pc=_x(1), pr=_x(1), rc=_x(1), rr=_x(1))),
    ("implicit_reward_accuracy of one pair",
     lambda: implicit_reward_accuracy(_x(1), _x(1)) == 0.0),
    ("PreferenceData of one pair", lambda: _pairs()),
    ("PreferenceData of reference log-probs", lambda: _pairs(reference=torch.zeros(1, 2))),
    ("prefers an unfinished line", lambda: ex.prefers("tang", None) is False),
    ("repetition of an empty line", lambda: ex.repetition("shakespeare", "") == 0.0),
    ("run_name of the base model", lambda: rep.run_name(None)),
    ("steps_table of the base model alone", lambda: rep.steps_table(pairs=_pairs_of("tang"))),
]
