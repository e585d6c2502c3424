"""Tests for llmlab.attention: helpers, teaching variants, multi-head attention."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import llmlab.attention as attention
from llmlab.attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    causal_weights_masked,
    causal_weights_renormalised,
    copy_v2_into_v1,
    cosine_similarity,
    dot_scores_loop,
    dot_scores_matmul,
    dot_scores_torch_dot,
    mha_from_wrapper,
    simple_self_attention,
    softmax_naive,
    sum_normalise,
    toy_embeddings,
)
from llmlab.params import count_parameters

torch.set_num_threads(1)

MODULES = {
    "CausalAttention": lambda: CausalAttention(4, 6, 8, 0.0),
    "MultiHeadAttentionWrapper": lambda: MultiHeadAttentionWrapper(4, 3, 8, 0.0, 2),
    "MultiHeadAttention": lambda: MultiHeadAttention(4, 6, 8, 0.0, 2),
}


def test_all_is_explicit_and_importable():
    assert len(attention.__all__) == len(set(attention.__all__))
    for name in attention.__all__:
        assert hasattr(attention, name), name


# --------------------------------------------------------------------------
# helpers: dot products, normalisation
# --------------------------------------------------------------------------
def test_three_ways_to_score_agree():
    torch.manual_seed(0)
    keys, query = torch.randn(5, 3), torch.randn(3)
    loop = dot_scores_loop(query, keys)
    assert torch.allclose(loop, dot_scores_torch_dot(query, keys), atol=1e-6)
    assert torch.allclose(loop, dot_scores_matmul(query, keys), atol=1e-6)


def test_cosine_matches_torch_and_ignores_length():
    torch.manual_seed(0)
    keys, query = torch.randn(5, 3), torch.randn(3)
    ref = F.cosine_similarity(keys, query.unsqueeze(0), dim=-1)
    assert torch.allclose(cosine_similarity(query, keys), ref, atol=1e-6)
    assert torch.allclose(cosine_similarity(query, 7 * keys), ref, atol=1e-6)
    assert torch.allclose(dot_scores_matmul(query, 7 * keys), 7 * (keys @ query))


def test_score_helpers_reject_bad_shapes():
    with pytest.raises(ValueError, match=r"query must have shape \(d,\)"):
        dot_scores_matmul(torch.ones(2, 3), torch.ones(4, 3))
    with pytest.raises(ValueError, match=r"keys must have shape \(seq_len, d\).*d is 2, but query has d 3"):
        dot_scores_loop(torch.ones(3), torch.ones(4, 2))


def test_sum_normalise_can_go_negative_softmax_cannot():
    scores = torch.tensor([2.0, -1.0, 0.5])
    assert torch.isclose(sum_normalise(scores).sum(), torch.tensor(1.0))
    assert (sum_normalise(scores) < 0).any()
    assert (torch.softmax(scores, -1) > 0).all()


def test_naive_softmax_overflows_and_matches_when_small():
    big = torch.tensor([1000.0, 999.0, 998.0])
    assert torch.isnan(softmax_naive(big)).all()
    small = torch.randn(4, 5)
    assert torch.allclose(softmax_naive(small), torch.softmax(small, -1), atol=1e-6)


def _backward_nodes(tensor: torch.Tensor) -> set[str]:
    """Names of the autograd nodes the backward pass from ``tensor`` runs."""
    seen, todo = set(), [tensor.grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and node not in seen:
            seen.add(node)
            todo.extend(next_fn for next_fn, _ in node.next_functions)
    return {type(node).__name__ for node in seen}


def test_softmax_gradient_does_not_flow_through_the_maximum():
    from llmlab.functional import softmax

    x = torch.randn(3, 7, dtype=torch.float64, requires_grad=True)
    y = softmax(x, dim=-1)
    nodes = _backward_nodes(y)
    assert "ExpBackward0" in nodes and "AmaxBackward0" not in nodes  # the shift is detached
    g = torch.randn_like(y)
    (ours,) = torch.autograd.grad(y, x, g)
    (theirs,) = torch.autograd.grad(torch.softmax(x, dim=-1), x, g)
    torch.testing.assert_close(ours, theirs)  # and the gradient is still softmax's
    masked = softmax(torch.tensor([[0.0, -math.inf, 2.0], [-math.inf] * 3]), dim=-1)
    assert masked[0, 1] == 0 and torch.isnan(masked[1]).all()  # as torch.softmax


def test_toy_embeddings_seeded_and_checked():
    a = toy_embeddings(["a", "b", "c"], dim=4, seed=1)
    assert a.shape == (3, 4)
    assert torch.equal(a, toy_embeddings(["x", "y", "z"], dim=4, seed=1))
    assert not torch.equal(a, toy_embeddings(["a", "b", "c"], dim=4, seed=2))
    with pytest.raises(ValueError, match="at least one token"):
        toy_embeddings([])


def test_simple_self_attention_matches_torch():
    x = toy_embeddings(list("abcdef"), dim=3)
    scores, weights, context = simple_self_attention(x)
    assert torch.allclose(scores, x @ x.T)
    assert torch.allclose(weights, torch.softmax(x @ x.T, dim=-1))
    assert torch.allclose(weights.sum(-1), torch.ones(6))
    assert torch.allclose(context, weights @ x)
    with pytest.raises(ValueError, match=r"x must have shape \(seq_len, d\) or"):
        simple_self_attention(torch.ones(3))


def test_two_causal_mask_ways_agree_and_zero_the_future():
    torch.manual_seed(0)
    scores = torch.randn(2, 5, 5)
    a = causal_weights_renormalised(scores, scale=2.0)
    b = causal_weights_masked(scores, scale=2.0)
    assert torch.allclose(a, b, atol=1e-6)
    assert torch.all(b.triu(1) == 0)
    assert torch.allclose(b.sum(-1), torch.ones(2, 5))
    with pytest.raises(ValueError, match=r"scores must have shape \(\.\.\., seq_len, seq_len"):
        causal_weights_masked(torch.ones(2, 3))


# --------------------------------------------------------------------------
# SelfAttentionV1 / V2
# --------------------------------------------------------------------------
def _reference_attention(x, wq, wk, wv, causal=False):
    q, k, v = x @ wq, x @ wk, x @ wv
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def test_v1_matches_sdpa():
    torch.manual_seed(0)
    sa = SelfAttentionV1(3, 2)
    x = torch.rand(2, 6, 3)
    ref = _reference_attention(x, sa.W_query, sa.W_key, sa.W_value)
    assert torch.allclose(sa(x), ref, atol=1e-6)


def test_v2_copied_into_v1_gives_same_output():
    torch.manual_seed(0)
    v1, v2 = SelfAttentionV1(3, 2), SelfAttentionV2(3, 2)
    x = torch.rand(2, 6, 3)
    assert not torch.allclose(v1(x), v2(x))
    copy_v2_into_v1(v1, v2)
    assert torch.allclose(v1(x), v2(x), atol=1e-6)
    assert torch.equal(v1.W_query.detach(), v2.W_query.weight.detach().T)


def test_copy_v2_into_v1_refuses_mismatch():
    with pytest.raises(ValueError, match="must match"):
        copy_v2_into_v1(SelfAttentionV1(3, 2), SelfAttentionV2(3, 4))
    with pytest.raises(ValueError, match="qkv_bias=False"):
        copy_v2_into_v1(SelfAttentionV1(3, 2), SelfAttentionV2(3, 2, qkv_bias=True))


def test_v2_bias_off_by_default_and_linear_init_range():
    torch.manual_seed(0)
    sa = SelfAttentionV2(16, 8)
    assert sa.W_query.bias is None
    assert SelfAttentionV2(16, 8, qkv_bias=True).W_query.bias is not None
    bound = 1 / math.sqrt(16)
    for lin in (sa.W_query, sa.W_key, sa.W_value):
        assert lin.weight.abs().max() <= bound
        assert lin.weight.abs().max() > 0.5 * bound  # spread over the range


@pytest.mark.parametrize("cls", [SelfAttentionV1, SelfAttentionV2])
def test_v1_v2_reject_bad_input(cls):
    sa = cls(3, 2)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, seq_len, d_in=3\)"):
        sa(torch.rand(6, 3))
    with pytest.raises(ValueError, match="d_in is 4, expected d_in = 3"):
        sa(torch.rand(1, 6, 4))
    with pytest.raises(ValueError, match="d_out must be an int >= 1, got 0"):
        cls(3, 0)


# --------------------------------------------------------------------------
# CausalAttention
# --------------------------------------------------------------------------
def test_causal_attention_matches_sdpa_is_causal():
    torch.manual_seed(0)
    ca = CausalAttention(3, 4, context_length=8, dropout=0.0)
    x = torch.rand(2, 6, 3)
    ref = _reference_attention(
        x, ca.W_query.weight.T, ca.W_key.weight.T, ca.W_value.weight.T, causal=True
    )
    assert torch.allclose(ca(x), ref, atol=1e-6)


def test_causal_attention_ignores_the_future():
    torch.manual_seed(0)
    ca = CausalAttention(3, 4, context_length=8, dropout=0.0)
    x = torch.rand(1, 6, 3)
    y = x.clone()
    y[:, 4:] = torch.rand(1, 2, 3)  # change only the last two tokens
    assert torch.allclose(ca(x)[:, :4], ca(y)[:, :4], atol=1e-6)
    assert not torch.allclose(ca(x)[:, 4:], ca(y)[:, 4:])
    _, weights = ca(x, return_weights=True)
    assert torch.all(weights.triu(1) == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(1, 6))


def test_causal_attention_short_input_slices_mask_long_input_raises():
    ca = CausalAttention(3, 4, context_length=5, dropout=0.0)
    assert ca(torch.rand(2, 3, 3)).shape == (2, 3, 4)
    assert ca(torch.rand(2, 5, 3)).shape == (2, 5, 4)
    with pytest.raises(ValueError, match=r"seq_len is 6, expected 1 <= seq_len <= context_length \(5\)"):
        ca(torch.rand(2, 6, 3))


def test_mask_is_a_buffer_in_state_dict_not_a_parameter():
    ca = CausalAttention(3, 4, context_length=5, dropout=0.0)
    assert "mask" in ca.state_dict()
    assert "mask" in dict(ca.named_buffers())
    assert all(name != "mask" for name, _ in ca.named_parameters())
    assert ca.mask.dtype == torch.bool
    assert torch.equal(ca.mask, torch.ones(5, 5, dtype=torch.bool).triu(1))
    restored = CausalAttention(3, 4, context_length=5, dropout=0.0)
    restored.load_state_dict(ca.state_dict())
    assert torch.equal(restored.mask, ca.mask)


@pytest.mark.parametrize("name", list(MODULES))
def test_buffers_move_with_to(name):
    module = MODULES[name]()
    moved = module.to("meta")
    for _, buf in moved.named_buffers():
        assert buf.device.type == "meta"
    as_double = MODULES[name]().to(torch.float64)
    for _, buf in as_double.named_buffers():
        assert buf.dtype == torch.bool  # .to(dtype) leaves boolean buffers alone
    out = as_double(torch.rand(1, 3, 4, dtype=torch.float64))
    assert out.dtype == torch.float64


# --------------------------------------------------------------------------
# dropout: the seed notes computed it and then threw the result away
# --------------------------------------------------------------------------
class _SeedTypoMultiHeadAttention(MultiHeadAttention):
    """The notes' bug: ``attn_weigths = self.dropout(attn_weights)`` (typo)."""

    def forward(self, x, return_weights=False):
        b, t, _ = x.shape
        h, hd = self.num_heads, self.d_head
        q = self.W_query(x).view(b, t, h, hd).transpose(1, 2)
        k = self.W_key(x).view(b, t, h, hd).transpose(1, 2)
        v = self.W_value(x).view(b, t, h, hd).transpose(1, 2)
        scores = (q @ k.transpose(2, 3)).masked_fill(self.mask[:t, :t], -math.inf)
        attn_weights = torch.softmax(scores / hd**0.5, dim=-1)
        attn_weigths = self.dropout(attn_weights)  # noqa: F841 (the typo)
        context = (attn_weights @ v).transpose(1, 2).contiguous().view(b, t, self.d_out)
        return self.out_proj(context)


