"""Prose agrees with numbers: every number in a lecture's prose is guarded.

Each multi-digit number, percentage or decimal in the prose of a lecture (both
languages; code blocks, link targets and section numbering left out) must be
either

* **registered** in ``GUARDS`` with the check that keeps it true:
  ``Assert(text)``  an assertion (or argument) in one of the page's executed blocks;
  ``Default(func, arg, value)``  a setting that must equal a code default;
  ``Attr(obj, attr, value)``  a setting that must equal a field of a preset;
  ``Output(text)``  a value the build prints into the page (checked in the built HTML);
* or **allowed** in ``ALLOWED``: settings written in the block right there, years,
  citations, constants of nature/IEEE, exercise parameters.

The test fails when a number appears in prose without either (so a typed-in
result cannot land), when a registered guard no longer holds (the assertion was
removed, the default changed), or when a registered number has left the prose
(a stale entry). The zh and en prose must contain the same numbers.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections import Counter
from dataclasses import dataclass

import pytest

from pages import LANGS, fenced_blocks, lecture_pages, read_page, strip_code


@dataclass(frozen=True)
class Assert:
    """Text that must appear in the code of an executed block of the page."""

    text: str


@dataclass(frozen=True)
class Default:
    """``func``'s argument ``arg`` must default to ``value``."""

    func: str  # "module:function"
    arg: str
    value: object


@dataclass(frozen=True)
class Attr:
    """``obj.attr`` must equal ``value`` (a preset's field)."""

    obj: str  # "module:NAME"
    attr: str
    value: object


@dataclass(frozen=True)
class Output:
    """Text the build prints into the page (checked in the built HTML)."""

    text: str


