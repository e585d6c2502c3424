"""llmlab.generation and the KV cache of the Llama-style model."""

from __future__ import annotations

import math

import pytest
import torch

from llmlab.generation import (
    KVCache,
    LayerKVCache,
    generate,
    kv_cache_bytes,
    next_token_probabilities,
    sample_next_token,
)
from llmlab.models.llama import MultiHeadSelfAttention, TransformerLM

torch.set_num_threads(1)

V, CONTEXT = 40, 24


def _lm(seed: int = 0, **kwargs) -> TransformerLM:
    torch.manual_seed(seed)
    settings = dict(vocab_size=V, context_length=CONTEXT, d_model=32, num_layers=3,
                    num_heads=4, d_ff=64)
    settings.update(kwargs)
    return TransformerLM(**settings).eval()


# --- the KV cache -------------------------------------------------------------------


@pytest.mark.parametrize("prompt_len", [1, 2, 7, 23])
def test_cached_logits_equal_full_recomputation(prompt_len):
    model = _lm()
    torch.manual_seed(1)
    ids = torch.randint(0, V, (2, CONTEXT))  # a batch of two sequences
    with torch.no_grad():
        full = model(ids)  # (2, CONTEXT, V), no cache
        cache = KVCache(len(model.layers), CONTEXT)
        steps = [model(ids[:, :prompt_len], kv_cache=cache)]  # prefill the prompt
        for t in range(prompt_len, CONTEXT):  # then one token at a time
            steps.append(model(ids[:, t:t + 1], kv_cache=cache))
    cached = torch.cat(steps, dim=1)
    assert cache.seq_len == CONTEXT
    torch.testing.assert_close(cached, full, atol=1e-5, rtol=1e-5)


def test_cached_chunks_of_several_tokens_also_agree():
    model = _lm(2)
    ids = torch.randint(0, V, (1, CONTEXT))
    with torch.no_grad():
        cache = KVCache(len(model.layers), CONTEXT)
        chunks = [model(ids[:, a:b], kv_cache=cache)
                  for a, b in ((0, 5), (5, 6), (6, 13), (13, CONTEXT))]
        torch.testing.assert_close(torch.cat(chunks, 1), model(ids), atol=1e-5,
                                   rtol=1e-5)


def test_attention_alone_with_a_cache_matches_without():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(16, 2, theta=10_000.0, max_seq_len=10)
    x = torch.randn(1, 10, 16)
    cache = LayerKVCache(10)
    out = torch.cat([attn(x[:, :4], kv_cache=cache)]
                    + [attn(x[:, t:t + 1], kv_cache=cache) for t in range(4, 10)], 1)
    torch.testing.assert_close(out, attn(x), atol=1e-5, rtol=1e-5)


def test_cache_refuses_to_grow_past_the_context():
    model = _lm()
    cache = KVCache(len(model.layers), CONTEXT)
    with torch.no_grad():
        model(torch.zeros(1, CONTEXT - 1, dtype=torch.long), kv_cache=cache)
        model(torch.zeros(1, 1, dtype=torch.long), kv_cache=cache)  # exactly full
        with pytest.raises(ValueError, match=r"kv_cache holds 24 tokens; 1 more would "
                                             r"exceed context_length \(24\)"):
            model(torch.zeros(1, 1, dtype=torch.long), kv_cache=cache)
    layer = LayerKVCache(3)
    layer.update(torch.zeros(1, 2, 2, 4), torch.zeros(1, 2, 2, 4))
    with pytest.raises(ValueError, match=r"kv_cache holds 2 tokens; adding 2 would "
                                         r"exceed max_seq_len \(3"):
        layer.update(torch.zeros(1, 2, 2, 4), torch.zeros(1, 2, 2, 4))


def test_cache_of_the_wrong_shape_is_refused():
    model = _lm()
    with pytest.raises(ValueError, match=r"kv_cache has 2 layers; the model has 3"):
        model(torch.zeros(1, 2, dtype=torch.long), kv_cache=KVCache(2, CONTEXT))
    with pytest.raises(TypeError, match=r"kv_cache must be a KVCache"):
        model(torch.zeros(1, 2, dtype=torch.long), kv_cache=[])
    with pytest.raises(ValueError, match=r"num_layers must be an int >= 1"):
        KVCache(0, 8)
    with pytest.raises(ValueError, match=r"max_seq_len must be an int >= 1"):
        KVCache(2, 0)


@pytest.mark.parametrize("dtype, batch", [(torch.float32, 1), (torch.float32, 3),
                                          (torch.bfloat16, 2)])
