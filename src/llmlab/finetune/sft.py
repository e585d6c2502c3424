"""Supervised fine-tuning examples: a prompt, its response, and what is learnt.

An example is the prompt's ids, the response's ids and the end-of-text id, one
sequence; the target at each position is the next id. With a masked prompt, a
target inside the prompt is :data:`IGNORE_INDEX`: the model reads the prompt but is
trained only to write the response and then to stop::

    inputs   p1  p2  r1  r2  <eot>
    targets  ·   r1  r2  <eot>  ·        (· = IGNORE_INDEX)

The last position has nothing after it to predict. :class:`SupervisedData` (defined
in :mod:`llmlab.training.data`, which the training loop reads) pads examples into a
table of batches.

Taught on: "Fine-tuning".
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from llmlab._surgery import device_of
from llmlab.checks import check_bool, check_int, check_module, check_str, check_type
from llmlab.tokenization import END_OF_TEXT, Tokenizer
from llmlab.training.data import IGNORE_INDEX, SupervisedData

__all__ = [
    "END_OF_TEXT",
    "IGNORE_INDEX",
    "SupervisedData",
    "end_of_text_id",
    "exact_match",
    "supervised_data",
    "supervised_example",
]

def end_of_text_id(tokenizer: Tokenizer) -> int:
    """The id of ``tokenizer``'s end-of-text token (:data:`END_OF_TEXT`).

    Raises:
        TypeError: ``tokenizer`` is not a BPE ``Tokenizer``.
        ValueError: It has no end-of-text token.

    Taught on: "Fine-tuning".
    """
    check_type("tokenizer", tokenizer, Tokenizer, expected="a BPE Tokenizer",
               hint=f"a response must end with {END_OF_TEXT}, which the "
               "tokenizer needs as a special token")
    if END_OF_TEXT not in tokenizer.special_ids:
        raise ValueError(f"tokenizer has no {END_OF_TEXT} special token (it has "
                         f"{list(tokenizer.special_ids)}); expected one to end a "
                         "response with")
    return tokenizer.special_ids[END_OF_TEXT]


def supervised_example(
    tokenizer: Tokenizer, prompt: str, response: str, mask_prompt: bool = True
) -> tuple[list[int], list[int]]:
    """One example: the ids of ``prompt + response + <end-of-text>`` and their targets.

    The prompt and the response are encoded apart, so the response's first token
    starts at a token boundary.

    Args:
        tokenizer: A BPE tokenizer with :data:`END_OF_TEXT`.
        prompt: The text the model is given, non-empty.
        response: The text it should write, non-empty.
        mask_prompt: Set the targets that are prompt tokens to :data:`IGNORE_INDEX`
            (``False``: learn the prompt as well).

    Returns:
        ``(input_ids, targets)`` of one length ``P + R + 1``: ``targets[i]`` is
        ``input_ids[i + 1]``, or ``IGNORE_INDEX`` at the last position and, with
        ``mask_prompt``, at the first ``P - 1`` (whose targets are prompt tokens).

    Taught on: "Fine-tuning".
    """
    eot = end_of_text_id(tokenizer)
    check_str("prompt", prompt, nonempty=True)
    check_str("response", response, nonempty=True)
    check_bool("mask_prompt", mask_prompt)
    prompt_ids = tokenizer.encode(prompt)  # P ids
    input_ids = prompt_ids + tokenizer.encode(response) + [eot]  # P + R + 1 ids
    targets = input_ids[1:] + [IGNORE_INDEX]  # the next id; none after the last
    if mask_prompt:  # a target inside the prompt is not to be learnt
        masked = len(prompt_ids) - 1
        targets[:masked] = [IGNORE_INDEX] * masked
    return input_ids, targets


def supervised_data(
    tokenizer: Tokenizer,
    pairs: Sequence[tuple[str, str]],
    *,
    mask_prompt: bool = True,
    context_length: int | None = None,
) -> SupervisedData:
    """:class:`SupervisedData` of ``(prompt, response)`` pairs, padded with end-of-text.

    Args:
        tokenizer: A BPE tokenizer with :data:`END_OF_TEXT`.
        pairs: ``(prompt, response)`` texts, at least one pair.
        mask_prompt: As in :func:`supervised_example`.
        context_length: The longest example allowed (the model's); ``None``: any.

    Taught on: "Fine-tuning".
    """
    eot = end_of_text_id(tokenizer)
    check_type("pairs", pairs, (list, tuple), expected="a list of (prompt, response) "
               "pairs")
    if not pairs:
        raise ValueError("pairs is empty; expected at least one (prompt, response) "
                         "pair")
    check_bool("mask_prompt", mask_prompt)
    if context_length is not None:
        check_int("context_length", context_length)
    for i, pair in enumerate(pairs):
        check_type(f"pairs[{i}]", pair, (list, tuple),
                   expected="a (prompt, response) pair")
        if len(pair) != 2:
            raise ValueError(f"pairs[{i}] must be a (prompt, response) pair, got "
                             f"{len(pair)} items")
        check_str(f"pairs[{i}][0]", pair[0], nonempty=True)
        check_str(f"pairs[{i}][1]", pair[1], nonempty=True)
    examples = [supervised_example(tokenizer, prompt, response, mask_prompt)
                for prompt, response in pairs]
    return SupervisedData(examples, pad_id=eot, context_length=context_length)


@torch.no_grad()
def exact_match(model: nn.Module, data: SupervisedData) -> Tensor:
    """Per example, whether greedy decoding would write its response exactly and stop.

    One forward pass over the padded examples: greedy decoding writes the response
    exactly (and then the end-of-text) if and only if, read with the correct
    prefix, the most likely next token is the target at every position that
    counts. At the first position where it is not, greedy decoding would have
    written that token instead and left the response. So this is the exact-match
    accuracy of generation, measured without generating.

    Args:
        model: Maps int64 ``(N, T)`` ids to ``(N, T, vocab_size)`` logits.
        data: The examples, e.g. ``supervised_data(tokenizer, pairs)`` (their
            prompts masked: only the response and its end count).

    Returns:
        bool ``(N,)``: ``True`` where every target that counts is the argmax.

    Taught on: "Fine-tuning".
    """
    check_module("model", model)
    check_type("data", data, SupervisedData, expected="a SupervisedData (supervised_data)")
    was_training = model.training
    model.eval()
    try:
        predicted = model(data.inputs.to(device_of(model))).argmax(-1).cpu()  # (N, T)
    finally:
        model.train(was_training)
    counts = data.targets != IGNORE_INDEX  # (N, T)
    return ((predicted == data.targets) | ~counts).all(-1)  # (N,)
