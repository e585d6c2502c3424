"""Property-based tests (hypothesis) for the shape logic of attention and norms.

For random batch sizes, sequence lengths, widths and head counts (with the
divisibility the modules require): every attention variant returns the shape it
promises; every causal variant's output at position ``t`` ignores inputs after
``t``; norms keep the input's shape; RMSNorm ignores a positive scale of its
input; LayerNorm ignores a constant added to it. Examples are few and small so
the file runs in seconds.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import llmlab.models.gpt2 as gpt2
import llmlab.models.llama as llama
from llmlab.attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    simple_self_attention,
)
from llmlab.functional import causal_mask, scaled_dot_product_attention
from llmlab.norm import LayerNorm, RMSNorm

torch.set_num_threads(1)

# derandomize: the same examples on every run, so CI cannot flake
FAST = settings(max_examples=25, deadline=None, derandomize=True)


@st.composite
def attention_sizes(draw: st.DrawFn) -> dict[str, int]:
    """batch, T, context_length >= T, d_in, heads and d_out = heads * d_head."""
    heads = draw(st.integers(1, 4))
    d_head = draw(st.sampled_from([2, 4]))  # even: RoPE rotates pairs
    T = draw(st.integers(1, 8))
    return {
        "batch": draw(st.integers(1, 3)),
        "T": T,
        "context_length": T + draw(st.integers(0, 4)),
        "d_in": draw(st.integers(1, 8)),
        "heads": heads,
        "d_head": d_head,
        "d_out": heads * d_head,
        "seed": draw(st.integers(0, 2**16)),
    }


# name -> (build(sizes) -> module, expected output width, is causal)
Build = Callable[[dict[str, int]], nn.Module]
VARIANTS: dict[str, tuple[Build, Callable[[dict[str, int]], int], bool]] = {
    "SelfAttentionV1": (lambda s: SelfAttentionV1(s["d_in"], s["d_out"]),
                        lambda s: s["d_out"], False),
    "SelfAttentionV2": (lambda s: SelfAttentionV2(s["d_in"], s["d_out"]),
                        lambda s: s["d_out"], False),
    "CausalAttention": (lambda s: CausalAttention(s["d_in"], s["d_out"],
                                                  s["context_length"], 0.0),
                        lambda s: s["d_out"], True),
    "MultiHeadAttentionWrapper": (
        lambda s: MultiHeadAttentionWrapper(s["d_in"], s["d_head"],
                                            s["context_length"], 0.0, s["heads"]),
        lambda s: s["heads"] * s["d_head"], True),
    "MultiHeadAttention": (
        lambda s: MultiHeadAttention(s["d_in"], s["d_out"], s["context_length"], 0.0,
                                     s["heads"]),
        lambda s: s["d_out"], True),
    # the model-family modules map d_model -> d_model: their d_in is d_out
    "gpt2.MultiHeadSelfAttention": (
        lambda s: gpt2.MultiHeadSelfAttention(s["d_out"], s["heads"]),
        lambda s: s["d_out"], True),
    "gpt2.MultiHeadSelfAttention(causal=False)": (
        lambda s: gpt2.MultiHeadSelfAttention(s["d_out"], s["heads"], causal=False),
        lambda s: s["d_out"], False),
    "llama.MultiHeadSelfAttention": (
        lambda s: llama.MultiHeadSelfAttention(s["d_out"], s["heads"]),
        lambda s: s["d_out"], True),
    "llama.MultiHeadSelfAttention+RoPE": (
        lambda s: llama.MultiHeadSelfAttention(s["d_out"], s["heads"], theta=1e4,
                                               max_seq_len=s["context_length"]),
        lambda s: s["d_out"], True),
}
CAUSAL = [name for name, (_, _, causal) in VARIANTS.items() if causal]


def _input_width(name: str, s: dict[str, int]) -> int:
    return s["d_out"] if name.startswith(("gpt2", "llama")) else s["d_in"]


def _module(name: str, s: dict[str, int]) -> nn.Module:
    torch.manual_seed(s["seed"])
    return VARIANTS[name][0](s).eval()


@pytest.mark.parametrize("name", list(VARIANTS))
@FAST
@given(s=attention_sizes())
def test_attention_output_shape(name: str, s: dict[str, int]) -> None:
    module = _module(name, s)
    x = torch.randn(s["batch"], s["T"], _input_width(name, s))
    with torch.no_grad():
        out = module(x)
    assert out.shape == (s["batch"], s["T"], VARIANTS[name][1](s))
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", CAUSAL)
@FAST
@given(s=attention_sizes(), data=st.data())
def test_causal_output_ignores_the_future(name: str, s: dict[str, int],
                                          data: st.DataObject) -> None:
    t = data.draw(st.integers(0, s["T"] - 1), label="t")
    module = _module(name, s)
    x = torch.randn(s["batch"], s["T"], _input_width(name, s))
    changed = x.clone()
    changed[:, t + 1:] = 10 * torch.randn_like(changed[:, t + 1:])  # a different future
    with torch.no_grad():
        before, after = module(x), module(changed)
    torch.testing.assert_close(before[:, : t + 1], after[:, : t + 1])


@FAST
@given(s=attention_sizes(), n_keys=st.integers(1, 8), d_v=st.integers(1, 6))
def test_scaled_dot_product_attention_shapes(s: dict[str, int], n_keys: int,
                                             d_v: int) -> None:
    lead = (s["batch"], s["heads"])
    Q = torch.randn(*lead, s["T"], s["d_head"])
    K = torch.randn(*lead, n_keys, s["d_head"])
    V = torch.randn(*lead, n_keys, d_v)
    assert scaled_dot_product_attention(Q, K, V).shape == (*lead, s["T"], d_v)


@FAST
@given(s=attention_sizes(), data=st.data())
def test_functional_attention_with_causal_mask_ignores_the_future(
    s: dict[str, int], data: st.DataObject
) -> None:
    t = data.draw(st.integers(0, s["T"] - 1), label="t")
    torch.manual_seed(s["seed"])
    Q, K, V = (torch.randn(s["batch"], s["T"], s["d_head"]) for _ in range(3))
    K2, V2 = K.clone(), V.clone()
    K2[:, t + 1:] += 5.0
    V2[:, t + 1:] -= 5.0
    mask = causal_mask(s["T"])
    out = scaled_dot_product_attention(Q, K, V, mask)
    out2 = scaled_dot_product_attention(Q, K2, V2, mask)
    torch.testing.assert_close(out[:, : t + 1], out2[:, : t + 1])


@FAST
@given(batch=st.integers(1, 3), T=st.integers(1, 8), d=st.integers(1, 8))
def test_simple_self_attention_shapes(batch: int, T: int, d: int) -> None:
    scores, weights, context = simple_self_attention(torch.rand(batch, T, d))
    assert scores.shape == weights.shape == (batch, T, T)
    assert context.shape == (batch, T, d)


# --------------------------------------------------------------------------
# norms
# --------------------------------------------------------------------------
shapes = st.lists(st.integers(1, 5), min_size=0, max_size=3)
NORMS = {"RMSNorm": RMSNorm, "LayerNorm": LayerNorm}


@pytest.mark.parametrize("name", list(NORMS))
@FAST
@given(lead=shapes, d=st.integers(1, 16),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16]))
def test_norm_keeps_shape_and_dtype(name: str, lead: list[int], d: int,
                                    dtype: torch.dtype) -> None:
    x = torch.randn(*lead, d).to(dtype)
    y = NORMS[name](d)(x)
    assert y.shape == x.shape and y.dtype == x.dtype


@FAST
@given(lead=shapes, d=st.integers(2, 16), c=st.floats(0.5, 50.0),
       seed=st.integers(0, 2**16))
def test_rms_norm_ignores_a_positive_scale(lead: list[int], d: int, c: float,
                                           seed: int) -> None:
    torch.manual_seed(seed)
    x = torch.randn(*lead, d)
    x = x + 0.5 * torch.sign(x)  # every |x_i| >= 0.5: RMS(x)² far above eps
    norm = RMSNorm(d)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(d))
        # up to eps: RMS(c·x) = c·RMS(x) only when eps is negligible next to RMS(x)²
        torch.testing.assert_close(norm(c * x), norm(x), rtol=1e-3, atol=2e-3)


@FAST
@given(lead=shapes, d=st.integers(2, 16), shift=st.floats(-20.0, 20.0),
       seed=st.integers(0, 2**16))
def test_layer_norm_ignores_an_added_constant(lead: list[int], d: int, shift: float,
                                              seed: int) -> None:
    torch.manual_seed(seed)
    # spread out along d, so the variance is far above eps and rounding
    x = 0.5 * torch.rand(*lead, d) + torch.linspace(-1, 1, d)
    norm = LayerNorm(d)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(d))
        norm.bias.copy_(torch.randn(d))
        torch.testing.assert_close(norm(x + shift), norm(x), rtol=1e-3, atol=2e-3)
