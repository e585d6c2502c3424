import math

from llmlab.experiments import building_blocks as bb


def test_init_statistics():
    r = bb.run_init_statistics(linear_shapes=((64, 32),), embedding_shape=(100, 8))
    assert r.names == ["Linear(64, 32)", "Embedding(100, 8)"]
    assert all(a <= c for a, c in zip(r.max_abs, r.cut))
    assert all(p < t for p, t in zip(r.predicted_std, r.target_std))


def test_norm_comparison():
    r = bb.run_norm_comparison(d_model=32, n_rows=4)
    assert r.max_diff_layernorm < 1e-4 and r.max_diff_rmsnorm < 1e-4
    assert abs(r.mean[1]) < 1e-4 and abs(r.rms[2] - 1) < 1e-3
    assert r.parameters[1:] == [64, 32]


def test_low_precision_norm():
    r = bb.run_low_precision_norm(d_model=64, n_rows=2)
    naive16, up16 = r.row("float16", "input_dtype"), r.row("float16", "float32")
    assert r.n_zero[naive16] == r.n_total
    assert r.n_inf[up16] == r.n_nan[up16] == r.n_zero[up16] == 0
    bf = r.row("bfloat16", "input_dtype")
    assert r.n_inf[bf] == r.n_nan[bf] == 0


def test_flops_vs_runtime_small():
    r = bb.run_flops_vs_runtime.uncached(seq_len=16, d_model=64, d_head=16,
                                         min_run_time=0.01)
    assert r.ops[0] == "matmul" and set(r.ops) == {"matmul", "RMSNorm", "LayerNorm",
                                                   "softmax", "GELU"}
    assert set(r.impls) == {"torch", "llmlab"}
    for impl in ("torch", "llmlab"):
        layer = r.layer(impl)
        assert len(layer) == 5 and {r.ops[i] for i in layer} == set(r.ops)
        shares = r.shares(impl)
        assert math.isclose(sum(f for f, _ in shares.values()), 1)
        assert math.isclose(sum(t for _, t in shares.values()), 1)
    assert r.impls[r.index("RMSNorm", "llmlab")] == "llmlab"
    assert r.intensity[0] > max(r.intensity[1:])
    assert all(s > 0 for s in r.seconds) and r.ridge > 0
    assert bb.run_flops_vs_runtime.machine_dependent


def test_activation_values():
    r = bb.run_activation_values(points=(-1.0, 0.0, 2.0), n_grid=11)
    assert r.values["ReLU"] == [0.0, 0.0, 2.0]
    assert r.values["SiLU"][0] < 0 and r.values["GELU"][0] < 0


def test_ffn_parity():
    r = bb.run_ffn_parity(d_models=(768,))
    assert r.relu_params == r.swiglu_params == [4_718_592]
    assert r.swiglu_d_ff == [2048]


def test_rope_check():
    r = bb.run_rope_check(d_k=16, seq_len=6)
    assert r.max_diagonal_spread < 1e-4 * r.score_range
    assert r.max_diff_complex < 1e-5
    assert len(r.frequencies) == 8


def test_attention_check():
    r = bb.run_attention_check(d_model=16, num_heads=2, seq_len=5, batch=1)
    assert max(r.max_abs_diff) < 1e-5 and r.past_unchanged


def test_parameter_check():
    r = bb.run_parameter_check(names=("LLAMA_TOY",))
    assert r.formula == r.code


# --- the lecture's diagrams (drawn by llmlab.report.diagrams) ------------------------
def test_block_parts_are_read_off_the_models():
    r = bb.run_block_parts.uncached()
    g, m = r.gpt2, r.llama
    assert (g["norm"], m["norm"]) == ("LayerNorm", "RMSNorm")
    assert (g["ffn"], m["ffn"]) == ("MLP", "SwiGLU")
    assert "GELU" in g["ffn_parts"] and m["ffn_parts"] == ["w1", "w2", "w3"]
    assert g["embeddings"] == ["tok_emb", "pos_emb"] and m["embeddings"] == ["token_embeddings"]
    assert (g["rope"], m["rope"]) == (None, "RotaryPositionalEmbedding")
    assert m["attn"] == ["q_proj", "k_proj", "v_proj", "output_proj"]
    assert g["linear_biases"] == 4 and m["linear_biases"] == 0
    assert bb.run_block_parts.uncached(seed=1) == r  # names, not weights: any seed


def test_rope_rotation_is_the_module_s():
    import torch

    from llmlab.position import RotaryPositionalEmbedding, rope_complex, rope_frequencies

    positions, d_k, theta = (0, 1, 2, 5), 8, 10_000.0
    r = bb.run_rope_rotation.uncached(positions=positions, d_k=d_k, theta=theta, pairs=(0, 3))
    assert (r.positions, r.d_k, r.theta, r.pairs) == (list(positions), d_k, theta, [0, 3])
    freqs = rope_frequencies(theta, d_k)
    assert r.freqs == [float(freqs[0]), float(freqs[3])]
    assert r.freqs[0] == 1.0 and r.freqs[1] < r.freqs[0]  # pair 0 turns 1 rad, later ones slower
    x = torch.zeros(len(positions), d_k)
    x[:, 0::2] = 1.0
    m = torch.tensor(positions)
    assert set(r.rotated) == {0, 3}
    for k in (0, 3):
        assert r.rotated[k].shape == (len(positions), 2)
        angle = m.double() * freqs[k]
        expected = torch.stack([angle.cos(), angle.sin()], dim=-1).float()
        torch.testing.assert_close(r.rotated[k], expected)
        torch.testing.assert_close(r.rotated[k].norm(dim=-1), torch.ones(len(positions)))
        pair = slice(2 * k, 2 * k + 2)
        torch.testing.assert_close(r.rotated[k], rope_complex(x, m, theta)[:, pair])
        rope = RotaryPositionalEmbedding(theta, d_k, 6)
        torch.testing.assert_close(r.rotated[k], rope(x, m)[:, pair])
