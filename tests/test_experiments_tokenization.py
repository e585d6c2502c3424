"""The tokenization lecture's experiments, on reduced settings where they train."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from llmlab.experiments import tokenization as tk
from llmlab.tokenization import END_OF_TEXT, gpt2_tokenizer

SMALL = dict(num_merges=120, en_chars=40_000, zh_chars=15_000, heldout_chars=3_000)


def _plain(value: object) -> None:
    """Results hold only numbers, strings, bytes, bools and containers of them."""
    if dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            _plain(getattr(value, field.name))
    elif isinstance(value, dict):
        for k, v in value.items():
            _plain(k)
            _plain(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _plain(v)
    else:
        assert value is None or isinstance(value, (int, float, str, bytes)), value


def test_granularity() -> None:
    r = tk.run_granularity(num_chars=4_000, heldout_chars=1_000)
    _plain(r)
    en, zh = r.sequence_length["en"], r.sequence_length["zh"]
    # English is ASCII: one byte per character; a Han character takes 3 bytes
    assert en["byte"] == en["character"] == 4_000 and r.utf8_bytes_per_char["en"] == 1
    assert set(r.utf8_length_counts["zh"]) == {1, 3}  # newlines, Han characters
    assert zh["byte"] == sum(k * n for k, n in r.utf8_length_counts["zh"].items())
    assert 2.5 < r.utf8_bytes_per_char["zh"] < 3
    # subwords are shorter than characters in English, words shorter still
    assert en["word"] < en["subword"] < en["character"]
    assert r.distinct_units["en"]["byte"] <= 256 and r.vocab_bound["byte"] == 256
    assert r.unseen_rate["en"]["word"] > r.unseen_rate["en"]["character"]
    units = r.example_units["zh"]
    assert "".join(units["character"]) == r.examples["zh"]
    assert b"".join(units["subword"]) == b"".join(units["byte"])
    assert b"".join(units["byte"]).decode() == r.examples["zh"]
    assert "".join(r.example_units["en"]["word"]) == r.examples["en"]


def test_bpe_steps_reproduce_the_handout() -> None:
    r = tk.run_bpe_steps()
    _plain(r)
    assert [s.pair for s in r.steps[:4]] == [
        (b"s", b"t"), (b"e", b"st"), (b"o", b"w"), (b"l", b"ow")
    ]
    first = r.steps[0]
    # the tie at 9 between (s, t) and (e, s) goes to the greater pair
    assert first.candidates[:2] == [((b"s", b"t"), 9), ((b"e", b"s"), 9)]
    for step in r.steps:
        assert step.candidates[0] == (step.pair, step.count)
    counts = zip(r.words, r.word_counts)
    assert r.initial_num_tokens == sum(len(w) * n for w, n in counts)
    sizes = [s.num_tokens for s in r.steps]
    assert all(a > b for a, b in zip([r.initial_num_tokens, *sizes], sizes))
    assert [s.vocab_size for s in r.steps] == list(range(257, 257 + len(r.steps)))
    last = r.steps[-1].segmentation
    assert [b"".join(seg) for seg in last] == r.words
    assert tk.run_bpe_steps(split="gpt2", num_merges=3).words[1] == b" low"
    with pytest.raises(ValueError, match=r"split \('chars'\) must be"):
        tk.run_bpe_steps(split="chars")


def test_bpe_steps_count_overlapping_pairs() -> None:
    # a run of n equal tokens holds n - 1 occurrences of their pair; merging left
    # to right joins n // 2 of them: the count overstates how much the text shrinks
    r = tk.run_bpe_steps("aaaa aaa", num_merges=1)
    step = r.steps[0]
    assert step.candidates == [((b"a", b"a"), 3 + 2)] and step.count == 5
    assert r.initial_num_tokens - step.num_tokens == 4 // 2 + 3 // 2 == 3
    assert step.segmentation == [[b"aa", b"aa"], [b"aa", b"a"]]
    # so the most frequent pair need not be the merge that shortens the text most:
    # (a, a) occurs 6 times and saves 3 tokens, (b, c) 5 times and would save 5
    r = tk.run_bpe_steps("aaa aaa aaa bc bc bc bc bc", num_merges=1)
    step = r.steps[0]
    assert step.candidates == [((b"a", b"a"), 6), ((b"b", b"c"), 5)]
    assert r.initial_num_tokens - step.num_tokens == 3 < 5


def test_corpus_training_curves() -> None:
    r = tk.run_corpus_training(**SMALL, merge_steps=(0, 60, 120), num_first=5)
    _plain(r)
    assert [c.corpus for c in r.curves] == ["shakespeare", "tang"]
    for c in r.curves:
        assert c.vocab_sizes == [257, 317, 377]
        assert c.bytes_per_token[0] == 1.0  # no merges: one token per byte
        assert c.bytes_per_token == sorted(c.bytes_per_token)  # more merges, fewer
        assert len(c.first_merges) == len(c.first_counts) == 5
        assert c.first_counts == sorted(c.first_counts, reverse=True)
        lengths = [len(t) for t in c.longest_tokens]
        assert lengths == sorted(lengths, reverse=True)
        assert sum(c.token_kinds.values()) == 120
    en, zh = r.curves
    assert en.token_kinds == {"multi_char": 120}  # ASCII: every token decodes
    assert zh.token_kinds["partial"] > 0  # pieces of 3-byte characters
    assert zh.chars_per_token[-1] < 1 < en.chars_per_token[-1]
    with pytest.raises(ValueError, match=r"zh_chars \(10000000\) must be in"):
        tk.run_corpus_training(**{**SMALL, "zh_chars": 10_000_000})


def test_training_runs_are_cache_parts_shared_by_two_experiments() -> None:
    from llmlab.build import cache

    plans = [cache.plan(fn, **SMALL) for fn in
             (tk.run_corpus_training, tk.run_chinese_tokenizers)]
    for calls in plans:
        assert [fn for fn, _ in calls[:2]] == [tk.run_train_corpus] * 2
        assert [kw["corpus"] for _, kw in calls[:2]] == ["shakespeare", "tang"]
    assert plans[0][:2] == plans[1][:2]  # the same calls: trained once
    assert tk.run_train_corpus.cost > 0


def test_one_training_run_serves_every_vocabulary_size() -> None:
    run = tk.run_train_corpus("shakespeare", 20_000, 80)
    full = run.tokenizer()
    short = run.tokenizer(30)
    assert short.vocab_size == 257 + 30
    assert all(full.vocab[i] == short.vocab[i] for i in short.vocab)


def test_gpt2_agreement() -> None:
    r = tk.run_gpt2_agreement()
    _plain(r)
    assert r.all_equal and all(c.equal and c.round_trip for c in r.cases)
    assert {c.key for c in r.cases} >= {"english", "chinese", "code", "emoji", "spaces",
                                        "digits", "special"}
    special = next(c for c in r.cases if c.key == "special")
    assert special.ids.count(50256) == 2
    assert r.vocab_size == 50_257 and r.num_merges == 50_000
    assert r.reference == "tiktoken" and r.reference_version.count(".") >= 1


def test_chinese_tokenizers() -> None:
    r = tk.run_chinese_tokenizers(**SMALL)
    _plain(r)
    tpc = r.tokens_per_char
    assert tpc["gpt2"]["zh"] > 1 > tpc["gpt2"]["en"]  # GPT-2 splits Han characters
    assert tpc["bpe_zh"]["zh"] < tpc["bpe_en"]["zh"]
    assert r.vocab_sizes == {"gpt2": 50_257, "bpe_en": 377, "bpe_zh": 377}
    for key, tokens in r.example_tokens.items():
        assert b"".join(tokens).decode() == r.example
        assert r.context_chars[key]["zh"] == pytest.approx(1024 / tpc[key]["zh"])
    assert r.example_partial["gpt2"] > 0 and 0 < r.partial_fraction["gpt2"] < 1


def test_tokenizer_pitfalls() -> None:
    r = tk.run_tokenizer_pitfalls()
    _plain(r)
    case = {(c.group, c.key): c for c in r.cases}
    assert case["document_boundary", "special"].ids.count(r.eot_id) == 1
    assert r.eot_id not in case["document_boundary", "plain_text"].ids
    assert case["overlapping_special", "double"].tokens[1] == (END_OF_TEXT * 2).encode()
    assert case["leading_space", "no_space"].ids != case["leading_space", "space"].ids
    assert len(case["digits", "long"].ids) > 1
    gpt2 = gpt2_tokenizer()
    for c in r.cases:
        if c.key != "double":  # the double token is not in GPT-2's vocabulary
            assert gpt2.decode(c.ids) == c.text
    assert r.partial_decodes[-1] == r.partial_text
    assert "\ufffd" in r.partial_decodes[0]


def test_results_pickle_for_the_cache() -> None:
    r = tk.run_bpe_steps(num_merges=3)
    assert pickle.loads(pickle.dumps(r)) == r


def test_time_training_reports_its_machine() -> None:
    r = tk.time_training(
        num_chars=5_000, num_merges=20, num_processes=2, encode_chars=5_000, repeats=1
    )
    _plain(r)
    assert r.same_merges
    assert set(r.seconds) == {
        "merges_naive", "merges_incremental", "pretokenize_serial",
        "pretokenize_parallel", "encode_uncached", "encode_cached",
    }
    assert all(s > 0 for s in r.seconds.values())
    assert r.cpus >= 1 and r.machine and r.python
    # cached per machine: the key names the machine, so zh and en show one measurement
    assert tk.time_training.machine_dependent and hasattr(tk.time_training, "uncached")


def test_corpus_text_names_the_corpora() -> None:
    with pytest.raises(ValueError, match=r"corpus \('wiki'\) must be one of"):
        tk.corpus_text("wiki")


def test_missing_reference_says_how_to_install(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken now fails
    with pytest.raises(ModuleNotFoundError, match=r"tiktoken is needed .*\[test\]"):
        tk.run_gpt2_agreement.uncached()
