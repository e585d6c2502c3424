r"""Generating text from a trained model: greedy decoding and sampling, with a KV cache.

At every step the model scores each token of the vocabulary as the next one; a
decoding rule turns the last position's logits :math:`o` into a choice:

* greedy: the most likely token, :math:`\arg\max_i o_i`;
* temperature :math:`\tau`: sample from :math:`\mathrm{softmax}(o / \tau)` (below 1
  sharper, above 1 flatter);
* top-k: sample among the :math:`k` most likely tokens only;
* top-p (nucleus): sample among the fewest most likely tokens whose probabilities
  add up to at least :math:`p`.

Filters apply in that order (temperature, then top-k, then top-p), as in Hugging
Face's ``generate``. Decoding stops after ``max_new_tokens`` or at ``eos_token_id``.
Several prompts of one length decode side by side as a batch (one forward pass per
step for all of them).

Taught on: "Training and generating text".
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from llmlab._surgery import device_of
from llmlab.checks import (
    check_bool,
    check_finite_float,
    check_int,
    check_language_model,
    check_logits,
    check_token_ids,
    check_type,
)
from llmlab.functional import softmax
from llmlab.kv_cache import KVCache, LayerKVCache, kv_cache_bytes

__all__ = [
    "KVCache",
    "LayerKVCache",
    "generate",
    "kv_cache_bytes",
    "next_token_probabilities",
    "sample_next_token",
]


def next_token_probabilities(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Tensor:
    """The distribution a sampler draws the next token from.

    Args:
        logits: Float ``(vocab_size,)`` (or ``(..., vocab_size)``) scores.
        temperature: τ > 0; logits are divided by it.
        top_k: Keep the ``top_k`` most likely tokens (``1 <= top_k <= vocab_size``);
            ``None`` keeps all.
        top_p: Keep the smallest set of most likely tokens whose probability adds up
            to at least ``top_p`` (in ``(0, 1]``); ``None`` keeps all.

    Returns:
        Probabilities of ``logits``' shape, zero outside the kept tokens, summing
        to 1 along the last dimension.

    Taught on: "Training and generating text".
    """
    _check_sampling(logits, temperature, top_k, top_p)
    logits = logits.float() / temperature  # (..., V)
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]  # (..., 1): k-th largest
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = softmax(logits, dim=-1)  # (..., V)
    if top_p is not None and top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)  # (..., V)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass of the better
        keep_sorted = mass_before < top_p  # the best token is always kept
        keep = keep_sorted.scatter(-1, order, keep_sorted)  # back to vocabulary order
        probs = probs * keep
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def sample_next_token(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> int:
    """Draw one token id from :func:`next_token_probabilities` of ``(V,)`` logits.

    ``generator`` (a CPU ``torch.Generator``) makes the draw reproducible.

    Taught on: "Training and generating text".
    """
    if not isinstance(logits, Tensor) or logits.ndim != 1:
        shape = tuple(logits.shape) if isinstance(logits, Tensor) else logits
        raise ValueError(f"logits must be (vocab_size,), got shape {shape}")
    return int(_draw(logits[None], temperature, top_k, top_p, generator)[0])


def _draw(logits: Tensor, temperature: float, top_k: int | None, top_p: float | None,
          generator: torch.Generator | None) -> Tensor:
    """One token per row of ``(B, V)`` logits: ``(B,)`` ids on the CPU."""
    probs = next_token_probabilities(logits, temperature, top_k, top_p)  # (B, V)
    return torch.multinomial(probs.cpu(), 1, generator=generator)[:, 0]  # (B,)


@torch.no_grad()
def generate(
    model: nn.Module,
    prompt: Tensor | list[int] | list[list[int]],
    max_new_tokens: int,
    *,
    greedy: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_token_id: int | None = None,
    generator: torch.Generator | None = None,
    use_kv_cache: bool = True,
) -> list[int] | list[list[int]]:
    """Continue ``prompt`` by up to ``max_new_tokens`` tokens.

    Args:
        model: A ``TransformerLM`` (needs ``vocab_size``, ``context_length`` and
            ``layers``; with ``use_kv_cache`` its forward takes ``kv_cache=``).
        prompt: Token ids ``(n,)``, ``n >= 1``, or a batch ``(B, n)`` of prompts of
            one length; only the last ``context_length`` ids are seen.
        max_new_tokens: The most tokens to generate, ``>= 1``.
        greedy: Take the most likely token (the sampling settings are ignored).
        temperature: τ > 0 for sampling.
        top_k: Sample among the ``top_k`` most likely tokens.
        top_p: Sample from the nucleus of probability ``top_p``.
        eos_token_id: Stop after generating this token (it is included). In a
            batch, each row stops at its own; the batch runs until all have.
        generator: CPU generator for the draws (``None``: torch's global one).
        use_kv_cache: Keep keys and values between steps instead of recomputing the
            whole window. The logits are the same (to float rounding). Once the
            text outgrows the context, the window slides and each step computes it
            afresh, as without the cache.

    Returns:
        The new token ids (without the prompt): a list, or a list per row for a
        batch of prompts.

    Taught on: "Training and generating text".
    """
    check_language_model("model", model)
    check_bool("use_kv_cache", use_kv_cache)
    ids = _check_generate(prompt, model.vocab_size, max_new_tokens, greedy, temperature,
                          top_k, top_p, eos_token_id, generator)
    device = device_of(model)
    text = (ids if ids.ndim == 2 else ids[None]).to(device)  # (B, n) so far
    was_training = model.training
    model.eval()
    try:
        text = _decode(model, text, max_new_tokens, greedy, temperature, top_k, top_p,
                       eos_token_id, generator, use_kv_cache)
    finally:
        model.train(was_training)
    rows = [_until_eos(row, eos_token_id) for row in text[:, ids.shape[-1]:].tolist()]
    return rows if ids.ndim == 2 else rows[0]


def _decode(model: nn.Module, text: Tensor, max_new_tokens: int, greedy: bool,
            temperature: float, top_k: int | None, top_p: float | None,
            eos_token_id: int | None, generator: torch.Generator | None,
            use_kv_cache: bool) -> Tensor:
    """The decoding loop of :func:`generate`: ``(B, n)`` -> ``(B, n + new)`` ids."""
    context, device = model.context_length, text.device
    cache = KVCache(len(model.layers), context) if use_kv_cache else None
    pending = text[:, -context:]  # tokens the model has not seen yet
    done = torch.zeros(len(text), dtype=torch.bool)  # rows that produced eos
    for _ in range(max_new_tokens):
        if cache is None:
            logits = model(text[:, -context:])[:, -1]  # (B, V): whole window
        else:
            if cache.seq_len + pending.shape[1] > context:  # window slides: afresh
                cache, pending = KVCache(len(model.layers), context), text[:, -context:]
            logits = model(pending, kv_cache=cache)[:, -1]  # (B, V): new tokens only
        if greedy:
            tokens = logits.argmax(dim=-1).cpu()  # (B,)
        else:
            tokens = _draw(logits, temperature, top_k, top_p, generator)  # (B,)
        pending = tokens.to(device)[:, None]  # (B, 1)
        text = torch.cat((text, pending), dim=1)
        if eos_token_id is not None:
            done |= tokens == eos_token_id
            if bool(done.all()):
                break
    return text


def _until_eos(ids: list[int], eos_token_id: int | None) -> list[int]:
    if eos_token_id is not None and eos_token_id in ids:
        return ids[: ids.index(eos_token_id) + 1]
    return ids


# a local composite (a module with a language model's attributes), built from llmlab.checks


# a local composite (the sampling settings against logits), built from llmlab.checks
def _check_sampling(
    logits: Tensor, temperature: float, top_k: int | None, top_p: float | None
) -> None:
    check_logits("logits", logits)
    check_finite_float("temperature", temperature, minimum=0.0, open_min=True)
    if top_k is not None:
        check_int("top_k", top_k)
        if top_k > logits.shape[-1]:
            raise ValueError(
                f"top_k ({top_k}) must be at most vocab_size ({logits.shape[-1]})"
            )
    if top_p is not None:
        check_finite_float("top_p", top_p, minimum=0.0, maximum=1.0, open_min=True)


# a local composite (generate()'s arguments together), built from llmlab.checks
def _check_generate(
    prompt: Tensor | list[int],
    vocab_size: int,
    max_new_tokens: int,
    greedy: bool,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    eos_token_id: int | None,
    generator: torch.Generator | None,
) -> Tensor:
    if not isinstance(prompt, Tensor):
        rows = prompt if prompt and isinstance(prompt[0], (list, tuple)) else [prompt]
        if not isinstance(prompt, (list, tuple)) or not all(
            isinstance(row, (list, tuple)) and all(
                isinstance(i, int) and not isinstance(i, bool) for i in row)
            for row in rows
        ):
            raise TypeError("prompt must be a tensor, a list of int token ids or a "
                            "list of such lists")
        if len({len(row) for row in rows}) > 1:
            raise ValueError("prompt rows must have one length, got lengths "
                             f"{sorted({len(row) for row in rows})}")
        prompt = torch.tensor(prompt, dtype=torch.long)
    if prompt.ndim not in (1, 2):
        raise ValueError(
            f"prompt must be (n,) or (B, n), got shape {tuple(prompt.shape)}"
        )
    check_token_ids("prompt", prompt, vocab_size)
    check_int("max_new_tokens", max_new_tokens)
    check_bool("greedy", greedy)
    _check_sampling(torch.zeros(vocab_size), temperature, top_k, top_p)
    if eos_token_id is not None:
        check_int("eos_token_id", eos_token_id, minimum=0)
        if eos_token_id >= vocab_size:
            raise ValueError(
                f"eos_token_id ({eos_token_id}) must be below vocab_size ({vocab_size})"
            )
    if generator is not None:
        check_type("generator", generator, torch.Generator, expected="a torch.Generator")
    return prompt.long()
