"""llmlab.memory: bytes measured on real tensors against the formulas; ZeRO."""

from __future__ import annotations

import weakref

import pytest
import torch
from torch import nn

from llmlab.memory import (
    activation_elements,
    activation_peak_elements,
    checkpointed_layers,
    classify_saved,
    gradient_bytes,
    optimizer_state_bytes,
    parameter_bytes,
    record_saved_tensors,
    recomputed_block_elements,
    tensor_bytes,
    training_state_bytes,
    zero_bytes_per_device,
)
from llmlab.models import gpt2
from llmlab.models.llama import LLAMA2_7B, LlamaConfig
from llmlab.training import AdamW, cross_entropy

torch.set_num_threads(1)

from small_llama import SMALL, small_model as _model  # noqa: E402


def test_checkpointing_gives_the_same_gradients():
    x = torch.randint(0, SMALL.vocab_size, (2, 17))
    grads = []
    for checkpoint in (False, True):
        model = _model()
        if checkpoint:
            with checkpointed_layers(model):
                cross_entropy(model(x[:, :-1]), x[:, 1:]).backward()
        else:
            cross_entropy(model(x[:, :-1]), x[:, 1:]).backward()
        grads.append([p.grad for p in model.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)


def test_state_bytes_equal_the_formula_for_our_adamw():
    model = _model()
    optimizer = AdamW(model.parameters())
    x = torch.randint(0, SMALL.vocab_size, (2, 17))
    cross_entropy(model(x[:, :-1]), x[:, 1:]).backward()
    optimizer.step()
    measured = {"parameters": parameter_bytes(model),
                "gradients": gradient_bytes(model),
                "optimizer_state": optimizer_state_bytes(optimizer)}
    assert measured == training_state_bytes(SMALL.parameter_count(), "fp32")
    assert sum(measured.values()) == 16 * SMALL.parameter_count()


def test_torch_adamw_keeps_a_step_tensor_per_parameter():
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters())
    x = torch.randint(0, SMALL.vocab_size, (2, 17))
    cross_entropy(model(x[:, :-1]), x[:, 1:]).backward()
    optimizer.step()
    n_tensors = len(list(model.parameters()))
    expected = 8 * SMALL.parameter_count() + 4 * n_tensors
    assert optimizer_state_bytes(optimizer) == expected


def test_tied_weights_count_once():
    torch.manual_seed(0)
    config = gpt2.GPT2Config(vocab_size=50, context_length=8, d_model=16, n_layers=1,
                             n_heads=2)
    model = gpt2.TransformerLM.from_config(config)
    assert parameter_bytes(model) == 4 * config.parameter_count()
    w = torch.zeros(3, 4)
    assert tensor_bytes([w, w]) == 48


def test_mixed_precision_state_is_sixteen_bytes_per_parameter_too():
    mixed = training_state_bytes(1000, "mixed")
    assert mixed == {"parameters": 2000, "gradients": 2000, "optimizer_state": 12000}
    assert sum(mixed.values()) == sum(training_state_bytes(1000).values())


def test_saved_tensors_are_recorded_once_per_storage():
    x = torch.randn(4, 8, requires_grad=True)
    with record_saved_tensors() as saved:
        y = x.exp()  # saves its result
        z = (y * y).sum()  # saves y twice: one storage
    z.backward()
    assert [(s.shape, s.nbytes, s.kind) for s in saved] == [((4, 8), 128, "activation")]


def test_a_save_the_graph_lets_go_at_once_is_not_counted():
    leaf = torch.randn(4, 8, requires_grad=True)
    with record_saved_tensors() as saved:
        h = leaf * 2  # a product with a number saves no tensor
        m = h.amax(-1, keepdim=True).detach()  # amax saves h; its node goes with it
        y = (h - m).exp()  # saves its result
    h_alive = weakref.ref(h)
    del h, m
    assert h_alive() is None  # nothing holds h: the save was let go
    assert [(s.shape, s.nbytes) for s in saved] == [((4, 8), 128)]  # y only
    y.sum().backward()  # what backward needs was kept
    torch.testing.assert_close(leaf.grad, 2 * y.detach())


def test_parameters_and_autocast_copies_are_told_apart():
    model = _model()
    x = torch.randint(0, SMALL.vocab_size, (2, 17))
    with record_saved_tensors(model) as saved:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = cross_entropy(model(x[:, :-1]), x[:, 1:])
    loss.backward()
    copies = sum(s.nbytes for s in saved if s.kind == "parameter copy")
    assert copies == 2 * SMALL.matmul_parameter_count()  # each weight once, in bf16
    with record_saved_tensors(model) as saved:
        loss = cross_entropy(model(x[:, :-1]), x[:, 1:])
    loss.backward()
    assert {s.kind for s in saved} == {"activation", "parameter"}


