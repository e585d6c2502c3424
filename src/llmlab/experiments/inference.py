"""Faster inference, measured on the course's base models and on Llama 2's shapes.

* :func:`run_inference_costs`: per generated token, the bytes a model must read (its
  weights, its KV cache) against the FLOPs it does, from the configurations'
  formulas, for the base models and Llama 2 7B / 70B: why generating one sequence
  waits on memory, not on arithmetic.
* :func:`run_quantization`: a base model's linear layers at 8 and 4 bits
  (:func:`llmlab.inference.quantize_weights`): bytes, the largest weight error, the
  held-out loss in nats per character, and the layers where 4 bits hurt most.
* :func:`run_speculative`: the base model as target, its shipped draft
  (:func:`llmlab.pretrained.load_draft`) proposing ``k`` tokens a round: the text
  equal to the target's greedy text (asserted), target passes per token against
  the formula of Leviathan et al. (2023).
* :func:`run_sampling_check`: speculative sampling on a toy vocabulary, drawn many
  times: the tokens follow the target's distribution, not the draft's.
* :func:`run_gqa_comparison`: KV-cache bytes with multi-head, grouped and
  multi-query attention, a grouped model whose key/value heads are copies equal
  to the multi-head one, and what sharing costs on a short training run.

Taught on: "Faster inference".
"""

from __future__ import annotations

import copy
import dataclasses

import torch
from torch import Tensor, nn

from llmlab._surgery import LINEAR, named_children
from llmlab.build.cache import cached
from llmlab.checks import (
    check_choice,
    check_finite_float,
    check_int,
    check_sizes,
    check_type,
)
from llmlab.flops import flops_per_token
from llmlab.generation import generate
from llmlab.hardware import ACCELERATORS
from llmlab.inference import (
    dequantize,
    quantize_tensor,
    quantize_weights,
    speculative_generate,
)
from llmlab.kv_cache import kv_cache_bytes
from llmlab.models.llama import LLAMA2_7B, LLAMA2_70B, LlamaConfig, TransformerLM
from llmlab.pretrained import NAMES, card, load, load_draft, training_text
from llmlab.training import AdamW, cosine_schedule, estimate_loss, held_out_loss, train

__all__ = [
    "GQA_KV_HEADS",
    "QUANTIZATIONS",
    "CostRow",
    "GQAComparison",
    "InferenceCosts",
    "LayerError",
    "QuantizationResult",
    "QuantizedRow",
    "SamplingCheck",
    "SpeculativeResult",
    "SpeculativeRow",
    "expected_tokens_per_pass",
    "held_out_text",
    "run_gqa_comparison",
    "run_inference_costs",
    "run_quantization",
    "run_sampling_check",
    "run_speculative",
]

QUANTIZATIONS: tuple[tuple[int, int | None], ...] = ((8, None), (4, None), (4, 32))
"""(bits, group_size) the quantization table compares. The base models' layers are
128 and 352 wide (352 = 11 · 32), so 32 is the largest power of two that divides
both; Llama 2's widths (4096, 11008 = 86 · 128) take groups of 128."""

GQA_KV_HEADS: tuple[int, ...] = (4, 2, 1)
"""Key/value heads compared for 4 query heads: multi-head, grouped, multi-query."""

HELD_OUT_CHARS = 4_000  # the end of the corpus, after a line break: never trained on


def _prompt(corpus: str) -> str:
    """The first six characters of the first held-out line of at least twelve."""
    return next(line for line in held_out_text(corpus).split("\n") if len(line) >= 12)[:6]


def held_out_text(corpus: str, chars: int = HELD_OUT_CHARS) -> str:
    """The last ``chars`` characters (about) of the base model's text, from the start of
    a line: text the base model never trained on (its last tenth).

    Taught on: "Faster inference".
    """
    check_choice("corpus", corpus, NAMES)
    check_int("chars", chars, minimum=100)
    text = training_text(corpus)
    tail = text[-chars:]
    return tail[tail.index("\n") + 1:]


