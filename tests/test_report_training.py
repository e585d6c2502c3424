"""llmlab.report.training: every renderer, in both languages, on small results."""

from __future__ import annotations

import re

import pytest
import torch

from llmlab.experiments import training as exp
from llmlab.report import Localized, training as rt

torch.set_num_threads(1)
CJK = re.compile(r"[\u3400-\u9fff\uff00-\uffef]")


def _both(obj: Localized) -> dict[str, str]:
    return {lang: obj.render(lang) for lang in ("zh", "en")}


def _check_table(obj: Localized, rows: int, zh_header: bool = True) -> dict[str, str]:
    out = _both(obj)
    for lang, md in out.items():
        lines = md.strip().splitlines()
        assert len(lines) == rows + 2, (lang, md)  # header, rule, one line per row
        assert len({line.count(" | ") for line in lines[:2]}) == 1
    assert CJK.search(out["zh"].splitlines()[0 if zh_header else 2])  # words in Chinese
    assert not CJK.search(out["en"]), out["en"]  # no Chinese on en pages
    return out


def _check_figure(obj: Localized) -> None:
    assert obj.alt is not None and obj.digest
    assert CJK.search(obj.alt.zh) and not CJK.search(obj.alt.en)
    for lang in ("zh", "en"):
        svg = obj.make(lang)
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        assert obj.render(lang).startswith('<p><img class="llmlab-figure"')


@pytest.fixture(scope="module")
def runs():
    kwargs = dict(steps=12, batch_size=4, context_length=32, d_model=32, d_ff=64,
                  eval_every=4, sample_rows=(1, 2, 2), sample_tokens=60)
    return [exp.run_training_run(corpus=c, **kwargs) for c in exp.CORPORA]


# --- helpers ------------------------------------------------------------------------


def test_printable_and_token_names():
    assert rt.printable("a\x1bb\nc\x7f") == "a\ufffdb\nc\ufffd"  # newline kept
    assert [rt.token_name(t) for t in (" ", "\n", "\t", "a", "\x00", " the")] == [
        "␣", "↵", "⇥", "a", "\ufffd", "␣the"]


def test_code_span_survives_backticks_newlines_and_pipes():
    assert rt._code_span("a\nb") == "`a↵b`"
    assert rt._code_span("x `y` z") == "``x `y` z``"
    assert rt._code_span("`") == "`` ` ``"


def test_fmt_bytes_and_shares():
    assert rt.fmt_bytes(2**31) == "2.00 GiB" and rt.fmt_bytes(524288) == "512.00 KiB"
    assert rt.fmt_bytes(1023) == "1023 B"
    assert rt.undecodable_share(["a\ufffd", "bc"]) == 0.25
    assert rt.undecodable_share([]) == 0.0
    shaped = "白日依山盡，黃河入海流。\n欲窮千里目，更上一層樓。\n"
    assert rt.mostly_shaped([shaped, "伊我軒宮，奇樹青葱。\n\n", ""]) == 1
    assert rt.mostly_couplets([shaped, "伊我軒宮，奇樹青葱。\n\n", "太常具禮。\n"]) == 2


def test_source_block_drops_the_docstring_and_cuts_between_markers():
    from llmlab.training import cross_entropy, train

    whole = rt.source_block(cross_entropy).render()  # the Markdown: what a page prints
    assert whole.startswith("```python\ndef cross_entropy(") and whole.endswith("```\n")
    assert "Mean negative log-likelihood" not in whole  # the docstring
    assert "return (log_normaliser - target_logit).mean()" in whole
    loop = rt.source_block(train, "for it in range(start_iteration", "# bookkeeping"
                           ).render()
    assert loop.startswith("```python\nfor it in range(")  # dedented
    assert "optimizer.step()" in loop and "bookkeeping" not in loop
    with pytest.raises(ValueError, match="is not in the source"):
        rt.source_block(train, "no such line")
    with pytest.raises(ValueError, match="does not follow"):
        rt.source_block(train, "for it in range(start_iteration", "no such line")


# --- tables and figures of real (small) results ---------------------------------------


def test_loss_tables():
    r = exp.run_loss_at_init(vocab_sizes=(64, 512), d_model=16, context_length=8)
    out = _check_table(rt.loss_at_init_table(r), rows=2)
    assert "| 512 |" in out["en"] and "困惑度" in out["zh"]
    out = _check_table(rt.overflow_table(r), rows=2)
    assert "inf" in out["en"] and "2000.000" in out["en"]


