r"""How good a trained model is: held-out loss, and the quality of its samples.

Two kinds of measure, both independent of how the model was trained:

* :func:`held_out_loss`: the model's cross-entropy on a text it did not train on,
  per token and converted exactly to nats per character and bits per byte (the
  units in which models with different tokenizers compare).
* :func:`sample_quality`: text sampled with fixed seeds, scored against the corpus
  the model learnt from: the share of its words that are words of the corpus
  (:func:`known_word_share`, for English), the share of its lines that are regular
  five- or seven-character verse (:func:`poem_shape_share`, for the Tang poems)
  and the share of its characters that occur in the corpus at all
  (:func:`known_character_share`: a byte-level or BPE model can assemble
  characters that never occur there).

The corpora are :data:`llmlab.data.CORPORA`, read by :func:`llmlab.data.corpus_text`.

Taught on: "Training and generating text".
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import statistics

import torch
from torch import nn

from llmlab._surgery import device_of
from llmlab.checks import (
    check_language_model,
    check_bool,
    check_choice,
    check_finite_float,
    check_int,
    check_str,
    check_type,
)
from llmlab.data import CORPORA, corpus_text
from llmlab.generation import generate
from llmlab.tokenization import ByteTokenizer, Tokenizer
from llmlab.training.loss import cross_entropy

__all__ = [
    "HAN_CHARACTER",
    "HeldOutLoss",
    "SampleQuality",
    "corpus_characters",
    "corpus_words",
    "held_out_loss",
    "known_character_share",
    "known_word_share",
    "poem_halves",
    "poem_line_halves",
    "poem_line_has_shape",
    "poem_lines",
    "poem_shape_share",
    "sample_quality",
    "words",
]

# --- words and characters of the corpora ---------------------------------------------

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")


def words(text: str) -> list[str]:
    """The words of ``text``, lowercased, in order.

    A word is a run of ASCII letters, with apostrophes inside it (``"I'll"``,
    ``"o'er"``): the regular expression ``[A-Za-z]+(?:'[A-Za-z]+)*``. Anything else
    separates words; an apostrophe at either end (a quotation mark, ``'tis``) is not
    part of the word. ``"ROMEO: I'll go."`` gives ``["romeo", "i'll", "go"]``.

    Taught on: "Training and generating text".
    """
    check_str("text", text)
    return [w.lower() for w in _WORD.findall(text)]


@functools.cache
def _corpus_words(corpus: str) -> frozenset[str]:
    return frozenset(words(corpus_text(corpus)))


@functools.cache
def _corpus_characters(corpus: str) -> frozenset[str]:
    return frozenset(corpus_text(corpus))


def corpus_words(corpus: str) -> frozenset[str]:
    """Every word (:func:`words`) of :func:`corpus_text` ``(corpus)``.

    Taught on: "Training and generating text".
    """
    check_choice("corpus", corpus, CORPORA)
    return _corpus_words(corpus)


def corpus_characters(corpus: str) -> frozenset[str]:
    """Every character of :func:`corpus_text` ``(corpus)``, ``"\\n"`` included.

    Taught on: "Training and generating text".
    """
    check_choice("corpus", corpus, CORPORA)
    return _corpus_characters(corpus)


def known_word_share(text: str, corpus: str = "shakespeare") -> tuple[int, int]:
    """``(known, total)``: how many of the words of ``text`` occur in ``corpus``.

    Words are :func:`words` of ``text``, counted with repetition, and a word is
    known when it is in :func:`corpus_words` ``(corpus)``. The real text scores
    ``total`` out of ``total`` by construction; a model's samples score what share
    of what it writes is words at all.

    Taught on: "Training and generating text".
    """
    found = words(text)
    vocabulary = corpus_words(corpus)
    return sum(w in vocabulary for w in found), len(found)


def known_character_share(text: str, corpus: str = "tang") -> tuple[int, int]:
    """``(known, total)``: how many characters of ``text`` occur in ``corpus``.

    Every character counts, line breaks included; the replacement character
    ``U+FFFD`` (bytes that are no UTF-8) is not in either corpus.

    Taught on: "Training and generating text".
    """
    check_str("text", text)
    alphabet = corpus_characters(corpus)
    return sum(c in alphabet for c in text), len(text)


# --- the poem-shape measure ----------------------------------------------------------

HAN_CHARACTER = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]"
"""A regular expression for one Han character (CJK ideographs, their extensions and
compatibility forms): what the poem-shape and known-character measures count."""
_H = HAN_CHARACTER
_POEM_LINE = re.compile(
    rf"(?:{_H}{{5}}[，？！]{_H}{{5}}|{_H}{{7}}[，？！]{_H}{{7}})[。？！]"
)
_COUPLET = re.compile(rf"({HAN_CHARACTER}+)[，？！]({HAN_CHARACTER}+)[。？！]")


def poem_line_has_shape(line: str) -> bool:
    """Whether ``line`` is a regular couplet line of 五言 or 七言 verse.

    That is: ``n`` Chinese characters, a comma (``，``, or ``？``/``！``), ``n`` more
    characters and a full stop (``。``, or ``？``/``！``), with ``n = 5`` or ``n = 7``
    for both halves and nothing else on the line: the punctuation of the corpus,
    whose halves mostly end in ``，`` and ``。``, some in ``？`` or ``！``.
    ``"秦川雄帝宅，函谷壯皇居。"`` has the shape; ``"伊我軒宮，奇樹青葱。"`` (4 + 4)
    does not.

    Taught on: "Training and generating text".
    """
    check_str("line", line)
    return _POEM_LINE.fullmatch(line) is not None


def poem_line_halves(line: str) -> tuple[int, int] | None:
    """The lengths of the two halves of a couplet line; ``None`` for another line.

    A couplet line is Chinese characters, a comma (``，``, or ``？``/``！``), more
    characters and a full stop (``。``, or ``？``/``！``), nothing else, halves of
    any length: ``"伊我軒宮，奇樹青葱。"`` gives ``(4, 4)``. A line has the poem
    shape (:func:`poem_line_has_shape`) when its halves are ``(5, 5)`` or ``(7, 7)``.

    Taught on: "Training and generating text".
    """
    check_str("line", line)
    m = _COUPLET.fullmatch(line)
    return None if m is None else (len(m[1]), len(m[2]))


def poem_lines(text: str, drop_last: bool = True) -> list[str]:
    """The lines of ``text`` that :func:`poem_shape_share` and :func:`poem_halves` judge:
    the pieces between ``"\\n"``, empty ones left out, and (with ``drop_last``) the
    last piece, which a length limit may have cut short.

    Taught on: "Training and generating text".
    """
    check_str("text", text)
    check_bool("drop_last", drop_last)
    pieces = text.split("\n")
    if drop_last:
        pieces = pieces[:-1]
    return [p for p in pieces if p]


def poem_halves(text: str, drop_last: bool = True) -> list[tuple[int, int]]:
    """:func:`poem_line_halves` of every couplet line of ``text``.

    Lines are counted as in :func:`poem_shape_share`.

    Taught on: "Training and generating text".
    """
    halves = (poem_line_halves(line) for line in poem_lines(text, drop_last))
    return [h for h in halves if h is not None]


def poem_shape_share(text: str, drop_last: bool = True) -> tuple[int, int]:
    """``(shaped, lines)``: how many non-empty lines of ``text`` have the shape.

    The lines are :func:`poem_lines`' (empty ones, which a model may write, are not
    counted, nor with ``drop_last`` the last piece). See :func:`poem_line_has_shape`.

    Taught on: "Training and generating text".
    """
    lines = poem_lines(text, drop_last)
    return sum(poem_line_has_shape(p) for p in lines), len(lines)


# --- held-out loss -------------------------------------------------------------------


@dataclasses.dataclass
class HeldOutLoss:
    """A model's cross-entropy on a held-out text (:func:`held_out_loss`).

    Attributes:
        nats: The summed negative log-likelihood of the scored tokens, in nats.
        tokens: Tokens scored: every token of the text but the first.
        characters: Characters of the scored text: those whose first UTF-8 byte
            belongs to a scored token (the text's characters less those that start
            inside the first token).
        bytes: UTF-8 bytes of the scored tokens (the text's bytes less the first
            token's).
        context_length: The window: each scored token sees between 1 and this many
            tokens before it (see :func:`held_out_loss`).
        window_losses: The mean loss (nats per token) of each window, in order:
            how much the estimate varies along the text.
    """

    nats: float
    tokens: int
    characters: int
    bytes: int
    context_length: int
    window_losses: list[float] = dataclasses.field(default_factory=list)

    @property
    def standard_error(self) -> float:
        """Standard error of :attr:`nats_per_token`, in nats: the standard
        deviation of :attr:`window_losses` over the square root of their number
        (windows, not tokens, as the samples: neighbouring tokens' losses are not
        independent). ``nan`` for fewer than two windows."""
        n = len(self.window_losses)
        if n < 2:
            return math.nan
        return statistics.stdev(self.window_losses) / math.sqrt(n)

    @property
    def nats_per_token(self) -> float:
        """``nats / tokens``: the mean loss, the number training curves show."""
        return self.nats / self.tokens

    @property
    def nats_per_character(self) -> float:
        """``nats / characters``."""
        return self.nats / self.characters

    @property
    def bits_per_byte(self) -> float:
        """``nats / ln 2 / bytes``: comparable across tokenizers."""
        return self.nats / math.log(2) / self.bytes

    @property
    def tokens_per_character(self) -> float:
        """``tokens / characters``: what converts one unit into the other."""
        return self.tokens / self.characters


def _token_bytes(tokenizer: Tokenizer | ByteTokenizer, token_id: int) -> int:
    """How many UTF-8 bytes token ``token_id`` stands for."""
    if isinstance(tokenizer, ByteTokenizer):
        return 1
    return len(tokenizer.vocab[token_id])


@torch.no_grad()
def held_out_loss(
    model: nn.Module,
    tokenizer: Tokenizer | ByteTokenizer,
    text: str,
    *,
    batch_size: int = 16,
) -> HeldOutLoss:
    r"""The loss of ``model`` on ``text``, a text it did not train on.

    ``text`` becomes ids :math:`x_0 \dots x_{n-1}` with ``tokenizer.encode``. With
    :math:`C` the model's ``context_length``, window :math:`k` is the ids
    :math:`x_{kC} \dots x_{kC+C}` (:math:`C+1` of them, the last window shorter):
    the model reads its first :math:`C` and is scored on predicting each of the
    next. Windows meet on one id, so every token but :math:`x_0` is scored exactly
    once, seeing between 1 and :math:`C` tokens before it (none across a window's
    start: as in training, where every window starts afresh).

    The sum of the scored tokens' negative log-likelihoods is then divided by what
    they cover: per token; per character, counting the characters of ``text``
    whose first byte is not inside :math:`x_0`; per byte, in bits, counting the
    bytes of :math:`x_1 \dots x_{n-1}` (byte-level tokens cover the text's UTF-8
    bytes exactly, so these are its bytes less :math:`x_0`'s). The same text gives
    nearly the same characters and bytes under any tokenizer, so bits per byte
    compares models whose tokens differ.

    Args:
        model: A ``TransformerLM`` (it is run in eval mode and left as it was).
        tokenizer: The model's tokenizer (a BPE ``Tokenizer`` or ``ByteTokenizer``).
        text: The held-out text; it must encode to at least 2 ids.
        batch_size: Windows per forward pass (memory only: the result is the same).

    Returns:
        A :class:`HeldOutLoss` with the total and the counts.

    Taught on: "Training and generating text".
    """
    check_language_model("model", model)
    check_type("tokenizer", tokenizer, (Tokenizer, ByteTokenizer),
               expected="a Tokenizer or ByteTokenizer")
    check_str("text", text)
    check_int("batch_size", batch_size)
    ids = tokenizer.encode(text)
    if len(ids) < 2:
        raise ValueError(f"text must encode to at least 2 tokens, got {len(ids)}")
    if max(ids) >= model.vocab_size:
        raise ValueError(f"tokenizer gives ids up to {max(ids)}, but the model's "
                         f"vocab_size is {model.vocab_size}; pass the model's tokenizer")
    context = model.context_length
    device = device_of(model)
    all_ids = torch.tensor(ids, dtype=torch.long)
    starts = list(range(0, len(ids) - 1, context))
    full = [s for s in starts if s + context + 1 <= len(ids)]
    windows = [all_ids[s: s + context + 1] for s in full]
    if len(full) < len(starts):  # the shorter last window goes alone
        windows.append(all_ids[starts[-1]:])
    was_training = model.training
    model.eval()
    nats = 0.0
    window_losses: list[float] = []
    try:
        with torch.no_grad():
            for i in range(0, len(windows), batch_size):
                group = windows[i: i + batch_size]
                for batch in _same_length(group):
                    x = batch[:, :-1].to(device)  # (B, L)
                    y = batch[:, 1:].to(device)  # (B, L)
                    logits = model(x)  # (B, L, vocab)
                    rows = [float(cross_entropy(logits[b], y[b])) for b in range(len(y))]
                    window_losses.extend(rows)
                    nats += sum(rows) * y.shape[1]
    finally:
        model.train(was_training)
    encoded = text.encode("utf-8")
    first = _token_bytes(tokenizer, ids[0])
    started_in_first = sum((b & 0xC0) != 0x80 for b in encoded[:first])
    return HeldOutLoss(nats=nats, tokens=len(ids) - 1,
                       characters=len(text) - started_in_first,
                       bytes=len(encoded) - first, context_length=context,
                       window_losses=window_losses)


def _same_length(group: list[torch.Tensor]) -> list[torch.Tensor]:
    """Windows stacked into batches of one length (only the last may differ)."""
    lengths = sorted({len(w) for w in group}, reverse=True)
    return [torch.stack([w for w in group if len(w) == n]) for n in lengths]


# --- sample quality ------------------------------------------------------------------


@dataclasses.dataclass
class SampleQuality:
    """Texts sampled from a model and measured against a corpus.

    Attributes:
        corpus: The corpus measured against (one of :data:`CORPORA`).
        prompt: The prompt every sample continues (not part of the texts).
        texts: The continuations, one per sample, a character cut by the length
            limit (a trailing ``U+FFFD``) dropped.
        seed: The seed of the sampling generator.
        temperature: The sampling temperature.
        top_k: Sampling among the ``top_k`` likeliest tokens (``None``: all).
        max_new_tokens: Tokens generated per sample.
        words: Words (:func:`words`) of the texts, the last of each text left out
            unless the text ends after it (the limit may have cut it).
        known_words: Those occurring in the corpus (:func:`known_word_share`).
        lines: Non-empty lines of the texts, the last of each left out
            (:func:`poem_shape_share` of each text).
        verse_lines: Those that are regular five- or seven-character verse
            (:func:`poem_line_has_shape`).
        characters: Characters of the texts.
        known_characters: Those occurring in the corpus
            (:func:`known_character_share`).
    """

    corpus: str
    prompt: str
    texts: list[str]
    seed: int
    temperature: float
    top_k: int | None
    max_new_tokens: int
    words: int
    known_words: int
    lines: int
    verse_lines: int
    characters: int
    known_characters: int

    @property
    def known_word_rate(self) -> float:
        """``known_words / words`` (0.0 when there is no word)."""
        return self.known_words / self.words if self.words else 0.0

    @property
    def verse_rate(self) -> float:
        """``verse_lines / lines`` (0.0 when there is no whole line)."""
        return self.verse_lines / self.lines if self.lines else 0.0

    @property
    def known_character_rate(self) -> float:
        """``known_characters / characters`` (0.0 for empty texts)."""
        return self.known_characters / self.characters if self.characters else 0.0


def _whole_words(text: str) -> str:
    """``text`` without a last word the length limit may have cut."""
    last = None
    for last in _WORD.finditer(text):
        pass
    if last is not None and last.end() == len(text):
        return text[: last.start()]
    return text


def sample_quality(
    model: nn.Module,
    tokenizer: Tokenizer | ByteTokenizer,
    corpus: str,
    *,
    prompt: str = "\n",
    num_samples: int = 8,
    max_new_tokens: int = 256,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
) -> SampleQuality:
    """Sample ``num_samples`` texts from ``model`` and measure them against ``corpus``.

    The texts continue ``prompt`` side by side, as one batch of
    :func:`llmlab.generation.generate` drawing from one CPU generator seeded with
    ``seed``: the same model, tokenizer and arguments give the same texts. Each is
    decoded on its own; every measure is then summed over all texts, so the rates
    of :class:`SampleQuality` weigh each word, line and character once. What the
    length limit may have cut is not judged: a trailing ``U+FFFD`` (a character
    whose bytes were not all generated), the last word if the text ends in it,
    the last line.

    All three measures are computed for either corpus; the ones that say something
    are the known-word rate for ``"shakespeare"``, and the verse and known-character
    rates for ``"tang"``.

    Args:
        model: A ``TransformerLM`` (run in eval mode, left as it was).
        tokenizer: The model's tokenizer (a BPE ``Tokenizer`` or ``ByteTokenizer``).
        corpus: One of :data:`CORPORA`, the corpus the model learnt from.
        prompt: Text every sample continues (at least one token).
        num_samples: Texts to draw, ``>= 1``.
        max_new_tokens: Tokens per text, ``>= 1``.
        temperature: Sampling temperature, ``> 0``.
        top_k: Sample among the ``top_k`` likeliest tokens; ``None``: all.
        seed: Seed of the sampling generator.

    Returns:
        A :class:`SampleQuality`: the texts, the counts and the rates.

    Taught on: "Training and generating text".
    """
    check_language_model("model", model)
    check_type("tokenizer", tokenizer, (Tokenizer, ByteTokenizer),
               expected="a Tokenizer or ByteTokenizer")
    check_choice("corpus", corpus, CORPORA)
    check_str("prompt", prompt, nonempty=True)
    check_int("num_samples", num_samples)
    check_int("max_new_tokens", max_new_tokens)
    check_finite_float("temperature", temperature, minimum=0.0, open_min=True)
    if top_k is not None:
        check_int("top_k", top_k, maximum=model.vocab_size)
    check_int("seed", seed, minimum=0)
    prompt_ids = tokenizer.encode(prompt)
    if max(prompt_ids) >= model.vocab_size:
        raise ValueError(f"tokenizer gives ids up to {max(prompt_ids)}, but the "
                         f"model's vocab_size is {model.vocab_size}; pass the model's "
                         "tokenizer")
    generator = torch.Generator().manual_seed(seed)
    rows = generate(model, [prompt_ids] * num_samples, max_new_tokens,
                    temperature=temperature, top_k=top_k, generator=generator)
    texts = [tokenizer.decode(row).rstrip("\ufffd") for row in rows]
    counted = [known_word_share(_whole_words(t), corpus) for t in texts]
    shaped = [poem_shape_share(t) for t in texts]
    chars = [known_character_share(t, corpus) for t in texts]
    return SampleQuality(
        corpus=corpus, prompt=prompt, texts=texts, seed=seed, temperature=temperature,
        top_k=top_k, max_new_tokens=max_new_tokens,
        words=sum(n for _, n in counted), known_words=sum(k for k, _ in counted),
        lines=sum(n for _, n in shaped), verse_lines=sum(k for k, _ in shaped),
        characters=sum(n for _, n in chars), known_characters=sum(k for k, _ in chars),
    )