MH = "llmlab.experiments.multihead"
TK = "llmlab.experiments.tokenization"
TR = "llmlab.experiments.training"
DI = "llmlab.experiments.distributed"
# page -> number as written in the prose -> the guards that keep it true
GUARDS: dict[str, dict[str, list[object]]] = {
    "lectures/attention-from-scratch.md": {
        "16": [Assert("run_scaling_table(d_ks=(4, 16, 64, 256, 1024), num_keys=16)"),
               Assert("few = run_scaling_table(d_ks=d_ks, num_keys=16)")],
        "64": [Assert("many = run_scaling_table(d_ks=d_ks, num_keys=64)")],
        # the hand-built lookup's recall (by construction)
        "100%": [Assert("assert all(acc == 1.0 for acc in result.attention_accuracy)")],
        # exercise 3: the float16 scores, its maximum and exp's limits
        "12": [Assert("for row in ([12.0, 0.0, 0.0, 0.0], [12.0, -100.0, -100.0, -100.0]):")],
        "100": [Assert("for row in ([12.0, 0.0, 0.0, 0.0], [12.0, -100.0, -100.0, -100.0]):")],
        "65504": [Assert("assert torch.finfo(half).max == 65504")],
        "11.09": [Assert("assert round(limit, 2) == 11.09")],
        "88.7": [Assert("assert round(math.log(torch.finfo(torch.float32).max), 1) == 88.7")],
    },
    "lectures/building-blocks.md": {
        # measured std within 1% of the truncated normal's theory
        "1%": [Assert("assert abs(m / p - 1) < 0.01")],
        "300": [Assert("run_low_precision_norm(d_model=1024, scale=300.0, seed=0)")],
        # the RMSNorm argument's FLOP ratio at d = 1024: 1 / (2d)
        "0.1%": [Assert("assert 1 / (2 * 1024) < 0.1 / 100")],
        "768": [Assert("run_flops_vs_runtime(seq_len=512, d_model=768"),
                Assert("assert r.relu_params[i] == r.swiglu_params[i] == 8 * 768**2"),
                Assert("d = 768")],
        "512": [Assert("run_flops_vs_runtime(seq_len=512, d_model=768"),
                Attr("llmlab.models.llama:CS336_TINYSTORIES", "d_model", 512)],
        "64": [Default("llmlab.feed_forward:swiglu_hidden_dim", "multiple_of", 64),
               Assert("assert all(f % 64 == 0 for f in r.swiglu_d_ff)")],
        "12": [Assert("block = TransformerBlock(d, 12, swiglu_hidden_dim(d)")],
        # the two d_ff conventions at d = 512: the preset's field and the library's rule
        "1344": [Attr("llmlab.models.llama:CS336_TINYSTORIES", "d_ff", 1344),
                 Assert("assert preset == down == nearest == 1344 and up == 1408")],
        "1408": [Assert("assert preset == down == nearest == 1344 and up == 1408")],
        # exercises: what the solutions assert
        "24": [Assert("assert exact == list(range(24, 4097, 24))")],
        "1000": [Assert("for _ in range(1000):")],
        "10000": [Assert("run_rope_check(d_k=64, theta=10_000.0, seq_len=16, seed=0)"),
                  Assert("for theta in (10_000.0, 100.0):")],
    },
    "lectures/tokenization.md": {
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
        "1234567": [Assert('assert pretokenize("1234567") == ["1234567"]'),
                    Assert('assert case["digits", "long"].tokens == [b"123", b"45", b"67"]')],
        "123": [Assert('assert case["digits", "long"].tokens == [b"123", b"45", b"67"]'),
                Assert('assert regex.findall(grouped, "1234567") == ["123", "456", "7"]')],
        "45": [Assert('assert case["digits", "long"].tokens == [b"123", b"45", b"67"]')],
        "67": [Assert('assert case["digits", "long"].tokens == [b"123", b"45", b"67"]')],
        "456": [Assert('assert regex.findall(grouped, "1234567") == ["123", "456", "7"]')],
    },
    "lectures/distributed.md": {
        "1,024": [Attr("llmlab.models.gpt2:GPT2_SMALL", "context_length", 1024),
                  Assert("days = h100 / 1024 / 24")],
        "10,000": [Attr("llmlab.models.llama:CS336_TINYSTORIES", "vocab_size", 10_000)],
        "12": [Assert("assert row.with_attention == 6 * row.n_matmul + 12 * L * d * T"),
               Assert("assert ADAM_STATE_BYTES == 12"),
               Attr("llmlab.models.gpt2:GPT2_SMALL", "n_layers", 12)],
        "16": [Assert("assert sum(r.measured_state.values()) == 16 * r.n_parameters"),
               Assert('assert fp32 == mixed == 16 * row["n_parameters"]')],
        # published figures, kept with their sources in llmlab.compute (see ALLOWED)
        "184,320": [Attr("llmlab.compute:LLAMA2_7B_RUN", "gpu_hours", 184_320),
                    Assert("assert llama.published_gpu_hours == LLAMA2_7B_RUN.gpu_hours "
                           "== 184_320")],
        "312": [Attr("llmlab.compute:A100_80GB", "bf16_flops", 312e12),
                Assert("assert A100_80GB.bf16_flops == 312e12")],
        "80": [Attr("llmlab.compute:A100_80GB", "memory_bytes", 80 * 2**30)],  # 80 GiB
        "32": [Attr("llmlab.models.llama:LLAMA2_7B", "num_layers", 32)],
        "4096": [Attr("llmlab.models.llama:LLAMA2_7B", "context_length", 4096),
                 Assert("c, t = LLAMA2_7B, 4096")],
        "512": [Default(f"{DI}:run_flop_count", "sweep_context_lengths",
                        (512, 2048, 8192, 32768))],
        "8,192": [Default(f"{DI}:run_flop_count", "sweep_context_lengths",
                          (512, 2048, 8192, 32768)),
                  Assert("assert share[8192] < 0.5 < share[32768]")],
        "32,768": [Default(f"{DI}:run_flop_count", "sweep_context_lengths",
                           (512, 2048, 8192, 32768)),
                   Assert("assert share[8192] < 0.5 < share[32768]")],
        "40%": [Default(f"{DI}:run_training_cost", "utilisation", 0.4),
                Assert("llama.utilisation == 0.4"),
                Assert("assert 0.4 < llama.implied_utilisation < 0.6"),
                Assert("assert llama.implied_utilisation_6n < 0.4")],
    },
    "lectures/multihead-transformer-block.md": {
        "16": [Assert("B, T, D, H = 2, 5, 16, 4"),
               Assert("GPT2Config(d_model=1024, n_layers=24, n_heads=16)")],
        "10": [Default(f"{MH}:run_why_multihead", "vocab_size", 10),
               Default(f"{MH}:run_residual_ablation", "vocab_size", 10)],
        "10%": [Assert("assert result.worst_target(1) < 1.5 * result.chance"),
                Assert('assert abs(result.accuracy["no_residual"] - result.chance) '
                       "< 3 * noise")],
        "24": [Default(f"{MH}:run_why_multihead", "d_model", 24),
               Assert("GPT2Config(d_model=1024, n_layers=24, n_heads=16)")],
        "12": [Default(f"{MH}:run_why_multihead", "seq_len", 12),
               Attr("llmlab.models.gpt2:GPT2_SMALL", "n_layers", 12),
               Attr("llmlab.models.gpt2:GPT2_SMALL", "n_heads", 12)],
        "600": [Default(f"{MH}:run_why_multihead", "steps", 600),
                Assert("assert settings == (24, 600, 3e-3, 64, 2000)")],
        # exercise 5 trains half as long
        "300": [Assert("assert result.steps == 300")],
        "64": [Default(f"{MH}:run_why_multihead", "batch_size", 64)],
        "32": [Default(f"{MH}:run_residual_ablation", "d_model", 32),
               Default(f"{MH}:run_residual_ablation", "batch_size", 32),
               Assert("assert model == (8, 32, 4, 3) and training == (100, 1e-3, 32, 50)")],
        "2000": [Default(f"{MH}:run_why_multihead", "n_eval", 2000)],
        "100%": [Assert("assert all(min(result.target_accuracy(h)) >= 0.99 for h in (3, 6))"),
                 Assert("assert all(a >= 0.99 for accs in runs for a in accs)"),
                 Assert("assert right + other > 0.95"),
                 Assert("assert result.collapse[kind] < 0.5 and result.accuracy[kind] > 0.99")],
        "50257": [Attr("llmlab.models.gpt2:GPT2_SMALL", "vocab_size", 50257),
                  Assert("assert total == gpt2_param_count(GPT2_SMALL) == 124_439_808")],
        "124,439,808": [Assert("assert total == gpt2_param_count(GPT2_SMALL) == 124_439_808")],
        "1024": [Attr("llmlab.models.gpt2:GPT2_SMALL", "context_length", 1024),
                 Assert("GPT2Config(d_model=1024, n_layers=24, n_heads=16)")],
        "768": [Attr("llmlab.models.gpt2:GPT2_SMALL", "d_model", 768)],
        "100": [Default(f"{MH}:run_residual_ablation", "steps", 100),
                Assert("assert model == (8, 32, 4, 3) and training == (100, 1e-3, 32, 50)")],
        "50": [Default(f"{MH}:run_residual_ablation", "window", 50),
               Assert("assert model == (8, 32, 4, 3) and training == (100, 1e-3, 32, 50)")],
        "0.01": [Assert('assert abs(result.last_loss("no_residual") - math.log(10)) < 0.01')],
        # GPT-2's initialisation, checked on a TransformerLM
        "0.02": [Assert('"blocks.0.attn.qkv.weight": 0.02'),
                 Assert("assert abs(measured / std - 1) < 0.05  # GPT-2's initialisation")],
        # the coin toss between two tokens, 0.1 + 0.9 × ½; also the dropout of
        # exercise 4 (and GPT-2's dropout 0.1, a citation)
        "0.1": [Assert("coin_toss = result.chance + (1 - result.chance) / 2"),
                Assert("MultiHeadSelfAttention(16, 4, dropout=0.1)")],
        "0.9": [Assert("coin_toss = result.chance + (1 - result.chance) / 2")],
        "55%": [Assert("assert abs(coin_toss - 0.55) < 1e-12")],
        # exercise 1: GPT-2 medium and XL
        "1600": [Assert("GPT2Config(d_model=1600, n_layers=48, n_heads=25)")],
        "48": [Assert("GPT2Config(d_model=1600, n_layers=48, n_heads=25)")],
        "25": [Assert("GPT2Config(d_model=1600, n_layers=48, n_heads=25)")],
    },
    "lectures/training.md": {
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
        "0.6": [Default(f"{TR}:run_training_run", "sample_temperature", 0.6)],
        "0.693": [Assert("assert abs(loss - math.log(2)) < 1e-6")],
    },
}

