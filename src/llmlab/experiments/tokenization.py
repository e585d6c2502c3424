"""Seeded experiments for "Tokenization": data only, rendered by the report layer.

Each ``run_*`` function is deterministic (no randomness is involved: the
corpora are cut at fixed offsets) and returns a dataclass of numbers, lists,
token strings/bytes and identifier keys; no display strings. Settings are kept
small so that all of them together cost a few CPU-seconds: English training
uses the first 300,000 characters of tiny Shakespeare, Chinese training the
first 60,000 characters of the Tang poems, each for 1,000 merges. The timing
function :func:`time_training` is cached per machine (``machine_dependent``):
its numbers belong to the machine, which the result names, and both languages
of the page show the one measurement.

Sections of the lecture and their functions:

1. :func:`run_granularity` -- characters, bytes, words, subwords;
2. :func:`run_bpe_steps` -- BPE merge by merge on a tiny text;
3. :func:`run_corpus_training` -- training on Shakespeare and the Tang poems;
4. :func:`run_gpt2_agreement` -- our GPT-2 ids equal tiktoken's;
5. :func:`run_chinese_tokenizers` -- GPT-2 on Chinese vs a Chinese-trained BPE;
6. :func:`run_tokenizer_pitfalls` -- special tokens and pitfalls;
7. :func:`time_training` -- what makes training fast (machine-dependent).

Taught on: "Tokenization".
"""

from __future__ import annotations

import os
import platform
import time
from collections import Counter
from dataclasses import dataclass

from llmlab import data
from llmlab.data import CORPORA, corpus_text
from llmlab.build.cache import cached, part_results
from llmlab.checks import check_choice, check_int, check_sizes, check_str, check_type
from llmlab.tokenization import (
    END_OF_TEXT,
    Tokenizer,
    count_pretokens,
    count_pretokens_file,
    gpt2_tokenizer,
    learn_merges,
    learn_merges_naive,
    pretokenize,
    vocab_from_merges,
)
from llmlab.tokenization.reference import tiktoken_encoding

__all__ = [
    "AgreementCase",
    "BPEStep",
    "BPEStepsResult",
    "ChineseTokenizersResult",
    "CorpusCurve",
    "CorpusTrainingResult",
    "GPT2AgreementResult",
    "GranularityResult",
    "PitfallsResult",
    "TokenizedText",
    "TrainedBPE",
    "TrainingTimingResult",
    "CORPORA",
    "corpus_text",
    "run_bpe_steps",
    "run_chinese_tokenizers",
    "run_corpus_training",
    "run_gpt2_agreement",
    "run_granularity",
    "run_tokenizer_pitfalls",
    "run_train_corpus",
    "time_training",
]

"""GPT-2's end-of-text token, the document separator."""

LANGUAGE = {"shakespeare": "en", "tang": "zh"}


def _heldout(corpus: str, num_chars: int) -> str:
    """The last ``num_chars`` characters of a corpus: never used for training."""
    return corpus_text(corpus)[-num_chars:]


# ---------------------------------------------------------------------------
# 1. characters, bytes, words, subwords
# ---------------------------------------------------------------------------
@dataclass
class GranularityResult:
    """Four ways to cut text into units, on English and Chinese samples.

    Schemes: ``"character"`` (Unicode code points), ``"byte"`` (UTF-8 bytes),
    ``"word"`` (GPT-2 pre-tokens: words with their leading space, runs of
    digits or punctuation; in Chinese a whole phrase between punctuation marks),
    ``"subword"`` (GPT-2's BPE tokens).

    Attributes:
        languages: ``["en", "zh"]``.
        schemes: The scheme keys above.
        num_chars: Characters in each language's sample.
        sequence_length: ``[language][scheme]`` -> units in the sample.
        distinct_units: ``[language][scheme]`` -> distinct units in the sample.
        vocab_bound: ``[scheme]`` -> the size of the full vocabulary, where it
            is fixed (bytes 256, GPT-2 50,257); ``None`` where it is open.
        unseen_rate: ``[language][scheme]`` -> fraction of the units of a
            held-out text that never occur in the sample, for the schemes whose
            vocabulary would be read off the data (characters, words).
        utf8_bytes_per_char: ``[language]`` -> mean UTF-8 bytes per character.
        utf8_length_counts: ``[language]`` -> ``{bytes per char: characters}``.
        examples: ``[language]`` -> the example sentence.
        example_units: ``[language][scheme]`` -> its units (``str`` for
            characters and words, ``bytes`` for bytes and subwords).

    Taught on: "Tokenization".
    """

    languages: list[str]
    schemes: list[str]
    num_chars: dict[str, int]
    sequence_length: dict[str, dict[str, int]]
    distinct_units: dict[str, dict[str, int]]
    vocab_bound: dict[str, int | None]
    unseen_rate: dict[str, dict[str, float]]
    utf8_bytes_per_char: dict[str, float]
    utf8_length_counts: dict[str, dict[int, int]]
    examples: dict[str, str]
    example_units: dict[str, dict[str, list]]