# --------------------------------------------------------------------------
# 1. where the time and the memory go
# --------------------------------------------------------------------------
@dataclasses.dataclass
class CostRow:
    """One model's per-token costs of generation at batch size 1, 16-bit numbers.

    Attributes:
        name: The model.
        parameters: All its parameters.
        weight_bytes: Its weights at 2 bytes each: read once per generated token (the
            embedding table counted whole, though a token reads one row of it: an
            upper bound on the bytes, by 2% for Llama 2 7B).
        kv_bytes_per_token: KV-cache bytes each token adds (keys and values, every
            layer, its key/value heads), 2 bytes each.
        context: The tokens of context considered (the model's context length).
        kv_bytes: The KV cache of a full context.
        flops_per_token: Forward FLOPs of one generated token at that context:
            ``2N + 4·L·d·T`` (a third of :func:`llmlab.flops.flops_per_token`).
        intensity: ``flops_per_token / (weight_bytes + kv_bytes)``: FLOPs per byte
            read at batch size 1, at a full context.
    """

    name: str
    parameters: int
    weight_bytes: int
    kv_bytes_per_token: int
    context: int
    kv_bytes: int
    flops_per_token: float
    intensity: float


@dataclasses.dataclass
class InferenceCosts:
    """:func:`run_inference_costs`: the rows, and the accelerators' ridge points.

    Attributes:
        rows: One :class:`CostRow` per model.
        ridge: FLOPs per byte at which each accelerator of
            :data:`llmlab.hardware.ACCELERATORS` stops waiting on memory.
    """

    rows: list[CostRow]
    ridge: dict[str, float]


def _cost_row(name: str, config: LlamaConfig) -> CostRow:
    n = config.parameter_count()
    d_head = config.d_model // config.num_heads
    per_token = kv_cache_bytes(config.num_layers, config.kv_heads, d_head, 1, 2)
    t = config.context_length
    flops = flops_per_token(config.matmul_parameter_count(), config.num_layers,
                            config.d_model, t) / 3  # forward only: a third
    moved = 2 * n + per_token * t
    return CostRow(name, n, 2 * n, per_token, t, per_token * t, flops, flops / moved)


@cached(cost=0.1)  # seconds on one core: formulas only
def run_inference_costs() -> InferenceCosts:
    """Per-token costs of generating one sequence, for the base models and Llama 2.

    Taught on: "Faster inference".
    """
    configs = [(name, card(name).config) for name in NAMES]
    configs += [("Llama 2 7B", LLAMA2_7B), ("Llama 2 70B", LLAMA2_70B)]
    rows = [_cost_row(name, config) for name, config in configs]
    return InferenceCosts(rows, {key: acc.ridge_intensity
                                 for key, acc in ACCELERATORS.items()})


# --------------------------------------------------------------------------
# 2. quantization
# --------------------------------------------------------------------------
@dataclasses.dataclass
class QuantizedRow:
    """The base model with every linear layer quantized one way.

    Attributes:
        bits, group_size: The setting (``group_size`` ``None``: a scale per row).
        float_bytes: The replaced layers' float32 weights.
        quantized_bytes: Their codes (``bits`` each) and scales.
        max_error: The largest ``|w - ŵ|`` over all replaced weights.
        loss: Held-out loss, nats per character.
        loss_change: ``loss`` minus the float model's.
        same_greedy: Tokens of greedy text equal to the float model's before the
            first difference (of ``greedy_tokens``).
    """

    bits: int
    group_size: int | None
    float_bytes: int
    quantized_bytes: int
    max_error: float
    loss: float
    loss_change: float
    same_greedy: int

    @property
    def compression(self) -> float:
        return self.float_bytes / self.quantized_bytes


