import pytest
import torch
from torch import nn

from llmlab.norm import LayerNorm, RMSNorm, rms_norm


@pytest.fixture
def x():
    torch.manual_seed(0)
    return torch.randn(4, 6, 32) * 3 + 5


def test_layernorm_matches_nn_layernorm(x):
    ours = LayerNorm(32)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
        ours.bias.uniform_(-1, 1)
    ref = nn.LayerNorm(32, eps=1e-5)
    ref.load_state_dict(ours.state_dict())  # same names: weight, bias
    torch.testing.assert_close(ours(x), ref(x), atol=1e-5, rtol=1e-5)


def test_rmsnorm_matches_nn_rmsnorm(x):
    ours = RMSNorm(32)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
    ref = nn.RMSNorm(32, eps=1e-5)
    ref.load_state_dict(ours.state_dict())
    torch.testing.assert_close(ours(x), ref(x), atol=1e-5, rtol=1e-5)


def test_output_statistics(x):
    yl, yr = LayerNorm(32)(x), RMSNorm(32)(x)
    torch.testing.assert_close(yl.mean(-1), torch.zeros(4, 6), atol=1e-5, rtol=0)
    ones = torch.ones(4, 6)
    torch.testing.assert_close(yl.std(-1, unbiased=False), ones, atol=1e-3, rtol=0)
    torch.testing.assert_close(yr.pow(2).mean(-1).sqrt(), ones, atol=1e-3, rtol=0)
    assert yr.mean() > 0.5  # RMSNorm keeps the positive shift


def test_parameter_counts_and_keys():
    assert list(LayerNorm(16).state_dict()) == ["weight", "bias"]
    assert list(RMSNorm(16).state_dict()) == ["weight"]
    assert sum(p.numel() for p in RMSNorm(16).parameters()) == 16
    assert sum(p.numel() for p in LayerNorm(16).parameters()) == 32


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_returns_input_dtype(dtype):
    x = torch.randn(3, 16).to(dtype)
    assert RMSNorm(16)(x).dtype == dtype
    assert LayerNorm(16)(x).dtype == dtype


def test_fp16_overflow_naive_vs_upcast():
    torch.manual_seed(0)
    x = (torch.randn(2, 1024) * 300).half()
    naive = rms_norm(x, upcast=False)
    good = RMSNorm(1024)(x)
    assert (naive == 0).all()  # x² overflows to inf, x · rsqrt(inf) = x · 0
    assert torch.isfinite(good).all() and (good != 0).any()
    ref = rms_norm(x.double(), upcast=False)
    torch.testing.assert_close(good.double(), ref, atol=2e-3, rtol=2e-3)


def test_rejects_wrong_last_dim():
    with pytest.raises(ValueError, match="d_model"):
        RMSNorm(8)(torch.randn(2, 7))
    with pytest.raises(ValueError, match="d_model"):
        LayerNorm(8)(torch.randn(2, 9))
