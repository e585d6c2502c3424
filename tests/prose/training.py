"""lectures/training.md: its prose numbers (see tests/prose/__init__.py)."""

from __future__ import annotations

from prose import Assert, Attr, Default

TK = "llmlab.experiments.tokenization"
TR = "llmlab.experiments.training"
BM = "llmlab.experiments.base_models"

# number as written in the prose -> the guards that keep it true
GUARDS: dict[str, list[object]] = {
    # byte-level, the comparison: the vocabulary is the 256 byte values
    "256": [Attr(f"{TR}:TinyLMSettings", "vocab_size", 256)],
    # the runs' BPE: the tokenization lecture's 1,000 merges, V = 1,257
    "1,000": [Default(f"{TK}:run_corpus_training", "num_merges", 1000),
              Assert("r.num_merges == 1000")],
    "1,257": [Default(f"{TR}:run_training_run", "vocab_size", 1257),
              Assert("assert r.settings.vocab_size == 1257")],
    # the held-out share of each corpus; the attention term of 6ND under 10%
    "10%": [Default("llmlab.training.data:split_tokens", "validation_fraction", 0.1),
            Assert("assert abs(r.val_tokens / (r.train_tokens + r.val_tokens) - 0.1)"),
            Assert("assert share < 0.1")],
    "5%": [Assert("assert abs(loss - log_v) < 0.05 * log_v")],
    # the attention term of the shared FLOPs formula, 12·L·d·T (llmlab.flops)
    "12": [Assert("attention = 12 * c.num_layers * c.d_model * c.context_length"),
           Assert("assert r.n_matmul == n and r.flops == per_token * r.tokens_seen")],
    # the distributed lecture's toy model, whose throughput the table shows beside ours
    "512": [Attr("llmlab.models.llama:LLAMA_TOY", "vocab_size", 512),
            Assert("toy = time_cpu_utilisation()")],
    "0.6": [Default(f"{TR}:run_training_run", "sample_temperature", 0.6)],
    "0.693": [Assert("assert abs(loss - math.log(2)) < 1e-6")],
    # the base models: how they are sampled and the targets their quality meets
    "16": [Default(f"{BM}:run_base_model", "num_samples", 16)],
    "120": [Default(f"{BM}:run_base_model", "max_new_tokens", 120)],
    "1.0": [Default(f"{BM}:run_base_model", "temperatures", (1.0, 0.8))],
    "0.8": [Default(f"{BM}:run_base_model", "temperatures", (1.0, 0.8)),
            Assert("warm = {q.temperature: q for q in english.samples}[0.8]"),
            Assert("warm = {q.temperature: q for q in chinese.samples}[0.8]")],
    "1.7": [Assert("assert english.held_out.nats_per_character <= 1.7")],
    "90%": [Assert("warm.known_word_rate >= 0.9")],
    "99%": [Assert("warm.known_character_rate >= 0.99")],
}

# numbers that are not results: number -> why
ALLOWED: dict[str, str] = {
    "2019": "year of a citation (Loshchilov and Hutter)",
    "0.001": "exercise: a temperature to try",
    "100": "exercise: a temperature to try",
    "80": "exercise: Llama 2 70B's layers (published)",
    "64": "exercise: Llama 2 70B's query heads (published)",
    "128": "exercise: Llama 2 70B's d_head (published)",
    "0.9": "exercise: the momentum of torch.optim.SGD to match",
    "1.88": "citation: nanoGPT's CPU character model (its README)",
    "20": "the steps tests/test_pretrained.py reruns (RERUN_STEPS), a setting",
}
