import math

import pytest
import torch
from torch import nn

from llmlab.layers import Embedding, Linear, trunc_normal_std


def test_linear_shape_and_weight_layout():
    lin = Linear(16, 8)
    assert lin.weight.shape == (8, 16)
    assert list(lin.state_dict()) == ["weight"]
    assert lin(torch.randn(2, 3, 16)).shape == (2, 3, 8)


def test_linear_matches_nn_linear_without_bias():
    torch.manual_seed(0)
    lin = Linear(32, 12)
    ref = nn.Linear(32, 12, bias=False)
    ref.load_state_dict(lin.state_dict())
    x = torch.randn(4, 5, 32)
    torch.testing.assert_close(lin(x), ref(x))


def test_linear_is_one_matrix_product_forward_and_backward():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.__name__.split(".")[0])
            return func(*args, **(kwargs or {}))

    lin, x = Linear(16, 8), torch.randn(2, 3, 16, requires_grad=True)
    with Ops() as ops:
        lin(x).sum().backward()
    # the leading dims fold into one (6, 16) @ (16, 8) product, and so do both gradients
    assert ops.names.count("mm") == 3 and "bmm" not in ops.names
    assert x.grad.shape == x.shape and lin.weight.grad.shape == lin.weight.shape


def test_linear_init_is_truncated_normal():
    torch.manual_seed(0)
    lin = Linear(512, 256)
    std = math.sqrt(2 / (512 + 256))
    assert lin.weight.abs().max() <= 3 * std
    assert lin.weight.std() < std  # truncation shrinks the spread
    assert lin.weight.std().item() == pytest.approx(trunc_normal_std(std), rel=0.02)
    assert abs(lin.weight.mean().item()) < 0.01 * std


def test_trunc_normal_std_known_value():
    # σ√(1 − 2·3·φ(3)/(2Φ(3)−1)) ≈ 0.98658σ
    assert trunc_normal_std(1.0) == pytest.approx(0.98658, abs=1e-4)
    assert trunc_normal_std(2.0) == pytest.approx(2 * trunc_normal_std(1.0))


def test_linear_dtype_and_meta_device():
    lin = Linear(8, 4, dtype=torch.bfloat16)
    assert lin.weight.dtype == torch.bfloat16
    assert lin(torch.randn(3, 8, dtype=torch.bfloat16)).dtype == torch.bfloat16
    meta = Linear(4096, 4096, device="meta")
    assert meta.weight.device.type == "meta" and meta.weight.numel() == 4096 * 4096


def test_linear_rejects_wrong_feature_size():
    with pytest.raises(ValueError, match="in_features"):
        Linear(8, 4)(torch.randn(2, 7))
    with pytest.raises(ValueError, match="in_features must be an int >= 1, got 0"):
        Linear(0, 4)


def test_embedding_lookup_matches_nn_embedding():
    torch.manual_seed(0)
    emb = Embedding(100, 16)
    ref = nn.Embedding(100, 16)
    ref.load_state_dict(emb.state_dict())
    ids = torch.tensor([[1, 5, 5, 99], [0, 2, 3, 4]])
    out = emb(ids)
    assert out.shape == (2, 4, 16)
    torch.testing.assert_close(out, ref(ids))
    assert torch.equal(out[0, 1], out[0, 2])


def test_embedding_init():
    torch.manual_seed(0)
    emb = Embedding(1000, 64)
    assert emb.weight.abs().max() <= 3.0
    assert emb.weight.std().item() == pytest.approx(trunc_normal_std(1.0), rel=0.02)


def test_embedding_rejects_bad_ids():
    emb = Embedding(10, 4)
    with pytest.raises(ValueError, match=r"\[0, 10\)"):
        emb(torch.tensor([0, 10]))
    with pytest.raises(ValueError, match="num_embeddings"):
        emb(torch.tensor([-1, 3]))
    with pytest.raises(ValueError, match="token_ids must be an integer tensor"):
        emb(torch.tensor([1.0, 2.0]))