def dropout_changes_training_output(module: nn.Module, x: torch.Tensor) -> bool:
    """True if the module's training-mode output differs from eval mode."""
    module.eval()
    y_eval = module(x)
    module.train()
    torch.manual_seed(1)
    y_train = module(x)
    module.eval()
    return not torch.allclose(y_train, y_eval)


@pytest.mark.parametrize(
    "make",
    [
        lambda: CausalAttention(4, 6, 8, 0.5),
        lambda: MultiHeadAttentionWrapper(4, 3, 8, 0.5, 2),
        lambda: MultiHeadAttention(4, 6, 8, 0.5, 2),
    ],
)
def test_dropout_is_applied_in_training(make):
    torch.manual_seed(0)
    assert dropout_changes_training_output(make(), torch.rand(2, 6, 4))


def test_the_dropout_test_catches_the_seed_typo():
    torch.manual_seed(0)
    buggy = _SeedTypoMultiHeadAttention(4, 6, 8, 0.5, 2)
    x = torch.rand(2, 6, 4)
    assert not dropout_changes_training_output(buggy, x)
    fixed = MultiHeadAttention(4, 6, 8, 0.5, 2)
    fixed.load_state_dict(buggy.state_dict())
    assert torch.allclose(fixed.eval()(x), buggy.eval()(x), atol=1e-6)
    assert dropout_changes_training_output(fixed, x)


