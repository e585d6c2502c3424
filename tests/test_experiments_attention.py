"""Tests for llmlab.experiments.attention on reduced settings."""

from __future__ import annotations

import pickle

import pytest
import torch

from llmlab.attention import MultiHeadAttention
from llmlab.experiments.attention import (
    run_dropout_demo,
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
