"""Bad inputs of "Faster inference": llmlab.inference (weight quantization and
speculative decoding), llmlab.experiments.inference and llmlab.report.inference.

Collected by tests/test_bad_inputs.py (the grouping and the rules:
tests/bad_inputs/__init__.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

import llmlab.experiments.inference as exp_inference
import llmlab.models.llama as llama
import llmlab.report.inference as report_inference
from llmlab.inference import (
    QuantizedLinear,
    dequantize,
    quantize_tensor,
    quantize_weights,
    speculative_generate,
)
from llmlab.layers import Linear
from llmlab.norm import RMSNorm

from bad_inputs import NAN, T, V, Case, _gpt2_lm, _ids, _llama_lm, _x, case


EXP, REP = "llmlab.experiments.inference", "llmlab.report.inference"


def _other_vocab() -> llama.TransformerLM:
    return llama.TransformerLM(vocab_size=12, context_length=4, d_model=8,
                               num_layers=1, num_heads=2, d_ff=16)


def _spec(**changes: object) -> object:
    """speculative_generate on two small models, with one argument changed."""
    args = dict(target=_llama_lm(), draft=_llama_lm(), prompt_ids=[1, 2],
                max_new_tokens=3, k=2)
    args.update(changes)
    return speculative_generate(**args)


def _tied_only() -> nn.Module:
    """A module whose one linear layer shares its weight with an embedding."""
    model = nn.Module()
    model.emb = nn.Embedding(10, 8)
    model.head = nn.Linear(8, 10, bias=False)
    model.head.weight = model.emb.weight
    return model


CASES: list[Case] = [
    # --- quantize_tensor / dequantize --------------------------------------------------
    case("quantize_tensor 3 bits", "llmlab.inference.quantize_tensor",
         lambda: quantize_tensor(_x(4, 8), 3), V, "bits",
         r"bits must be one of 4, 8, got 3"),
    case("quantize_tensor bits as a float", "llmlab.inference.quantize_tensor",
         lambda: quantize_tensor(_x(4, 8), 8.0), T, "bits",
         r"bits must be an int, got float"),
    case("quantize_tensor group of 0", "llmlab.inference.quantize_tensor",
         lambda: quantize_tensor(_x(4, 8), 8, 0), V, "group_size",
         r"group_size must be an int >= 1, got 0"),
    case("quantize_tensor group not dividing", "llmlab.inference.quantize_tensor",
         lambda: quantize_tensor(_x(4, 8), 8, 3), V, "group_size",
         r"in_features of weight \(8\) must be divisible by group_size \(3\)"),
    case("quantize_tensor of a vector", "llmlab.inference.quantize_tensor",
         lambda: quantize_tensor(_x(8), 8), V, "weight",
         r"weight must have shape \(out_features, in_features\)"),
    case("quantize_tensor of integers", "llmlab.inference.quantize_tensor",
         lambda: quantize_tensor(_ids(4, 8), 8), V, "weight", r"weight must .*float"),
    case("dequantize float codes", "llmlab.inference.dequantize",
         lambda: dequantize(_x(4, 8), _x(4, 1)), V, "codes", r"codes must .*int"),
    case("dequantize scales of another group", "llmlab.inference.dequantize",
         lambda: dequantize(_ids(4, 8), _x(4, 2)), V, "scales",
         r"scales must have shape \(out_features, groups=1\)"),
    case("dequantize group not dividing", "llmlab.inference.dequantize",
         lambda: dequantize(_ids(4, 8), _x(4, 2), 3), V, "group_size",
         r"in_features of codes \(8\) must be divisible by group_size \(3\)"),
    # --- QuantizedLinear / quantize_weights ------------------------------------------------
    case("QuantizedLinear of a norm", "llmlab.inference.QuantizedLinear",
         lambda: QuantizedLinear(RMSNorm(4), 8), T, "base",
         r"base must be a llmlab\.layers\.Linear or torch\.nn\.Linear, got RMSNorm"),
    case("QuantizedLinear 16 bits", "llmlab.inference.QuantizedLinear",
         lambda: QuantizedLinear(Linear(4, 4), 16), V, "bits",
         r"bits must be one of 4, 8, got 16"),
    case("QuantizedLinear group not dividing", "llmlab.inference.QuantizedLinear",
         lambda: QuantizedLinear(Linear(6, 4), 4, 4), V, "group_size",
         r"in_features of base \(6\) must be divisible by group_size \(4\)"),
    case("QuantizedLinear input of the wrong width", "llmlab.inference.QuantizedLinear",
         lambda: QuantizedLinear(Linear(4, 4), 8)(_x(2, 3)), V, "x",
         r"x must have shape \(\.\.\., in_features=4\).*in_features is 3"),
    case("quantize_weights of a state dict", "llmlab.inference.quantize_weights",
         lambda: quantize_weights(_llama_lm().state_dict(), 8), T, "model",
         r"model must be a torch\.nn\.Module, got OrderedDict"),
    case("quantize_weights without linear layers", "llmlab.inference.quantize_weights",
         lambda: quantize_weights(RMSNorm(4), 8), V, "model",
         r"model \(RMSNorm\) has no linear layer to quantize .*; it has none"),
    case("quantize_weights twice", "llmlab.inference.quantize_weights",
         lambda: quantize_weights(quantize_weights(m := _llama_lm(), 8) and m, 8), V,
         "model", r"model \(TransformerLM\) has no linear layer to quantize"),
    case("quantize_weights only tied layers", "llmlab.inference.quantize_weights",
         lambda: quantize_weights(_tied_only(), 8), V, "model",
         r"model \(Module\) has no linear layer to quantize .*its linear layers head "
         r"are tied"),
    case("quantize_weights 2 bits", "llmlab.inference.quantize_weights",
         lambda: quantize_weights(_llama_lm(), 2), V, "bits",
         r"bits must be one of 4, 8, got 2"),
    case("quantize_weights group of -4", "llmlab.inference.quantize_weights",
         lambda: quantize_weights(_llama_lm(), 4, -4), V, "group_size",
         r"group_size must be an int >= 1, got -4"),
    case("quantize_weights group not dividing a layer", "llmlab.inference.quantize_weights",
         lambda: quantize_weights(_llama_lm(), 4, 16), V, "group_size",
         r"in_features of layers\.0\.attn\.q_proj \(8\) must be divisible by "
         r"group_size \(16\)"),
    # --- speculative_generate --------------------------------------------------------------
    case("speculative k 0", "llmlab.inference.speculative_generate",
         lambda: _spec(k=0), V, "k", r"k must be an int >= 1, got 0"),
    case("speculative no new tokens", "llmlab.inference.speculative_generate",
         lambda: _spec(max_new_tokens=0), V, "max_new_tokens",
         r"max_new_tokens must be an int >= 1, got 0"),
    case("speculative negative temperature", "llmlab.inference.speculative_generate",
         lambda: _spec(temperature=-0.5), V, "temperature",
         r"temperature must be a finite number in \[0, inf\), got -0\.5"),
    case("speculative NaN temperature", "llmlab.inference.speculative_generate",
         lambda: _spec(temperature=NAN), V, "temperature",
         r"temperature must be a finite number in \[0, inf\), got nan"),
    case("speculative draft of another vocabulary", "llmlab.inference.speculative_generate",
         lambda: _spec(draft=_other_vocab()), V, "draft",
         r"draft has vocab_size 12 but target has 10"),
    case("speculative draft not a model", "llmlab.inference.speculative_generate",
         lambda: _spec(draft=nn.Linear(4, 4)), T, "draft",
         r"draft must be a language model with vocab_size and context_length .*"
         r"Linear lacks vocab_size, context_length"),
    case("speculative target a state dict", "llmlab.inference.speculative_generate",
         lambda: _spec(target=_llama_lm().state_dict()), T, "target",
         r"target must be a torch\.nn\.Module, got OrderedDict"),
    case("speculative empty prompt", "llmlab.inference.speculative_generate",
         lambda: _spec(prompt_ids=[]), V, "prompt_ids",
         r"prompt_ids must hold at least one value, got \[\]"),
    case("speculative prompt out of the vocabulary", "llmlab.inference.speculative_generate",
         lambda: _spec(prompt_ids=[1, 10]), V, "prompt_ids[1]",
         r"prompt_ids\[1\] must be an int in \[0, 9\], got 10"),
    case("speculative prompt a tensor", "llmlab.inference.speculative_generate",
         lambda: _spec(prompt_ids=torch.tensor([1, 2])), T, "prompt_ids",
         r"prompt_ids must be a tuple of ints, got Tensor"),
    case("speculative seed for a generator", "llmlab.inference.speculative_generate",
         lambda: _spec(temperature=1.0, generator=0), T, "generator",
         r"generator must be a torch\.Generator, got int"),
    # --- llmlab.experiments.inference --------------------------------------------------
    case("held_out_text of another corpus", f"{EXP}.held_out_text",
         lambda: exp_inference.held_out_text("wikipedia"), V, "corpus",
         r"corpus must be one of"),
    case("held_out_text of 10 characters", f"{EXP}.held_out_text",
         lambda: exp_inference.held_out_text("tang", 10), V, "chars",
         r"chars must be an int >= 100, got 10"),
    case("expected_tokens_per_pass of alpha 1.5", f"{EXP}.expected_tokens_per_pass",
         lambda: exp_inference.expected_tokens_per_pass(1.5, 4), V, "alpha",
         r"alpha must be a finite number in \[0(\.0)?, 1(\.0)?\], got 1\.5"),
    case("expected_tokens_per_pass of k 0", f"{EXP}.expected_tokens_per_pass",
         lambda: exp_inference.expected_tokens_per_pass(0.5, 0), V, "k",
         r"k must be an int >= 1, got 0"),
    case("run_quantization of another corpus", f"{EXP}.run_quantization",
         lambda: exp_inference.run_quantization("wikipedia"), V, "corpus",
         r"corpus must be one of"),
    case("run_speculative of no k", f"{EXP}.run_speculative",
         lambda: exp_inference.run_speculative("tang", ks=()), V, "ks",
         r"ks must hold at least one value"),
    case("run_sampling_check of 0 draws", f"{EXP}.run_sampling_check",
         lambda: exp_inference.run_sampling_check(0), V, "draws",
         r"draws must be an int >= 1, got 0"),
    case("run_gqa_comparison of 3 kv heads", f"{EXP}.run_gqa_comparison",
         lambda: exp_inference.run_gqa_comparison(kv_heads=(4, 3)), V, "kv_heads",
         r"kv_heads must divide the 4 query heads, got 3 in \(4, 3\)"),
    # --- llmlab.report.inference ---------------------------------------------------
    *[case(f"{name} of a dict", f"{REP}.{name}", lambda name=name: getattr(
        report_inference, name)({}), T, arg, r"must be a")
      for name, arg in (("costs_table", "costs"), ("quantization_table", "results"),
                        ("layers_table", "result"), ("row_scales_figure", "result"),
                        ("speculative_table", "results"),
                        ("speculative_figure", "results"), ("sampling_table", "check"),
                        ("gqa_memory_table", "result"), ("gqa_quality_table", "result"),
                        ("setting_name", "row"))],
]

EXEMPT: dict[str, str] = {
    f"{EXP}.run_inference_costs": "takes no arguments",
}

# Good-input controls: the same calls done right, which must go through.
GOOD: list[tuple[str, Callable[[], object]]] = [
    ("quantize_tensor 4 bits in groups", lambda: quantize_tensor(_x(4, 8), 4, 8)),
    ("dequantize per row", lambda: dequantize(*quantize_tensor(_x(4, 8), 8))),
    ("QuantizedLinear of an nn.Linear with bias",
     lambda: QuantizedLinear(nn.Linear(6, 4), 8, 3)(_x(2, 6))),
    ("quantize_weights of GPT-2 skips its tied output layer",
     lambda: quantize_weights(_gpt2_lm(), 8).skipped == ("lm_head",)),
    ("speculative sampling at temperature 0.5",
     lambda: len(_spec(temperature=0.5, generator=torch.Generator())[0]) == 3),
    ("speculative prompt at the context length",
     lambda: len(_spec(prompt_ids=[1, 2, 3, 4], k=5)[0]) == 3),
]