# Numbers that are not results: (page or "*", number) -> why
ALLOWED: dict[tuple[str, str], str] = {
    ("*", "2017"): "year (the original Transformer)",
    ("*", "2020"): "year of a citation",
    ("*", "2021"): "year of a citation",
    ("lectures/building-blocks.md", "65504"): "IEEE fp16 maximum (a constant)",
    ("lectures/building-blocks.md", "65536"): "256² (arithmetic)",
    ("lectures/building-blocks.md", "256"): "the fp16 overflow threshold √65504; "
                                            "also an exercise's multiple_of",
    ("lectures/building-blocks.md", "0.17%"): "citation (Ivanov et al.)",
    ("lectures/building-blocks.md", "2048"): "the RMSNorm argument's token count "
                                             "(its FLOP ratio does not depend on it)",
    ("lectures/building-blocks.md", "1024"): "the RMSNorm argument's d_model (its 0.1% is "
                                             "asserted); also exercise 5's d (asserted there)",
    ("lectures/building-blocks.md", "25%"): "citation (Ivanov et al.)",
    ("lectures/building-blocks.md", "4096"): "exercise: Llama 2 7B's d_model",
    ("lectures/building-blocks.md", "100"): "exercise: a scale and a theta to try",
    ("lectures/tokenization.md", "280"): "exercise: a vocab_size to train with",
    ("lectures/distributed.md", "184,320"): "citation (Touvron et al., 2023, Llama 2, "
                                            "table 2: A100-80GB GPU-hours of the 7B model; "
                                            "llmlab.compute.LLAMA2_7B_RUN)",
    ("lectures/distributed.md", "312"): "citation (NVIDIA A100 datasheet: dense BF16 "
                                        "Tensor Core TFLOP/s; llmlab.compute.A100_80GB)",
    ("lectures/distributed.md", "46.2%"): "citation (Chowdhery et al., 2022, PaLM, "
                                          "table 3: the MFU of PaLM 540B)",
    ("lectures/distributed.md", "64"): "citation (ZeRO, Rajbhandari et al., 2020, "
                                       "figure 1: its example's 64 GPUs)",
    ("lectures/distributed.md", "1.5"): "citation (ZeRO, Rajbhandari et al., 2020, "
                                        "section 7: stage 3 communicates 1.5x DDP)",
    ("lectures/distributed.md", "25"): "PyTorch's documented default: DDP's "
                                       "bucket_cap_mb is 25 MiB",
    ("lectures/distributed.md", "3600"): "seconds in an hour",
    ("lectures/training.md", "2019"): "year of a citation (Loshchilov and Hutter)",
    ("lectures/training.md", "0.001"): "exercise: a temperature to try",
    ("lectures/training.md", "100"): "exercise: a temperature to try",
    ("lectures/training.md", "80"): "exercise: Llama 2 70B's layers (published)",
    ("lectures/training.md", "64"): "exercise: Llama 2 70B's query heads (published)",
    ("lectures/training.md", "128"): "exercise: Llama 2 70B's d_head (published)",
    ("lectures/training.md", "0.9"): "exercise: the momentum of torch.optim.SGD to match",
}

