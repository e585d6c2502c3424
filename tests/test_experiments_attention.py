"""Tests for llmlab.experiments.attention on reduced settings."""

from __future__ import annotations

import pickle

import pytest
import torch

from llmlab.attention import MultiHeadAttention
from llmlab.experiments.attention import (
    RecallAttention,
    run_dropout_demo,
    run_learned_recall,
    run_scaling_table,
    run_summary_recall,
    sdpa_forward,
    time_attention_variants,
)

torch.set_num_threads(1)


def test_summary_recall_structure_and_claims():
    r = run_summary_recall.uncached(
        lengths=(1, 4, 32), dim=16, vocab_size=50, trials=100
    )
    assert r.lengths == [1, 4, 32]
    assert r.attention_accuracy == [1.0, 1.0, 1.0]
    assert r.summary_accuracy[0] == 1.0  # one token: the state is the token
    assert r.summary_accuracy[-1] < r.summary_accuracy[0]
    pickle.dumps(r)
    with pytest.raises(ValueError, match="vocab_size"):
        run_summary_recall.uncached(vocab_size=1)


def test_summary_recall_is_deterministic():
    a = run_summary_recall.uncached(lengths=(2, 8), dim=8, trials=50, seed=3)
    b = run_summary_recall.uncached(lengths=(2, 8), dim=8, trials=50, seed=3)
    assert a == b


def test_learned_recall_is_learned_not_built():
    small = dict(lengths=(1, 4, 8), d_model=16, vocab_size=10, batch_size=32, lr=2e-2,
                 trials=200)
    untrained = run_learned_recall.uncached(steps=0, **small)
    trained = run_learned_recall.uncached(steps=100, **small)
    assert trained.lengths == [1, 4, 8] and trained.steps == 100
    # before training: about chance, weight spread over the positions
    assert untrained.accuracy[-1] < 0.3 and untrained.target_weight[-1] < 0.3
    # after: it recalls, by putting its weight on the asked position
    assert trained.accuracy[-1] > 0.8 and trained.target_weight[-1] > 0.5
    assert all(0.0 <= w <= 1.0 for w in trained.target_weight)
    pickle.dumps(trained)
    again = run_learned_recall.uncached(steps=100, **small)
    assert again == trained  # seeded


def test_learned_recall_settings_state_the_same_numbers_in_both_languages():
    """The build checks that every block prints the same numbers, in order, per language."""
    import re

    from llmlab.report.attention import learned_recall_settings

    learned = run_learned_recall.uncached(lengths=(1, 4, 6), d_model=8, vocab_size=10,
                                          batch_size=16, steps=3, trials=20)
    sentence = learned_recall_settings(learned)
    numbers = [re.findall(r"\d+(?:\.\d+)?", sentence.text(lang)) for lang in ("zh", "en")]
    assert numbers[0] == numbers[1] == ["8", "10", "6", "3", "0.01", "16", "0", "20"]


def test_recall_attention_sees_the_token_only_through_attention():
    torch.manual_seed(0)
    model = RecallAttention(vocab_size=10, d_model=8, context_length=6)
    x = torch.randint(10, (2, 5))
    target = torch.tensor([0, 4])
    logits, weights = model(x, target)
    assert logits.shape == (2, 10) and weights.shape == (2, 5)
    # values zeroed: no token can change the answer, so tokens reach the read-out
    # only through the attention (the question token carries no token)
    with torch.no_grad():
        model.attn.W_value.weight.zero_()
    y = x.clone()
    y[:, 0] = (y[:, 0] + 1) % 10
    assert torch.equal(model(x, target)[0], model(y, target)[0])
    with pytest.raises(ValueError, match="target must lie in"):
        model(x, torch.tensor([0, 5]))


def test_scaling_table_claims():
    r = run_scaling_table.uncached(d_ks=(4, 64, 1024), num_keys=8, trials=300)
    assert r.var_raw[0] < r.var_raw[1] < r.var_raw[2]
    assert all(0.8 < v < 1.2 for v in r.var_scaled)
    assert r.max_weight_raw[0] < r.max_weight_raw[1] < r.max_weight_raw[2]
    assert r.jacobian_raw[0] > r.jacobian_raw[1] > r.jacobian_raw[2]
    assert r.max_weight_raw[-1] > r.max_weight_scaled[-1]
    with pytest.raises(ValueError, match="num_keys"):
        run_scaling_table.uncached(num_keys=1)


