"""llmlab.experiments.training on reduced settings: structure, and what must hold."""

from __future__ import annotations

import dataclasses
import itertools
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from llmlab.experiments import training as exp
from llmlab.flops import flops_per_token
from llmlab.models.llama import TransformerLM
from llmlab.tokenization import ByteTokenizer

torch.set_num_threads(1)


def _plain(value: object) -> bool:
    """True if ``value`` holds only numbers, strings, lists, dataclasses, tensors."""
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if dataclasses.is_dataclass(value):
        return all(_plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def test_the_module_never_imports_the_report_layer():
    source = Path(exp.__file__).read_text(encoding="utf-8")
    assert "llmlab.report" not in source and "import report" not in source


def test_loss_at_init_is_about_log_vocab():
    r = exp.run_loss_at_init(vocab_sizes=(64, 512), d_model=16, context_length=8)
    assert _plain(r)
    for loss, log_v, ppl, ref in zip(r.losses, r.log_vocab, r.perplexities,
                                     r.torch_losses):
        assert abs(loss - log_v) < 0.1 * log_v  # untrained: close to uniform
        assert ppl == pytest.approx(math.exp(loss)) and loss == pytest.approx(ref)
    assert math.isinf(r.naive_loss) and r.stable_loss == pytest.approx(2000.0)


def test_adamw_check_agrees_with_torch():
    r = exp.run_adamw_check(steps=15)
    assert len(r.max_abs_diff) == 15 and r.final_max_abs_diff < 1e-5
    assert r.losses_ours == pytest.approx(r.losses_torch, abs=1e-4)
    assert r.losses_ours[-1] < r.losses_ours[0]


def test_lr_schedule_warms_up_decays_and_floors():
    r = exp.run_lr_schedule(1.0, 0.1, 5, 20, 25)
    assert r.learning_rates[0] == 0.0 and r.learning_rates[5] == 1.0
    assert max(r.learning_rates) == 1.0
    assert r.learning_rates[20:] == [pytest.approx(0.1)] * 5
    decay = r.learning_rates[5:21]
    assert all(a >= b for a, b in zip(decay, decay[1:]))


def test_gradient_clipping_matches_torch_and_only_rescales():
    r = exp.run_gradient_clipping(max_l2_norm=0.05)
    assert r.norm_before > r.max_l2_norm
    assert r.norm_after == pytest.approx(r.max_l2_norm, rel=1e-4)
    assert r.norm_before == pytest.approx(r.torch_norm_before, rel=1e-6)
    assert r.max_grad_diff < 1e-7 and r.direction_cosine == pytest.approx(1.0, abs=1e-5)


@pytest.fixture(scope="module")
def tiny_runs():
    kwargs = dict(steps=30, batch_size=4, context_length=32, d_model=32, d_ff=64,
                  eval_every=10, sample_rows=(1, 1, 2), sample_tokens=40)
    return {c: exp.run_training_run(corpus=c, **kwargs) for c in exp.CORPORA}


def test_training_runs_learn_and_report_plain_data(tiny_runs):
    for corpus, r in tiny_runs.items():
        assert _plain(r) and pickle.loads(pickle.dumps(r)).corpus == corpus
        assert r.settings.steps == 30 and r.iterations == list(range(1, 31))
        assert r.settings.vocab_size == exp.LECTURE_VOCAB == 1257
        assert r.tokenizer == "bpe" and r.num_merges == 1000
        assert r.tokenizer_chars == exp.TOKENIZER_CHARS[corpus] < r.train_chars
        assert r.val_iterations == [0, 10, 20, 30]
        assert r.val_losses[0] > 0.9 * r.log_vocab  # untrained: about ln 1257
        assert r.val_loss_vs_uniform < 0.9  # even 30 tiny steps learn something
        assert r.tokens_seen == 30 * 4 * 32
        c = r.settings.config
        assert r.n_matmul == c.matmul_parameter_count() < r.n_non_embedding
        assert r.flops == flops_per_token(r.n_matmul, c.num_layers, c.d_model,
                                          c.context_length) * r.tokens_seen
        # the trained model scored on the whole validation split, block by block
        assert r.eval_windows == r.eval_batches * r.settings.batch_size
        assert len(r.val_block_losses) == (r.val_tokens - 1) // r.block_tokens
        assert len(r.train_block_losses) == len(r.val_block_losses)
        assert r.held_out_error == pytest.approx(
            np.std(r.val_block_losses, ddof=1) / math.sqrt(len(r.val_block_losses)))
        assert r.held_out_error < r.block_spread  # the mean of many blocks: less noise
        assert abs(r.held_out_loss - r.final_val_loss) < 0.5  # the same model, scored
        assert r.n_parameters - r.n_non_embedding == 1257 * 32
        assert [s.iteration for s in r.samples] == [0, 15, 30]
        assert [len(s.texts) for s in r.samples] == [1, 1, 2]
        assert len(r.learning_rates) == len(r.grad_norms) == 30
        assert 0 <= r.clipped_steps <= 30
    en, zh = tiny_runs["shakespeare"].chars_per_token, tiny_runs["tang"].chars_per_token
    assert en > 2 and zh < 1  # BPE: English tokens are words, Chinese parts of one


def test_training_run_tokens_are_the_tokenizers(tiny_runs):
    """The ids come from the tokenization lecture's run, cut to vocab_size."""
    from llmlab.experiments.tokenization import corpus_text, run_train_corpus

    for corpus, r in tiny_runs.items():
        text = exp.corpus_text(corpus)
        assert text == corpus_text(corpus)  # the text that BPE was trained on
        full = run_train_corpus(corpus, exp.TOKENIZER_CHARS[corpus], 1000)
        tok = exp.corpus_tokenizer(corpus, 757)
        assert tok.merges == full.merges[:500] and tok.vocab_size == 757
        ids = exp.corpus_ids(corpus, r.settings.vocab_size)
        assert ids.dtype == np.uint16 and len(ids) == r.train_tokens + r.val_tokens
        assert int(ids.max()) < r.settings.vocab_size
        assert r.train_chars + r.val_chars == len(text)  # no character is cut
    assert isinstance(exp.corpus_tokenizer("tang", 256), ByteTokenizer)
    for bad in (255, 1258):
        with pytest.raises(ValueError, match=r"vocab_size must be an int in \[256, 1257\]"):
            exp.corpus_tokenizer("tang", bad)
    for bad in (300.0, True):
        with pytest.raises(TypeError, match="vocab_size must be an int"):
            exp.corpus_tokenizer("tang", bad)


def test_settings_give_their_model_sizes_to_llama_config():
    from llmlab.models.llama import LlamaConfig

    s = exp.TinyLMSettings(vocab_size=300, d_model=32, num_heads=2, d_ff=48)
    assert s.config == LlamaConfig(300, s.context_length, 32, s.num_layers, 2, 48)
    assert sum(p.numel() for p in s.model().parameters()) == s.config.parameter_count()
    # LlamaConfig's checks, at once (not only when a model is built)
    with pytest.raises(ValueError, match=r"d_model \(30\) must be divisible by num_heads"):
        exp.TinyLMSettings(d_model=30, num_heads=4)
    with pytest.raises(ValueError, match=r"d_model / num_heads \(d_head\) must be even"):
        exp.TinyLMSettings(d_model=36, num_heads=4)
    with pytest.raises(TypeError, match="d_ff must be an int"):
        exp.TinyLMSettings(d_ff=176.0)


def test_training_run_parts_name_the_tokenizer_run_and_the_encoded_corpus():
    from llmlab.build.cache import plan
    from llmlab.experiments.tokenization import run_train_corpus

    calls = plan(exp.run_training_run, corpus="tang")
    assert calls[0] == (run_train_corpus, dict(corpus="tang", num_chars=60_000,
                                               num_merges=1000))
    assert calls[1] == (exp.corpus_ids, dict(corpus="tang", vocab_size=exp.LECTURE_VOCAB))
    for run in (exp.run_overfitting, exp.run_high_learning_rate):  # encoded once for all
        assert plan(run)[1] == (exp.corpus_ids, dict(corpus="shakespeare",
                                                     vocab_size=exp.LECTURE_VOCAB))
    bytes_plan = plan(exp.run_training_run, corpus="tang", vocab_size=256)
    assert [fn for fn, _ in bytes_plan] == [exp.corpus_ids, exp.run_training_run]
    assert plan(exp.time_training_throughput)[0][0] is run_train_corpus


def test_byte_level_runs_still_work():
    r = exp.run_training_run(corpus="shakespeare", vocab_size=256, steps=4,
                             batch_size=2, context_length=16, d_model=16, d_ff=32,
                             eval_every=2, sample_rows=(1, 1, 1), sample_tokens=8)
    assert r.tokenizer == "bytes" and r.num_merges == 0 and r.chars_per_token == 1.0
    assert r.n_parameters - r.n_non_embedding == 256 * 16


def test_training_run_rebuilds_its_model(tiny_runs):
    r = tiny_runs["shakespeare"]
    model = r.model()
    assert isinstance(model, TransformerLM) and not model.training
    assert torch.equal(model.lm_head.weight, r.state_dict["lm_head.weight"])


def test_tang_run_counts_poem_lines(tiny_runs):
    r = tiny_runs["tang"]
    assert r.prompt.endswith("\n") and exp.poem_line_has_shape(r.prompt[:-1])
    assert r.corpus_lines > 1000 and r.corpus_shape_share > 0.9
    assert r.corpus_shaped_lines <= r.corpus_couplet_lines <= r.corpus_lines
    halves, tokens = dict(r.corpus_half_lengths), dict(r.char_tokens)
    assert sum(halves.values()) == 2 * r.corpus_couplet_lines
    assert max(halves, key=halves.get) == 5  # five-character verse is the most common
    assert set(tokens) <= {1, 2, 3, 4} and tokens[1] > tokens[2] > tokens.get(3, 0)
    assert all(0 <= s.shaped_lines <= s.couplet_lines <= s.lines for s in r.samples)
    assert all(len(s.line_texts) == s.lines for s in r.samples)  # the lines it counted
    assert all(line and "\n" not in line for s in r.samples for line in s.line_texts)
    assert tiny_runs["shakespeare"].char_tokens == []


def test_training_run_bad_corpus():
    with pytest.raises(ValueError, match=r"corpus must be one of 'shakespeare', 'tang'"):
        exp.run_training_run(corpus="klingon")


@pytest.mark.parametrize("line, expected", [
    ("秦川雄帝宅，函谷壯皇居。", True),
    ("白日依山盡，黃河入海流。", True),
    ("何如肆轍跡？萬里賞瑤池。", True),
    ("洛陽城裏見秋風，欲作家書意萬重。", True),
    ("伊我軒宮，奇樹青葱。", False),  # 4 + 4
    ("秦川雄帝宅，函谷壯皇居", False),  # no full stop
    ("秦川雄帝宅，函谷壯皇居。秦", False),  # something after it
    ("秦川雄帝，函谷壯皇居。", False),  # 4 + 5
    ("太常具禮方告成。", False),  # one half
    ("abcde，fghij。", False),  # not Chinese characters
])
def test_poem_line_shape(line, expected):
    assert exp.poem_line_has_shape(line) is expected


@pytest.mark.parametrize("line, halves", [
    ("秦川雄帝宅，函谷壯皇居。", (5, 5)),
    ("伊我軒宮，奇樹青葱。", (4, 4)),
    ("秦川雄帝，函谷壯皇居！", (4, 5)),
    ("何如肆轍跡？萬里賞瑤池。", (5, 5)),
    ("太常具禮方告成。", None),  # one half
    ("秦川雄帝宅，函谷壯皇居", None),  # no full stop
    ("，函谷壯皇居。", None),  # an empty half
    ("a，b。", None),  # not Chinese characters
])
def test_poem_line_halves(line, halves):
    assert exp.poem_line_halves(line) == halves
    assert exp.poem_line_has_shape(line) is (halves in ((5, 5), (7, 7)))


def test_poem_shape_share_counts_lines():
    text = "白日依山盡，黃河入海流。\n\n伊我軒宮，奇樹青葱。\n欲窮千里目，更上一層"
    assert exp.poem_shape_share(text) == (1, 2)  # the cut last line is not counted
    assert exp.poem_shape_share(text, drop_last=False) == (1, 3)
    assert exp.poem_shape_share("") == (0, 0)
    assert exp.poem_lines(text) == ["白日依山盡，黃河入海流。", "伊我軒宮，奇樹青葱。"]
    assert exp.poem_lines(text, drop_last=False)[-1] == "欲窮千里目，更上一層"
    assert exp.poem_lines("\n\n") == []
    assert exp.poem_halves(text) == [(5, 5), (4, 4)]
    assert exp.poem_halves(text, drop_last=False) == [(5, 5), (4, 4)]  # cut: no stop


def test_sampling_rules_and_distributions():
    r = exp.run_sampling(max_new_tokens=12, n_top=5)
    assert _plain(r) and len(r.texts) == len(r.rules) == 6
    assert r.vocab_size == exp.LECTURE_VOCAB
    assert " " in "".join(r.top_tokens)  # BPE: tokens with their leading space
    assert r.rules[0] == "greedy"
    for dist, rule, kept in zip(r.distributions, r.distribution_rules, r.kept):
        assert len(dist) == 5 and all(p >= 0 for p in dist)
        if rule == "top_k=5":
            assert kept == 5 and sum(dist) == pytest.approx(1.0, abs=1e-5)
        if rule.startswith("temperature"):
            assert kept == r.vocab_size
    t = dict(zip(r.distribution_rules, r.entropies))
    assert t["temperature=0.5"] < t["temperature=1.0"] < t["temperature=1.5"]
    assert t["top_k=5"] < t["temperature=1.0"]


def test_kv_cache_check_equal_logits_and_memory():
    r = exp.run_kv_cache_check(prompt_lengths=(1, 5), context_length=16, d_model=32)
    assert max(r.max_abs_diff) < 1e-4
    assert r.formula_bytes == r.tensor_bytes and r.tokens[-1] == 16
    assert r.llama2_7b_bytes_per_token == 2 * 32 * 32 * 128 * 2  # 512 KiB
    assert r.llama2_7b_full_context_bytes == 2**31  # 2 GiB at 4,096 tokens


def test_checkpoint_resume_is_bit_for_bit():
    r = exp.run_checkpoint_resume(steps_each=3)
    assert r.weights_equal and r.losses_equal and r.max_abs_diff == 0.0
    assert not r.without_generator_equal and r.without_generator_max_abs_diff > 0
    assert {"model", "optimizer", "iteration", "rng"} <= set(r.checkpoint_keys)
    torch.manual_seed(1234)  # the global generator must not reach the result
    assert exp.run_checkpoint_resume.uncached(steps_each=3) == r  # seeded: every number


def test_timings_are_cached_per_machine_and_report_it():
    for fn in (exp.time_training_throughput, exp.time_generation):
        assert fn.machine_dependent  # one measurement for both languages of a page
    settings = exp.TinyLMSettings(context_length=16, d_model=16, d_ff=32,
                                  batch_size=2)
    t = exp.time_training_throughput(repeats=2, steps=2, settings=settings)
    assert len(t.tokens_per_s) == 2 and min(t.tokens_per_s) > 0
    c = settings.config
    assert t.flops_per_token == flops_per_token(c.matmul_parameter_count(),
                                                c.num_layers, c.d_model,
                                                c.context_length)
    assert t.flops_per_s == t.flops_per_token * t.median_tokens_per_s
    assert len(t.forward_backward_seconds) == 2 and len(t.eval_batch_seconds) == 2
    assert all(math.isfinite(x) for x in t.decode_token_seconds)  # shown, not judged
    assert math.isfinite(t.encode_chars_per_s)
    assert t.n_non_embedding == (sum(p.numel() for p in settings.model().parameters())
                                 - 256 * 16)
    assert t.settings.vocab_size == 256  # the settings given: byte-level batches
    assert "thread" in t.machine
    g = exp.time_generation(context_length=20, d_model=16, repeats=1)
    assert g.lengths == sorted(g.lengths) and g.lengths[-1] == 20
    assert len(g.ms_cached) == len(g.ms_uncached) == len(g.lengths)
    assert g.tokens_per_s_cached > 0 and g.tokens_per_s_uncached > 0
    assert "thread" in g.machine


def test_the_speed_yardstick_lives_in_the_benchmark():
    """PyTorch's-pieces model is not taught: it is benchmarks/training.py's, not ours."""
    assert not hasattr(exp, "TorchReferenceLM")


@pytest.mark.parametrize(("prompt_len", "new_tokens"), [(3, 3), (1, 4), (5, 1)])
def test_kv_cache_steps_record_what_the_cache_holds(prompt_len, new_tokens):
    """The prompt's call feeds ``prompt_len`` positions, each later one a single
    position, and block 0's cached keys, (B, h, T, d_head), grow by what the call fed."""
    from llmlab.kv_cache import KVCache

    r = exp.run_kv_cache_steps.uncached(prompt_len=prompt_len, new_tokens=new_tokens)
    assert _plain(r)
    assert r.fed == [prompt_len] + [1] * new_tokens
    assert [s[-2] for s in r.key_shapes] == list(itertools.accumulate(r.fed))
    assert {s[:2] + s[3:] for s in r.key_shapes} == {(1, r.num_heads, r.d_head)}
    # the same shapes as a cache filled by a model of the same sizes directly
    model = TransformerLM(16, 9, r.num_heads * r.d_head, r.num_layers, r.num_heads, 16).eval()
    cache = KVCache(r.num_layers, 9)
    with torch.no_grad():
        model(torch.zeros(1, prompt_len, dtype=torch.long), kv_cache=cache)
    assert tuple(cache.layers[0].keys.shape) == r.key_shapes[0]
    assert len(cache.layers) == r.num_layers


def test_block_losses_cover_the_ids_with_disjoint_blocks():
    torch.manual_seed(0)
    model = TransformerLM(16, 8, 8, 1, 2, 16)
    ids = np.arange(1000) % 16
    losses = exp.block_losses(model, ids, 4, 8)  # blocks of 32 tokens
    assert len(losses) == (1000 - 1) // 32
    # each block is one estimate_loss over its own slice, model untouched
    from llmlab.training import estimate_loss
    assert losses[0] == estimate_loss(model, ids[:33], 4, 8, 1)
    assert exp.block_losses(model, ids, 4, 8, num_blocks=3) == [
        estimate_loss(model, ids[s:s + 33], 4, 8, 1) for s in (0, 484, 967)]


def test_high_learning_rate_makes_clipping_act():
    r = exp.run_high_learning_rate.uncached(steps=12)
    assert r.settings.max_lr == 5e-2 and len(r.grad_norms) == len(r.iterations) == 12
    assert r.clipped_steps == sum(n > 1.0 for n in r.grad_norms) > 0


def test_overfitting_on_a_slice_raises_validation_loss():
    r = exp.run_overfitting.uncached(train_tokens=512, steps=40, batch_size=4,
                                     eval_every=10)
    assert r.epochs == 40 * 4 * 64 / 512
    assert r.val_iterations == [0, 10, 20, 30, 40]
    assert r.train_losses[-1] < r.val_losses[-1] - 1  # memorised, not learnt
    assert r.val_losses[-1] > min(r.val_losses)  # validation turns back up