def _units(text: str, scheme: str, gpt2: Tokenizer) -> list:
    if scheme == "character":
        return list(text)
    if scheme == "byte":
        return [bytes([b]) for b in text.encode("utf-8")]
    if scheme == "word":
        return pretokenize(text)
    return [gpt2.vocab[i] for i in gpt2.encode(text)]


@cached(cost=0.5)
def run_granularity(
    num_chars: int = 20_000,
    heldout_chars: int = 5_000,
    en_example: str = "To be, or not to be, that is the question.",
    zh_example: str = "床前明月光，疑是地上霜。",
) -> GranularityResult:
    """Sequence length vs vocabulary for each way of cutting text.

    Samples: the first ``num_chars`` characters of each corpus; held-out: its
    last ``heldout_chars``. Cost: about 0.1 s plus loading GPT-2's files.

    Taught on: "Tokenization".
    """
    shortest = min(len(corpus_text(c)) for c in CORPORA)
    check_int("num_chars", num_chars, maximum=shortest)
    check_int("heldout_chars", heldout_chars, maximum=shortest)
    check_str("en_example", en_example, nonempty=True)
    check_str("zh_example", zh_example, nonempty=True)
    gpt2 = gpt2_tokenizer()
    schemes = ["character", "byte", "word", "subword"]
    result = GranularityResult(
        languages=["en", "zh"],
        schemes=schemes,
        num_chars={},
        sequence_length={},
        distinct_units={},
        vocab_bound={"character": None, "byte": 256, "word": None,
                     "subword": gpt2.vocab_size},
        unseen_rate={},
        utf8_bytes_per_char={},
        utf8_length_counts={},
        examples={"en": en_example, "zh": zh_example},
        example_units={},
    )
    for corpus in CORPORA:
        lang = LANGUAGE[corpus]
        sample = corpus_text(corpus)[:num_chars]
        heldout = _heldout(corpus, heldout_chars)
        units = {s: _units(sample, s, gpt2) for s in schemes}
        result.num_chars[lang] = len(sample)
        result.sequence_length[lang] = {s: len(u) for s, u in units.items()}
        result.distinct_units[lang] = {s: len(set(u)) for s, u in units.items()}
        result.unseen_rate[lang] = {}
        for s in ("character", "word"):
            seen = set(units[s])
            later = _units(heldout, s, gpt2)
            result.unseen_rate[lang][s] = sum(u not in seen for u in later) / len(later)
        lengths = Counter(len(c.encode("utf-8")) for c in sample)
        result.utf8_length_counts[lang] = dict(sorted(lengths.items()))
        result.utf8_bytes_per_char[lang] = len(sample.encode("utf-8")) / len(sample)
        example = result.examples[lang]
        result.example_units[lang] = {s: _units(example, s, gpt2) for s in schemes}
    return result


# ---------------------------------------------------------------------------
# 2. BPE step by step
# ---------------------------------------------------------------------------
@dataclass
class BPEStep:
    """One merge of :func:`run_bpe_steps`.

    Attributes:
        pair: The two tokens merged.
        count: How often the pair occurred (weighted by word counts), overlapping
            occurrences included: ``aaa`` holds ``(a, a)`` twice, yet the merge
            saves one token there (see ``num_tokens``).
        candidates: The most frequent pairs before this merge, with counts,
            best first (ties in the order the rule breaks them).
        vocab_size: Vocabulary size after the merge (256 bytes + merges).
        num_tokens: Tokens the whole text takes after the merge.
        segmentation: Each distinct word's tokens after the merge.

    Taught on: "Tokenization".
    """

    pair: tuple[bytes, bytes]
    count: int
    candidates: list[tuple[tuple[bytes, bytes], int]]
    vocab_size: int
    num_tokens: int
    segmentation: list[list[bytes]]