def test_dropout_demo():
    r = run_dropout_demo.uncached(p=0.5, seq_len=8, seed=0)
    assert torch.equal(r.eval_output, r.weights)
    assert 0 < r.zeroed_fraction < 1
    assert torch.allclose(r.survivor_ratios, torch.full_like(r.survivor_ratios, 2.0))
    with pytest.raises(ValueError, match="p must be"):
        run_dropout_demo.uncached(p=1.0)


def test_sdpa_forward_matches_module():
    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 6, 8, 0.0, 3).eval()
    x = torch.rand(2, 8, 6)
    assert torch.allclose(sdpa_forward(mha, x), mha(x), atol=1e-6)


def test_timing_table_structure():
    r = time_attention_variants.uncached(batch=1, seq_len=8, d_model=8, num_heads=2,
                                         min_run_time=0.01)
    assert len(r.names) == len(r.seconds) == 3
    assert all(s > 0 for s in r.seconds)
    assert r.max_abs_diff < 1e-5
    with pytest.raises(ValueError, match="divisible"):
        time_attention_variants.uncached(d_model=10, num_heads=3)
    assert time_attention_variants.machine_dependent  # cached per machine


# ---------------------------------------------------------------------------
# the lecture's diagrams (drawn by llmlab.report.diagrams)
# ---------------------------------------------------------------------------
def test_attention_lookup_weights_are_the_softmax_of_the_scores():
    import math

    import torch.nn.functional as F

    from llmlab.experiments.attention import run_attention_lookup

    r = run_attention_lookup(n_keys=5, d_k=3, d_v=2, seed=1)
    q, K, V = r.query, r.keys, r.values
    assert q.shape == (3,) and K.shape == (5, 3) and V.shape == (5, 2)
    assert r.scores.shape == r.weights.shape == (5,) and r.output.shape == (2,)
    assert torch.equal(q, q.round(decimals=1)) and torch.equal(K, K.round(decimals=1))
    torch.testing.assert_close(r.scores, K @ q / math.sqrt(3))
    torch.testing.assert_close(r.weights, torch.softmax(K @ q / math.sqrt(3), dim=-1))
    torch.testing.assert_close(r.weights.sum(), torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(r.output, r.weights @ V)
    torch.testing.assert_close(r.output, F.scaled_dot_product_attention(
        q[None, None], K[None], V[None])[0, 0])
    before = torch.get_rng_state()
    again = run_attention_lookup(n_keys=5, d_k=3, d_v=2, seed=1)
    assert torch.equal(torch.get_rng_state(), before)  # its own generator
    assert torch.equal(again.query, q) and not torch.equal(
        run_attention_lookup(n_keys=5, d_k=3, d_v=2, seed=2).query, q)


def test_qkv_projections_are_three_linear_layers():
    from llmlab.experiments.attention import run_qkv_projections
    from llmlab.layers import Linear

    r = run_qkv_projections.uncached(T=3, d_model=5, d_k=2, seed=4)
    assert r.x.shape == (3, 5)
    assert {n: tuple(o.shape) for n, o in r.outputs.items()} == {
        "q_proj": (3, 2), "k_proj": (3, 2), "v_proj": (3, 2)}
    assert r.weight_shapes == {name: (2, 5) for name in ("q_proj", "k_proj", "v_proj")}
    assert not torch.equal(r.outputs["q_proj"], r.outputs["k_proj"])  # three different matrices
    # the same seed rebuilds the input and the layers: each output is its layer of x
    torch.manual_seed(4)
    x = torch.randn(3, 5)
    layers = [Linear(5, 2) for _ in range(3)]
    assert torch.equal(x, r.x)
    with torch.no_grad():
        for layer, name in zip(layers, ("q_proj", "k_proj", "v_proj")):
            torch.testing.assert_close(r.outputs[name], layer(x))
    before = torch.get_rng_state()
    run_qkv_projections.uncached()
    assert torch.equal(torch.get_rng_state(), before)  # the global RNG is left alone


@pytest.mark.parametrize("T, seed", [(2, 0), (5, 0), (6, 2)])
def test_causal_mask_leaves_zeros_above_the_diagonal(T, seed):
    from llmlab.experiments.attention import run_causal_mask
    from llmlab.functional import causal_mask

    r = run_causal_mask(T, seed=seed)
    assert torch.equal(r.mask, causal_mask(T))
    assert torch.equal(r.mask, torch.ones(T, T, dtype=torch.bool).tril())
    expected = torch.softmax(r.scores.masked_fill(~r.mask, float("-inf")), dim=-1)
    torch.testing.assert_close(r.weights, expected)
    assert r.weights.triu(1).abs().max() == 0 and (r.weights.tril() > 0).sum() == T * (T + 1) // 2
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(T))
    assert r.weights[0, 0] == 1  # the first position sees only itself
