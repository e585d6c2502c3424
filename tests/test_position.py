import pytest
import torch

from llmlab.position import RotaryPositionalEmbedding, rope_complex, rope_frequencies


def test_frequencies():
    f = rope_frequencies(10_000.0, 8)
    k = torch.arange(4, dtype=torch.float64)
    torch.testing.assert_close(f, 10_000.0 ** (-k / 4))
    assert f[0] == 1.0


def test_position_zero_is_identity_and_norm_preserved():
    torch.manual_seed(0)
    rope = RotaryPositionalEmbedding(10_000.0, 16, 32)
    x = torch.randn(2, 32, 16)
    y = rope(x, torch.arange(32))
    assert y.shape == x.shape
    torch.testing.assert_close(y[:, 0], x[:, 0])
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))


def test_rotates_adjacent_pairs():
    rope = RotaryPositionalEmbedding(10_000.0, 4, 8)
    x = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    y = rope(x, torch.tensor([1]))  # pair 0 turns by 1 radian
    one = torch.tensor(1.0)
    torch.testing.assert_close(y[0, :2], torch.stack([one.cos(), one.sin()]))
    assert y[0, 2:].abs().max() == 0


def test_matches_complex_formulation():
    torch.manual_seed(0)
    rope = RotaryPositionalEmbedding(500.0, 32, 64)
    x = torch.randn(3, 4, 20, 32)
    pos = torch.randint(0, 64, (3, 1, 20))
    expected = rope_complex(x, pos, 500.0)
    torch.testing.assert_close(rope(x, pos), expected, atol=1e-5, rtol=1e-5)


def test_dot_product_depends_only_on_offset():
    torch.manual_seed(0)
    rope = RotaryPositionalEmbedding(10_000.0, 64, 40)
    q, k = torch.randn(2, 1, 64, dtype=torch.float64).float()
    s = lambda m, n: (rope(q, torch.tensor([m])) * rope(k, torch.tensor([n]))).sum()
    for m, n in [(3, 1), (10, 8), (39, 37)]:
        torch.testing.assert_close(s(m, n), s(2, 0), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(s(3, 1), s(3, 0), atol=1e-3)


def test_packed_sequences_restart_positions():
    torch.manual_seed(0)
    rope = RotaryPositionalEmbedding(10_000.0, 8, 16)
    a, b = torch.randn(3, 8), torch.randn(5, 8)
    packed = rope(torch.cat([a, b]), torch.tensor([0, 1, 2, 0, 1, 2, 3, 4]))
    torch.testing.assert_close(packed[:3], rope(a, torch.arange(3)))
    torch.testing.assert_close(packed[3:], rope(b, torch.arange(5)))


def test_dtype_and_state_dict():
    rope = RotaryPositionalEmbedding(10_000.0, 8, 16)
    assert list(rope.state_dict()) == []  # tables are non-persistent buffers
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    assert rope(x, torch.arange(4)).dtype == torch.bfloat16


def test_errors():
    with pytest.raises(ValueError, match="d_k must be even"):
        RotaryPositionalEmbedding(10_000.0, 7, 16)
    rope = RotaryPositionalEmbedding(10_000.0, 8, 16)
    with pytest.raises(ValueError, match="max_seq_len"):
        rope(torch.randn(2, 8), torch.tensor([3, 16]))
    with pytest.raises(ValueError, match="d_k=8"):
        rope(torch.randn(2, 6), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="seq_len"):
        rope(torch.randn(3, 8), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="token_positions must be an integer tensor"):
        rope(torch.randn(2, 8), torch.tensor([0.0, 1.0]))