@dataclass
class BPEStepsResult:
    """BPE on a tiny text, merge by merge.

    Attributes:
        text: The text.
        split: ``"whitespace"`` (words as in the CS336 handout) or ``"gpt2"``.
        words: The distinct words (bytes), in first-seen order.
        word_counts: How often each occurs.
        initial_num_tokens: Tokens (bytes) before any merge.
        steps: One :class:`BPEStep` per merge.

    Taught on: "Tokenization".
    """

    text: str
    split: str
    words: list[bytes]
    word_counts: list[int]
    initial_num_tokens: int
    steps: list[BPEStep]


def _apply(word: list[bytes], pair: tuple[bytes, bytes]) -> list[bytes]:
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


@cached
def run_bpe_steps(
    text: str = (
        "low low low low low lower lower widest widest widest "
        "newest newest newest newest newest newest"
    ),
    num_merges: int = 12,
    split: str = "whitespace",
    num_candidates: int = 4,
) -> BPEStepsResult:
    """BPE merge by merge: the pair counts that chose each merge.

    The default text and ``split="whitespace"`` are the CS336 handout's
    example (after Sennrich et al., 2016), whose merges are ``s t``, ``e st``,
    ``o w``, ... ; ``split="gpt2"`` uses GPT-2's pre-tokens instead (leading
    spaces join the words). The merges come from
    :func:`llmlab.tokenization.learn_merges`. Cost: milliseconds.

    Taught on: "Tokenization".
    """
    check_str("text", text, nonempty=True)
    check_int("num_merges", num_merges, minimum=0)
    check_int("num_candidates", num_candidates)
    check_str("split", split)
    if split == "whitespace":
        counts = dict(Counter(w.encode("utf-8") for w in text.split()))
    elif split == "gpt2":
        counts = count_pretokens(text)
    else:
        raise ValueError(f"split ({split!r}) must be 'whitespace' or 'gpt2'")
    words = list(counts)
    segments = [[bytes([b]) for b in w] for w in words]
    steps = []
    for merge in learn_merges(counts, num_merges):
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for seg, w in zip(segments, words):
            for pair in zip(seg, seg[1:]):
                pairs[pair] += counts[w]
        ranked = sorted(pairs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        segments = [_apply(seg, merge.pair) for seg in segments]
        steps.append(
            BPEStep(
                pair=merge.pair,
                count=merge.count,
                candidates=ranked[:num_candidates],
                vocab_size=256 + len(steps) + 1,
                num_tokens=sum(len(s) * counts[w] for s, w in zip(segments, words)),
                segmentation=[list(s) for s in segments],
            )
        )
    return BPEStepsResult(
        text=text,
        split=split,
        words=words,
        word_counts=[counts[w] for w in words],
        initial_num_tokens=sum(len(w) * n for w, n in counts.items()),
        steps=steps,
    )


# ---------------------------------------------------------------------------
# 3. training on the shipped corpora
# ---------------------------------------------------------------------------
@dataclass
class TrainedBPE:
    """One BPE training run on a corpus prefix.

    Attributes:
        corpus: Corpus key (see :data:`CORPORA`).
        num_chars: Characters trained on (the corpus's first ones).
        num_pretokens: Pre-tokens in them; ``num_unique_pretokens`` distinct.
        merges: The merges in order; ``counts`` the pair count of each.

    Taught on: "Tokenization".
    """

    corpus: str
    num_chars: int
    num_pretokens: int
    num_unique_pretokens: int
    merges: list[tuple[bytes, bytes]]
    counts: list[int]

    def tokenizer(self, num_merges: int | None = None) -> Tokenizer:
        """A tokenizer with the first ``num_merges`` merges (all by default)."""
        merges = self.merges if num_merges is None else self.merges[:num_merges]
        return Tokenizer(vocab_from_merges(merges, [END_OF_TEXT]), merges, [END_OF_TEXT])


@cached(cost=0.5)
def run_train_corpus(corpus: str, num_chars: int, num_merges: int) -> TrainedBPE:
    """Train BPE for ``num_merges`` merges on the first ``num_chars`` characters.

    Cost: about 0.2 s for 300,000 characters of Shakespeare and 0.45 s for
    60,000 characters of Tang poems, 1,000 merges each (Chinese pre-tokens are
    long phrases, so each merge touches more of them).

    Taught on: "Tokenization".
    """
    text = corpus_text(corpus)
    check_int("num_chars", num_chars, maximum=len(text))
    check_int("num_merges", num_merges, minimum=0)
    counts = count_pretokens(text[:num_chars], [END_OF_TEXT])
    learned = learn_merges(counts, num_merges)
    return TrainedBPE(
        corpus=corpus,
        num_chars=num_chars,
        num_pretokens=sum(counts.values()),
        num_unique_pretokens=len(counts),
        merges=[m.pair for m in learned],
        counts=[m.count for m in learned],
    )


@dataclass
class CorpusCurve:
    """What one training run learned, and how well it compresses held-out text.

    Attributes:
        corpus: Corpus key; ``language`` its language (``"en"``, ``"zh"``).
        num_chars: Characters trained on.
        num_unique_pretokens: Distinct pre-tokens in them.
        vocab_sizes: Vocabulary sizes evaluated (256 bytes + END_OF_TEXT + merges),
            each the first merges of the one run.
        bytes_per_token: Held-out UTF-8 bytes per token at each size.
        chars_per_token: Held-out characters per token at each size.
        first_merges: The first merges, with ``first_counts``.
        longest_tokens: The longest tokens learned (bytes), longest first.
        token_kinds: Learned tokens by what they decode to: ``"partial"`` (not
            valid UTF-8 alone: part of a character), ``"one_char"``,
            ``"multi_char"``.

    Taught on: "Tokenization".
    """

    corpus: str
    language: str
    num_chars: int
    num_unique_pretokens: int
    vocab_sizes: list[int]
    bytes_per_token: list[float]
    chars_per_token: list[float]
    first_merges: list[tuple[bytes, bytes]]
    first_counts: list[int]
    longest_tokens: list[bytes]
    token_kinds: dict[str, int]


@dataclass
class CorpusTrainingResult:
    """BPE trained on English and Chinese: one :class:`CorpusCurve` each.

    Attributes:
        curves: Per corpus, in :data:`CORPORA` order.
        heldout_chars: Characters of held-out text each curve is measured on.

    Taught on: "Tokenization".
    """

    curves: list[CorpusCurve]
    heldout_chars: int


def _token_kind(token: bytes) -> str:
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        return "partial"
    return "one_char" if len(text) == 1 else "multi_char"


def _training_parts(num_merges: int, en_chars: int, zh_chars: int, **_: object) -> list:
    """The training runs an experiment needs: one per corpus (cache parts)."""
    sizes = {"shakespeare": en_chars, "tang": zh_chars}
    return [
        (run_train_corpus, dict(corpus=c, num_chars=sizes[c], num_merges=num_merges))
        for c in CORPORA
    ]


def _train(
    num_merges: int, en_chars: int, zh_chars: int, heldout_chars: int
) -> dict[str, TrainedBPE]:
    """The runs of :func:`_training_parts`, after checking they miss the held-out text."""
    check_int("num_merges", num_merges, minimum=0)
    check_int("heldout_chars", heldout_chars)
    shortest = min(CORPORA, key=lambda c: len(corpus_text(c)))
    limit = len(corpus_text(shortest)) - 1  # leaves one character to train on
    if heldout_chars > limit:
        raise ValueError(
            f"heldout_chars must be an int in [1, {limit}], got {heldout_chars}: "
            "each corpus keeps its last heldout_chars characters for evaluation "
            f"and trains on what comes before (the shortest, {shortest}, has "
            f"{limit + 1} characters)"
        )
    for name, value in (("en_chars", en_chars), ("zh_chars", zh_chars)):
        check_int(name, value)
    for corpus, name, n in (("shakespeare", "en_chars", en_chars),
                            ("tang", "zh_chars", zh_chars)):
        room = len(corpus_text(corpus)) - heldout_chars
        if not 0 < n <= room:
            raise ValueError(
                f"{name} ({n}) must be in 1..{room}: the last heldout_chars "
                f"({heldout_chars}) characters are kept for evaluation"
            )
    runs = part_results(_training_parts, num_merges, en_chars, zh_chars)
    return {run.corpus: run for run in runs}


@cached(parts=_training_parts, cost=0.4)
def run_corpus_training(
    num_merges: int = 1000,
    en_chars: int = 300_000,
    zh_chars: int = 60_000,
    merge_steps: tuple[int, ...] = (0, 50, 100, 200, 400, 700, 1000),
    heldout_chars: int = 20_000,
    num_first: int = 20,
    num_longest: int = 12,
) -> CorpusTrainingResult:
    """Train on Shakespeare and on Tang poems; compress held-out text.

    One run per corpus (:func:`run_train_corpus`, on the first ``en_chars``
    characters of Shakespeare and ``zh_chars`` of the poems); each point of
    the curve keeps the first ``k`` merges of that run (``k`` in
    ``merge_steps``), which is exactly the vocabulary a shorter run would have
    learned. The held-out text is each corpus's last ``heldout_chars``
    characters. Cost: the two runs (about 0.65 s) and about 0.3 s of encoding.

    Taught on: "Tokenization".
    """
    check_sizes("merge_steps", merge_steps, minimum=0)
    check_int("num_first", num_first, minimum=0)
    check_int("num_longest", num_longest, minimum=0)
    curves = []
    for corpus, run in _train(num_merges, en_chars, zh_chars, heldout_chars).items():
        heldout = _heldout(corpus, heldout_chars)
        nbytes = len(heldout.encode("utf-8"))
        steps = [k for k in merge_steps if k <= len(run.merges)]
        ntokens = [len(run.tokenizer(k).encode(heldout)) for k in steps]
        learned = [a + b for a, b in run.merges]
        order = sorted(range(len(learned)), key=lambda i: (-len(learned[i]), i))
        curves.append(
            CorpusCurve(
                corpus=corpus,
                language=LANGUAGE[corpus],
                num_chars=run.num_chars,
                num_unique_pretokens=run.num_unique_pretokens,
                vocab_sizes=[257 + k for k in steps],
                bytes_per_token=[nbytes / n for n in ntokens],
                chars_per_token=[len(heldout) / n for n in ntokens],
                first_merges=run.merges[:num_first],
                first_counts=run.counts[:num_first],
                longest_tokens=[learned[i] for i in order[:num_longest]],
                token_kinds=dict(Counter(_token_kind(t) for t in learned)),
            )
        )
    return CorpusTrainingResult(curves=curves, heldout_chars=heldout_chars)


# ---------------------------------------------------------------------------
# 4. GPT-2's tokenizer: our ids equal tiktoken's
# ---------------------------------------------------------------------------
AGREEMENT_TEXTS: dict[str, str] = {
    "english": "The quick brown fox doesn't jump; it's 9:30 and they'll wait.",
    "chinese": "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
    "code": 'def area(r):\n    return 3.14159 * r ** 2  # m²\n\tpass\n',
    "emoji": "Tokenizers 🤖❤️🦀 and families 👩‍👩‍👧!",
    "spaces": "a  b   c    d\n\n\n   e\t\tf     ",
    "digits": "In 2024, 1234567 + 0.5 = 1234567.5; call 555-0199.",
    "special": f"The end.{END_OF_TEXT}Once upon a time{END_OF_TEXT}",
}


@dataclass
class AgreementCase:
    """One text encoded by us and by the reference.

    Attributes:
        key: What the text exercises (``"english"``, ``"chinese"``, ...).
        text: The text.
        ids: Our ids; ``reference_ids`` tiktoken's; ``equal`` whether they match.
        tokens: Our tokens as bytes.
        round_trip: Whether ``decode(encode(text)) == text``.

    Taught on: "Tokenization".
    """

    key: str
    text: str
    ids: list[int]
    reference_ids: list[int]
    equal: bool
    tokens: list[bytes]
    round_trip: bool


@dataclass
class GPT2AgreementResult:
    """GPT-2's tokenizer, ours vs tiktoken built offline from the same ranks.

    Attributes:
        cases: One :class:`AgreementCase` per text.
        all_equal: Every case equal (the page asserts it).
        reference: The reference library (``"tiktoken"``); ``reference_version``
            its version.
        vocab_size: GPT-2's vocabulary size (50,257).
        num_merges: Merges in ``merges.txt`` (50,000).

    Taught on: "Tokenization".
    """

    cases: list[AgreementCase]
    all_equal: bool
    reference: str
    reference_version: str
    vocab_size: int
    num_merges: int


@cached(cost=0.5)
def run_gpt2_agreement(
    keys: tuple[str, ...] = tuple(AGREEMENT_TEXTS),
) -> GPT2AgreementResult:
    """Encode English, Chinese, code, emoji, spaces, digits, special tokens both ways.

    Raises ``ModuleNotFoundError`` with install instructions when tiktoken is
    missing. Cost: loading GPT-2's files, then milliseconds.

    Taught on: "Tokenization".
    """
    check_type("keys", keys, (list, tuple), expected="a tuple of text keys")
    if not keys:
        raise ValueError(
            f"keys must hold at least one of {tuple(AGREEMENT_TEXTS)}, got ()")
    for i, key in enumerate(keys):
        check_choice(f"keys[{i}]", key, AGREEMENT_TEXTS)
    gpt2 = gpt2_tokenizer()
    reference = tiktoken_encoding(gpt2)
    import tiktoken

    cases = []
    for key in keys:
        text = AGREEMENT_TEXTS[key]
        ids = gpt2.encode(text)
        ref = reference.encode(text, allowed_special="all")
        cases.append(
            AgreementCase(
                key=key,
                text=text,
                ids=ids,
                reference_ids=ref,
                equal=ids == ref,
                tokens=[gpt2.vocab[i] for i in ids],
                round_trip=gpt2.decode(ids) == text,
            )
        )
    return GPT2AgreementResult(
        cases=cases,
        all_equal=all(c.equal for c in cases),
        reference="tiktoken",
        reference_version=tiktoken.__version__,
        vocab_size=gpt2.vocab_size,
        num_merges=len(gpt2.merges),
    )


# ---------------------------------------------------------------------------
# 5. GPT-2 on Chinese vs a tokenizer trained on Chinese
# ---------------------------------------------------------------------------
@dataclass
class ChineseTokenizersResult:
    """Three tokenizers on English and Chinese held-out text.

    Tokenizer keys: ``"gpt2"`` (50,257 entries, trained mostly on English web
    text), ``"bpe_en"`` and ``"bpe_zh"`` (ours, trained on Shakespeare and on
    Tang poems by :func:`run_train_corpus`).

    Attributes:
        tokenizers: The keys above; ``vocab_sizes`` their sizes.
        languages: ``["en", "zh"]``.
        tokens_per_char: ``[tokenizer][language]`` on held-out text.
        context_chars: ``[tokenizer][language]`` -> characters that fit in
            ``context_length`` tokens (``context_length / tokens_per_char``).
        context_length: The context length used (GPT-2's 1,024).
        example: A line of Chinese; ``example_tokens[tokenizer]`` its tokens.
        example_partial: ``[tokenizer]`` -> how many of those tokens are not
            valid UTF-8 alone (pieces of a character).
        partial_fraction: ``[tokenizer]`` -> the same fraction over the
            held-out Chinese tokens.

    Taught on: "Tokenization".
    """

    tokenizers: list[str]
    vocab_sizes: dict[str, int]
    languages: list[str]
    tokens_per_char: dict[str, dict[str, float]]
    context_chars: dict[str, dict[str, float]]
    context_length: int
    example: str
    example_tokens: dict[str, list[bytes]]
    example_partial: dict[str, int]
    partial_fraction: dict[str, float]


@cached(parts=_training_parts, cost=0.3)
def run_chinese_tokenizers(
    num_merges: int = 1000,
    en_chars: int = 300_000,
    zh_chars: int = 60_000,
    heldout_chars: int = 20_000,
    context_length: int = 1024,
    example: str = "春眠不覺曉，處處聞啼鳥。",
) -> ChineseTokenizersResult:
    """Tokens per character, and what the tokens look like, in each language.

    The trained tokenizers are the runs of :func:`run_corpus_training` (shared
    through the cache). Cost: about 0.2 s of encoding once those exist.

    Taught on: "Tokenization".
    """
    check_int("context_length", context_length)
    check_str("example", example, nonempty=True)
    runs = _train(num_merges, en_chars, zh_chars, heldout_chars)
    toks = {
        "gpt2": gpt2_tokenizer(),
        "bpe_en": runs["shakespeare"].tokenizer(),
        "bpe_zh": runs["tang"].tokenizer(),
    }
    texts = {LANGUAGE[c]: _heldout(c, heldout_chars) for c in CORPORA}
    per_char = {
        k: {lang: len(t.encode(text)) / len(text) for lang, text in texts.items()}
        for k, t in toks.items()
    }
    example_tokens = {
        k: [t.vocab[i] for i in t.encode(example)] for k, t in toks.items()
    }
    partial = {}
    for k, t in toks.items():
        ids = t.encode(texts["zh"])
        partial[k] = sum(_token_kind(t.vocab[i]) == "partial" for i in ids) / len(ids)
    return ChineseTokenizersResult(
        tokenizers=list(toks),
        vocab_sizes={k: t.vocab_size for k, t in toks.items()},
        languages=list(texts),
        tokens_per_char=per_char,
        context_chars={
            k: {lang: context_length / v for lang, v in d.items()}
            for k, d in per_char.items()
        },
        context_length=context_length,
        example=example,
        example_tokens=example_tokens,
        example_partial={
            k: sum(_token_kind(b) == "partial" for b in v)
            for k, v in example_tokens.items()
        },
        partial_fraction=partial,
    )


# ---------------------------------------------------------------------------
# 6. special tokens, document boundaries, pitfalls
# ---------------------------------------------------------------------------
@dataclass
class TokenizedText:
    """A text, its ids and its tokens.

    Attributes:
        group: The pitfall it belongs to (``"leading_space"``, ``"digits"``...).
        key: The case within the group.
        text: The text; ``ids`` and ``tokens`` (bytes) its encoding.

    Taught on: "Tokenization".
    """

    group: str
    key: str
    text: str
    ids: list[int]
    tokens: list[bytes]


@dataclass
class PitfallsResult:
    """GPT-2's tokenizer on special tokens and on texts that surprise people.

    Attributes:
        cases: Groups ``"document_boundary"`` (with and without special
            tokens), ``"overlapping_special"`` (longest wins), ``"leading_space"``,
            ``"case"``, ``"digits"``, ``"trailing_whitespace"``, ``"indent"``.
        eot_id: The id of ``<|endoftext|>`` (50,256).
        partial_text: A text whose characters span several tokens.
        partial_ids: Its ids; ``partial_tokens`` their bytes.
        partial_decodes: ``decode(partial_ids[:k])`` for ``k = 1..len``: a cut
            inside a character decodes to U+FFFD.

    Taught on: "Tokenization".
    """

    cases: list[TokenizedText]
    eot_id: int
    partial_text: str
    partial_ids: list[int]
    partial_tokens: list[bytes]
    partial_decodes: list[str]


PITFALLS: list[tuple[str, str, str]] = [
    ("leading_space", "no_space", "hello"),
    ("leading_space", "space", " hello"),
    ("leading_space", "two_spaces", "  hello"),
    ("case", "lower", " hello"),
    ("case", "title", " Hello"),
    ("case", "upper", " HELLO"),
    ("digits", "year", "2024"),
    ("digits", "long", "1234567"),
    ("digits", "grouped", "1,234,567"),
    ("digits", "decimal", "3.14159"),
    ("trailing_whitespace", "none", "Hello world"),
    ("trailing_whitespace", "space", "Hello world "),
    ("trailing_whitespace", "newline", "Hello world\n"),
    ("indent", "spaces", "    return x"),
    ("indent", "tab", "\treturn x"),
]


@cached(cost=0.8)
def run_tokenizer_pitfalls(
    partial_text: str = "明月", boundary_text: str = f"The end.{END_OF_TEXT}Once upon"
) -> PitfallsResult:
    """Special tokens as document boundaries, and tokenization surprises.

    Cost: loading GPT-2's files, then milliseconds.

    Taught on: "Tokenization".
    """
    check_str("partial_text", partial_text, nonempty=True)
    check_str("boundary_text", boundary_text, nonempty=True)
    gpt2 = gpt2_tokenizer()
    plain = Tokenizer(gpt2.vocab, gpt2.merges)  # no special tokens
    double = Tokenizer(gpt2.vocab, gpt2.merges, [END_OF_TEXT, END_OF_TEXT + END_OF_TEXT])

    def case(group: str, key: str, text: str, tok: Tokenizer = gpt2) -> TokenizedText:
        ids = tok.encode(text)
        return TokenizedText(group, key, text, ids, [tok.vocab[i] for i in ids])

    cases = [
        case("document_boundary", "special", boundary_text),
        case("document_boundary", "plain_text", boundary_text, plain),
        case("overlapping_special", "double", f"a{END_OF_TEXT}{END_OF_TEXT}{END_OF_TEXT}b", double),
        *(case(g, k, t) for g, k, t in PITFALLS),
    ]
    ids = gpt2.encode(partial_text)
    return PitfallsResult(
        cases=cases,
        eot_id=gpt2.special_ids[END_OF_TEXT],
        partial_text=partial_text,
        partial_ids=ids,
        partial_tokens=[gpt2.vocab[i] for i in ids],
        partial_decodes=[gpt2.decode(ids[:k]) for k in range(1, len(ids) + 1)],
    )


# ---------------------------------------------------------------------------
# 7. what makes training fast (machine-dependent: cached per machine)
# ---------------------------------------------------------------------------
@dataclass
class TrainingTimingResult:
    """Seconds (best of ``repeats``) for the ways of doing each step.

    Attributes:
        seconds: ``[key]`` -> seconds; keys ``"merges_naive"``,
            ``"merges_incremental"`` (same ``num_merges`` on the same counts),
            ``"pretokenize_serial"``, ``"pretokenize_parallel"`` (the whole
            Shakespeare file, ``num_processes`` workers), ``"encode_cached"``,
            ``"encode_uncached"`` (GPT-2 on ``encode_chars`` characters, with
            and without the pre-token cache).
        num_chars: Characters the merge loops train on; ``num_merges`` merges.
        num_pretokens: Pre-tokens in them; ``num_unique_pretokens`` distinct
            (what the loops iterate over).
        file_bytes: Size of the pre-tokenized file.
        num_processes: Workers of the parallel pre-tokenization.
        encode_chars: Characters encoded.
        same_merges: The naive and incremental loops agree.
        repeats: Timings per measurement (the minimum is kept).
        machine: Processor architecture; ``cpus`` usable CPUs; ``python``
            version; ``omp_num_threads`` the environment's setting.

    Taught on: "Tokenization".
    """

    seconds: dict[str, float]
    num_chars: int
    num_merges: int
    num_pretokens: int
    num_unique_pretokens: int
    file_bytes: int
    num_processes: int
    encode_chars: int
    same_merges: bool
    repeats: int
    machine: str
    cpus: int
    python: str
    omp_num_threads: str


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@cached(machine_dependent=True, processes="num_processes", cost=2.0)
def time_training(
    num_chars: int = 30_000,
    num_merges: int = 80,
    num_processes: int = 2,
    encode_chars: int = 100_000,
    repeats: int = 3,
) -> TrainingTimingResult:
    """Time the naive vs incremental merge loop, serial vs parallel
    pre-tokenization, and encoding with vs without the pre-token cache.

    Cached per machine (``machine_dependent``: the key names the machine, and
    ``machine``, ``cpus``, ``python`` and ``omp_num_threads`` record it); the
    naive loop runs once (it is the slow one). Cost: about 1.5 s of wall time on
    a 2-core machine.

    Taught on: "Tokenization".
    """
    text = data.shakespeare()
    check_int("num_chars", num_chars, maximum=len(text))
    check_int("num_merges", num_merges, minimum=0)
    check_int("num_processes", num_processes)
    check_int("encode_chars", encode_chars, maximum=len(text))
    check_int("repeats", repeats)
    counts = count_pretokens(text[:num_chars])
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    naive = learn_merges_naive(counts, num_merges)
    seconds["merges_naive"] = time.perf_counter() - start
    seconds["merges_incremental"] = _best(
        lambda: learn_merges(counts, num_merges), repeats
    )
    same = naive == learn_merges(counts, num_merges)

    path = data.path("shakespeare.txt")
    seconds["pretokenize_serial"] = _best(
        lambda: count_pretokens_file(path, None, 1), repeats
    )
    seconds["pretokenize_parallel"] = _best(
        lambda: count_pretokens_file(path, None, num_processes), repeats
    )

    gpt2 = gpt2_tokenizer()
    sample = text[:encode_chars]
    uncached = Tokenizer(gpt2.vocab, gpt2.merges, cache_size=0)
    seconds["encode_uncached"] = _best(lambda: uncached.encode(sample), repeats)
    fresh = Tokenizer(gpt2.vocab, gpt2.merges)

    def encode_cold() -> None:  # the cache fills as the text goes, as on first use
        fresh.clear_cache()
        fresh.encode(sample)

    seconds["encode_cached"] = _best(encode_cold, repeats)

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1
    )
    return TrainingTimingResult(
        seconds=seconds,
        num_chars=num_chars,
        num_merges=num_merges,
        num_pretokens=sum(counts.values()),
        num_unique_pretokens=len(counts),
        file_bytes=path.stat().st_size,
        num_processes=num_processes,
        encode_chars=len(sample),
        same_merges=same,
        repeats=repeats,
        machine=platform.machine(),
        cpus=cpus,
        python=platform.python_version(),
        omp_num_threads=os.environ.get("OMP_NUM_THREADS", ""),
    )