def test_optimizer_renderers():
    _check_table(rt.adamw_table(exp.run_adamw_check(steps=3)), rows=6)
    _check_table(rt.clipping_table(exp.run_gradient_clipping()), rows=2, zh_header=False)
    _check_figure(rt.lr_schedule_figure(exp.run_lr_schedule(1.0, 0.1, 5, 20, 25)))


def test_training_run_renderers(runs):
    out = _check_table(rt.run_settings_table(runs), rows=10)
    assert "12 × 4 × 32" in out["en"] and "莎士比亚" in out["zh"]
    assert "BPE, V = 1,257 (1,000 merges, on the first 300,000 characters)" in out["en"]
    assert "| final validation loss / ln V |" in out["en"]
    line = rt.model_line(runs[0])
    assert "`TransformerLM(d_model=32" in line.en and "个参数" in line.zh
    for figure in (rt.loss_curves_figure(runs), rt.grad_norm_figure(runs),
                   rt.loss_curves_figure(runs[:1])):
        _check_figure(figure)
    assert "两次" not in rt.loss_curves_figure(runs[:1]).alt.zh  # one run, not two
    assert "ln 1257" in rt.loss_curves_figure(runs).alt.en
    assert rt.loss_curves_figure(runs).digest != rt.loss_curves_figure(runs[:1]).digest


def test_samples_and_poem_table(runs):
    shakespeare, tang = runs
    out = _both(rt.samples_markdown(shakespeare))
    assert out["zh"].count("````{.text .llmlab-sample}\nROMEO:\n") == 3  # one per stage
    assert "**第 0 步（未训练）**" in out["zh"] and "**step 0 (untrained)**" in out["en"]
    assert not re.search(r"[\x00-\x09\x0b-\x1f]", out["en"])  # controls replaced
    every = _both(rt.samples_markdown(tang, first_only=False))["en"]
    fence = "````{.text .llmlab-sample}\n" + tang.prompt
    assert every.count(fence) == sum(len(s.texts) for s in tang.samples)
    out = _both(rt.poem_shape_table(tang))
    assert len(out["en"].strip().splitlines()) == 2 + len(tang.samples) + 1
    assert "couplet lines" in out["en"] and "成联的行" in out["zh"]
    assert "the real poems (validation)" in out["en"] and "原诗" in out["zh"]
    out = _check_table(rt.half_lengths_table(tang), rows=2)
    assert out["en"].splitlines()[0] == ("| characters per half | 3 | 4 | 5 | 6 | 7 "
                                         "| other |")
    assert "| real poems |" in out["en"] and "| 原诗 |" in out["zh"]
    line = rt.char_tokens_line(tang)
    assert "1 token: " in line.en and "2 tokens: " in line.en and "个 token 的" in line.zh
    line = rt.undecodable_line(tang)
    assert line.en.startswith("share of undecodable") and "第 0 步" in line.zh


def test_encoding_table(runs):
    from llmlab.experiments.training import corpus_tokenizer

    rows = []
    for corpus, line in (("shakespeare", "Before we proceed"), ("tang", "秦川雄帝宅，")):
        tok = corpus_tokenizer(corpus, runs[0].settings.vocab_size)
        ids = tok.encode(line)
        rows.append((corpus, line, [tok.vocab[i] for i in ids], ids))
    out = _both(rt.encoding_table(rows))
    for md in out.values():  # the Chinese text is data: it shows on both pages
        assert len(md.strip().splitlines()) == 4 and md.count("&nbsp;") == 13
    assert out["en"].splitlines()[0] == "| corpus | text | tokens and ids |"
    assert ">␣we</code></span>&nbsp;321</span>" in out["en"]  # chip, then id
    assert "17 characters → 6 tokens" in out["en"] and "6 个字符 → 7 个 token" in out["zh"]
    assert out["zh"].count("llmlab-partial") == 2  # 宅: two tokens, parts of it


def test_vocab_table():
    sizes = (257, 1257)
    out = _check_table(rt.vocab_table(sizes, {257: 1.0, 1257: 2.25},
                                      {257: 0.0, 1257: 0.692}, 64), rows=2)
    assert "| 1,257 | 1,000 | 2.25 | 69.2% | 160,896 |" in out["en"]
    assert "单独成一个 token 的字" in out["zh"]


# --- synthetic results: sampling, the KV cache, timings, checkpoints -----------------


def _sampling() -> exp.SamplingResult:
    rules = list(exp._RULES)
    dists = ["temperature=1.0", "temperature=0.5", "temperature=1.5", "top_k=5",
             "top_p=0.9"]
    return exp.SamplingResult(
        "shakespeare", "ROMEO:\nI ", rules, ["a b\nc", "x|y", "`q`", "z", "k", "p"], 5,
        256, [" ", "\n", " the"], [[0.5, 0.3, 0.2]] * 5, dists, [256, 256, 256, 5, 21],
        [3.0, 2.0, 4.0, 1.5, 2.8])


