import pytest
import torch
import torch.nn.functional as F

from llmlab.feed_forward import ReLUFFN, SwiGLU, gelu, relu, silu, swiglu_hidden_dim
from llmlab.params import count_parameters


def test_activations_match_torch():
    x = torch.linspace(-6, 6, 101)
    torch.testing.assert_close(relu(x), F.relu(x))
    torch.testing.assert_close(gelu(x), F.gelu(x))
    torch.testing.assert_close(silu(x), F.silu(x))


@pytest.mark.parametrize(
    ("d_model", "expected"), [(512, 1408), (768, 2048), (1024, 2752), (4096, 10944)]
)
def test_swiglu_hidden_dim(d_model, expected):
    d_ff = swiglu_hidden_dim(d_model)
    assert d_ff == expected
    assert d_ff % 64 == 0 and d_ff >= 8 * d_model // 3


def test_swiglu_hidden_dim_rejects_nonpositive():
    with pytest.raises(ValueError, match="d_model"):
        swiglu_hidden_dim(0)


def test_parameter_parity_at_768():
    relu_ffn, swiglu = ReLUFFN(768), SwiGLU(768)
    assert count_parameters(relu_ffn) == count_parameters(swiglu) == 4_718_592


def test_swiglu_matches_formula_and_keys():
    torch.manual_seed(0)
    ffn = SwiGLU(16, 48)
    assert list(ffn.state_dict()) == ["w1.weight", "w2.weight", "w3.weight"]
    assert ffn.w1.weight.shape == (48, 16) and ffn.w2.weight.shape == (16, 48)
    x = torch.randn(2, 5, 16)
    w1, w2, w3 = ffn.w1.weight, ffn.w2.weight, ffn.w3.weight
    expected = (F.silu(x @ w1.T) * (x @ w3.T)) @ w2.T
    torch.testing.assert_close(ffn(x), expected)


def test_relu_ffn_matches_formula():
    torch.manual_seed(0)
    ffn = ReLUFFN(8)
    assert ffn.w1.weight.shape == (32, 8)
    x = torch.randn(3, 8)
    torch.testing.assert_close(ffn(x), F.relu(x @ ffn.w1.weight.T) @ ffn.w2.weight.T)


def test_ffn_rejects_wrong_input_size():
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., d_model=16\)"):
        SwiGLU(16)(torch.randn(2, 15))
