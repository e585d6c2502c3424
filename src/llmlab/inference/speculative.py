r"""Speculative decoding: a small draft model proposes, the large target model checks.

Generating :math:`n` tokens with a large model takes :math:`n` of its forward
passes, one after the other. Speculative decoding (Leviathan et al. 2023; Chen et
al. 2023) lets a cheap draft model propose :math:`k` tokens, one at a time, and then
scores all of them with the target in *one* forward pass: that pass gives the
target's distribution :math:`p` at every proposed position, and one more (the
bonus) after the last. Each round keeps a prefix of the proposal and adds one token
of the target's own, so a round costs one target pass and yields between 1 and
:math:`k + 1` tokens.

* Greedy (temperature 0): keep the proposal's longest prefix that equals the
  target's argmax, then add the target's argmax at the first mismatch (or the bonus
  after :math:`k` kept). The text is exactly the target's greedy text.
* Sampling: keep a proposed token :math:`x`, drawn from the draft's :math:`q`, with
  probability :math:`\min(1, p(x)/q(x))`; on the first rejection, draw from
  :math:`\mathrm{normalize}(\max(0, p - q))` and end the round; after :math:`k`
  acceptances draw the bonus from :math:`p`. Each token is then distributed
  exactly as the target's :math:`p`, whatever the draft.

Clarity over speed: every forward pass recomputes its whole window (no KV cache).
A window is the last ``context_length`` ids, as :func:`llmlab.generation.generate`
sees them, so each position the target scores must see exactly its last
``context_length`` ids: a round proposes at most ``context_length - len(text)``
tokens, and once the text fills the target's context a round proposes nothing and
is one plain step of the target.

Taught on: "Faster inference".
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from llmlab._surgery import device_of
from llmlab.checks import (
    check_finite_float,
    check_int,
    check_module,
    check_sizes,
    check_type,
)
from llmlab.generation import next_token_probabilities

__all__ = ["SpeculativeStats", "speculative_generate"]


@dataclass
class SpeculativeStats:
    """The work :func:`speculative_generate` did.

    Attributes:
        target_calls: Forward passes of the target (one per round).
        draft_calls: Forward passes of the draft (one per proposed token).
        proposed: Tokens the draft proposed.
        accepted: Proposed tokens kept.

    Taught on: "Faster inference".
    """

    target_calls: int = 0
    draft_calls: int = 0
    proposed: int = 0
    accepted: int = 0

    @property
    def acceptance_rate(self) -> float:
        """``accepted / proposed``; 0.0 when nothing was proposed."""
        return self.accepted / self.proposed if self.proposed else 0.0


@torch.no_grad()
def speculative_generate(
    target: nn.Module,
    draft: nn.Module,
    prompt_ids: list[int],
    max_new_tokens: int,
    k: int,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> tuple[list[int], SpeculativeStats]:
    """Continue ``prompt_ids`` by exactly ``max_new_tokens`` tokens of ``target``.

    Args:
        target: The model whose text is wanted: an ``nn.Module`` with
            ``vocab_size`` and ``context_length`` whose forward maps ids ``(1, T)``
            to logits ``(1, T, vocab_size)`` (a ``TransformerLM``).
        draft: A cheaper model of the same kind and the same ``vocab_size``.
        prompt_ids: One prompt, a non-empty list of token ids.
        max_new_tokens: How many tokens to generate, ``>= 1``.
        k: Tokens the draft proposes per round, ``>= 1`` (fewer near the end of
            ``max_new_tokens`` or of the target's context).
        temperature: 0: greedy (the target's greedy text exactly); ``> 0``: sample
            at that temperature (each token distributed as the target's).
        generator: CPU generator for the draws (``None``: torch's global one).

    Returns:
        ``(new token ids, stats)``: the ``max_new_tokens`` new ids (without the
        prompt) and a :class:`SpeculativeStats`.

    Taught on: "Faster inference".
    """
    _check_models(target, draft)
    ids = list(check_sizes("prompt_ids", prompt_ids, minimum=0,
                           maximum=target.vocab_size - 1))
    check_int("max_new_tokens", max_new_tokens)
    check_int("k", k)
    temperature = check_finite_float("temperature", temperature, minimum=0.0)
    if generator is not None:
        check_type("generator", generator, torch.Generator, expected="a torch.Generator")
    modes = target.training, draft.training
    target.eval()
    draft.eval()
    try:
        new, stats = _speculate(target, draft, ids, max_new_tokens, k, temperature,
                                generator)
    finally:
        target.train(modes[0])
        draft.train(modes[1])
    return new, stats


def _speculate(target: nn.Module, draft: nn.Module, ids: list[int], max_new_tokens: int,
               k: int, temperature: float, generator: torch.Generator | None,
               ) -> tuple[list[int], SpeculativeStats]:
    """The rounds of :func:`speculative_generate` (arguments already checked)."""
    stats = SpeculativeStats()
    start = len(ids)
    while (left := max_new_tokens - (len(ids) - start)) > 0:
        room = max(0, target.context_length - len(ids))  # positions seen in full
        m = min(k, left, room)
        # the draft proposes m tokens, one forward pass each
        proposal: list[int] = []
        q: list[Tensor] = []  # the draft's distributions (sampling only)
        for _ in range(m):
            logits = _last_logits(draft, ids + proposal, 1)[0]  # (V,)
            stats.draft_calls += 1
            if temperature == 0:
                proposal.append(int(logits.argmax()))
            else:
                q.append(next_token_probabilities(logits, temperature))
                proposal.append(int(torch.multinomial(q[-1], 1, generator=generator)))
        # the target scores the proposal and the bonus position in one pass
        logits = _last_logits(target, ids + proposal, m + 1)  # (m + 1, V)
        stats.target_calls += 1
        stats.proposed += m
        kept = _verify(logits, proposal, q, temperature, generator)
        stats.accepted += len(kept) - 1  # the last is the target's own
        ids += kept[:left]  # a bonus past max_new_tokens is dropped
    return ids[start:], stats


def _verify(logits: Tensor, proposal: list[int], q: list[Tensor], temperature: float,
            generator: torch.Generator | None) -> list[int]:
    """The tokens a round adds: a kept prefix of ``proposal``, then one of the
    target's (a correction or the bonus). ``logits`` ``(m + 1, V)``: the target's
    at the proposed positions and after them."""
    if temperature == 0:
        best = logits.argmax(dim=-1).tolist()  # (m + 1,) the target's choices
        kept = []
        for x, choice in zip(proposal, best):
            if x != choice:
                break
            kept.append(x)
        return kept + [best[len(kept)]]
    p = next_token_probabilities(logits, temperature)  # (m + 1, V)
    kept = []
    for i, x in enumerate(proposal):
        u = float(torch.rand((), generator=generator))
        if u * q[i][x] < p[i, x]:  # accepted with probability min(1, p(x) / q(x))
            kept.append(x)
            continue
        residual = (p[i] - q[i]).clamp(min=0)  # (V,) what p has more than q
        if float(residual.sum()) <= 0:  # p == q to rounding: p itself
            residual = p[i]
        return kept + [int(torch.multinomial(residual / residual.sum(), 1,
                                             generator=generator))]
    return kept + [int(torch.multinomial(p[-1], 1, generator=generator))]


def _last_logits(model: nn.Module, ids: list[int], n: int) -> Tensor:
    """The float CPU logits ``(n, V)`` of the last ``n`` positions of ``ids``' window
    (its last ``context_length`` ids)."""
    window = torch.tensor(ids[-model.context_length:], dtype=torch.long,
                          device=device_of(model))
    return model(window[None])[0, -n:].float().cpu()  # (n, V)


# a local composite (the two models together), built from llmlab.checks
def _check_models(target: object, draft: object) -> None:
    for name, model in (("target", target), ("draft", draft)):
        check_module(name, model)
        missing = [a for a in ("vocab_size", "context_length") if not hasattr(model, a)]
        if missing:
            raise TypeError(f"{name} must be a language model with vocab_size and "
                            f"context_length (a TransformerLM); {type(model).__name__} "
                            f"lacks {', '.join(missing)}")
        check_int(f"{name}.vocab_size", model.vocab_size)
        check_int(f"{name}.context_length", model.context_length)
    if draft.vocab_size != target.vocab_size:
        raise ValueError(f"draft has vocab_size {draft.vocab_size} but target has "
                         f"{target.vocab_size}; the draft must propose the target's tokens")