@dataclasses.dataclass
class LayerError:
    """One linear layer's weights and what 4 bits do to them.

    Attributes:
        layer: Its path in the model (``layers.0.ffn.w2``).
        peak_ratio: ``max |w| / mean |w|`` over the layer: how far its largest
            weights stand out.
        row_error: Mean ``|w - ŵ|`` at 4 bits with a scale per row.
        group_error: The same with a scale per group of columns (the group size of
            :data:`QUANTIZATIONS`).
        row_absmax: Per output row, ``max |w|``: the rows' 4-bit scales are these / 7.
    """

    layer: str
    peak_ratio: float
    row_error: float
    group_error: float
    row_absmax: list[float]


@dataclasses.dataclass
class QuantizationResult:
    """:func:`run_quantization`.

    Attributes:
        corpus: The base model.
        held_out_chars: Characters of held-out text scored.
        float_loss: The float model's loss there, nats per character.
        float_bytes: All its linear layers' float32 weights.
        rows: One :class:`QuantizedRow` per setting of :data:`QUANTIZATIONS`.
        layers: Every linear layer, the most outlying first.
        n_layers: Linear layers quantized.
        greedy_tokens: Tokens of greedy text compared.
    """

    corpus: str
    held_out_chars: int
    float_loss: float
    float_bytes: int
    rows: list[QuantizedRow]
    layers: list[LayerError]
    n_layers: int
    greedy_tokens: int


