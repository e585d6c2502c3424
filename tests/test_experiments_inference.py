"""llmlab.experiments.inference: the measurements of "Faster inference", on small
settings (the page's own settings run in the build)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import run_script

import llmlab.experiments.inference as exp
from llmlab.generation import generate
from llmlab.kv_cache import kv_cache_bytes
from llmlab.models.llama import LLAMA2_7B, LLAMA2_70B, LLAMA_TOY, TransformerLM
from llmlab.pretrained import NAMES, training_text


@pytest.mark.parametrize("corpus", NAMES)
def test_held_out_text_is_the_end_of_the_corpus_from_a_line_start(corpus):
    text, whole = exp.held_out_text(corpus, 500), training_text(corpus)
    assert whole.endswith(text) and whole[-len(text) - 1] == "\n"
    assert 0 < len(text) <= 500


def test_expected_tokens_per_pass_is_the_geometric_sum():
    for alpha in (0.0, 0.3, 0.8):
        for k in (1, 2, 5):
            assert exp.expected_tokens_per_pass(alpha, k) == pytest.approx(
                sum(alpha**i for i in range(k + 1)))
    assert exp.expected_tokens_per_pass(1.0, 4) == 5.0


def test_inference_costs_follow_the_formulas():
    costs = exp.run_inference_costs()
    rows = {row.name: row for row in costs.rows}
    for name, config in (("Llama 2 7B", LLAMA2_7B), ("Llama 2 70B", LLAMA2_70B)):
        row = rows[name]
        assert row.weight_bytes == 2 * config.parameter_count()
        d_head = config.d_model // config.num_heads
        assert row.kv_bytes_per_token == kv_cache_bytes(config.num_layers,
                                                        config.kv_heads, d_head, 1, 2)
        assert row.flops_per_token == (2 * config.matmul_parameter_count()
                                       + 4 * config.num_layers * config.d_model * 4096)
    # grouped-query attention: 70B's cache per token is smaller than 7B's
    assert rows["Llama 2 70B"].kv_bytes_per_token < rows["Llama 2 7B"].kv_bytes_per_token
    assert costs.ridge["H100"] > costs.ridge["A100"] > 100


def test_copies_of_kv_heads_make_the_multi_head_model():
    for kv in (1, 2):
        assert exp._copies_difference(dataclasses.replace(LLAMA_TOY, num_kv_heads=kv)) == 0.0


def test_speculative_run_writes_the_greedy_text_and_counts_passes():
    result = exp.run_speculative("shakespeare", ks=(1, 3), new_tokens=10)
    for row in result.rows:
        read = (row.target_calls * result.target_parameters
                + row.draft_calls * result.draft_parameters)
        assert result.weights_read(row) == read / (10 * result.target_parameters)
        assert row.proposed == row.draft_calls  # greedy: one pass per proposal
        assert row.accepted <= row.proposed and row.target_calls <= 10
        # every target pass adds the kept proposals and one token of its own
        assert row.accepted + row.target_calls >= 10
    assert 0.0 <= result.agreement <= 1.0 and len(result.text) > 0


def test_speculative_run_fails_loudly_if_the_text_differs(monkeypatch):
    def wrong(target, draft, prompt, n, k):
        text, stats = real(target, draft, prompt, n, k)
        return [(text[0] + 1) % target.vocab_size, *text[1:]], stats

    real = exp.speculative_generate
    monkeypatch.setattr(exp, "speculative_generate", wrong)
    with pytest.raises(AssertionError, match="other tokens than the target's greedy"):
        exp.run_speculative.uncached("tang", ks=(2,), new_tokens=4)


def test_sampling_check_draws_the_target_distribution():
    check = exp.run_sampling_check(draws=600, seed=1)
    assert sum(check.counts) == 600 and check.accepted <= 600
    assert check.tv_target < check.tv_draft
    assert sum(check.target) == pytest.approx(1.0) and sum(check.draft) == pytest.approx(1.0)


def test_quantization_rows_shrink_and_int8_keeps_the_text():
    result = exp.run_quantization("shakespeare", greedy_tokens=8)
    int8, int4, int4_group = result.rows
    assert int8.same_greedy == 8 and abs(int8.loss_change) < 0.01
    assert int4.quantized_bytes < int4_group.quantized_bytes < int8.quantized_bytes
    assert result.n_layers == len(result.layers) == 4 * 7 + 1  # 7 per block, lm_head
    assert all(e.group_error < e.row_error for e in result.layers)


def test_our_int8_codes_match_pytorchs_per_channel_quantizer():
    """PyTorch's own int8 path on the CPU as a reference: the same scales give the
    same codes, but for weights that land on a tie, which PyTorch rounds after
    multiplying by 1/scale and we after dividing (a code apart, at most)."""
    from llmlab.inference import quantize_tensor

    torch.manual_seed(0)
    weight = torch.randn(64, 128)
    codes, scales = quantize_tensor(weight, 8)
    with pytest.warns(UserWarning, match="deprecated"):
        theirs = torch.quantize_per_channel(weight, scales[:, 0].double(),
                                            torch.zeros(64, dtype=torch.long), 0,
                                            torch.qint8).int_repr()
    differ = (theirs.int() - codes.int()).abs()
    assert differ.max() <= 1 and (differ == 0).float().mean() > 0.999


@pytest.fixture(scope="module")
def gqa():
    return exp.run_gqa_comparison(kv_heads=(4, 1), steps=3, batch_size=2)


def test_gqa_comparison_on_a_short_run(gqa):
    assert gqa.kv_bytes[0] == 4 * gqa.kv_bytes[1]
    assert gqa.parameters[0] - gqa.parameters[1] == 2 * 2 * 64 * (64 - 16)
    assert gqa.steps == 3 and len(gqa.val_loss) == 2
    model = TransformerLM.from_config(dataclasses.replace(LLAMA_TOY, num_kv_heads=1))
    assert len(generate(model, [1, 2], 3, greedy=True)) == 3


def test_the_seeds_script_tabulates_each_seed_and_the_spread(gqa, monkeypatch, capsys):
    losses = {0: [5.0, 5.25], 2: [5.0, 5.5], 5: [4.0, 4.0]}  # a comparison per seed

    def comparison(seed):
        return dataclasses.replace(gqa, val_loss=losses[seed])

    run_script("seeds", ["inference", "--seeds", "0", "2", "5"], monkeypatch,
               run_gqa_comparison=comparison)
    out = capsys.readouterr().out
    assert "| 2 | 1 key/value heads | 5.500 | +0.500 |" in out
    assert "| 5 | 4 key/value heads | 4.000 | +0.000 |" in out
    assert "validation loss minus multi-head's over seeds 0, 2, 5:" in out
    assert "| 1 key/value heads | +0.000 | +0.250 | +0.500 |" in out
