"""Tests for llmlab.models.gpt2 (GPT-2-style attention, block and model)."""

import math

import pytest
import torch
from torch import nn

from llmlab.models.gpt2 import (
    GPT2_SMALL,
    MLP,
    GPT2Config,
    MultiHeadSelfAttention,
    TransformerBlock,
    TransformerLM,
    block_parameter_count,
    count_parameters,
)

torch.set_num_threads(1)


def torch_twin(mha: MultiHeadSelfAttention) -> nn.MultiheadAttention:
    """An nn.MultiheadAttention holding the same weights as ``mha``."""
    ref = nn.MultiheadAttention(mha.d_model, mha.n_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(mha.qkv.weight)
        ref.in_proj_bias.copy_(mha.qkv.bias)
        ref.out_proj.weight.copy_(mha.proj.weight)
        ref.out_proj.bias.copy_(mha.proj.bias)
    return ref.eval()


@pytest.mark.parametrize("causal", [False, True])
def test_matches_nn_multihead_attention(causal):
    torch.manual_seed(0)
    B, T, D, H = 3, 7, 32, 4
    x = torch.randn(B, T, D)
    ours = MultiHeadSelfAttention(D, H, causal=causal)
    ref = torch_twin(ours)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
    y_ref, w_ref = ref(x, x, x, attn_mask=mask, average_attn_weights=False)
    y, w = ours(x, return_weights=True)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, w_ref, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_key_mask_matches_nn_multihead_attention(causal):
    """Our key_mask (True = real token) is ~key_padding_mask (True = padding)."""
    torch.manual_seed(1)
    B, T, D, H = 2, 6, 16, 2
    x = torch.randn(B, T, D)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[0, 4:] = True  # right padding: every query still sees a key
    ours = MultiHeadSelfAttention(D, H, causal=causal)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
    y_ref, w_ref = torch_twin(ours)(
        x, x, x, key_padding_mask=pad, attn_mask=mask, average_attn_weights=False
    )
    y, w = ours(x, key_mask=~pad, return_weights=True)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, w_ref, atol=1e-6, rtol=1e-5)
    assert (w[0, :, :, 4:] == 0).all()


def test_padding_changes_nothing_for_real_tokens():
    torch.manual_seed(2)
    mha = MultiHeadSelfAttention(16, 4, causal=True)
    x = torch.randn(1, 4, 16)
    padded = torch.cat([x, torch.randn(1, 3, 16)], dim=1)
    real = torch.tensor([[True] * 4 + [False] * 3])
    torch.testing.assert_close(mha(padded, key_mask=real)[:, :4], mha(x))


def test_query_with_no_visible_key_gets_zero_weights_not_nan():
    torch.manual_seed(3)
    mha = MultiHeadSelfAttention(8, 2, causal=True)
    x = torch.randn(1, 4, 8, requires_grad=True)
    real = torch.tensor([[False, True, True, True]])  # left padding
    y, w = mha(x, key_mask=real, return_weights=True)
    assert not torch.isnan(y).any()
    assert (w[0, :, 0] == 0).all()
    torch.testing.assert_close(w[0, :, 1:].sum(-1), torch.ones(2, 3))
    y.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_forward_steps_shapes_and_forward_agree():
    torch.manual_seed(0)
    B, T, D, H = 2, 5, 16, 4
    mha = MultiHeadSelfAttention(D, H)
    x = torch.randn(B, T, D)
    steps = mha.forward_steps(x)
    Dh = D // H
    expected = {
        "qkv": (B, T, 3 * D),
        "q": (B, T, D),
        "q_heads": (B, H, T, Dh),
        "scores": (B, H, T, T),
        "attn": (B, H, T, T),
        "heads": (B, H, T, Dh),
        "concat": (B, T, D),
        "out": (B, T, D),
    }
    assert {k: tuple(v.shape) for k, v in steps.items()} == expected
    assert list(steps) == list(expected)  # in the order of the forward pass
    assert list(MultiHeadSelfAttention.STEPS) == list(expected)
    dims = {"B": B, "T": T, "D": D, "H": H, "Dh": Dh, "3D": 3 * D}
    for name, (_, symbolic) in MultiHeadSelfAttention.STEPS.items():
        shape = tuple(dims[s] for s in symbolic.strip("()").split(", "))
        assert shape == expected[name], name
    torch.testing.assert_close(steps["out"], mha(x))
    # causal: nothing above the diagonal, rows sum to 1
    assert (steps["attn"].triu(1) == 0).all()
    torch.testing.assert_close(steps["attn"].sum(-1), torch.ones(B, H, T))