def test_dropout_zeroes_and_rescales_the_weights_used():
    torch.manual_seed(0)
    p = 0.5
    mha = MultiHeadAttention(4, 6, 16, p, 2)
    x = torch.rand(4, 16, 4)
    _, clean = mha.eval()(x, return_weights=True)
    torch.manual_seed(3)
    out, used = mha.train()(x, return_weights=True)
    alive = clean > 0
    dropped = (used == 0) & alive
    assert 0.3 < dropped.sum() / alive.sum() < 0.7
    kept = used != 0
    assert torch.allclose(used[kept], clean[kept] / (1 - p), atol=1e-6)
    # the returned weights are the ones the output was computed from
    b, t, _ = x.shape
    v = mha.W_value(x).view(b, t, 2, 3).transpose(1, 2)
    manual = mha.out_proj((used @ v).transpose(1, 2).reshape(b, t, 6))
    assert torch.allclose(out, manual, atol=1e-6)


def test_eval_mode_is_deterministic():
    mha = MultiHeadAttention(4, 6, 8, 0.5, 2).eval()
    x = torch.rand(2, 6, 4)
    assert torch.equal(mha(x), mha(x))


# --------------------------------------------------------------------------
# multi-head
# --------------------------------------------------------------------------
def test_wrapper_concatenates_heads():
    torch.manual_seed(0)
    wrapper = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3)
    x = torch.rand(2, 6, 3)
    out, weights = wrapper(x, return_weights=True)
    assert out.shape == (2, 6, 6)
    assert weights.shape == (2, 3, 6, 6)
    assert torch.allclose(out[..., 2:4], wrapper.heads[1](x))


