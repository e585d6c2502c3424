"""lectures/tokenization.md: its prose numbers (see tests/prose/__init__.py)."""

from __future__ import annotations

from prose import Assert, Default

TK = "llmlab.experiments.tokenization"

# number as written in the prose -> the guards that keep it true
GUARDS: dict[str, list[object]] = {
    "5,000": [Assert("run_granularity(num_chars=20_000, heldout_chars=5_000)")],
    "20,000": [Assert("run_granularity(num_chars=20_000, heldout_chars=5_000)"),
               Default(f"{TK}:run_corpus_training", "heldout_chars", 20_000)],
    "256": [Assert('assert r.vocab_bound["byte"] == 256'),
            Assert("assert all(c.vocab_sizes[-1] == 256 + 1 + 1000 for c in r.curves)"),
            Assert("assert [row[2] for row in rows] == [256, 257, 258, 259]"),
            Assert('assert vocab[256] == b"<|endoftext|>"')],
    "50,257": [Assert('r.vocab_bound["subword"] == 50_257'),
               Assert("assert tok.vocab_size == len(vocab) == 50_257")],
    "50,000": [Assert("len(tok.merges) == 50_000")],
    "68": [Assert("assert sum(ord(c) >= 256 for c in alphabet.values()) == 68")],
    "12": [Default(f"{TK}:run_bpe_steps", "num_merges", 12),
           Assert("print(bpe_segmentation_table(r, after=(0, 3, 6, 12)))")],
    "300,000": [Assert("run_corpus_training(num_merges=1000, en_chars=300_000, "
                       "zh_chars=60_000)")],
    "60,000": [Assert("run_corpus_training(num_merges=1000, en_chars=300_000, "
                      "zh_chars=60_000)")],
    "1,000": [Assert("run_corpus_training(num_merges=1000, en_chars=300_000, "
                     "zh_chars=60_000)"),
              Assert("assert all(c.vocab_sizes[-1] == 256 + 1 + 1000 for c in r.curves)")],
    "1,257": [Assert("assert all(c.vocab_sizes[-1] == 256 + 1 + 1000 for c in r.curves)")],
    "1,024": [Default(f"{TK}:run_chinese_tokenizers", "context_length", 1024)],
    "50256": [Assert("r.eot_id == 50256")],
    # the second special token added to show that the longest wins
    "50257": [Assert("assert double.ids[1:3] == [50257, r.eot_id]")],
    "1234567": [Assert('assert pretokenize("1234567") == ["1234567"]'),
                Assert('assert case["digits", "long"].tokens == [b"123", b"45", b"67"]')],
    "123": [Assert('assert case["digits", "long"].tokens == [b"123", b"45", b"67"]'),
            Assert('assert regex.findall(grouped, "1234567") == ["123", "456", "7"]')],
    "45": [Assert('assert case["digits", "long"].tokens == [b"123", b"45", b"67"]')],
    "67": [Assert('assert case["digits", "long"].tokens == [b"123", b"45", b"67"]')],
    "456": [Assert('assert regex.findall(grouped, "1234567") == ["123", "456", "7"]')],
}

# numbers that are not results: number -> why
ALLOWED: dict[str, str] = {
    "280": "exercise: a vocab_size to train with",
}