_NUMBER = re.compile(r"(?<![\w.\\{])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?%?|\.\d+%?)(?![\w])")


def prose_numbers(text: str) -> list[str]:
    """Multi-digit numbers, percentages and decimals in the prose of a page."""
    prose = strip_code(text)
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets (#11-...) are no claims
    prose = re.sub(r"^(#{1,6}\s+)\d+\.", r"\1", prose, flags=re.M)  # "## 7. ..." numbering
    prose = re.sub(r"第 \d+ 节|section \d+", "", prose)  # cross-references to sections
    prose = prose.replace("{,}", ",")  # LaTeX thousands separator
    found = []
    for m in _NUMBER.finditer(prose):
        token = m.group(1)
        if re.fullmatch(r"\d", token):  # one digit: counts, not results
            continue
        found.append(token)
    return found


def _executed_code(lang: str, page: str) -> str:
    return "\n".join(b.code for b in fenced_blocks(read_page(lang, page)) if b.executed)


def _resolve(ref: str) -> object:
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


def _default(func: str, arg: str) -> object:
    fn = inspect.unwrap(_resolve(func))
    return inspect.signature(fn).parameters[arg].default


PAGES = lecture_pages()


def test_every_lecture_is_audited() -> None:
    assert set(GUARDS) == set(PAGES), "add the new lecture to GUARDS (even if empty)"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", PAGES)
def test_every_prose_number_is_guarded_or_allowed(lang: str, page: str) -> None:
    unguarded = sorted({
        n for n in prose_numbers(read_page(lang, page))
        if n not in GUARDS[page] and (page, n) not in ALLOWED and ("*", n) not in ALLOWED
    })
    assert not unguarded, (
        f"{lang}/{page}: numbers in the prose that no block checks: {unguarded}. "
        "Print them from the computation, assert them in the block, or (for a "
        "setting, year or citation) add them to ALLOWED in tests/test_prose_numbers.py")


@pytest.mark.parametrize("page", PAGES)
def test_both_languages_state_the_same_numbers(page: str) -> None:
    zh, en = (Counter(prose_numbers(read_page(lang, page))) for lang in LANGS)
    assert zh == en, f"{page}: zh has {dict(zh - en)} more, en has {dict(en - zh)} more"


@pytest.mark.parametrize("page", PAGES)
def test_registered_numbers_are_still_in_the_prose(page: str) -> None:
    for lang in LANGS:
        stale = set(GUARDS[page]) - set(prose_numbers(read_page(lang, page)))
        assert not stale, f"{lang}/{page}: GUARDS lists {sorted(stale)}, the prose does not"


@pytest.mark.parametrize("page", PAGES)
def test_each_guard_holds(page: str) -> None:
    failures = []
    for number, guards in GUARDS[page].items():
        for guard in guards:
            if isinstance(guard, Assert):
                for lang in LANGS:
                    if guard.text not in _executed_code(lang, page):
                        failures.append(f"{number}: no executed block of {lang}/{page} "
                                        f"contains {guard.text!r}")
            elif isinstance(guard, Default):
                got = _default(guard.func, guard.arg)
                if got != guard.value:
                    failures.append(f"{number}: {guard.func}({guard.arg}=...) defaults "
                                    f"to {got!r}, the prose says {guard.value!r}")
            elif isinstance(guard, Attr):
                got = getattr(_resolve(guard.obj), guard.attr)
                if got != guard.value:
                    failures.append(f"{number}: {guard.obj}.{guard.attr} is {got!r}, "
                                    f"the prose says {guard.value!r}")
            elif not isinstance(guard, Output):
                failures.append(f"{number}: unknown guard {guard!r}")
    assert not failures, "\n".join(failures)


@pytest.mark.site
@pytest.mark.parametrize("page", PAGES)
def test_printed_numbers_are_in_the_built_page(built_site, page: str) -> None:
    outputs = [(n, g) for n, gs in GUARDS[page].items() for g in gs if isinstance(g, Output)]
    for lang in LANGS:
        prefix = "" if lang == "zh" else "en/"
        html = built_site.html(prefix + page[:-3] + "/index.html")
        for number, guard in outputs:
            assert guard.text in html, f"{lang}/{page}: {number} is not printed ({guard.text!r})"


def test_count_of_checked_prose_numbers(record_property) -> None:
    registered = sum(len(v) for v in GUARDS.values())
    occurrences = sum(
        1 for page in PAGES for lang in LANGS for n in prose_numbers(read_page(lang, page))
        if n in GUARDS[page])
    record_property("checked_prose_numbers", registered)
    record_property("checked_prose_number_occurrences", occurrences)
    assert registered > 0, registered