def test_measured_activations_against_the_estimate():
    b, t = 4, SMALL.context_length
    sizes = {"B·T·d": b * t * 64, "B·T·d_ff": b * t * 176, "B·h·T·T": b * 4 * t * t,
             "B·T·V": b * t * 256}
    x = torch.randint(0, SMALL.vocab_size, (b, t + 1))
    measured = {}
    for checkpoint in (False, True):
        model = _model()
        with record_saved_tensors(model) as saved:
            if checkpoint:
                with checkpointed_layers(model):
                    loss = cross_entropy(model(x[:, :-1]), x[:, 1:])
            else:
                loss = cross_entropy(model(x[:, :-1]), x[:, 1:])
        loss.backward()
        by_family = classify_saved(saved, sizes)
        estimate = activation_elements(SMALL, b, t, checkpointing=checkpoint)
        # our teaching code keeps at least what backward must have, per family
        for family, elements in estimate.items():
            assert by_family[family] >= 4 * elements
        measured[checkpoint] = by_family
    assert measured[True]["B·T·d_ff"] == measured[True]["B·h·T·T"] == 0
    assert sum(measured[True].values()) < sum(measured[False].values()) / 3


def test_checkpointed_peak_is_every_input_plus_one_recomputed_block():
    c, t = LLAMA2_7B, 4096
    btd, btf, scores = t * c.d_model, t * c.d_ff, c.num_heads * t * t
    block = recomputed_block_elements(c, 1, t)  # 8 BTd less the saved input
    assert block == {"B·T·d": 7 * btd, "B·T·d_ff": 4 * btf, "B·h·T·T": scores, "B·T·V": 0}
    # saved: each block's input, the 2 inputs after the blocks, the logits' softmax
    saved = (c.num_layers + 2) * btd + t * c.vocab_size
    assert sum(activation_elements(c, 1, t, checkpointing=True).values()) == saved
    peak = activation_peak_elements(c, 1, t, checkpointing=True)
    assert peak == c.num_layers * btd + 7 * btd + 4 * btf + scores  # the backward pass
    assert sum(block.values()) > saved and peak > saved
    # in bf16 bytes, as the lecture's table shows them: 1.31, 1.55 and 2.55 GiB
    assert (2 * saved, 2 * sum(block.values()), 2 * peak) == (
        1_402_994_688, 1_669_332_992, 2_743_074_816)
    # without checkpointing, the end of the forward pass holds everything
    assert activation_peak_elements(c, 1, t) == sum(activation_elements(c, 1, t).values())
    # a model whose logits outweigh its blocks peaks when the forward pass ends
    wide = LlamaConfig(vocab_size=50_000, context_length=8, d_model=16, num_layers=2,
                       num_heads=2, d_ff=32)
    assert activation_peak_elements(wide, 1, checkpointing=True) == sum(
        activation_elements(wide, 1, checkpointing=True).values())


def test_classify_saved_refuses_ambiguous_sizes():
    with pytest.raises(ValueError, match="distinct"):
        classify_saved([], {"a": 4, "b": 4})


def test_zero_reproduces_the_papers_example():
    # Rajbhandari et al. (2020), figure 1: 7.5B parameters on 64 GPUs
    totals = [zero_bytes_per_device(7.5e9, 64, s)["total"] / 1e9 for s in range(4)]
    assert totals == pytest.approx([120, 31.4, 16.6, 1.9], abs=0.05)
    one = zero_bytes_per_device(1000, 1, 3)
    assert one == zero_bytes_per_device(1000, 1, 0)  # nothing to shard over


@pytest.mark.parametrize("call, error, name", [
    (lambda: training_state_bytes(10, "fp16"), ValueError, "precision"),
    (lambda: zero_bytes_per_device(1e9, 0, 1), ValueError, "n_devices"),
    (lambda: zero_bytes_per_device(1e9, 8, 4), ValueError, "stage"),
    (lambda: optimizer_state_bytes(nn.Linear(2, 2)), TypeError, "optimizer"),
    (lambda: checkpointed_layers(nn.Linear(2, 2)).__enter__(), ValueError, "layers"),
    (lambda: recomputed_block_elements(SMALL, 0), ValueError, "batch_size"),
    (lambda: activation_peak_elements(SMALL, 1, checkpointing=1), TypeError,
     "checkpointing"),
])
def test_bad_inputs_name_their_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()
