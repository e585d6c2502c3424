"""Preference alignment of the course's base models with DPO, on preferences a
function can check.

Each base model (:mod:`llmlab.pretrained`) writes one line after a line of its own
corpus, and a judge (:func:`prefers`) says whether the line is what we want:

* ``"tang"``: a regular couplet line of five- or seven-character verse
  (:func:`llmlab.training.quality.poem_line_has_shape`);
* ``"shakespeare"``: an end-stopped line: at least :data:`MIN_WORDS` words, and a
  punctuation mark (:data:`END_PUNCTUATION`) at its end, where the sense pauses.

:func:`run_preference_pairs` samples the base model several times per prompt and
pairs, within a prompt, a line the judge prefers (chosen) with one it does not
(rejected): the pairs come from the model itself, as in on-policy preference data.
Prompts are lines of the text the base model trained on for training pairs, and
lines of its validation split (which it never trained on) for held-out pairs and
for measuring.

:func:`run_alignment` trains a copy of the base model on the training pairs with
:func:`llmlab.training.train` itself: DPO (the data is a
:class:`llmlab.alignment.PreferenceData`), or supervised fine-tuning on the chosen
lines only (:meth:`~llmlab.alignment.PreferenceData.chosen_only`). It measures the
implicit rewards on the training and the held-out pairs, then samples the trained
model at the held-out prompts: the share of lines the judge prefers, the KL from the
base model per token, and the repetition inside a line.
:func:`run_alignment_comparison` runs the settings a page shows side by side.

Taught on: "Preference alignment".
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import random
import re

import torch

from llmlab.alignment import PreferenceData, implicit_reward_accuracy, sequence_logprobs
from llmlab.build.cache import cached, part_results
from llmlab.checks import (
    check_choice,
    check_finite_float,
    check_int,
    check_str,
    check_strs,
    check_type,
)
from llmlab.generation import generate
from llmlab.pretrained import NAMES, card, load, training_text
from llmlab.tokenization import Tokenizer
from llmlab.training import train
from llmlab.training.optim import AdamW
from llmlab.training.quality import (
    HAN_CHARACTER,
    poem_line_halves,
    poem_line_has_shape,
    words,
)

__all__ = [
    "END_PUNCTUATION",
    "METHODS",
    "MIN_WORDS",
    "AlignmentComparison",
    "AlignmentRun",
    "LineStats",
    "PreferencePairs",
    "line_prompts",
    "prefers",
    "repetition",
    "run_alignment",
    "run_alignment_comparison",
    "run_preference_pairs",
    "sample_lines",
    "two_standard_errors",
]

METHODS: tuple[str, ...] = ("dpo", "sft")
"""``"dpo"``: DPO on the pairs; ``"sft"``: supervised fine-tuning on the chosen lines."""

_HAN = re.compile(HAN_CHARACTER)

MIN_WORDS = 4
"""The fewest words a Shakespeare line needs to be preferred (a line of one word,
"Ay.", says little)."""

END_PUNCTUATION = ",.;:?!"
"""The marks a preferred Shakespeare line ends with."""

NEWLINE = "\n"


def prefers(corpus: str, line: str | None) -> bool:
    """The judge: whether ``line`` (a sampled line, without its newline; ``None`` for
    one the model did not finish) is what we prefer for ``corpus``.

    ``"tang"``: :func:`~llmlab.training.quality.poem_line_has_shape`. ``"shakespeare"``:
    at least :data:`MIN_WORDS` words (:func:`~llmlab.training.quality.words`) and, after
    any trailing spaces, one of :data:`END_PUNCTUATION` last.

    Taught on: "Preference alignment".
    """
    check_choice("corpus", corpus, NAMES)
    if line is None:
        return False
    check_type("line", line, str, expected="a line of text, or None")
    if corpus == "tang":
        return poem_line_has_shape(line)
    return len(words(line)) >= MIN_WORDS and line.rstrip()[-1:] in tuple(END_PUNCTUATION)


def repetition(corpus: str, line: str) -> float:
    """The share of a line's units that repeat one earlier in the line: characters
    (``"tang"``) or words (``"shakespeare"``); 0.0 for a line without any.

    ``"春風春雨，春色滿城。"`` repeats 春 twice among its 8 characters: 0.25.

    Taught on: "Preference alignment".
    """
    check_choice("corpus", corpus, NAMES)
    check_type("line", line, str, expected="a line of text")
    units = _HAN.findall(line) if corpus == "tang" else words(line)
    return 1.0 - len(set(units)) / len(units) if units else 0.0


def two_standard_errors(n: int, p: float = 0.5, *, m: int | None = None,
                        q: float | None = None) -> float:
    """How uncertain a share is: two standard errors of a share ``p`` measured on ``n``
    lines (or pairs), ``2·√(p(1 − p)/n)``; with ``m``, of the difference between it and
    a share ``q`` (default ``p``) measured on ``m`` others, ``2·√(p(1 − p)/n + q(1 − q)/m)``.

    At ``p = ½`` (the default) it is the largest it can be: ``two_standard_errors(256,
    m=256)`` bounds the noise of any difference of two shares of 256 lines (≈ 0.088).

    Taught on: "Preference alignment".
    """
    check_int("n", n)
    p = check_finite_float("p", p, minimum=0.0, maximum=1.0)
    variance = p * (1 - p) / n
    if m is not None or q is not None:
        if m is None:
            raise ValueError("m is None but q is given; expected m, the lines q is measured on")
        check_int("m", m)
        q = p if q is None else check_finite_float("q", q, minimum=0.0, maximum=1.0)
        variance += q * (1 - q) / m
    return 2 * math.sqrt(variance)


def line_prompts(corpus: str, n: int, seed: int = 0,
                 held_out: bool = False) -> list[str]:
    """``n`` prompts, each a line of the base model's text and a newline, drawn with
    ``seed`` from the lines it trained on (``held_out``: from its validation split,
    the tokens after ``train_tokens`` in :func:`llmlab.pretrained.card`). The line
    the cut falls in is in neither.

    A Shakespeare prompt is a line of speech (not a speaker's name) followed by
    another; a Tang prompt is any couplet line.

    Taught on: "Preference alignment".
    """
    check_choice("corpus", corpus, NAMES)
    check_int("n", n)
    check_int("seed", seed, minimum=0)
    check_type("held_out", held_out, bool, expected="True or False")
    lines = training_text(corpus).split(NEWLINE)
    first_held_out, last_trained = _split_lines(corpus)
    index = range(first_held_out, len(lines) - 1) if held_out else range(last_trained)
    usable = [lines[i] for i in index
              if _speech(corpus, lines[i]) and _speech(corpus, lines[i + 1])]
    if n > len(usable):
        raise ValueError(f"n ({n}) is more than the {len(usable)} prompt lines there are")
    return [line + NEWLINE for line in random.Random(seed).sample(usable, n)]


@functools.cache
def _split_lines(corpus: str) -> tuple[int, int]:
    """``(first, last)``: the first line wholly in the base model's validation split,
    and the line after the last wholly in its training split (``lines[:last]``)."""
    _, tokenizer = load(corpus)
    text = training_text(corpus)
    ids = tokenizer.encode(text)
    cut = sum(len(tokenizer.vocab[i]) for i in ids[:card(corpus).training["train_tokens"]])
    start, first, last = 0, None, 0  # byte offsets of each line's start and end
    for i, line in enumerate(text.split(NEWLINE)):
        end = start + len(line.encode("utf-8"))
        if end <= cut:
            last = i + 1
        if start >= cut and first is None:
            first = i
        start = end + 1
    return first, last


def _speech(corpus: str, line: str) -> bool:
    if corpus == "tang":
        return bool(line)
    return bool(line.strip()) and not line.endswith(":")


def sample_lines(model: torch.nn.Module, tokenizer: Tokenizer, prompts: list[str],
                 samples: int, seed: int = 0,
                 max_new_tokens: int = 24) -> list[list[list[int]]]:
    """``samples`` continuations of each prompt, each up to and including the first
    newline (at most ``max_new_tokens``, enough for a seven-character couplet line or a
    line of verse: a continuation without a newline is unfinished).

    Temperature 1, nothing cut from the distribution. The prompts are batched by
    their length in tokens, all samples of a length in one :func:`generate` call.

    Returns:
        Per prompt, per sample, the new token ids.

    Taught on: "Preference alignment".
    """
    check_type("tokenizer", tokenizer, Tokenizer, expected="a BPE Tokenizer")
    for i, prompt in enumerate(check_strs("prompts", prompts)):
        check_str(f"prompts[{i}]", prompt, nonempty=True)
    if not prompts:
        raise ValueError("prompts is empty; expected at least one prompt")
    check_int("samples", samples)
    check_int("seed", seed, minimum=0)
    check_int("max_new_tokens", max_new_tokens)
    newline = _newline_id(tokenizer)
    encoded = [tokenizer.encode(p) for p in prompts]
    by_length = collections.defaultdict(list)  # prompt length -> prompt indices
    for i, ids in enumerate(encoded):
        by_length[len(ids)].append(i)
    generator = torch.Generator().manual_seed(seed)
    out: list[list[list[int]]] = [[] for _ in prompts]
    for _, index in sorted(by_length.items()):
        batch = [encoded[i] for i in index for _ in range(samples)]  # (B, n)
        rows = generate(model, batch, max_new_tokens, temperature=1.0,
                        eos_token_id=newline, generator=generator)
        for j, row in enumerate(rows):
            out[index[j // samples]].append(row)
    return out


def _newline_id(tokenizer: Tokenizer) -> int:
    ids = tokenizer.encode(NEWLINE)
    if len(ids) != 1:
        raise ValueError(f"the tokenizer encodes a newline as {ids}; expected one token")
    return ids[0]


def _line(tokenizer: Tokenizer, ids: list[int]) -> str | None:
    """The text of a sampled line without its newline; None if it has none."""
    newline = _newline_id(tokenizer)
    return tokenizer.decode(ids[:-1]) if ids and ids[-1] == newline else None


@dataclasses.dataclass
class LineStats:
    """A model's lines sampled at the held-out prompts, judged.

    Attributes:
        samples: Lines sampled.
        preferred: Lines the judge prefers.
        unfinished: Continuations with no newline (:func:`sample_lines`).
        repetition: Mean :func:`repetition` over the finished lines.
        halves: ``"tang"``: how many finished couplet lines have each first-half
            length (:func:`~llmlab.training.quality.poem_line_halves`); ``"shakespeare"``:
            how many finished lines have each number of words.
            (:meth:`halves_share` reads a share of it, in both senses.)
        kl_per_token: The KL divergence from the base model, nats per sampled token:
            the mean of ``log π(token) - log π_base(token)`` over the tokens the model
            sampled (0 for the base model itself).
        examples: The first line written at each of the first eight prompts, as
            text (``None`` for an unfinished one).
    """

    samples: int
    preferred: int
    unfinished: int
    repetition: float
    halves: dict[int, int]
    kl_per_token: float
    examples: list[str | None]

    @property
    def preferred_share(self) -> float:
        """``preferred / samples``."""
        return self.preferred / self.samples

    def halves_share(self, n: int) -> float:
        """The share of :attr:`halves` at ``n``: of the finished couplet lines, those
        whose first half has ``n`` characters (``"tang"``); of the finished lines,
        those of ``n`` words (``"shakespeare"``). 0.0 when there are none."""
        check_int("n", n)
        return self.halves.get(n, 0) / max(sum(self.halves.values()), 1)


def _sizes(corpus: str, lines: list[str | None]) -> dict[int, int]:
    """How many finished lines have each first-half length (Tang couplet lines) or
    each number of words (Shakespeare)."""
    finished = [line for line in lines if line is not None]
    if corpus == "tang":
        sizes = [h[0] for h in map(poem_line_halves, finished) if h is not None]
    else:
        sizes = [len(words(line)) for line in finished]
    return dict(sorted(collections.Counter(sizes).items()))


_CHUNK = 64  # rows a forward pass: small batches stay in the CPU's caches


def _line_stats(corpus: str, tokenizer: Tokenizer, prompts: list[str],
                rows: list[list[list[int]]], model=None, base=None) -> LineStats:
    lines = [_line(tokenizer, r) for per_prompt in rows for r in per_prompt]
    finished = [line for line in lines if line is not None]
    kl = 0.0
    if model is not None:  # the samples' log-probabilities, a chunk of rows a pass
        ids = [(tokenizer.encode(p), r) for p, per in zip(prompts, rows) for r in per]
        log_ratio, tokens = 0.0, 0
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            width = max(len(p) + len(r) for p, r in chunk)
            input_ids = torch.zeros(len(chunk), width, dtype=torch.int64)  # (n, T)
            mask = torch.zeros(len(chunk), width, dtype=torch.bool)  # (n, T)
            for i, (p, r) in enumerate(chunk):
                input_ids[i, :len(p) + len(r)] = torch.tensor(p + r)
                mask[i, len(p):len(p) + len(r)] = True
            with torch.no_grad():
                log_ratio += float((sequence_logprobs(model, input_ids, mask)
                                    - sequence_logprobs(base, input_ids, mask)).sum())
            tokens += int(mask.sum())
        kl = log_ratio / tokens
    return LineStats(
        samples=len(lines), preferred=sum(prefers(corpus, line) for line in lines),
        unfinished=len(lines) - len(finished),
        repetition=sum(repetition(corpus, line) for line in finished) / max(len(finished), 1),
        halves=_sizes(corpus, lines), kl_per_token=kl,
        examples=[_line(tokenizer, per_prompt[0]) for per_prompt in rows[:8]])


@dataclasses.dataclass
class PreferencePairs:
    """Pairs sampled from a base model, and how its held-out lines are judged.

    Attributes:
        corpus: The base model.
        samples: Lines sampled per prompt.
        train: ``(prompt, chosen, rejected)`` token ids, from training prompts.
        held_out: The same, from held-out prompts.
        train_reference: The base model's log-probabilities of the training pairs'
            lines, ``[chosen, rejected]`` per pair (DPO's reference, computed once).
        held_out_reference: The same for the held-out pairs.
        examples: A few training pairs as text ``(prompt, chosen, rejected)``
            (the prompt without its newline; a rejected line the model left
            unfinished is shown as written).
        held_out_prompts: The held-out prompts (each a line and a newline).
        chosen_halves: ``"tang"``: how many chosen lines of the training pairs have
            each first-half length (``"shakespeare"``: each number of words).
        rejected_halves: The same for the finished rejected lines.
        base: The base model's lines at the held-out prompts.
        base_again: The base model's lines at the held-out prompts sampled a second
            time, with the draws the trained models' lines use (seed ``seed + 1``):
            the same model measured twice, so ``base`` and ``base_again`` differ by
            the noise of a measurement alone.
        train_prompts: Training prompts sampled.
    """

    corpus: str
    samples: int
    train: list[tuple[list[int], list[int], list[int]]]
    held_out: list[tuple[list[int], list[int], list[int]]]
    train_reference: list[list[float]]
    held_out_reference: list[list[float]]
    examples: list[tuple[str, str, str]]
    held_out_prompts: list[str]
    chosen_halves: dict[int, int]
    rejected_halves: dict[int, int]
    base: LineStats
    base_again: LineStats
    train_prompts: int


def _pairs(corpus: str, tokenizer: Tokenizer, prompts: list[str],
           rows: list[list[list[int]]]) -> list[tuple[list[int], list[int], list[int]]]:
    """Within each prompt, the k-th preferred line with the k-th other one."""
    out = []
    for prompt, per_prompt in zip(prompts, rows):
        judged = [(r, prefers(corpus, _line(tokenizer, r))) for r in per_prompt]
        chosen = [r for r, good in judged if good]
        rejected = [r for r, good in judged if not good]
        out += [(tokenizer.encode(prompt), c, r) for c, r in zip(chosen, rejected)]
    return out


def _reference(pairs: list, model: torch.nn.Module) -> list[list[float]]:
    return PreferenceData(pairs, model, 1.0, pad_id=0).reference_logps.tolist()


@cached(cost=5.0)  # seconds on one core: load, sample 1,024 lines, two passes
def run_preference_pairs(corpus: str, train_prompts: int = 64, held_out_prompts: int = 32,
                         samples: int = 8, seed: int = 0) -> PreferencePairs:
    """Sample ``samples`` lines per prompt from the base model ``corpus`` and pair them
    (:func:`prefers` decides which is chosen); then sample its lines at the held-out
    prompts once more, as :func:`run_alignment` samples a trained model's.

    Taught on: "Preference alignment".
    """
    check_choice("corpus", corpus, NAMES)
    check_int("train_prompts", train_prompts)
    check_int("held_out_prompts", held_out_prompts)
    check_int("samples", samples, minimum=2)
    check_int("seed", seed, minimum=0)
    model, tokenizer = load(corpus)
    train_text = line_prompts(corpus, train_prompts, seed)
    held_text = line_prompts(corpus, held_out_prompts, seed, held_out=True)
    rows = sample_lines(model, tokenizer, train_text + held_text, samples, seed)
    train_rows, held_rows = rows[:train_prompts], rows[train_prompts:]
    again = sample_lines(model, tokenizer, held_text, samples, seed + 1)  # as run_alignment
    pairs = _pairs(corpus, tokenizer, train_text, train_rows)
    held_out = _pairs(corpus, tokenizer, held_text, held_rows)
    examples = [(tokenizer.decode(p).rstrip(NEWLINE), tokenizer.decode(c).rstrip(NEWLINE),
                 tokenizer.decode(r).rstrip(NEWLINE)) for p, c, r in pairs[::7][:6]]
    return PreferencePairs(
        corpus=corpus, samples=samples, train=pairs, held_out=held_out,
        train_reference=_reference(pairs, model), held_out_reference=_reference(held_out, model),
        examples=examples,
        held_out_prompts=held_text,
        chosen_halves=_sizes(corpus, [_line(tokenizer, c) for _, c, _ in pairs]),
        rejected_halves=_sizes(corpus, [_line(tokenizer, r) for _, _, r in pairs]),
        base=_line_stats(corpus, tokenizer, held_text, held_rows),
        base_again=_line_stats(corpus, tokenizer, held_text, again),
        train_prompts=train_prompts)


@dataclasses.dataclass
class AlignmentRun:
    """One training run on the preference pairs, measured.

    Attributes:
        corpus: The base model.
        method: ``"dpo"`` or ``"sft"``.
        beta: DPO's β (for ``"sft"``, the β its rewards are read with).
        steps, batch_size, lr, seed: The training settings.
        pairs: Training pairs.
        losses: The training loss of each step (DPO's, or cross-entropy).
        reward_accuracy: The share of training pairs whose chosen line has the
            higher implicit reward, after training.
        margin: The mean log-ratio margin on the training pairs after training,
            nats: ``(log π(chosen) - log π_ref(chosen)) - (log π(rejected) -
            log π_ref(rejected))`` (the reward margin is ``β`` times it).
        chosen_change: The mean change of ``log π(chosen)`` from the base model, nats.
        rejected_change: The same for the rejected lines.
        held_out_accuracy: The share of held-out pairs whose chosen line has the
            higher implicit reward: how often the reward DPO learnt agrees with
            the judge on lines it never trained on.
        lines: The trained model's lines at the held-out prompts.
        drawn_pairs: How many of the training pairs some batch drew (the batches are
            drawn with replacement: :attr:`llmlab.training.TrainResult.rows_drawn`).
        drawn_accuracy: :attr:`reward_accuracy` on those pairs only.
        undrawn_accuracy: :attr:`reward_accuracy` on the training pairs no batch
            drew (``None`` when every pair was drawn).
    """

    corpus: str
    method: str
    beta: float
    steps: int
    batch_size: int
    lr: float
    seed: int
    pairs: int
    losses: list[float]
    reward_accuracy: float
    margin: float
    chosen_change: float
    rejected_change: float
    held_out_accuracy: float
    lines: LineStats
    drawn_pairs: int
    drawn_accuracy: float
    undrawn_accuracy: float | None


def _run_parts(corpus: str, prompts: int, samples: int, seed: int, **_: object) -> list:
    return [(run_preference_pairs, dict(corpus=corpus, train_prompts=prompts,
                                        samples=samples, seed=seed))]


@cached(parts=_run_parts, cost=4.0)  # seconds on one core: 10 steps, 256 samples
def run_alignment(corpus: str, method: str = "dpo", beta: float = 0.1, steps: int = 10,
                  batch_size: int = 16, lr: float = 2e-4, seed: int = 0,
                  prompts: int = 64, samples: int = 8) -> AlignmentRun:
    """Train a copy of the base model ``corpus`` on its preference pairs
    (:func:`run_preference_pairs` with ``prompts`` training prompts, ``samples``
    lines per prompt and ``seed``) by ``method`` and measure it: ``samples`` lines at
    each held-out prompt. ``seed`` also draws the batches and the lines written after
    training: another seed is another sample of the whole experiment.

    AdamW without weight decay, a constant learning rate, gradients clipped at
    norm 1, ``batch_size`` pairs (DPO) or chosen lines (SFT) a step: the loop of
    :func:`llmlab.training.train`. The reference of DPO is the base model.

    Taught on: "Preference alignment".
    """
    check_choice("corpus", corpus, NAMES)
    check_choice("method", method, METHODS)
    beta = check_finite_float("beta", beta, minimum=0.0, open_min=True)
    check_int("steps", steps)
    check_int("batch_size", batch_size)
    lr = check_finite_float("lr", lr, minimum=0.0, open_min=True)
    check_int("seed", seed, minimum=0)
    check_int("prompts", prompts)
    check_int("samples", samples, minimum=2)
    [pairs] = part_results(_run_parts, corpus=corpus, prompts=prompts, samples=samples,
                           seed=seed)
    base, tokenizer = load(corpus)
    policy, _ = load(corpus)
    base.requires_grad_(False)
    data = PreferenceData(pairs.train, torch.tensor(pairs.train_reference), beta, pad_id=0)
    held_out = PreferenceData(pairs.held_out, torch.tensor(pairs.held_out_reference), beta,
                              pad_id=0)
    optimizer = AdamW(policy.parameters(), lr=lr, weight_decay=0.0)
    train_data = data if method == "dpo" else data.chosen_only()
    result = train(policy, optimizer, train_data, steps=steps, batch_size=batch_size,
                   max_grad_norm=1.0, seed=seed)
    policy_logps = data.policy_logps(policy)  # (N, 2)
    logps = policy_logps - data.reference_logps  # (N, 2) log-ratios
    chosen, rejected = data.rewards(policy_logps)
    drawn = sorted({i for rows in result.rows_drawn for i in rows})  # SFT: the same rows
    undrawn = sorted(set(range(len(data))) - set(drawn))
    rows = sample_lines(policy, tokenizer, pairs.held_out_prompts, pairs.samples, seed + 1)
    return AlignmentRun(
        corpus=corpus, method=method, beta=beta, steps=steps, batch_size=batch_size,
        lr=lr, seed=seed, pairs=len(data), losses=list(result.losses),
        reward_accuracy=implicit_reward_accuracy(chosen, rejected),
        margin=float((logps[:, 0] - logps[:, 1]).mean()),
        chosen_change=float(logps[:, 0].mean()), rejected_change=float(logps[:, 1].mean()),
        held_out_accuracy=implicit_reward_accuracy(
            *held_out.rewards(held_out.policy_logps(policy))),
        lines=_line_stats(corpus, tokenizer, pairs.held_out_prompts, rows, policy, base),
        drawn_pairs=len(drawn),
        drawn_accuracy=implicit_reward_accuracy(chosen[drawn], rejected[drawn]),
        undrawn_accuracy=(implicit_reward_accuracy(chosen[undrawn], rejected[undrawn])
                          if undrawn else None))


@dataclasses.dataclass
class AlignmentComparison:
    """DPO at several β, and supervised fine-tuning on the chosen lines, from one
    base model and one set of pairs.

    Attributes:
        pairs: The pairs and the base model's lines.
        dpo: One run per β, in order.
        sft: Supervised fine-tuning on the chosen lines, the same steps.
    """

    pairs: PreferencePairs
    dpo: list[AlignmentRun]
    sft: AlignmentRun

    @property
    def runs(self) -> list[AlignmentRun]:
        """Every run, in the order a table lists them."""
        return [*self.dpo, self.sft]


def _comparison_parts(corpus: str, betas: tuple[float, ...], steps: int, seed: int) -> list:
    return ([(run_preference_pairs, dict(corpus=corpus, seed=seed))]
            + [(run_alignment, dict(corpus=corpus, beta=b, steps=steps, seed=seed))
               for b in betas]
            + [(run_alignment, dict(corpus=corpus, method="sft", steps=steps, seed=seed))])


@cached(parts=_comparison_parts)
def run_alignment_comparison(corpus: str, betas: tuple[float, ...] = (0.05, 0.1, 0.5),
                             steps: int = 10, seed: int = 0) -> AlignmentComparison:
    """:func:`run_alignment` by DPO at each of ``betas`` and by SFT on the chosen
    lines, each a part of its own, computed side by side, all with ``seed``.

    Taught on: "Preference alignment".
    """
    check_choice("corpus", corpus, NAMES)
    check_type("betas", betas, (list, tuple), expected="a tuple of β values")
    if not betas:
        raise ValueError("betas is empty; expected at least one β")
    betas = tuple(check_finite_float(f"betas[{i}]", b, minimum=0.0, open_min=True)
                  for i, b in enumerate(betas))
    check_int("steps", steps)
    check_int("seed", seed, minimum=0)
    pairs, *runs = part_results(_comparison_parts, corpus=corpus, betas=betas, steps=steps,
                                seed=seed)
    return AlignmentComparison(pairs, runs[:-1], runs[-1])
