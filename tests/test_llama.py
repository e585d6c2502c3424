import dataclasses

import pytest
import torch
import torch.nn.functional as F

from llmlab.generation import generate
from llmlab.kv_cache import KVCache
from llmlab.models.llama import (
    CS336_TINYSTORIES,
    LLAMA2_70B,
    LLAMA2_7B,
    LLAMA_TOY,
    LlamaConfig,
    MultiHeadSelfAttention,
    TransformerBlock,
    TransformerLM,
)
from llmlab.layers import Linear
from llmlab.params import count_parameters
from llmlab.position import rope_complex


def _sdpa_reference(attn, x, positions=None):
    b, t, _ = x.shape
    heads = lambda y: y.view(b, t, attn.num_heads, -1).transpose(1, 2)
    q, k, v = (heads(x @ p.weight.T) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
    if positions is not None:
        q = rope_complex(q, positions, attn.rope.theta)
        k = rope_complex(k, positions, attn.rope.theta)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return out.transpose(1, 2).reshape(b, t, -1) @ attn.output_proj.weight.T


def test_attention_matches_sdpa_without_rope():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(32, 4)
    x = torch.randn(2, 7, 32)
    torch.testing.assert_close(attn(x), _sdpa_reference(attn, x), atol=1e-5, rtol=1e-5)


def test_attention_matches_sdpa_with_rope():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(32, 4, theta=10_000.0, max_seq_len=16)
    x = torch.randn(2, 9, 32)
    pos = torch.arange(9)
    expected = _sdpa_reference(attn, x, pos)
    torch.testing.assert_close(attn(x, pos), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(attn(x), expected, atol=1e-5, rtol=1e-5)  # default


def test_attention_is_causal():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(16, 2, theta=10_000.0, max_seq_len=8)
    x = torch.randn(1, 6, 16)
    y = x.clone()
    y[:, 4:] = torch.randn(1, 2, 16)
    torch.testing.assert_close(attn(x)[:, :4], attn(y)[:, :4])
    assert not torch.allclose(attn(x)[:, 4:], attn(y)[:, 4:])


def test_attention_state_dict_keys():
    keys = list(MultiHeadSelfAttention(16, 2, theta=1e4, max_seq_len=8).state_dict())
    names = ("q_proj", "k_proj", "v_proj", "output_proj")
    assert keys == [f"{n}.weight" for n in names]


def test_attention_errors():
    message = r"d_model \(10\) must be divisible by num_heads \(4\)"
    with pytest.raises(ValueError, match=message):
        MultiHeadSelfAttention(10, 4)
    with pytest.raises(ValueError, match="max_seq_len"):
        MultiHeadSelfAttention(16, 2, theta=1e4)
    with pytest.raises(ValueError, match=r"d_head\) must be even \(RoPE rotates pairs of dimensions\), got 3"):
        MultiHeadSelfAttention(12, 4, theta=1e4, max_seq_len=8)  # d_head = 3
    attn = MultiHeadSelfAttention(16, 2, theta=1e4, max_seq_len=4)
    with pytest.raises(ValueError, match="max_seq_len"):
        attn(torch.randn(1, 5, 16))
    with pytest.raises(ValueError, match=r"x must have shape .*d_model=16"):
        attn(torch.randn(1, 3, 15))


def test_block_is_pre_norm_residual():
    torch.manual_seed(0)
    block = TransformerBlock(16, 2, 48, max_seq_len=8, theta=1e4)
    x = torch.randn(2, 5, 16)
    h = x + block.attn(block.ln1(x))
    torch.testing.assert_close(block(x), h + block.ffn(block.ln2(h)))
    assert list(block.state_dict()) == [
        "ln1.weight", "attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight",
        "attn.output_proj.weight", "ln2.weight", "ffn.w1.weight", "ffn.w2.weight",
        "ffn.w3.weight",
    ]


def test_lm_forward_shapes_and_keys():
    torch.manual_seed(0)
    model = TransformerLM.from_config(LLAMA_TOY)
    ids = torch.randint(0, LLAMA_TOY.vocab_size, (2, 10))
    logits = model(ids)
    assert logits.shape == (2, 10, LLAMA_TOY.vocab_size)
    keys = list(model.state_dict())
    assert keys[0] == "token_embeddings.weight"
    assert keys[-2:] == ["ln_final.weight", "lm_head.weight"]
    assert "layers.1.ffn.w3.weight" in keys
    assert len(keys) == 1 + 9 * LLAMA_TOY.num_layers + 2


def test_lm_state_dict_round_trip():
    torch.manual_seed(0)
    a = TransformerLM.from_config(LLAMA_TOY)
    torch.manual_seed(1)
    b = TransformerLM.from_config(LLAMA_TOY)
    ids = torch.randint(0, LLAMA_TOY.vocab_size, (1, 8))
    assert not torch.allclose(a(ids), b(ids))
    b.load_state_dict(a.state_dict())
    torch.testing.assert_close(a(ids), b(ids))


def test_lm_is_causal():
    torch.manual_seed(0)
    model = TransformerLM.from_config(LLAMA_TOY)
    ids = torch.randint(0, LLAMA_TOY.vocab_size, (1, 8))
    other = ids.clone()
    other[0, -1] = (ids[0, -1] + 1) % LLAMA_TOY.vocab_size
    torch.testing.assert_close(model(ids)[:, :-1], model(other)[:, :-1])


def test_lm_errors():
    model = TransformerLM.from_config(LLAMA_TOY)
    with pytest.raises(ValueError, match="context_length"):
        model(torch.zeros(1, LLAMA_TOY.context_length + 1, dtype=torch.long))
    with pytest.raises(ValueError, match=r"in_indices must lie in \[0, 512\) \(vocab_size\)"):
        model(torch.tensor([[0, LLAMA_TOY.vocab_size]]))
    with pytest.raises(ValueError, match="divisible"):
        LlamaConfig(vocab_size=10, context_length=8, d_model=10, num_layers=1,
                    num_heads=3, d_ff=32)


GQA_TOY = dataclasses.replace(LLAMA_TOY, num_kv_heads=2)
MQA_TOY = dataclasses.replace(LLAMA_TOY, num_kv_heads=1)


@pytest.mark.parametrize("cfg", [LLAMA_TOY, CS336_TINYSTORIES, LLAMA2_7B, LLAMA2_70B,
                                 GQA_TOY, MQA_TOY])
def test_parameter_formula_matches_code(cfg):
    model = TransformerLM.from_config(cfg, device="meta")
    assert count_parameters(model) == cfg.parameter_count()
    parts = cfg.parameter_breakdown()  # by child module, each counted
    assert {name: count_parameters(getattr(model, name)) for name in parts} == parts
    assert sum(parts.values()) == cfg.parameter_count()
    # the weights that multiply an activation: every Linear's (not the lookup table)
    matmul = sum(m.weight.numel() for m in model.modules() if isinstance(m, Linear))
    assert matmul == cfg.matmul_parameter_count()
    assert cfg.matmul_parameter_count() < cfg.parameter_count()


def test_llama2_7b_count():
    assert LLAMA2_7B.parameter_count() == 6_738_415_616


def test_bf16_forward():
    torch.manual_seed(0)
    model = TransformerLM.from_config(LLAMA_TOY, dtype=torch.bfloat16)
    logits = model(torch.randint(0, LLAMA_TOY.vocab_size, (1, 6)))
    assert logits.dtype == torch.bfloat16 and torch.isfinite(logits).all()


def test_llama2_70b_count_and_grouped_heads():
    # the released Llama 2 70B: 68,976,648,192 parameters, 8 key/value heads for 64
    assert LLAMA2_70B.parameter_count() == 68_976_648_192
    assert (LLAMA2_70B.num_heads, LLAMA2_70B.kv_heads) == (64, 8)
    model = TransformerLM.from_config(LLAMA2_70B, device="meta")
    assert model.layers[0].attn.k_proj.weight.shape == (8 * 128, 8192)


def test_config_without_kv_heads_means_multi_head():
    # a config saved before grouped-query attention existed (no such field) loads as MHA
    fields = {k: v for k, v in dataclasses.asdict(LLAMA_TOY).items() if k != "num_kv_heads"}
    config = LlamaConfig(**fields)
    assert config.num_kv_heads is None and config.kv_heads == config.num_heads == 4
    # a copy with more heads stays multi-head (None is kept, not resolved)
    assert dataclasses.replace(LLAMA_TOY, num_heads=8).kv_heads == 8
    assert dataclasses.replace(GQA_TOY, num_heads=8).kv_heads == 2


@pytest.mark.parametrize("kv_heads", [1, 2, 4])
@pytest.mark.parametrize("rope", [False, True])
def test_grouped_query_attention_matches_torch_sdpa(kv_heads, rope):
    torch.manual_seed(kv_heads)
    attn = MultiHeadSelfAttention(32, 4, 1e4 if rope else None, 16 if rope else None,
                                  num_kv_heads=kv_heads)
    assert attn.k_proj.weight.shape == attn.v_proj.weight.shape == (kv_heads * 8, 32)
    x = torch.randn(2, 7, 32)
    b, t, _ = x.shape
    q = (x @ attn.q_proj.weight.T).view(b, t, 4, 8).transpose(1, 2)  # (B, 4, T, 8)
    k, v = ((x @ p.weight.T).view(b, t, kv_heads, 8).transpose(1, 2)
            for p in (attn.k_proj, attn.v_proj))  # (B, kv, T, 8)
    if rope:
        positions = torch.arange(t)
        q, k = (rope_complex(y, positions, 1e4) for y in (q, k))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    expected = out.transpose(1, 2).reshape(b, t, 32) @ attn.output_proj.weight.T
    torch.testing.assert_close(attn(x), expected, atol=1e-5, rtol=1e-5)


def test_grouped_model_equals_multi_head_model_with_copied_kv_heads():
    torch.manual_seed(0)
    grouped = TransformerLM.from_config(GQA_TOY)  # 4 query heads, 2 kv heads
    full = TransformerLM.from_config(LLAMA_TOY)
    state = grouped.state_dict()
    for name, tensor in state.items():
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            # kv head j serves query heads 2j and 2j + 1: copy its rows to both
            state[name] = tensor.view(2, 16, 64).repeat_interleave(2, dim=0).reshape(64, 64)
    full.load_state_dict(state)
    ids = torch.randint(0, LLAMA_TOY.vocab_size, (2, 20))
    torch.testing.assert_close(grouped(ids), full(ids), atol=1e-5, rtol=1e-5)


def test_grouped_kv_cache_keeps_only_the_kv_heads():
    torch.manual_seed(0)
    model = TransformerLM.from_config(MQA_TOY).eval()
    ids = torch.randint(0, MQA_TOY.vocab_size, (1, 9))
    cache = KVCache(MQA_TOY.num_layers, MQA_TOY.context_length)
    with torch.no_grad():
        first = model(ids[:, :6], kv_cache=cache)
        rest = model(ids[:, 6:], kv_cache=cache)
        whole = model(ids)
    assert cache.layers[0].keys.shape == (1, 1, 9, 16)  # one kv head, not four
    torch.testing.assert_close(torch.cat([first, rest], 1), whole, atol=1e-5, rtol=1e-5)
    assert cache.nbytes() == 2 * MQA_TOY.num_layers * 1 * 16 * 9 * 4
    prompt = ids[0, :3].tolist()
    assert (generate(model, prompt, 8, greedy=True)
            == generate(model, prompt, 8, greedy=True, use_kv_cache=False))
