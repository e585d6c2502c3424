"""A Llama-style language model with the CS336 assignment 1 interface.

Pre-norm blocks (RMSNorm), causal multi-head self-attention with RoPE, a SwiGLU
feed-forward net, no biases anywhere, an untied output layer. Attention may share
its keys and values between groups of query heads (grouped-query attention, Llama
2 70B's ``n_kv_heads``; here ``num_kv_heads``, 1 = multi-query attention). State-dict keys are the
handout's (``token_embeddings``, ``layers.{i}.attn.q_proj``, ``ln_final``, ``lm_head``,
...), so weights trained against that interface load with ``load_state_dict``.

Because this module promises the handout's interface, it keeps the handout's
argument names where the rest of the library says ``n_heads``, ``n_layers`` and
``d_head``: ``num_heads``, ``num_layers``, ``max_seq_len``, ``theta`` (and
:class:`LlamaConfig` keeps them as field names, with ``num_kv_heads`` beside them).

Taught on: "The building blocks of a modern (Llama-style) Transformer".
"""

from __future__ import annotations

import dataclasses

import torch
from einops import rearrange
from torch import Tensor, nn

from llmlab.checks import (
    check_divisible,
    check_finite_float,
    check_int,
    check_rope_size,
    check_tensor,
    check_tensors,
    check_type,
)
from llmlab.feed_forward import SwiGLU, swiglu_hidden_dim
from llmlab.functional import causal_mask, scaled_dot_product_attention
from llmlab.kv_cache import KVCache, LayerKVCache
from llmlab.layers import Embedding, Linear
from llmlab.norm import RMSNorm
from llmlab.position import RotaryPositionalEmbedding

__all__ = [
    "CS336_TINYSTORIES",
    "KVCache",
    "LLAMA2_70B",
    "LLAMA2_7B",
    "LLAMA_TOY",
    "LlamaConfig",
    "MultiHeadSelfAttention",
    "TransformerBlock",
    "TransformerLM",
]

Device = torch.device | str | None