def test_manual_walk_equals_module():
    torch.manual_seed(0)
    B, T, D, H = 2, 5, 16, 4
    Dh = D // H
    mha = MultiHeadSelfAttention(D, H, causal=True)
    x = torch.randn(B, T, D)
    q, k, v = mha.qkv(x).split(D, dim=2)
    q, k, v = (t.view(B, T, H, Dh).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(Dh)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    attn = torch.softmax(scores.masked_fill(future, -math.inf), dim=-1)
    out = mha.proj((attn @ v).transpose(1, 2).reshape(B, T, D))
    torch.testing.assert_close(out, mha(x), atol=1e-6, rtol=1e-5)


def test_bidirectional_sees_the_future():
    torch.manual_seed(0)
    mha = MultiHeadSelfAttention(8, 2, causal=False)
    _, w = mha(torch.randn(1, 4, 8), return_weights=True)
    above = torch.ones(4, 4, dtype=torch.bool).triu(1)
    assert (w[..., above] > 0).all()


def test_block_shapes_and_variants():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 32)
    for pre_ln in (True, False):
        block = TransformerBlock(32, 4, pre_ln=pre_ln)
        assert block(x).shape == x.shape
        assert [n for n, _ in block.named_children()] == ["ln1", "attn", "ln2", "ffn"]
    post = TransformerBlock(32, 4, pre_ln=False)
    y = post(x)  # Post-LN ends with a LayerNorm (gamma=1, beta=0 at init)
    torch.testing.assert_close(y.mean(-1), torch.zeros(2, 6), atol=1e-5, rtol=0)


def test_block_is_causal():
    torch.manual_seed(0)
    block = TransformerBlock(16, 4)
    x = torch.randn(1, 6, 16)
    x2 = x.clone()
    x2[:, 4:] = torch.randn(1, 2, 16)  # change the future only
    torch.testing.assert_close(block(x)[:, :4], block(x2)[:, :4])


def test_mlp_shape_and_params():
    mlp = MLP(8)
    assert mlp.fc.weight.shape == (32, 8) and mlp.proj.weight.shape == (8, 32)
    assert count_parameters(mlp) == 8 * 32 + 32 + 32 * 8 + 8


@pytest.mark.parametrize("d_model", [64, 128, 768])
def test_block_param_formula(d_model):
    block = TransformerBlock(d_model, n_heads=4)
    assert count_parameters(block) == block_parameter_count(d_model)
    assert block_parameter_count(d_model) == 12 * d_model**2 + 13 * d_model


def test_tied_output_counted_once():
    model = TransformerLM(vocab_size=50, context_length=8, d_model=16, n_layers=2,
                          n_heads=4)
    assert model.lm_head.weight is model.tok_emb.weight
    config = GPT2Config(
        vocab_size=50, context_length=8, d_model=16, n_layers=2, n_heads=4
    )
    assert count_parameters(model) == config.parameter_count()
    every_use = sum(p.numel() for m in model.modules() for p in m.parameters(False))
    assert every_use == count_parameters(model) + 50 * 16



def test_loading_untied_output_weights_is_refused():
    torch.manual_seed(0)
    model = TransformerLM(vocab_size=50, context_length=8, d_model=16, n_layers=1,
                          n_heads=4)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state["lm_head.weight"] = torch.randn(50, 16)  # no longer the embedding
    state["ln_f.weight"] = torch.full((16,), 3.0)
    with pytest.raises(ValueError, match=r"lm_head\.weight differs from its "
                       r"tok_emb\.weight.*tied"):
        model.load_state_dict(state)
    after = model.state_dict()
    assert all(torch.equal(after[k], before[k]) for k in before)  # nothing loaded
    # a tied state dict (any model's, e.g. its own) loads as before
    torch.manual_seed(1)
    other = TransformerLM(vocab_size=50, context_length=8, d_model=16, n_layers=1,
                          n_heads=4)
    model.load_state_dict(other.state_dict())
    assert torch.equal(model.lm_head.weight, other.tok_emb.weight)
    assert model.lm_head.weight is model.tok_emb.weight  # still one matrix


def test_gpt2_small_parameter_count():
    assert GPT2_SMALL == GPT2Config(50257, 1024, 768, 12, 12)
    assert GPT2_SMALL.parameter_count() == 124_439_808
    parts = GPT2_SMALL.parameter_breakdown()
    assert parts["tok_emb"] == 50257 * 768
    assert sum(parts.values()) == 124_439_808