def _first_difference(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _layer_error(path: str, weight: Tensor, group_size: int) -> LayerError:
    mean_error = [float((weight - dequantize(*quantize_tensor(weight, 4, group), group))
                        .abs().mean()) for group in (None, group_size)]
    absmax = weight.abs().amax(dim=1)  # (out,)
    return LayerError(path, float(weight.abs().max() / weight.abs().mean()),
                      mean_error[0], mean_error[1], absmax.tolist())


@cached(cost=1.4)  # seconds on one core: four held-out losses, four short greedy texts
def run_quantization(corpus: str, greedy_tokens: int = 32) -> QuantizationResult:
    """Quantize the base model ``corpus`` each way of :data:`QUANTIZATIONS`.

    Taught on: "Faster inference".
    """
    check_choice("corpus", corpus, NAMES)
    check_int("greedy_tokens", greedy_tokens)
    model, tokenizer = load(corpus)
    text = held_out_text(corpus)
    prompt = tokenizer.encode(_prompt(corpus))
    base_text = generate(model, prompt, greedy_tokens, greedy=True)
    base_loss = held_out_loss(model, tokenizer, text).nats_per_character
    linear = [(path, child.weight.detach()) for path, _, _, child in named_children(model)
              if isinstance(child, LINEAR)]
    rows = []
    for bits, group in QUANTIZATIONS:
        quantized = copy.deepcopy(model)
        report = quantize_weights(quantized, bits, group)
        loss = held_out_loss(quantized, tokenizer, text).nats_per_character
        same = _first_difference(generate(quantized, prompt, greedy_tokens, greedy=True),
                                 base_text)
        rows.append(QuantizedRow(bits, group, report.float_bytes, report.quantized_bytes,
                                 report.max_abs_error, loss, loss - base_loss, same))
    group = next(g for _, g in QUANTIZATIONS if g is not None)
    layers = sorted((_layer_error(path, w, group) for path, w in linear),
                    key=lambda e: -e.peak_ratio)
    return QuantizationResult(corpus, len(text), base_loss, rows[0].float_bytes, rows,
                              layers, len(linear), greedy_tokens)


# --------------------------------------------------------------------------
# 3. speculative decoding
# --------------------------------------------------------------------------
@dataclasses.dataclass
class SpeculativeRow:
    """One ``k``: what :func:`llmlab.inference.speculative_generate` counted.

    Attributes:
        k: Tokens the draft proposes per round.
        target_calls, draft_calls: Forward passes of each model.
        proposed, accepted: Draft tokens proposed and kept.
        expected_per_pass: Tokens per target pass that Leviathan et al.'s formula
            ``(1 - α^(k+1)) / (1 - α)`` predicts from the agreement rate ``α``.
    """

    k: int
    target_calls: int
    draft_calls: int
    proposed: int
    accepted: int
    expected_per_pass: float


@dataclasses.dataclass
class SpeculativeResult:
    """:func:`run_speculative`.

    Attributes:
        corpus: The base model (the target).
        target_parameters, draft_parameters: The two models' sizes.
        prompt: The prompt's text.
        text: The generated text (the target's greedy text, every ``k`` alike).
        new_tokens: Tokens generated.
        agreement: ``α``: the share of the text's positions where the draft's most
            likely token is the target's (each read with the text before it).
        rows: One :class:`SpeculativeRow` per ``k``.
    """

    corpus: str
    target_parameters: int
    draft_parameters: int
    prompt: str
    text: str
    new_tokens: int
    agreement: float
    rows: list[SpeculativeRow]

    def weights_read(self, row: SpeculativeRow) -> float:
        """Weights read per generated token, as a multiple of plain decoding's (one
        target pass per token): every pass reads its model's weights once, so
        ``(target_calls · N_target + draft_calls · N_draft) / (new_tokens · N_target)``."""
        check_type("row", row, SpeculativeRow)
        read = row.target_calls * self.target_parameters + row.draft_calls * self.draft_parameters
        return read / (self.new_tokens * self.target_parameters)


def expected_tokens_per_pass(alpha: float, k: int) -> float:
    """``(1 - α^(k+1)) / (1 - α)``: tokens each target pass yields when each proposal
    is accepted with probability ``α``, independently (``k + 1`` at ``α = 1``).

    Taught on: "Faster inference".
    """
    alpha = check_finite_float("alpha", alpha, minimum=0.0, maximum=1.0)
    check_int("k", k)
    return float(k + 1) if alpha >= 1 else (1 - alpha ** (k + 1)) / (1 - alpha)


@cached(cost=1.5)  # seconds on one core: 4 speculative runs of 48 tokens, no KV cache
def run_speculative(corpus: str, ks: tuple[int, ...] = (1, 2, 4, 8),
                    new_tokens: int = 48) -> SpeculativeResult:
    """The base model ``corpus`` as target, its draft proposing ``k`` tokens a round.

    Raises:
        AssertionError: A run's text differs from the target's greedy text (the
            method guarantees they are equal).

    Taught on: "Faster inference".
    """
    check_choice("corpus", corpus, NAMES)
    ks = check_sizes("ks", ks)
    check_int("new_tokens", new_tokens)
    target, tokenizer = load(corpus)
    draft = load_draft(corpus)
    prompt_text = _prompt(corpus)
    prompt = tokenizer.encode(prompt_text)
    greedy = generate(target, prompt, new_tokens, greedy=True, use_kv_cache=False)
    with torch.no_grad():  # α: the draft's choice against the target's, position by position
        ids = torch.tensor(prompt + greedy)[None, -target.context_length:]  # (1, T)
        agree = (target(ids).argmax(-1) == draft(ids).argmax(-1))[0, -new_tokens - 1:-1]
    alpha = float(agree.float().mean())
    rows = []
    for k in ks:
        text, stats = speculative_generate(target, draft, prompt, new_tokens, k)
        if text != greedy:
            raise AssertionError(f"speculative decoding (k={k}) wrote other tokens than "
                                 "the target's greedy decoding")
        rows.append(SpeculativeRow(k, stats.target_calls, stats.draft_calls,
                                   stats.proposed, stats.accepted,
                                   expected_tokens_per_pass(alpha, k)))
    return SpeculativeResult(corpus, sum(p.numel() for p in target.parameters()),
                             sum(p.numel() for p in draft.parameters()), prompt_text,
                             tokenizer.decode(greedy), new_tokens, alpha, rows)


class _FixedLM(nn.Module):
    """A toy language model: the same next-token logits after any text."""

    def __init__(self, logits: list[float], context_length: int = 8) -> None:
        super().__init__()
        self.register_buffer("logits", torch.tensor(logits))
        self.vocab_size, self.context_length = len(logits), context_length

    def forward(self, ids: Tensor) -> Tensor:  # (B, T) -> (B, T, V)
        return self.logits.expand(*ids.shape, self.vocab_size)


@dataclasses.dataclass
class SamplingCheck:
    """:func:`run_sampling_check`: ``draws`` tokens drawn by speculative sampling.

    Attributes:
        target, draft: The two toy distributions ``p`` and ``q``.
        counts: How often each token was drawn.
        draws: Tokens drawn (each a run of one new token, ``k = 1``).
        accepted: Draws where the draft's proposal was kept.
        tv_target, tv_draft: Total variation distance between the drawn shares and
            ``p``, and ``q``.
        tv_noise: The distance that sampling ``draws`` tokens from ``p`` itself
            gives, in expectation (about ``Σ sqrt(p(1-p) / (2π draws))``).
        expected_accept: ``Σ min(p, q)``: the probability a proposal is kept.
    """

    target: list[float]
    draft: list[float]
    counts: list[int]
    draws: int
    accepted: int
    tv_target: float
    tv_draft: float
    tv_noise: float
    expected_accept: float


@cached(cost=1.0)  # seconds on one core: 2,000 one-token runs
def run_sampling_check(draws: int = 2000, seed: int = 0) -> SamplingCheck:
    """Speculative sampling of one token, ``draws`` times, from toy models whose
    distributions differ: the draws follow the target's.

    Taught on: "Faster inference".
    """
    check_int("draws", draws)
    check_int("seed", seed, minimum=0)
    target = _FixedLM([2.0, 1.0, 0.5, 0.0, -1.0])
    draft = _FixedLM([0.0, 1.5, 1.5, 0.5, 0.0])  # prefers other tokens
    p = torch.softmax(target.logits, -1)
    q = torch.softmax(draft.logits, -1)
    generator = torch.Generator().manual_seed(seed)
    counts = [0] * target.vocab_size
    accepted = 0
    for _ in range(draws):
        (token,), stats = speculative_generate(target, draft, [0], 1, 1, 1.0, generator)
        counts[token] += 1
        accepted += stats.accepted
    shares = torch.tensor(counts, dtype=torch.float64) / draws
    noise = float((p.double() * (1 - p.double()) / (2 * torch.pi * draws)).sqrt().sum())
    return SamplingCheck(p.tolist(), q.tolist(), counts, draws, accepted,
                         float(0.5 * (shares - p.double()).abs().sum()),
                         float(0.5 * (shares - q.double()).abs().sum()), noise,
                         float(torch.minimum(p, q).sum()))


# --------------------------------------------------------------------------
# 4. grouped-query attention
# --------------------------------------------------------------------------
@dataclasses.dataclass
class GQAComparison:
    """:func:`run_gqa_comparison`.

    Attributes:
        kv_heads: Key/value heads per run (of ``num_heads`` query heads).
        num_heads: Query heads.
        kv_bytes: 16-bit KV-cache bytes of a full context of the Shakespeare base
            model's shape with each number of kv heads.
        llama70b_kv_heads: The kv heads compared at Llama 2 70B's shape (64, its 8, 1).
        llama70b_kv_bytes: Its KV cache at 4,096 tokens, 16-bit, per sequence.
        copies_difference: Largest ``|logit|`` difference between a grouped model
            and the multi-head model whose key/value heads are its heads copied.
        parameters: Parameters of each trained model.
        steps, batch_size, context_length: The short training runs' settings.
        val_loss: Validation loss (nats per token) after training, per run.
    """

    kv_heads: list[int]
    num_heads: int
    kv_bytes: list[int]
    llama70b_kv_heads: list[int]
    llama70b_kv_bytes: list[int]
    copies_difference: float
    parameters: list[int]
    steps: int
    batch_size: int
    context_length: int
    val_loss: list[float]


def _copies_difference(config: LlamaConfig) -> float:
    """Build a grouped model, copy each kv head into every query head of its group
    of a multi-head model, and compare the two models' logits."""
    torch.manual_seed(0)
    grouped = TransformerLM.from_config(config)
    full = TransformerLM.from_config(dataclasses.replace(config, num_kv_heads=None))
    group = config.num_heads // config.kv_heads
    d_head = config.d_model // config.num_heads
    state = grouped.state_dict()
    for name, weight in state.items():
        if name.endswith(("k_proj.weight", "v_proj.weight")):  # (kv·d_head, d_model)
            state[name] = (weight.reshape(config.kv_heads, d_head, -1)
                           .repeat_interleave(group, dim=0).reshape(config.d_model, -1))
    full.load_state_dict(state)
    ids = torch.randint(0, config.vocab_size, (2, config.context_length))
    with torch.no_grad():
        return float((grouped(ids) - full(ids)).abs().max())


@cached(cost=6.0)  # seconds on one core: three training runs of 80 steps
def run_gqa_comparison(kv_heads: tuple[int, ...] = GQA_KV_HEADS, steps: int = 80,
                       batch_size: int = 8, seed: int = 0) -> GQAComparison:
    """Multi-head, grouped and multi-query attention: memory, equivalence, quality.

    The quality runs train three small models (width 64, two blocks, four query
    heads, 64 tokens of context) on the Shakespeare base model's tokens with
    :func:`llmlab.training.train`, alike but for their key/value heads.

    Taught on: "Faster inference".
    """
    kv_heads = check_sizes("kv_heads", kv_heads)
    check_int("steps", steps)
    check_int("batch_size", batch_size)
    check_int("seed", seed, minimum=0)
    base = card("shakespeare").config
    small = LlamaConfig(vocab_size=base.vocab_size, context_length=64, d_model=64,
                        num_layers=2, num_heads=base.num_heads, d_ff=176)
    for kv in kv_heads:
        if base.num_heads % kv:
            raise ValueError(f"kv_heads must divide the {base.num_heads} query heads, "
                             f"got {kv} in {kv_heads}")
    d_head = base.d_model // base.num_heads
    kv_bytes = [kv_cache_bytes(base.num_layers, kv, d_head, base.context_length, 2)
                for kv in kv_heads]
    big = LLAMA2_70B
    llama_heads = [big.num_heads, big.kv_heads, 1]
    llama_bytes = [kv_cache_bytes(big.num_layers, kv, big.d_model // big.num_heads,
                                  big.context_length, 2) for kv in llama_heads]
    difference = max((_copies_difference(dataclasses.replace(small, num_kv_heads=kv))
                      for kv in kv_heads if kv != small.num_heads), default=0.0)
    _, tokenizer = load("shakespeare")
    text = training_text("shakespeare")
    train_ids = torch.tensor(tokenizer.encode(text[:200_000]))
    val_ids = torch.tensor(tokenizer.encode(held_out_text("shakespeare", 20_000)))
    parameters, val_loss = [], []
    for kv in kv_heads:
        torch.manual_seed(seed)
        model = TransformerLM.from_config(dataclasses.replace(small, num_kv_heads=kv))
        optimizer = AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
        train(model, optimizer, train_ids, steps=steps, batch_size=batch_size,
              lr_schedule=cosine_schedule(1e-2, 1e-3, max(1, steps // 10), steps),
              seed=seed)
        parameters.append(sum(p.numel() for p in model.parameters()))
        val_loss.append(estimate_loss(model, val_ids, 16, small.context_length, 8))
    return GQAComparison(list(kv_heads), small.num_heads, kv_bytes, llama_heads,
                         llama_bytes, difference, parameters, steps, batch_size,
                         small.context_length, val_loss)