class MultiHeadSelfAttention(nn.Module):
    """Causal multi-head self-attention, optionally with RoPE on queries and keys.

    With ``num_kv_heads`` smaller than ``num_heads``, attention is grouped-query
    (Ainslie et al., 2023): the keys and values have ``num_kv_heads`` heads, and each
    serves a group of ``num_heads // num_kv_heads`` consecutive query heads (query
    head ``i`` reads key/value head ``i // group``). ``k_proj`` and ``v_proj`` shrink
    to ``num_kv_heads · d_head`` outputs, and a KV cache keeps only those heads.

    Args:
        d_model: Model width; split into heads of ``d_model // num_heads``.
        num_heads: Number of (query) heads; must divide ``d_model``.
        theta: RoPE base Θ; ``None`` means no positional rotation.
        max_seq_len: Positions RoPE covers (required with ``theta``).
        device: Where to create the weights.
        dtype: Their dtype.
        num_kv_heads: Key/value heads, a divisor of ``num_heads`` (``None``: as many
            as ``num_heads``, plain multi-head attention; 1: multi-query attention).

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        theta: float | None = None,
        max_seq_len: int | None = None,
        device: Device = None,
        dtype: torch.dtype | None = None,
        num_kv_heads: int | None = None,
    ) -> None:
        super().__init__()
        self.d_model = check_int("d_model", d_model)
        self.num_heads = check_int("num_heads", num_heads)
        check_divisible("d_model", d_model, "num_heads", num_heads)
        self.num_kv_heads = _check_kv_heads(num_kv_heads, num_heads)
        self.d_head = d_model // num_heads
        if theta is not None:
            check_finite_float("theta", theta, minimum=0.0, open_min=True)
            if max_seq_len is None:
                raise ValueError("max_seq_len is required when theta (RoPE) is given, "
                                 "got None")
            check_int("max_seq_len", max_seq_len)
            check_rope_size("d_model / num_heads (d_head)", self.d_head)
        self.q_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        d_kv = self.num_kv_heads * self.d_head  # the keys' (and values') width
        self.k_proj = Linear(d_model, d_kv, device=device, dtype=dtype)
        self.v_proj = Linear(d_model, d_kv, device=device, dtype=dtype)
        self.output_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        self.rope: RotaryPositionalEmbedding | None = None
        if theta is not None:
            self.rope = RotaryPositionalEmbedding(
                theta, self.d_head, max_seq_len, device=device
            )

    def forward(
        self,
        x: Tensor,
        token_positions: Tensor | None = None,
        kv_cache: LayerKVCache | None = None,
    ) -> Tensor:
        """``(..., seq_len, d_model)`` -> same shape.

        ``token_positions`` ``(..., seq_len)`` defaults to ``0..seq_len-1``; it only
        matters with RoPE. With ``kv_cache``, ``x`` continues the cached tokens:
        positions count on from ``kv_cache.seq_len``, the new keys and values are
        appended, and the queries attend to all of them. The cache holds
        ``num_kv_heads`` heads: groups share them only inside the attention.
        """
        check_tensors(x=(x, "... seq_len d_model"),
                      token_positions=(token_positions, "... seq_len", "int?"),
                      like=self.q_proj.weight, sizes=dict(d_model=self.d_model))
        seq_len = x.shape[-2]
        # project and split into heads
        q = rearrange(self.q_proj(x), "... t (h d) -> ... h t d", h=self.num_heads)
        k = rearrange(self.k_proj(x), "... t (h d) -> ... h t d", h=self.num_kv_heads)
        v = rearrange(self.v_proj(x), "... t (h d) -> ... h t d", h=self.num_kv_heads)
        # rotate queries and keys by their positions (values are not rotated)
        past = 0 if kv_cache is None else kv_cache.seq_len  # tokens already cached
        if self.rope is not None:
            if token_positions is None:
                token_positions = torch.arange(past, past + seq_len, device=x.device)
            positions = token_positions.unsqueeze(-2)  # (..., 1, T): same for each head
            q = self.rope(q, positions)  # (..., h, T, d_head)
            k = self.rope(k, positions)  # (..., kv_h, T, d_head)
        # causal attention per head, then merge heads and mix them
        mask = causal_mask(seq_len, device=x.device)  # (T, T), True = may attend
        if kv_cache is not None:  # the cached keys come first; all are visible
            k, v = kv_cache.update(k, v)  # (..., kv_h, past+T, d_head)
            mask = causal_mask(past + seq_len, device=x.device)[past:]  # (T, past+T)
        if self.num_kv_heads != self.num_heads:  # each kv head serves its group
            group = self.num_heads // self.num_kv_heads
            k = k.repeat_interleave(group, dim=-3)  # (..., h, S, d_head)
            v = v.repeat_interleave(group, dim=-3)  # (..., h, S, d_head)
        out = scaled_dot_product_attention(q, k, v, mask)  # (..., h, T, d_head)
        out = rearrange(out, "... h t d -> ... t (h d)")  # (..., T, d_model)
        return self.output_proj(out)


class TransformerBlock(nn.Module):
    """Pre-norm block: ``x + attn(ln1(x))``, then ``+ ffn(ln2(x))``.

    Args:
        d_model: Model width.
        num_heads: Attention heads.
        d_ff: SwiGLU hidden size.
        max_seq_len: Positions RoPE covers (``None``: no RoPE).
        theta: RoPE base Θ (``None``: no RoPE).
        eps: RMSNorm's ε.
        device: Where to create the weights.
        dtype: Their dtype.
        num_kv_heads: Key/value heads (``None``: ``num_heads``; see
            :class:`MultiHeadSelfAttention`).

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        max_seq_len: int | None = None,
        theta: float | None = None,
        eps: float = 1e-5,
        device: Device = None,
        dtype: torch.dtype | None = None,
        num_kv_heads: int | None = None,
    ) -> None:
        super().__init__()
        self.ln1 = RMSNorm(d_model, eps=eps, device=device, dtype=dtype)
        self.attn = MultiHeadSelfAttention(
            d_model, num_heads, theta, max_seq_len, device=device, dtype=dtype,
            num_kv_heads=num_kv_heads,
        )
        self.ln2 = RMSNorm(d_model, eps=eps, device=device, dtype=dtype)
        self.ffn = SwiGLU(d_model, d_ff, device=device, dtype=dtype)

    def forward(
        self,
        x: Tensor,
        token_positions: Tensor | None = None,
        kv_cache: LayerKVCache | None = None,
    ) -> Tensor:
        """``(..., seq_len, d_model)`` -> same shape (``kv_cache``: as in attention).

        ``ln1`` checks ``x`` (its shape, dtype and device) before anything else.
        """
        x = x + self.attn(self.ln1(x), token_positions, kv_cache)  # mix positions
        return x + self.ffn(self.ln2(x))  # transform each position


