"""llmlab.flops: FLOPs counted by PyTorch against the formulas."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from llmlab.flops import count_flops, count_llama_flops, flops_per_token
from llmlab.memory import checkpointed_layers
from llmlab.models.llama import CS336_TINYSTORIES, LLAMA_TOY

torch.set_num_threads(1)

from small_llama import SMALL, small_model as _model  # noqa: E402


def test_counted_flops_equal_six_n_plus_the_attention_term_exactly():
    # the formula with N = matmul weights and 12·L·d·T is exact for our model: the
    # counter sees only matrix products, and ours computes the whole T×T square
    model = _model()
    count = count_flops(model, 2, SMALL.context_length)
    n = SMALL.matmul_parameter_count()
    expected = flops_per_token(n, SMALL.num_layers, SMALL.d_model, SMALL.context_length)
    assert count.per_token == expected
    assert count.backward == 2 * count.forward  # grad of input and of weight
    assert sum(count.by_module.values()) == count.total
    assert set(count.by_module) == {"layers", "lm_head"}  # the lookup costs nothing
    assert all(p.grad is None for p in model.parameters())  # cleared afterwards


def test_six_n_of_all_parameters_is_off_for_a_small_vocabulary_heavy_model():
    count = count_llama_flops(CS336_TINYSTORIES, 1)
    naive = flops_per_token(CS336_TINYSTORIES.parameter_count())
    assert naive > 1.1 * count.per_token  # the embedding table costs no FLOPs


def test_meta_counts_equal_cpu_counts_and_extrapolation_is_exact():
    cpu = count_flops(_model(LLAMA_TOY), 1, 64)
    meta = count_llama_flops(LLAMA_TOY, 1, 64)
    assert (cpu.forward, cpu.backward) == (meta.forward, meta.backward)
    config = dataclasses.replace(SMALL, num_layers=4)
    full = count_llama_flops(config, 2, 16)
    two = count_llama_flops(config, 2, 16, layers_counted=2)
    assert (full.forward, full.backward, full.by_module) == (two.forward, two.backward,
                                                             two.by_module)


def test_attention_share_grows_with_the_context():
    shares = []
    for t in (64, 1024):
        count = count_llama_flops(SMALL, 1, t, layers_counted=2)
        six_n = flops_per_token(SMALL.matmul_parameter_count())
        shares.append(1 - six_n / count.per_token)
    assert 0 < shares[0] < shares[1]


def test_checkpointing_recomputes_and_restores_the_model():
    model = _model()
    keys = list(model.state_dict())
    plain = count_flops(model, 2, 16)
    with checkpointed_layers(model):
        again = count_flops(model, 2, 16)
    assert list(model.state_dict()) == keys
    assert all(type(layer).__name__ == "TransformerBlock" for layer in model.layers)
    # one more forward pass of the blocks at most (it stops at the last tensor needed)
    layers_forward = plain.by_module["layers"] // 3
    assert plain.total < again.total <= plain.total + layers_forward
    assert again.forward == plain.forward


@pytest.mark.parametrize("call, error, name", [
    (lambda: count_flops(nn.Linear(2, 2, bias=False), 0, 4), ValueError, "batch_size"),
    (lambda: count_flops(nn.Linear(2, 2, bias=False), 1, 0), ValueError,
     "context_length"),
    (lambda: count_flops(nn.Sequential(), 1, 4), ValueError, "no parameters"),
    (lambda: count_flops("model", 1, 4), TypeError, "model"),
    (lambda: count_llama_flops(SMALL, 1, 8, layers_counted=3), ValueError,
     "layers_counted"),
    (lambda: count_llama_flops(SMALL, 1, 8, layers_counted=2.0), TypeError,
     "layers_counted must be an int, got float"),
    (lambda: count_llama_flops({"d_model": 4}, 1), TypeError, "config"),
    (lambda: flops_per_token(-1), ValueError, "n_parameters"),
])
def test_bad_inputs_name_their_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()