def test_mha_from_wrapper_is_the_same_function():
    torch.manual_seed(0)
    for bias in (False, True):
        wrapper = MultiHeadAttentionWrapper(5, 3, 7, 0.0, num_heads=4, qkv_bias=bias)
        mha = mha_from_wrapper(wrapper)
        x = torch.rand(2, 7, 5)
        assert mha.d_out == 12 and mha.num_heads == 4
        assert torch.allclose(mha(x), wrapper(x), atol=1e-6)
        _, w_mha = mha(x, return_weights=True)
        _, w_wrap = wrapper(x, return_weights=True)
        assert torch.allclose(w_mha, w_wrap, atol=1e-6)


def test_parameter_counts():
    d_in, d_head, heads = 8, 4, 2
    wrapper = MultiHeadAttentionWrapper(d_in, d_head, 6, 0.0, heads)
    mha = MultiHeadAttention(d_in, d_head * heads, 6, 0.0, heads)
    d_out = d_head * heads
    assert count_parameters(wrapper) == 3 * d_in * d_out
    assert count_parameters(mha) == 3 * d_in * d_out + d_out * d_out + d_out


def test_mha_matches_nn_multihead_attention():
    torch.manual_seed(0)
    d, heads, t = 8, 2, 5
    ours = MultiHeadAttention(d, d, t, 0.0, heads)
    ref = nn.MultiheadAttention(d, heads, bias=False, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([ours.W_query.weight, ours.W_key.weight, ours.W_value.weight])
        )
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ours.out_proj.bias.zero_()
    x = torch.rand(3, t, d)
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    expected, ref_weights = ref(
        x, x, x, attn_mask=future, need_weights=True, average_attn_weights=False
    )
    out, weights = ours(x, return_weights=True)
    assert torch.allclose(out, expected, atol=1e-6)
    assert torch.allclose(weights, ref_weights, atol=1e-6)