class TransformerLM(nn.Module):
    """Token ids -> next-token logits, Llama style.

    Args:
        vocab_size: Number of token ids.
        context_length: Longest sequence (RoPE's ``max_seq_len``).
        d_model: Model width.
        num_layers: Number of blocks.
        num_heads: Attention heads per block.
        d_ff: SwiGLU hidden size.
        rope_theta: RoPE base Θ.
        device: Where to create the weights (``"meta"`` to count without memory).
        dtype: Their dtype.
        num_kv_heads: Key/value heads per block (``None``: ``num_heads``; fewer:
            grouped-query attention, see :class:`MultiHeadSelfAttention`).

    Taught on: "The building blocks of a modern (Llama-style) Transformer".
    """

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        d_model: int,
        num_layers: int,
        num_heads: int,
        d_ff: int,
        rope_theta: float = 10_000.0,
        device: Device = None,
        dtype: torch.dtype | None = None,
        num_kv_heads: int | None = None,
    ) -> None:
        super().__init__()
        # the config checks every size (num_heads divides d_model, RoPE pairs...)
        LlamaConfig(vocab_size, context_length, d_model, num_layers, num_heads, d_ff,
                    rope_theta, num_kv_heads)
        self.vocab_size, self.context_length = vocab_size, context_length
        self.token_embeddings = Embedding(
            vocab_size, d_model, device=device, dtype=dtype
        )
        self.layers = nn.ModuleList(
            TransformerBlock(
                d_model, num_heads, d_ff, context_length, rope_theta,
                device=device, dtype=dtype, num_kv_heads=num_kv_heads,
            )
            for _ in range(num_layers)
        )
        self.ln_final = RMSNorm(d_model, device=device, dtype=dtype)
        self.lm_head = Linear(d_model, vocab_size, device=device, dtype=dtype)

    @classmethod
    def from_config(
        cls,
        config: LlamaConfig,
        device: Device = None,
        dtype: torch.dtype | None = None,
    ) -> TransformerLM:
        """Build from a :class:`LlamaConfig`."""
        check_type("config", config, LlamaConfig,
                   hint="this is the Llama-style model; a GPT2Config belongs to "
                   "llmlab.models.gpt2.TransformerLM.from_config")
        return cls(**dataclasses.asdict(config), device=device, dtype=dtype)

    def forward(self, in_indices: Tensor, kv_cache: KVCache | None = None) -> Tensor:
        """Integer ``(..., seq_len)`` -> logits ``(..., seq_len, vocab_size)``.

        With ``kv_cache`` (``KVCache(num_layers, context_length)``), ``in_indices``
        continues the cached tokens: only the new positions are computed, and the
        cache grows by ``seq_len``, to at most ``context_length``.
        """
        check_tensor("in_indices", in_indices, "... seq_len", "index:vocab_size",
                     device=self.lm_head.weight.device, vocab_size=self.vocab_size,
                     seq_len=(1, self.context_length, "context_length"))
        seq_len = in_indices.shape[-1]
        past = 0 if kv_cache is None else _cached_tokens(self, kv_cache, seq_len)
        x = self.token_embeddings(in_indices)  # (..., T, d_model)
        positions = torch.arange(past, past + seq_len, device=in_indices.device)  # (T,)
        caches = [None] * len(self.layers) if kv_cache is None else kv_cache.layers
        for layer, cache in zip(self.layers, caches):
            x = layer(x, positions, cache)  # (..., T, d_model)
        return self.lm_head(self.ln_final(x))  # (..., T, vocab_size)