def test_gpt2_small_model_builds_to_the_formula():
    torch.manual_seed(0)
    model = TransformerLM.from_config(GPT2_SMALL)
    assert count_parameters(model) == 124_439_808


@pytest.mark.parametrize("config", [
    GPT2Config(vocab_size=50, context_length=8, d_model=16, n_layers=2, n_heads=4),
    GPT2_SMALL,
])
def test_parameter_formulas_match_the_code(config):
    with torch.device("meta"):
        model = TransformerLM.from_config(config)
    assert count_parameters(model) == config.parameter_count()
    parts = config.parameter_breakdown()  # by child module, each counted
    assert {name: count_parameters(getattr(model, name)) for name in parts} == parts
    # the weights that multiply an activation: every Linear's, the tied lm_head once
    linear = {id(m.weight): m.weight.numel() for m in model.modules()
              if isinstance(m, nn.Linear)}
    assert sum(linear.values()) == config.matmul_parameter_count()
    assert config.matmul_parameter_count() == (
        12 * config.n_layers * config.d_model**2 + config.d_model * config.vocab_size)
    # the rest: positions, biases and LayerNorms
    rest = config.parameter_count() - config.matmul_parameter_count()
    assert rest == config.parameter_breakdown()["pos_emb"] + config.n_layers * (
        13 * config.d_model) + 2 * config.d_model


def test_lm_forward_and_gradients_flow():
    torch.manual_seed(0)
    model = TransformerLM(vocab_size=20, context_length=10, d_model=16, n_layers=2,
                          n_heads=2)
    idx = torch.randint(0, 20, (3, 10))
    logits = model(idx)
    assert logits.shape == (3, 10, 20)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), idx.flatten())
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_lm_with_key_mask():
    torch.manual_seed(0)
    model = TransformerLM(vocab_size=20, context_length=10, d_model=16, n_layers=2,
                          n_heads=2)
    idx = torch.randint(0, 20, (2, 6))
    real = torch.ones(2, 6, dtype=torch.bool)
    real[1, 3:] = False  # the second sequence is padded after 3 tokens
    logits = model(idx, key_mask=real)
    torch.testing.assert_close(logits[1, :3], model(idx[1:, :3])[0])


def test_dropout_is_off_by_default_and_configurable():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)
    block = TransformerBlock(16, 4).train()
    torch.testing.assert_close(block(x), block(x))
    noisy = TransformerBlock(16, 4, dropout=0.5).train()
    assert not torch.allclose(noisy(x), noisy(x))
    noisy.eval()
    torch.testing.assert_close(noisy(x), noisy(x))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: MultiHeadSelfAttention(30, 4), r"d_model \(30\).*n_heads \(4\)"),
        (lambda: TransformerBlock(10, 3), r"d_model \(10\).*n_heads \(3\)"),
        (lambda: MultiHeadSelfAttention(0, 1), "d_model"),
        (lambda: MultiHeadSelfAttention(8, 2, dropout=1.5), "dropout"),
        (lambda: TransformerLM(10, 8, 16, 0, 4), "n_layers"),
        (lambda: GPT2Config(d_model=10, n_heads=3), r"d_model \(10\).*n_heads \(3\)"),
    ],
)
def test_constructor_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_input_errors():
    mha = MultiHeadSelfAttention(16, 4)
    with pytest.raises(ValueError, match=r"shape .*d_model=16.*\(2, 5, 8\)"):
        mha(torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match=r"x must have shape.*\(5, 16\)"):
        mha(torch.randn(5, 16))
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"key_mask must .*\(batch, seq_len\).*\(2, 4\)"):
        mha(x, key_mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="key_mask must be a boolean tensor"):
        mha(x, key_mask=torch.ones(2, 5))


def test_lm_input_errors():
    model = TransformerLM(vocab_size=20, context_length=8, d_model=16, n_layers=1,
                          n_heads=2)
    assert model.context_length == 8
    with pytest.raises(ValueError, match=r"seq_len is 9, expected 1 <= seq_len <= "
                       r"context_length \(8\)"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match=r"idx must lie in \[0, 20\) \(vocab_size\)"):
        model(torch.full((1, 4), 20))
    with pytest.raises(ValueError, match="idx must lie in"):
        model(torch.full((1, 4), -1))
    with pytest.raises(ValueError, match="idx must have shape \\(batch, seq_len\\)"):
        model(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="idx must be an integer tensor"):
        model(torch.zeros(1, 4))
    with pytest.raises(ValueError, match="key_mask must have shape"):
        model(torch.zeros(1, 4, dtype=torch.long), key_mask=torch.ones(1, 3).bool())
