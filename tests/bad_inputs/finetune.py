"""Bad inputs of "Fine-tuning": llmlab.finetune (LoRA, supervised examples, and
``SupervisedData``, which lives in llmlab.training.data for the training loop),
llmlab.experiments.finetune and llmlab.report.finetune.

Collected by tests/test_bad_inputs.py (the grouping and the rules:
tests/bad_inputs/__init__.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

import llmlab.experiments.finetune as exp_finetune
import llmlab.models.gpt2 as gpt2
import llmlab.report.finetune as report_finetune
from llmlab.finetune import (
    END_OF_TEXT,
    LoRALinear,
    SupervisedData,
    add_lora,
    end_of_text_id,
    exact_match,
    merge_lora,
    supervised_data,
    supervised_example,
)
from llmlab.layers import Linear
from llmlab.norm import RMSNorm
from llmlab.tokenization import ByteTokenizer, Tokenizer, vocab_from_merges

from bad_inputs import NAN, T, V, Case, _llama_lm, _x, case


def _tok(special: bool = True) -> Tokenizer:
    """Bytes, no merges, with (or without) the end-of-text token at id 256."""
    return Tokenizer(vocab_from_merges([]), [], [END_OF_TEXT] if special else None)


def _adapted():
    model = _llama_lm()
    add_lora(model, 2, 4.0)
    return model


def _data() -> SupervisedData:
    return SupervisedData([([1, 2, 3], [-100, 3, 4])], pad_id=0)


def _tied_gpt2() -> gpt2.TransformerLM:
    return gpt2.TransformerLM(vocab_size=10, context_length=4, d_model=8, n_layers=1,
                              n_heads=2)


CASES: list[Case] = [
    # --- LoRALinear ------------------------------------------------------------------
    case("LoRALinear of a norm", "llmlab.finetune.LoRALinear",
         lambda: LoRALinear(RMSNorm(4), 2, 1.0), T, "base",
         r"base must be a llmlab\.layers\.Linear or torch\.nn\.Linear, got RMSNorm"),
    case("LoRALinear rank 0", "llmlab.finetune.LoRALinear",
         lambda: LoRALinear(Linear(4, 4), 0, 1.0), V, "rank",
         r"rank must be an int >= 1, got 0"),
    case("LoRALinear float rank", "llmlab.finetune.LoRALinear",
         lambda: LoRALinear(Linear(4, 4), 2.0, 1.0), T, "rank",
         r"rank must be an int, got float"),
    case("LoRALinear rank above the layer", "llmlab.finetune.LoRALinear",
         lambda: LoRALinear(nn.Linear(8, 3), 4, 1.0), V, "rank",
         r"rank must be at most min\(in_features, out_features\) = 3 of base "
         r"\(8 -> 3\), got 4"),
    case("LoRALinear alpha NaN", "llmlab.finetune.LoRALinear",
         lambda: LoRALinear(Linear(4, 4), 2, NAN), V, "alpha",
         r"alpha must be a finite number in \(0, inf\), got nan"),
    case("LoRALinear alpha 0", "llmlab.finetune.LoRALinear",
         lambda: LoRALinear(Linear(4, 4), 2, 0), V, "alpha",
         r"alpha must be a finite number in \(0, inf\), got 0"),
    case("LoRALinear input of the wrong width", "llmlab.finetune.LoRALinear",
         lambda: LoRALinear(Linear(4, 4), 2, 1.0)(_x(2, 3)), V, "x",
         r"x must have shape \(\.\.\., in_features=4\).*in_features is 3"),
    # --- add_lora / merge_lora -------------------------------------------------------
    case("add_lora of None", "llmlab.finetune.add_lora",
         lambda: add_lora(None, 2, 1.0), T, "model",
         r"model must be a torch\.nn\.Module, got NoneType"),
    case("add_lora unknown target", "llmlab.finetune.add_lora",
         lambda: add_lora(_llama_lm(), 2, 1.0, targets=("q_proj", "W_query")), V,
         "targets", r"targets names 'W_query', but model has no layer of that name; "
         r"its linear layers are 'k_proj', 'lm_head', .*'w3'"),
    case("add_lora target not linear", "llmlab.finetune.add_lora",
         lambda: add_lora(_llama_lm(), 2, 1.0, targets=("ln1",)), V, "targets",
         r"targets names 'ln1', which is a RMSNorm, not a linear layer"),
    case("add_lora one str target", "llmlab.finetune.add_lora",
         lambda: add_lora(_llama_lm(), 2, 1.0, targets="q_proj"), T, "targets",
         r"targets must be a list of str, got str"),
    case("add_lora no targets", "llmlab.finetune.add_lora",
         lambda: add_lora(_llama_lm(), 2, 1.0, targets=()), V, "targets",
         r"targets must name at least one layer, got \(\)"),
    case("add_lora tied output layer", "llmlab.finetune.add_lora",
         lambda: add_lora(_tied_gpt2(), 2, 1.0, targets=("lm_head",)), V, "targets",
         r"targets names 'lm_head', but lm_head\.weight is shared with another module"),
    case("add_lora rank -1", "llmlab.finetune.add_lora",
         lambda: add_lora(_llama_lm(), -1, 1.0), V, "rank",
         r"rank must be an int >= 1, got -1"),
    case("add_lora rank above a layer", "llmlab.finetune.add_lora",
         lambda: add_lora(_llama_lm(), 9, 1.0), V, "rank",
         r"rank must be at most min\(in_features, out_features\) = 8 of "
         r"layers\.0\.attn\.q_proj \(8 -> 8\), got 9"),
    case("add_lora alpha inf", "llmlab.finetune.add_lora",
         lambda: add_lora(_llama_lm(), 2, float("inf")), V, "alpha",
         r"alpha must be a finite number in \(0, inf\), got inf"),
    case("add_lora alpha a str", "llmlab.finetune.add_lora",
         lambda: add_lora(_llama_lm(), 2, "16"), T, "alpha",
         r"alpha must be a number, got str"),
    case("add_lora twice", "llmlab.finetune.add_lora",
         lambda: add_lora(_adapted(), 2, 1.0, targets=("k_proj",)), V, "model",
         r"model already has LoRA adapters"),
    case("merge_lora without adapters", "llmlab.finetune.merge_lora",
         lambda: merge_lora(_llama_lm()), V, "model",
         r"model \(TransformerLM\) has no LoRA adapters to merge"),
    case("merge_lora twice", "llmlab.finetune.merge_lora",
         lambda: merge_lora(merge_lora(_adapted())), V, "model",
         r"model \(TransformerLM\) has no LoRA adapters to merge"),
    case("merge_lora of a state dict", "llmlab.finetune.merge_lora",
         lambda: merge_lora(_adapted().state_dict()), T, "model",
         r"model must be a torch\.nn\.Module, got OrderedDict"),
    # --- supervised examples -----------------------------------------------------------
    case("end_of_text_id of bytes", "llmlab.finetune.end_of_text_id",
         lambda: end_of_text_id(ByteTokenizer()), T, "tokenizer",
         r"tokenizer must be a BPE Tokenizer, got ByteTokenizer; a response must end "
         r"with <\|endoftext\|>"),
    case("end_of_text_id without the token", "llmlab.finetune.end_of_text_id",
         lambda: end_of_text_id(_tok(special=False)), V, "tokenizer",
         r"tokenizer has no <\|endoftext\|> special token \(it has \[\]\)"),
    case("supervised_example of bytes", "llmlab.finetune.supervised_example",
         lambda: supervised_example(ByteTokenizer(), "a", "b"), T, "tokenizer",
         r"tokenizer must be a BPE Tokenizer, got ByteTokenizer"),
    case("supervised_example empty prompt", "llmlab.finetune.supervised_example",
         lambda: supervised_example(_tok(), "", "b"), V, "prompt",
         r"prompt must be a non-empty str, got ''"),
    case("supervised_example response of ids", "llmlab.finetune.supervised_example",
         lambda: supervised_example(_tok(), "a", [98]), T, "response",
         r"response must be a str, got list"),
    case("supervised_example mask 1", "llmlab.finetune.supervised_example",
         lambda: supervised_example(_tok(), "a", "b", mask_prompt=1), T, "mask_prompt",
         r"mask_prompt must be a bool, got int 1"),
    case("supervised_data of no pairs", "llmlab.finetune.supervised_data",
         lambda: supervised_data(_tok(), []), V, "pairs",
         r"pairs is empty; expected at least one \(prompt, response\) pair"),
    case("supervised_data of a dict", "llmlab.finetune.supervised_data",
         lambda: supervised_data(_tok(), {"a": "b"}), T, "pairs",
         r"pairs must be a list of \(prompt, response\) pairs, got dict"),
    case("supervised_data of a triple", "llmlab.finetune.supervised_data",
         lambda: supervised_data(_tok(), [("a", "b", "c")]), V, "pairs[0]",
         r"pairs\[0\] must be a \(prompt, response\) pair, got 3 items"),
    case("supervised_data empty response", "llmlab.finetune.supervised_data",
         lambda: supervised_data(_tok(), [("a", "b"), ("c", "")]), V, "pairs[1][1]",
         r"pairs\[1\]\[1\] must be a non-empty str"),
    case("supervised_data example too long", "llmlab.finetune.supervised_data",
         lambda: supervised_data(_tok(), [("abc", "de")], context_length=5), V,
         "context_length", r"examples\[0\] has 6 tokens, more than context_length \(5\)"),
    case("SupervisedData of nothing", "llmlab.finetune.SupervisedData",
         lambda: SupervisedData([], pad_id=0), V, "examples",
         r"examples is empty; expected at least one \(input_ids, targets\) pair"),
    case("SupervisedData negative pad", "llmlab.finetune.SupervisedData",
         lambda: SupervisedData([([1, 2], [2, 3])], pad_id=-1), V, "pad_id",
         r"pad_id must be an int >= 0, got -1"),
    case("SupervisedData lengths differ", "llmlab.finetune.SupervisedData",
         lambda: SupervisedData([([1, 2], [2])], pad_id=0), V, "examples[0]",
         r"examples\[0\] has 2 input ids but 1 targets; expected one target per input"),
    case("SupervisedData nothing to learn", "llmlab.finetune.SupervisedData",
         lambda: SupervisedData([([1, 2], [-100, -100])], pad_id=0), V, "examples[0]",
         r"examples\[0\] has no target that counts"),
    case("SupervisedData negative target", "llmlab.finetune.SupervisedData",
         lambda: SupervisedData([([1, 2], [2, -1])], pad_id=0), V, "examples[0][1]",
         r"examples\[0\]\[1\] must hold token ids >= 0 or IGNORE_INDEX \(-100\), got -1"),
    case("SupervisedData of a tensor", "llmlab.finetune.SupervisedData",
         lambda: SupervisedData([(torch.tensor([1, 2]), [2, 3])], pad_id=0), T,
         "examples[0][0]", r"examples\[0\]\[0\] must be a tuple of ints, got Tensor"),
    case("SupervisedData too long", "llmlab.finetune.SupervisedData",
         lambda: SupervisedData([([1, 2, 3], [2, 3, 4])], 0, context_length=2), V,
         "context_length", r"examples\[0\] has 3 tokens, more than context_length \(2\)"),
    case("exact_match of a tensor", "llmlab.finetune.exact_match",
         lambda: exact_match(_llama_lm(), torch.zeros(2, 3, dtype=torch.long)), T, "data",
         r"data must be a SupervisedData \(supervised_data\), got Tensor"),
    case("exact_match of a function", "llmlab.finetune.exact_match",
         lambda: exact_match(lambda x: x, _data()), T, "model",
         r"model must be a torch\.nn\.Module"),
    # --- llmlab.experiments.finetune -----------------------------------------------
    case("task_examples of another corpus", "llmlab.experiments.finetune.task_examples",
         lambda: exp_finetune.task_examples("wikipedia"), V, "corpus",
         r"corpus must be one of"),
    case("task_examples of more lines than the corpus",
         "llmlab.experiments.finetune.task_examples",
         lambda: exp_finetune.task_examples("shakespeare", n_held_out=100_000), V,
         "n_held_out", r"fewer than the 100000 asked for \(n_held_out\)"),
    case("run_finetune of another method", "llmlab.experiments.finetune.run_finetune",
         lambda: exp_finetune.run_finetune("tang", method="prefix"), V, "method",
         r"method must be one of"),
    case("run_finetune of LoRA rank 0", "llmlab.experiments.finetune.run_finetune",
         lambda: exp_finetune.run_finetune("tang", method="lora", rank=0), V, "rank",
         r"rank must be an int >= 1, got 0"),
    case("run_finetune of lr nan", "llmlab.experiments.finetune.run_finetune",
         lambda: exp_finetune.run_finetune("tang", lr=NAN), V, "lr", r"lr must be a finite"),
    case("run_finetune on device 0", "llmlab.experiments.finetune.run_finetune",
         lambda: exp_finetune.run_finetune("tang", device=0), T, "device",
         r"device must be a device name such as 'cpu' or 'cuda', got int"),
    case("run_finetune_comparison of ranks 4", "llmlab.experiments.finetune.run_finetune_comparison",
         lambda: exp_finetune.run_finetune_comparison("tang", ranks=4), T, "ranks",
         r"ranks must be a tuple of ints, got int"),
    case("score_base_model of another corpus", "llmlab.experiments.finetune.score_base_model",
         lambda: exp_finetune.score_base_model("wikipedia"), V, "corpus",
         r"corpus must be one of"),
    case("lora_at_scale of rank 0", "llmlab.experiments.finetune.lora_at_scale",
         lambda: exp_finetune.lora_at_scale(0), V, "rank", r"rank must be an int >= 1, got 0"),
    # --- llmlab.report.finetune ----------------------------------------------------
    case("comparison_table of None", "llmlab.report.finetune.comparison_table",
         lambda: report_finetune.comparison_table(None), T, "comparison",
         r"comparison must be a FinetuneComparison"),
    case("examples_table of None", "llmlab.report.finetune.examples_table",
         lambda: report_finetune.examples_table(None), T, "task",
         r"task must be a FinetuneTask"),
    case("forgetting_table of a run", "llmlab.report.finetune.forgetting_table",
         lambda: report_finetune.forgetting_table(None), T, "comparisons[0]",
         r"comparisons\[0\] must be a FinetuneComparison"),
    case("loss_figure of None", "llmlab.report.finetune.loss_figure",
         lambda: report_finetune.loss_figure(None), T, "comparison",
         r"comparison must be a FinetuneComparison"),
    case("lora_checks_table of None", "llmlab.report.finetune.lora_checks_table",
         lambda: report_finetune.lora_checks_table(None), T, "comparison",
         r"comparison must be a FinetuneComparison"),
    case("masking_table of bytes", "llmlab.report.finetune.masking_table",
         lambda: report_finetune.masking_table(ByteTokenizer(), "a", "b"), T, "tokenizer",
         r"tokenizer must be a Tokenizer"),
    case("outputs_table of None", "llmlab.report.finetune.outputs_table",
         lambda: report_finetune.outputs_table(None), T, "run", r"run must be a FinetuneRun"),
    case("run_name of None", "llmlab.report.finetune.run_name",
         lambda: report_finetune.run_name(None), T, "run", r"run must be a FinetuneRun"),
    case("scale_table of None", "llmlab.report.finetune.scale_table",
         lambda: report_finetune.scale_table(None), T, "scale", r"scale must be a LoRAAtScale"),
    case("seeds_table of nothing", "llmlab.report.finetune.seeds_table",
         lambda: report_finetune.seeds_table(), V, "runs", r"runs is empty"),
    case("seeds_table of None", "llmlab.report.finetune.seeds_table",
         lambda: report_finetune.seeds_table(None), T, "runs[0]",
         r"runs\[0\] must be a FinetuneRun"),
    case("SupervisedData batch of 0", "llmlab.finetune.SupervisedData",
         lambda: _data().batch(0), V, "batch_size", r"batch_size must be an int >= 1, got 0"),
    case("SupervisedData batch seed for a generator", "llmlab.finetune.SupervisedData",
         lambda: _data().batch(2, 0), T, "generator",
         r"generator must be a torch\.Generator, got int"),
    case("SupervisedData draw of -1", "llmlab.finetune.SupervisedData",
         lambda: _data().draw(-1), V, "batch_size", r"batch_size must be an int >= 1, got -1"),
    case("SupervisedData draw from a seed", "llmlab.finetune.SupervisedData",
         lambda: _data().draw(2, 7), T, "generator",
         r"generator must be a torch\.Generator, got int"),
]

# Good-input controls: the same calls done right, which must go through.
GOOD: list[tuple[str, Callable[[], object]]] = [
    ("LoRALinear of the largest rank", lambda: LoRALinear(nn.Linear(8, 3), 3, 1.0)),
    ("add_lora then merge_lora", lambda: merge_lora(_adapted())),
    ("add_lora of every linear layer",
     lambda: add_lora(_llama_lm(), 8, 1, targets=("q_proj", "k_proj", "v_proj",
                                                  "output_proj", "w1", "w2", "w3"))),
    ("add_lora of an untied GPT-2 layer",
     lambda: add_lora(_tied_gpt2(), 2, 1.0, targets=("qkv",))),
    ("supervised_example unmasked",
     lambda: supervised_example(_tok(), "a", "b", mask_prompt=False) == (
         [97, 98, 256], [98, 256, -100])),
    ("supervised_data of the longest allowed",
     lambda: supervised_data(_tok(), [("abc", "de")], context_length=6)),
    ("SupervisedData batch", lambda: _data().batch(2, torch.Generator(), "cpu")),
]