def test_memory_formula_matches_the_tensors(dtype, batch):
    model = _lm(d_model=48, num_heads=6).to(dtype)
    cache = KVCache(len(model.layers), CONTEXT)
    with torch.no_grad():
        model(torch.zeros(batch, 10, dtype=torch.long), kv_cache=cache)
        model(torch.zeros(batch, 1, dtype=torch.long), kv_cache=cache)
    real = sum(t.nbytes for layer in cache.layers for t in (layer.keys, layer.values))
    formula = kv_cache_bytes(num_layers=3, num_heads=6, d_head=8, tokens=11,
                             bytes_per_element=dtype.itemsize, batch_size=batch)
    assert cache.nbytes() == real == formula
    assert formula == 2 * 3 * 6 * 8 * 11 * dtype.itemsize * batch
    assert kv_cache_bytes(3, 6, 8, 0) == 0


def test_memory_formula_bad_inputs():
    with pytest.raises(ValueError, match=r"tokens must be an int >= 0"):
        kv_cache_bytes(1, 1, 1, -1)
    with pytest.raises(TypeError, match=r"d_head must be an int"):
        kv_cache_bytes(1, 1, 2.0, 1)


def test_the_model_without_a_cache_is_unchanged():
    model = _lm()
    ids = torch.randint(0, V, (2, 9))
    with torch.no_grad():
        assert torch.equal(model(ids), model(ids, kv_cache=None))
    assert "kv_cache" not in "".join(model.state_dict())


# --- decoding rules -----------------------------------------------------------------


def test_temperature_sharpens_and_flattens():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    p1 = next_token_probabilities(logits)
    torch.testing.assert_close(p1, torch.softmax(logits, -1))
    cold = next_token_probabilities(logits, 0.5)
    hot = next_token_probabilities(logits, 2.0)
    assert cold[0] > p1[0] > hot[0] and cold[-1] < p1[-1] < hot[-1]
    torch.testing.assert_close(cold, torch.softmax(logits / 0.5, -1))


def test_top_k_keeps_the_k_best():
    logits = torch.tensor([0.1, 3.0, -2.0, 2.0, 1.0])
    probs = next_token_probabilities(logits, top_k=2)
    assert torch.equal(probs > 0, torch.tensor([False, True, False, True, False]))
    best_two = torch.softmax(torch.tensor([3.0, 2.0]), 0)
    torch.testing.assert_close(probs[[1, 3]], best_two)
    torch.testing.assert_close(next_token_probabilities(logits, top_k=5),
                               torch.softmax(logits, -1))


def test_top_p_keeps_the_smallest_nucleus():
    probs = torch.tensor([0.05, 0.5, 0.1, 0.3, 0.05])
    logits = probs.log()
    kept = next_token_probabilities(logits, top_p=0.75) > 0
    assert torch.equal(kept, torch.tensor([False, True, False, True, False]))  # .5+.3
    kept = next_token_probabilities(logits, top_p=0.79) > 0  # 0.5 + 0.3 reaches it
    assert kept.sum() == 2
    kept = next_token_probabilities(logits, top_p=0.81) > 0
    assert torch.equal(kept, torch.tensor([False, True, True, True, False]))
    assert int((next_token_probabilities(logits, top_p=0.1) > 0).sum()) == 1
    out = next_token_probabilities(logits, top_p=0.75)
    torch.testing.assert_close(out[[1, 3]], torch.tensor([0.5, 0.3]) / 0.8)


def test_filters_work_on_batches():
    logits = torch.randn(3, 7)
    probs = next_token_probabilities(logits, 0.7, top_k=3, top_p=0.9)
    torch.testing.assert_close(probs.sum(-1), torch.ones(3))
    assert ((probs > 0).sum(-1) <= 3).all()


def test_sampling_follows_the_distribution_and_is_seeded():
    logits = torch.tensor([0.0, math.log(3.0)])  # p = (0.25, 0.75)
    gen = torch.Generator().manual_seed(0)
    draws = [sample_next_token(logits, generator=gen) for _ in range(4000)]
    assert abs(sum(draws) / 4000 - 0.75) < 0.03
    a = [sample_next_token(logits, generator=torch.Generator().manual_seed(5))
         for _ in range(3)]
    b = [sample_next_token(logits, generator=torch.Generator().manual_seed(5))
         for _ in range(3)]
    assert a == b


# --- generate -----------------------------------------------------------------------


@pytest.mark.parametrize("settings", [
    dict(greedy=True), dict(temperature=0.8), dict(top_k=5), dict(top_p=0.9),
    dict(temperature=1.3, top_k=10, top_p=0.95),
])
def test_generate_with_and_without_cache_agree(settings):
    model = _lm(4)
    prompt = [3, 1, 4, 1, 5]
    runs = [generate(model, prompt, 60, **settings, use_kv_cache=use,
                     generator=torch.Generator().manual_seed(0))
            for use in (True, False)]
    # 60 tokens after a prompt of 5 outgrow the 24-token context: the window slides
    assert runs[0] == runs[1] and len(runs[0]) == 60
    assert all(0 <= t < V for t in runs[0])