def _cached_tokens(model: TransformerLM, kv_cache: KVCache, seq_len: int) -> int:
    """Tokens already in ``kv_cache``, after checking that ``seq_len`` more fit."""
    check_type("kv_cache", kv_cache, KVCache)
    if len(kv_cache.layers) != len(model.layers):
        raise ValueError(
            f"kv_cache has {len(kv_cache.layers)} layers; the model has "
            f"{len(model.layers)}"
        )
    if kv_cache.seq_len + seq_len > model.context_length:
        raise ValueError(
            f"kv_cache holds {kv_cache.seq_len} tokens; {seq_len} more would exceed "
            f"context_length ({model.context_length})"
        )
    return kv_cache.seq_len


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """Hyperparameters of a :class:`TransformerLM`.

    Attributes:
        vocab_size: Number of token ids (size of the embedding table and the logits).
        context_length: Longest sequence the model sees; RoPE's table covers it.
        d_model: Width of the residual stream.
        num_layers: Number of pre-norm blocks.
        num_heads: Attention heads; each has ``d_model // num_heads`` dimensions.
        d_ff: SwiGLU hidden size, about ``8/3 · d_model``.
        rope_theta: RoPE base Θ; larger means slower-turning pairs.
        num_kv_heads: Key/value heads, a divisor of ``num_heads``; ``None`` (the
            default): as many as ``num_heads``, multi-head attention. The field keeps
            ``None`` (so a copy with another ``num_heads`` stays multi-head);
            :attr:`kv_heads` gives the number.
    """

    vocab_size: int
    context_length: int
    d_model: int
    num_layers: int
    num_heads: int
    d_ff: int
    rope_theta: float = 10_000.0
    num_kv_heads: int | None = None

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context_length", "d_model", "num_layers",
                     "num_heads", "d_ff"):
            check_int(name, getattr(self, name))
        check_divisible("d_model", self.d_model, "num_heads", self.num_heads)
        _check_kv_heads(self.num_kv_heads, self.num_heads)
        check_finite_float("rope_theta", self.rope_theta, minimum=0.0, open_min=True)
        check_rope_size("d_model / num_heads (d_head)", self.d_model // self.num_heads)

    @property
    def kv_heads(self) -> int:
        """The key/value heads per block: ``num_kv_heads``, or ``num_heads`` if ``None``."""
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    def parameter_breakdown(self) -> dict[str, int]:
        """Parameters of :class:`TransformerLM` by formula, by child module.

        ``token_embeddings`` V·d, ``layers`` L·(2d² + 2·d·d_kv + 3·d·d_ff + 2d)
        (attention's query and output, its keys and values of width ``d_kv =
        num_kv_heads · d_head``, SwiGLU, two RMSNorm gains; 4d² of attention
        without grouping), ``ln_final`` d, ``lm_head`` d·V (untied). RoPE has no
        parameters, and the number of query heads does not change the count.
        """
        d, V = self.d_model, self.vocab_size
        per_layer = self._attention_weights() + 3 * d * self.d_ff + 2 * d
        return {"token_embeddings": V * d, "layers": self.num_layers * per_layer,
                "ln_final": d, "lm_head": d * V}

    def parameter_count(self) -> int:
        """``V·d + L·(2d² + 2·d·d_kv + 3·d·d_ff + 2d) + d + d·V``: all parameters, by
        formula."""
        return sum(self.parameter_breakdown().values())

    def matmul_parameter_count(self) -> int:
        r"""Parameters that multiply an activation, by formula.

        Every weight of a matrix product, :math:`L\,(4d^2 + 3\,d\,d_{ff}) + d\,V`
        (attention, SwiGLU, the output layer; with grouped keys and values,
        attention's :math:`4d^2` is :math:`2d^2 + 2\,d\,d_{kv}`). The embedding
        table is a lookup, and the RMSNorm gains are element-wise: neither costs a
        multiply-add per parameter.

        Taught on: "Where the compute and the memory go".
        """
        d = self.d_model
        return (self.num_layers * (self._attention_weights() + 3 * d * self.d_ff)
                + d * self.vocab_size)

    def _attention_weights(self) -> int:
        """One block's attention weights: ``q_proj``, ``output_proj`` d² each;
        ``k_proj``, ``v_proj`` d · num_kv_heads · d_head each."""
        d = self.d_model
        return 2 * d * d + 2 * d * (self.kv_heads * (d // self.num_heads))


def _check_kv_heads(num_kv_heads: object, num_heads: int) -> int:
    """``num_kv_heads`` checked against ``num_heads``; ``None`` reads as ``num_heads``."""
    if num_kv_heads is None:
        return num_heads
    check_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads ({num_kv_heads}) must divide num_heads "
                         f"({num_heads}): each key/value head serves a group of "
                         f"query heads of one size")
    return num_kv_heads


LLAMA_TOY = LlamaConfig(
    vocab_size=512, context_length=64, d_model=64, num_layers=2, num_heads=4,
    d_ff=swiglu_hidden_dim(64),
)
"""A model small enough to run anywhere in milliseconds."""

CS336_TINYSTORIES = LlamaConfig(
    vocab_size=10_000, context_length=256, d_model=512, num_layers=4, num_heads=16,
    d_ff=1344,
)
"""The TinyStories configuration of CS336 assignment 1."""

LLAMA2_7B = LlamaConfig(
    vocab_size=32_000, context_length=4096, d_model=4096, num_layers=32, num_heads=32,
    d_ff=11_008,
)
"""The shape of Llama 2 7B (build it on ``device="meta"`` to count it)."""

LLAMA2_70B = LlamaConfig(
    vocab_size=32_000, context_length=4096, d_model=8192, num_layers=80, num_heads=64,
    d_ff=28_672, num_kv_heads=8,
)
"""The shape of Llama 2 70B: grouped-query attention, 8 key/value heads for 64
query heads (its paper, table 1 and section 2.2)."""
