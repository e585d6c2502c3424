"""A key-value cache for causal self-attention, and its memory by formula.

Generating text feeds one new token at a time. Its query must attend to every
earlier key and value, and those never change (attention is causal), so each layer
keeps them instead of recomputing them from the whole text at every step.

The sizes keep the names of the Llama-style model (CS336's interface) that the cache
serves: ``num_layers``, ``num_heads`` and ``max_seq_len`` (its ``context_length``).

Taught on: "Training and generating text".
"""

from __future__ import annotations

import torch
from torch import Tensor

from llmlab.checks import check_int, check_tensors

__all__ = ["KVCache", "LayerKVCache", "kv_cache_bytes"]


class LayerKVCache:
    """The keys and values one attention layer has computed so far.

    Keys are stored after RoPE, each rotated by its own position.

    Args:
        max_seq_len: The most tokens it may hold: the model's ``context_length``
            (RoPE has no angles past it).

    Taught on: "Training and generating text".
    """

    def __init__(self, max_seq_len: int) -> None:
        self.max_seq_len = check_int("max_seq_len", max_seq_len)
        self.keys: Tensor | None = None  # (..., h, seq_len, d_head)
        self.values: Tensor | None = None  # (..., h, seq_len, d_head)

    @property
    def seq_len(self) -> int:
        """Tokens cached so far."""
        return 0 if self.keys is None else self.keys.shape[-2]

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append ``k``, ``v`` ``(..., h, T, d_head)``; return all keys and values.

        Raises:
            TypeError: ``k`` or ``v`` is not a tensor.
            ValueError: The cache would grow past ``max_seq_len``; ``k`` and ``v``
                differ in shape, or from what is cached, apart from ``T``.
        """
        check_tensors(k=(k, "... h seq_len d_head", "float"),
                      v=(v, "... h seq_len d_head", "float"))
        if k.shape != v.shape:
            raise ValueError(f"k and v must have one shape, got {tuple(k.shape)} and "
                             f"{tuple(v.shape)}")
        if self.keys is not None and (
            k.shape[:-2] != self.keys.shape[:-2] or k.shape[-1] != self.keys.shape[-1]
        ):
            raise ValueError(
                f"k of shape {tuple(k.shape)} does not continue the cached keys of "
                f"shape {tuple(self.keys.shape)} (only seq_len, dim -2, may differ)"
            )
        if self.seq_len + k.shape[-2] > self.max_seq_len:
            raise ValueError(
                f"kv_cache holds {self.seq_len} tokens; adding {k.shape[-2]} would "
                f"exceed max_seq_len ({self.max_seq_len}, the context length)"
            )
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys = torch.cat((self.keys, k), dim=-2)  # (..., h, past+T, d_head)
            self.values = torch.cat((self.values, v), dim=-2)
        return self.keys, self.values

    def nbytes(self) -> int:
        """Bytes held by the cached tensors."""
        return 0 if self.keys is None else self.keys.nbytes + self.values.nbytes


class KVCache:
    """One :class:`LayerKVCache` per block of a model.

    Pass it to ``model(ids, kv_cache=cache)``: ``ids`` then continue the tokens
    already cached (their positions count on from ``cache.seq_len``).

    Args:
        num_layers: Number of blocks.
        max_seq_len: The model's ``context_length``.

    Taught on: "Training and generating text".
    """

    def __init__(self, num_layers: int, max_seq_len: int) -> None:
        check_int("num_layers", num_layers)
        self.max_seq_len = check_int("max_seq_len", max_seq_len)
        self.layers = [LayerKVCache(max_seq_len) for _ in range(num_layers)]

    @property
    def seq_len(self) -> int:
        """Tokens cached so far (the same in every layer)."""
        return self.layers[0].seq_len

    def nbytes(self) -> int:
        """Bytes held by all cached keys and values."""
        return sum(layer.nbytes() for layer in self.layers)


def kv_cache_bytes(
    num_layers: int,
    num_heads: int,
    d_head: int,
    tokens: int,
    bytes_per_element: int = 4,
    batch_size: int = 1,
) -> int:
    """Memory of a KV cache by formula: ``2 · L · h · d_head · T · bytes · B``.

    Two tensors (keys and values) per layer, each ``(B, h, T, d_head)``.

    Args:
        num_layers: L, blocks.
        num_heads: h, key/value heads per block.
        d_head: Size of each head.
        tokens: T, tokens cached (``>= 0``).
        bytes_per_element: 4 for float32, 2 for bf16/fp16.
        batch_size: B, sequences cached side by side.

    Taught on: "Training and generating text".
    """
    for name, value in (("num_layers", num_layers), ("num_heads", num_heads),
                        ("d_head", d_head), ("bytes_per_element", bytes_per_element),
                        ("batch_size", batch_size)):
        check_int(name, value)
    check_int("tokens", tokens, minimum=0)
    return 2 * num_layers * num_heads * d_head * tokens * bytes_per_element * batch_size