def test_sampling_renderers():
    r = _sampling()
    out = _check_table(rt.sampling_table(r), rows=len(r.rules))
    en = out["en"]
    assert "| greedy | 1 | 0.00 |" in en and "| 贪心 | 1 | 0.00 |" in out["zh"]
    assert "| top-k, k = 5 | 5 | 1.50 |" in en
    tabs = _both(rt.continuations_markdown(r))
    assert tabs["en"].count('=== "') == len(r.rules) and '=== "贪心"' in tabs["zh"]
    block = "    ````{.text .llmlab-sample}\n    ROMEO:\n    I a b\n    c\n    ````"
    assert block in tabs["en"]  # indented into its tab, newlines kept
    _check_figure(rt.next_token_figure(r))


def test_kv_cache_and_timing_renderers():
    r = exp.run_kv_cache_check(prompt_lengths=(1, 5), context_length=16, d_model=32)
    _check_table(rt.kv_equality_table(r), rows=2)
    out = _check_table(rt.kv_memory_table(r), rows=len(r.tokens))
    assert "\n| 16 | " in out["en"] and "缓存的 token" in out["zh"]
    settings = exp.TinyLMSettings(context_length=16, d_model=16, d_ff=32)
    g = exp.GenerationTiming("CPU, 1 thread", [2, 16], [1.0, 1.1], [1.0, 2.0], 900.0,
                             600.0, settings)
    _check_figure(rt.generation_timing_figure(g))
    words = rt.generation_timing_summary(g)  # what was measured, whichever way it went
    assert "1.00 → 2.00 without the cache, 1.00 → 1.10 with it" in words.render("en")
    assert "takes 1.8× as long" in words.render("en") and "1.8 倍" in words.render("zh")
    slow = exp.GenerationTiming("CPU", [2, 16], [3.0, 3.0], [1.0, 2.0], 900.0, 600.0,
                                settings)  # the cache slower: said as it is
    assert "takes 0.7× as long" in rt.generation_timing_summary(slow).render("en")
    t = exp.ThroughputTiming("CPU, 1 thread", [1000.0, 3000.0, 2000.0], settings, 10, 50,
                             40, 1e6, [0.5, 1.0, 2.0], [0.1], [0.01], 1e6)
    out = _check_table(rt.throughput_table(t), rows=7)
    assert "| 2,000 |" in out["en"]  # the median
    assert "| 2.0 |" in out["en"]  # 1e6 FLOPs per token × 2,000 tokens/s: 2.0 GFLOP/s
    tokens = settings.batch_size * settings.context_length  # per forward+backward
    assert f"| {tokens * 1e6 / 1.0 / 1e9:.1f} |" in out["en"]  # the median pass: 1 s


def test_run_time_table_prices_each_part_and_the_shared_encoding_apart(runs):
    settings = runs[0].settings
    t = exp.ThroughputTiming("CPU, 1 thread", [1000.0], settings, 10, 50, 40, 1e6,
                             [1.0], [0.5, 0.1, 0.2], [0.01], 1e6)
    out = _check_table(rt.run_time_table(t, runs, [3.0, None]), rows=6)
    r = runs[0]
    steps = r.settings.steps * t.step_seconds
    evals = (len(r.val_losses) + len(r.val_block_losses) + len(r.train_block_losses)
             ) * r.eval_batches * 0.2  # the median validation pass
    sampling = len(r.samples) * r.sample_tokens * 0.01
    rows = out["en"].strip().splitlines()
    assert rows[2].split(" | ")[1] == f"{steps:.1f}"
    assert rows[3].split(" | ")[1] == f"{evals:.1f}"
    assert rows[5].split(" | ")[1] == f"{steps + evals + sampling:.1f}"
    assert rows[6].rstrip(" |").split(" | ")[1:3] == ["3.0", "—"]  # recorded; none stored
    encoding = (r.train_chars + r.val_chars) / 1e6  # not in the run's own sum
    assert "encoding the whole corpus" in rows[7] and f"| {encoding:.1f} |" in rows[7]
    with pytest.raises(ValueError, match="measured must hold one time per run"):
        rt.run_time_table(t, runs, [1.0])


def test_checkpoint_table():
    r = exp.CheckpointResumeResult(5, True, True, 0.0, False, 0.02, 1000, ["model"])
    out = _check_table(rt.checkpoint_table(r), rows=2)
    assert "| yes | 0 |" in out["en"] and "| no | 2.0e-02 |" in out["en"]