def test_mha_matches_sdpa_is_causal():
    torch.manual_seed(0)
    mha = MultiHeadAttention(4, 8, 10, 0.0, 2)
    x = torch.rand(2, 10, 4)
    q = mha.W_query(x).view(2, 10, 2, 4).transpose(1, 2)
    k = mha.W_key(x).view(2, 10, 2, 4).transpose(1, 2)
    v = mha.W_value(x).view(2, 10, 2, 4).transpose(1, 2)
    core = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = mha.out_proj(core.transpose(1, 2).reshape(2, 10, 8))
    assert torch.allclose(mha(x), expected, atol=1e-6)


def test_mha_step_shapes():
    from llmlab.attention import mha_step_shapes

    mha = MultiHeadAttention(3, 6, 8, 0.0, num_heads=2)
    x = torch.rand(2, 5, 3)
    steps = mha_step_shapes(mha, x)
    named = dict(steps)
    assert steps[0] == ("x", (2, 5, 3))
    assert named["W_query(x)"] == (2, 5, 6)
    assert named[".view(b, T, H, hd)"] == (2, 5, 2, 3)
    assert named["queries @ keys.transpose(2, 3)"] == (2, 2, 5, 5)
    assert steps[-1] == ("out_proj(...)", tuple(mha(x).shape))
    with pytest.raises(ValueError, match="d_in is 4, expected d_in = 3"):
        mha_step_shapes(mha, torch.rand(2, 5, 4))


def test_mha_errors():
    msg = r"d_out \(6\) must be divisible by num_heads \(4\)"
    with pytest.raises(ValueError, match=msg):
        MultiHeadAttention(3, 6, 8, 0.0, num_heads=4)
    with pytest.raises(ValueError, match="num_heads must be an int >= 1, got 0"):
        MultiHeadAttention(3, 6, 8, 0.0, num_heads=0)
    with pytest.raises(ValueError, match="num_heads must be an int >= 1, got 0"):
        MultiHeadAttentionWrapper(3, 6, 8, 0.0, num_heads=0)
    with pytest.raises(ValueError, match=r"dropout must be a finite number in \[0, 1\)"):
        MultiHeadAttention(3, 6, 8, 1.5, num_heads=2)
    with pytest.raises(ValueError, match="context_length must be an int >= 1, got 0"):
        CausalAttention(3, 6, 0, 0.0)


@pytest.mark.parametrize("name", list(MODULES))
def test_input_checks(name):
    module = MODULES[name]()
    with pytest.raises(ValueError, match=r"expected 1 <= seq_len <= context_length \(8\)"):
        module(torch.rand(1, 9, 4))
    with pytest.raises(ValueError, match="d_in is 5, expected d_in = 4"):
        module(torch.rand(1, 3, 5))
    with pytest.raises(ValueError, match="got a 2-D tensor"):
        module(torch.rand(3, 4))


@pytest.mark.parametrize(
    "make",
    [
        lambda: SelfAttentionV1(4, 6),
        lambda: SelfAttentionV2(4, 6, qkv_bias=True),
        lambda: MODULES["CausalAttention"](),
        lambda: MODULES["MultiHeadAttentionWrapper"](),
        lambda: MultiHeadAttention(4, 6, 8, 0.0, 2, qkv_bias=True),
    ],
)
def test_gradients_reach_every_parameter(make):
    torch.manual_seed(0)
    module = make()
    x = torch.rand(2, 5, 4, requires_grad=True)
    module(x).square().sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    for name, param in module.named_parameters():
        assert param.grad is not None, name
        assert torch.isfinite(param.grad).all(), name
        assert param.grad.abs().sum() > 0, name


def test_dot_T_on_a_batch_reverses_every_dim():
    torch.manual_seed(0)
    keys = torch.rand(3, 3, 3)  # batch = tokens = features: .T does not fail
    queries = torch.rand(3, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flipped = keys.T
    assert torch.equal(flipped, keys.permute(2, 1, 0))
    assert not torch.allclose(queries @ flipped, queries @ keys.transpose(1, 2))


def test_source_markdown_highlights_what_changed():
    from llmlab.attention import source_markdown
    from llmlab.attention.display import _ranges

    assert _ranges([1, 2, 3, 7, 9, 10]) == "1-3 7 9-10"
    text = source_markdown(SelfAttentionV2, SelfAttentionV1, title="v2.py")
    first = text.splitlines()[0]
    assert first.startswith('```python title="v2.py" hl_lines="')
    assert "class SelfAttentionV2(nn.Module):" in text
    assert text.rstrip().endswith("```")
    assert "hl_lines" not in source_markdown(SelfAttentionV1)
