"""llmlab.inference: weight quantization and speculative decoding.

Quantization against its definition (every weight within half a step of its group,
a zero row back to zeros, the byte counts of the formula) and on a model (logits
close to the float model's, 4 bits further than 8); speculative decoding against
``generate``'s greedy text, token for token, and its sampling rule against the
target's distribution.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import llmlab.models.gpt2 as gpt2
from llmlab.generation import generate
from llmlab.inference import (
    QuantizedLinear,
    SpeculativeStats,
    dequantize,
    quantize_tensor,
    quantize_weights,
    speculative_generate,
)
from llmlab.layers import Linear
from llmlab.models.llama import TransformerLM

torch.set_num_threads(1)


def _lm(seed: int, d_model: int = 32, num_layers: int = 2, vocab_size: int = 50,
        context_length: int = 24) -> TransformerLM:
    torch.manual_seed(seed)
    return TransformerLM(vocab_size=vocab_size, context_length=context_length,
                         d_model=d_model, num_layers=num_layers, num_heads=2,
                         d_ff=2 * d_model)


def _ids(seed: int = 1, shape=(2, 12), vocab_size: int = 50) -> torch.Tensor:
    return torch.randint(0, vocab_size, shape, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------------------
# quantize_tensor / dequantize
# --------------------------------------------------------------------------------------
@st.composite
def _weights(draw):
    out_features = draw(st.integers(1, 6))
    group = draw(st.sampled_from([1, 2, 3, 4, 8]))
    n_groups = draw(st.integers(1, 4))
    group_size = draw(st.sampled_from([None, group]))
    seed = draw(st.integers(0, 2**16))
    scale = draw(st.sampled_from([1e-3, 1.0, 50.0]))
    g = torch.Generator().manual_seed(seed)
    weight = scale * torch.randn(out_features, group * n_groups, generator=g)
    return weight, draw(st.sampled_from([4, 8])), group_size


@settings(max_examples=80, deadline=None)
@given(case=_weights())
def test_round_trip_is_within_half_a_step_of_each_group(case):
    weight, bits, group_size = case
    codes, scales = quantize_tensor(weight, bits, group_size)
    out_features, in_features = weight.shape
    group = in_features if group_size is None else group_size
    qmax = 2 ** (bits - 1) - 1
    assert codes.dtype == torch.int8 and codes.shape == weight.shape
    assert scales.shape == (out_features, in_features // group)
    assert int(codes.abs().max()) <= qmax
    # the largest weight of each group maps to the largest code
    assert int(codes.abs().max()) == qmax
    step = scales.repeat_interleave(group, dim=1)  # (out, in): each weight's scale
    error = (weight - dequantize(codes, scales, group_size)).abs()
    assert bool((error <= step / 2 * (1 + 1e-5)).all())


def test_a_zero_row_round_trips_to_zeros():
    weight = torch.randn(3, 8)
    weight[1] = 0.0
    for bits in (4, 8):
        for group_size in (None, 4):
            codes, scales = quantize_tensor(weight, bits, group_size)
            assert bool((scales[1] == 1.0).all()) and bool((codes[1] == 0).all())
            back = dequantize(codes, scales, group_size)
            assert bool((back[1] == 0).all()) and bool(back.isfinite().all())


def test_groups_are_consecutive_columns():
    # a row with one large column: per row, the small ones round to 0; per group of
    # 2, only the large one's group loses them
    weight = torch.tensor([[100.0, 0.1, 0.2, 0.3]])
    codes, _ = quantize_tensor(weight, 8, None)
    assert codes.tolist() == [[127, 0, 0, 0]]
    codes, scales = quantize_tensor(weight, 8, 2)
    assert codes.tolist() == [[127, 0, 85, 127]]
    assert torch.allclose(scales, torch.tensor([[100 / 127, 0.3 / 127]]))


# --------------------------------------------------------------------------------------
# QuantizedLinear and quantize_weights
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("group_size", [None, 4])
def test_quantized_linear_computes_with_the_dequantized_weight(bits, group_size):
    torch.manual_seed(0)
    base = nn.Linear(8, 5, bias=True)
    layer = QuantizedLinear(base, bits, group_size)
    x = torch.randn(2, 3, 8)
    weight = dequantize(*quantize_tensor(base.weight.detach(), bits, group_size),
                        group_size)
    assert torch.allclose(layer(x), x @ weight.T + base.bias, atol=1e-6)
    assert (layer.bits, layer.group_size, layer.in_features, layer.out_features) == (
        bits, group_size, 8, 5)
    n_scales = 5 * (1 if group_size is None else 8 // group_size)
    assert layer.nbytes == math.ceil(40 * bits / 8) + 4 * n_scales
    assert not list(layer.parameters())  # buffers only
    assert set(dict(layer.named_buffers())) == {"codes", "scales", "bias"}


def test_nbytes_rounds_half_bytes_up():
    layer = QuantizedLinear(Linear(3, 3), 4)  # 9 codes of half a byte
    assert layer.nbytes == 5 + 3 * 4


def test_an_8_bit_model_is_close_to_the_float_model_and_4_bits_further():
    model = _lm(0)
    ids = _ids()
    with torch.no_grad():
        reference = model(ids)  # (2, 12, 50)
        spread = float(reference.std())
        errors = {}
        for bits in (8, 4):
            quantized = copy.deepcopy(model)
            report = quantize_weights(quantized, bits)
            assert not any(isinstance(m, (Linear, nn.Linear)) for m in quantized.modules())
            errors[bits] = float((quantized(ids) - reference).abs().max()) / spread
    # measured: 8 bits 0.04 of the logits' spread, 4 bits 0.9 (per row, d_model 32)
    assert errors[8] < 0.1
    assert errors[4] > 4 * errors[8]
    assert report.bits == 4 and report.group_size is None


@pytest.mark.parametrize("group_size", [None, 8])
def test_report_counts_the_bytes_of_the_formula(group_size):
    model = _lm(0)
    shapes = {name: tuple(m.weight.shape) for name, m in model.named_modules()
              if isinstance(m, Linear)}
    report = quantize_weights(model, 8, group_size=group_size)
    assert set(report.layers) == set(shapes) and report.skipped == ()
    numel = sum(o * i for o, i in shapes.values())
    n_scales = sum(o * (1 if group_size is None else i // group_size)
                   for o, i in shapes.values())
    assert report.float_bytes == 4 * numel
    assert report.quantized_bytes == numel + 4 * n_scales  # a byte a code + float scales
    assert report.quantized_bytes == sum(m.nbytes for m in model.modules()
                                         if isinstance(m, QuantizedLinear))
    if group_size is None:  # a quarter of float32, plus a scale per row
        assert 3.5 < report.compression < 4.0
    else:  # 1 + 4 / 8 bytes a weight
        assert report.compression == pytest.approx(4 / 1.5)
    assert 0 < report.max_abs_error < 0.01


def test_report_max_abs_error_is_the_largest_over_the_layers():
    model = _lm(0)
    weights = {name: m.weight.detach().clone() for name, m in model.named_modules()
               if isinstance(m, Linear)}
    report = quantize_weights(model, 4)
    modules = dict(model.named_modules())
    largest = max(float((w - modules[name].weight).abs().max())
                  for name, w in weights.items())
    assert report.max_abs_error == pytest.approx(largest)


def test_a_tied_output_layer_is_skipped_and_reported():
    torch.manual_seed(0)
    model = gpt2.TransformerLM(vocab_size=20, context_length=8, d_model=8, n_layers=1,
                               n_heads=2)
    embedding = model.tok_emb.weight.detach().clone()
    report = quantize_weights(model, 8)
    assert report.skipped == ("lm_head",) and "lm_head" not in report.layers
    assert model.lm_head.weight is model.tok_emb.weight  # still tied, unchanged
    assert torch.equal(model.tok_emb.weight, embedding)
    assert report.layers and all(isinstance(dict(model.named_modules())[n],
                                            QuantizedLinear) for n in report.layers)
    model(_ids(shape=(1, 8), vocab_size=20))  # still runs


def test_an_nn_linear_bias_is_kept():
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2, bias=False))
    x = torch.randn(3, 4)
    reference = model(x)
    report = quantize_weights(model, 8)
    assert report.layers == ("0", "2")
    assert model[0].bias is not None and model[2].bias is None
    assert torch.allclose(model(x), reference, atol=0.05)


# --------------------------------------------------------------------------------------
# speculative decoding
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 4, 30])
def test_greedy_speculation_is_the_target_greedy_text(k):
    target = _lm(0)
    drafts = [_lm(1, d_model=16, num_layers=1), _lm(2), copy.deepcopy(target)]
    prompt = _ids(3, shape=(5,)).tolist()
    expected = generate(target, prompt, 12, greedy=True)
    for draft in drafts:
        new, stats = speculative_generate(target, draft, prompt, 12, k)
        assert new == expected
        assert 0 <= stats.accepted <= stats.proposed == stats.draft_calls
        assert 1 <= stats.target_calls <= 12
    # a draft equal to the target has every proposal accepted: 12 tokens in
    # ceil(12 / (k + 1)) rounds
    assert stats.accepted == stats.proposed and stats.acceptance_rate == 1.0
    assert stats.target_calls == math.ceil(12 / (min(k, 12) + 1))


def test_greedy_speculation_at_and_past_the_context_length():
    target, draft = _lm(0, context_length=8), _lm(1, d_model=16, context_length=6)
    for prompt in (_ids(4, shape=(8,)).tolist(), _ids(5, shape=(6,)).tolist()):
        expected = generate(target, prompt, 10, greedy=True)
        new, stats = speculative_generate(target, draft, prompt, 10, 3)
        assert new == expected
        assert stats.target_calls <= 10


def test_speculation_stops_at_max_new_tokens_exactly():
    target = _lm(0)
    for n in (1, 2, 5, 7):
        new, stats = speculative_generate(target, copy.deepcopy(target), [1, 2], n, 3,
                                          temperature=0.8,
                                          generator=torch.Generator().manual_seed(0))
        assert len(new) == n
        assert stats.proposed == stats.accepted  # the draft is the target
        assert stats.target_calls == math.ceil(n / 4)


def test_stats_acceptance_rate():
    assert SpeculativeStats(3, 6, 6, 3).acceptance_rate == 0.5
    assert SpeculativeStats().acceptance_rate == 0.0


class _Fixed(nn.Module):
    """A "language model" whose logits do not depend on its input."""

    def __init__(self, logits: list[float], context_length: int = 8) -> None:
        super().__init__()
        self.vocab_size, self.context_length = len(logits), context_length
        self.register_buffer("logits", torch.tensor(logits))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.logits.expand(*ids.shape, self.vocab_size)  # (B, T, V)


def test_the_sampling_rule_keeps_the_target_distribution():
    target = _Fixed([2.0, 0.0, 1.0, -1.0])
    draft = _Fixed([-1.0, 1.0, 0.0, 2.0])  # prefers what the target does not
    p = torch.softmax(target.logits, -1)
    q = torch.softmax(draft.logits, -1)
    assert float((p - q).abs().max()) > 0.4  # accepting every proposal would show
    g = torch.Generator().manual_seed(0)
    n = 20_000
    counts = torch.zeros(4)
    totals = SpeculativeStats()
    for _ in range(n):
        (token,), stats = speculative_generate(target, draft, [0], 1, 1, 1.0, g)
        counts[token] += 1
        totals.proposed += stats.proposed
        totals.accepted += stats.accepted
    # each frequency has a standard deviation of at most sqrt(1/4 / n) = 0.0035;
    # 0.02 is more than 5 of them
    assert float((counts / n - p).abs().max()) < 0.02
    # the rate of acceptance is Σ min(p, q)
    assert totals.acceptance_rate == pytest.approx(float(torch.minimum(p, q).sum()),
                                                   abs=0.02)


def test_sampling_with_a_seed_is_reproducible():
    target, draft = _lm(0), _lm(1, d_model=16, num_layers=1)
    runs = [speculative_generate(target, draft, [1, 2, 3], 9, 3, 1.0,
                                 torch.Generator().manual_seed(7)) for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0][0]) == 9


def test_a_linear_layer_reached_under_two_names_is_skipped():
    shared = nn.Linear(4, 4)
    model = nn.Sequential(shared, nn.Linear(4, 2), shared)
    report = quantize_weights(model, 8)
    assert report.layers == ("1",) and report.skipped == ("0", "2")
    assert model[0] is model[2] is shared