def test_generate_is_reproducible_and_seed_dependent():
    model = _lm(4)
    run = lambda seed: generate(model, [1, 2], 30,
                                generator=torch.Generator().manual_seed(seed))
    assert run(0) == run(0) and run(0) != run(1)


def test_generate_greedy_takes_the_argmax():
    model = _lm(5)
    out = generate(model, [7], 5, greedy=True)
    ids = [7]
    for _ in range(5):
        ids.append(int(model(torch.tensor([ids]))[0, -1].argmax()))
    assert out == ids[1:]


def test_generate_stops_at_eos_and_restores_the_mode():
    model = _lm(6).train()
    greedy = generate(model, [1, 2, 3], 10, greedy=True)
    eos = greedy[3]
    out = generate(model, [1, 2, 3], 10, greedy=True, eos_token_id=eos)
    assert out == greedy[:greedy.index(eos) + 1] and out[-1] == eos
    assert model.training


def test_generate_a_batch_equals_each_row_alone():
    model = _lm(8)
    prompts = [[1, 2, 3], [4, 5, 6], [7, 7, 7]]
    batch = generate(model, prompts, 30, greedy=True)
    assert batch == [generate(model, row, 30, greedy=True) for row in prompts]
    sampled = generate(model, torch.tensor(prompts), 30,
                       generator=torch.Generator().manual_seed(0))
    assert len(sampled) == 3 and all(len(row) == 30 for row in sampled)
    assert sampled != generate(model, prompts, 30, greedy=True)


def test_generate_a_batch_stops_each_row_at_its_eos():
    model = _lm(9)
    prompts = [[1, 2], [3, 4]]
    free = generate(model, prompts, 12, greedy=True)
    eos = free[0][2]
    out = generate(model, prompts, 12, greedy=True, eos_token_id=eos)
    for row, full in zip(out, free):
        expected = full[:full.index(eos) + 1] if eos in full else full
        assert row == expected
    with pytest.raises(ValueError, match=r"prompt rows must have one length"):
        generate(model, [[1, 2], [3]], 2)


def test_generate_accepts_a_long_prompt_and_a_tensor():
    model = _lm(7)
    prompt = torch.randint(0, V, (50,))  # longer than the context: the tail is used
    a = generate(model, prompt, 3, greedy=True)
    b = generate(model, prompt[-CONTEXT:].tolist(), 3, greedy=True)
    assert a == b


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(prompt=[]), ValueError, r"prompt is empty"),
    (dict(prompt=[1, V]), ValueError, r"prompt must lie in \[0, 40\)"),
    (dict(prompt=[-1]), ValueError, r"prompt must lie in \[0, 40\)"),
    (dict(prompt=torch.tensor([1.0])), ValueError, r"prompt must hold integer"),
    (dict(prompt=torch.zeros(1, 2, 2, dtype=torch.long)), ValueError,
     r"prompt must be \(n,\) or \(B, n\)"),
    (dict(prompt="hello"), TypeError, r"prompt must be a tensor, a list of int"),
    (dict(max_new_tokens=0), ValueError, r"max_new_tokens must be an int >= 1, got 0"),
    (dict(temperature=0.0), ValueError, r"temperature must be a finite number in \(0"),
    (dict(temperature=-1.0), ValueError, r"temperature must be"),
    (dict(temperature=float("nan")), ValueError, r"temperature must be .*got nan"),
    (dict(top_k=0), ValueError, r"top_k must be an int >= 1, got 0"),
    (dict(top_k=V + 1), ValueError, r"top_k \(41\) must be at most vocab_size \(40\)"),
    (dict(top_k=2.0), TypeError, r"top_k must be an int"),
    (dict(top_p=0.0), ValueError, r"top_p must be a finite number in \(0, 1\]"),
    (dict(top_p=1.5), ValueError, r"top_p must be a finite number in \(0, 1\]"),
    (dict(eos_token_id=V), ValueError, r"eos_token_id \(40\) must be below vocab_size"),
    (dict(generator=0), TypeError, r"generator must be a torch.Generator"),
    (dict(greedy=1), TypeError, r"greedy must be a bool"),
])
def test_generate_bad_inputs(kwargs, exc, match):
    args = dict(prompt=[1, 2], max_new_tokens=3)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        generate(_lm(), **args)


@pytest.mark.parametrize("logits, kwargs, exc, match", [
    (torch.zeros(4, dtype=torch.long), {}, ValueError, r"logits must be a floating"),
    (torch.zeros(()), {}, ValueError, r"logits must be \(vocab_size,\)"),
    (torch.zeros(2, 4), {}, ValueError, r"logits must be \(vocab_size,\)"),
    (torch.zeros(4), dict(temperature=float("inf")), ValueError, r"temperature must"),
])
def test_sample_next_token_bad_inputs(logits, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sample_next_token(logits, **kwargs)
