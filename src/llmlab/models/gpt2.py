"""A GPT-2-style Transformer: multi-head self-attention, the block, the model.

One readable file in the manner of nanoGPT's ``model.py``:

* :class:`MultiHeadSelfAttention`: one fused ``qkv`` projection, ``H`` heads of
  scaled dot-product attention, an output projection ``proj`` (all with biases);
  optional causal mask and ``key_mask`` (True where a key is a real token that may
  be attended: the library's one convention, True = "may attend", that of
  ``F.scaled_dot_product_attention``; ``nn.MultiheadAttention``'s
  ``key_padding_mask`` is its negation). :meth:`MultiHeadSelfAttention.forward_steps`
  *is* the forward pass and returns every intermediate tensor, so a page can show
  them without re-implementing (and drifting from) the module.
* :class:`MLP`: ``d_model -> 4 d_model -> d_model`` with GELU and biases.
* :class:`TransformerBlock`: ``ln1, attn, ln2, ffn`` with residual connections,
  Pre-LN (GPT-2, default) or Post-LN (the original Transformer).
* :class:`TransformerLM` ``(vocab_size, context_length, d_model, n_layers, n_heads,
  dropout)``, the argument order of the Llama-style one: token + learned position
  embeddings, ``n_layers`` blocks, a final LayerNorm and an output layer tied to the
  token embedding.
* :class:`GPT2Config` with the :data:`GPT2_SMALL` preset; the parameter-count
  formulas :func:`block_parameter_count` (``12 d² + 13 d``) and the config's
  ``parameter_count()``, ``parameter_breakdown()`` and ``matmul_parameter_count()``
  (those of :class:`~llmlab.models.llama.LlamaConfig` too), which
  :func:`count_parameters` checks on the module.

Taught on: "Multi-head attention and the Transformer block (GPT-2 style)".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from llmlab.checks import (
    check_bool,
    check_divisible,
    check_dropout,
    check_int,
    check_tensor,
    check_tensors,
    check_type,
)
from llmlab.functional import causal_mask, softmax
from llmlab.params import count_parameters

__all__ = [
    "GPT2Config",
    "GPT2_SMALL",
    "MLP",
    "MultiHeadSelfAttention",
    "TransformerBlock",
    "TransformerLM",
    "block_parameter_count",
    "count_parameters",
]


class MultiHeadSelfAttention(nn.Module):
    r"""Multi-head self-attention with a fused QKV projection (GPT-2 style).

    .. math:: \mathrm{MHA}(X) = \mathrm{Concat}(\mathrm{head}_1, \dots,
        \mathrm{head}_H)\,W^O,\quad \mathrm{head}_h = \mathrm{softmax}\!\left(
        \frac{Q_h K_h^\top}{\sqrt{d_{head}}}\right) V_h

    ``qkv.weight`` is ``(3 d_model, d_model)`` with the rows of ``W_Q``, ``W_K``,
    ``W_V`` stacked in that order: the layout of ``nn.MultiheadAttention``'s
    ``in_proj_weight``.

    Args:
        d_model: Width of the input and output ``D``.
        n_heads: Number of heads ``H``; ``d_head = D // H``.
        causal: If True, position ``t`` attends only to positions ``<= t``.
        dropout: Dropout on the attention weights and on the output (off by default).

    Taught on: "Multi-head attention and the Transformer block (GPT-2 style)".
    """

    #: The tensors :meth:`forward_steps` returns, in order: (operation, shape).
    STEPS = {
        "qkv": ("qkv(x)", "(B, T, 3D)"),
        "q": ("q, k, v = qkv.split(D, dim=2)", "(B, T, D)"),
        "q_heads": ("q.view(B, T, H, Dh).transpose(1, 2)", "(B, H, T, Dh)"),
        "scores": ("q_heads @ k_heads.transpose(-2, -1) / √Dh", "(B, H, T, T)"),
        "attn": ("softmax(mask(scores), dim=-1)", "(B, H, T, T)"),
        "heads": ("attn @ v_heads", "(B, H, T, Dh)"),
        "concat": ("heads.transpose(1, 2).contiguous().view(B, T, D)", "(B, T, D)"),
        "out": ("proj(concat)", "(B, T, D)"),
    }

    def __init__(
        self, d_model: int, n_heads: int, causal: bool = True, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.d_model = check_int("d_model", d_model)
        self.n_heads = check_int("n_heads", n_heads)
        check_divisible("d_model", d_model, "n_heads", n_heads)
        self.d_head = d_model // n_heads
        self.causal = check_bool("causal", causal)
        check_dropout("dropout", dropout)
        self.qkv = nn.Linear(d_model, 3 * d_model)  # W_Q, W_K, W_V in one matrix
        self.proj = nn.Linear(d_model, d_model)  # W^O: mixes the heads
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, d_head={self.d_head}, causal={self.causal}"

    def _allowed(self, T: int, key_mask: Tensor | None, device: torch.device
                 ) -> Tensor | None:
        """Boolean ``(B or 1, 1, T, T)``: True where query ``i`` may see key ``j``."""
        allowed = None
        if self.causal:
            allowed = causal_mask(T, device=device).view(1, 1, T, T)
        if key_mask is not None:
            keys = key_mask.view(-1, 1, 1, T)  # padding keys are never attended
            allowed = keys if allowed is None else allowed & keys
        return allowed

    def forward_steps(
        self, x: Tensor, key_mask: Tensor | None = None
    ) -> dict[str, Tensor]:
        """The forward pass, returning every intermediate tensor in order.

        :meth:`forward` returns ``forward_steps(x)["out"]``, so what this shows is
        exactly what the module computes.

        Args:
            x: ``(B, T, D)``, of the module's dtype and device.
            key_mask: Optional boolean ``(B, T)``, True where a key is a real token
                that may be attended, False at padding (``~key_padding_mask`` of
                ``nn.MultiheadAttention``). A query that sees no key at all gets
                all-zero weights, not NaN.

        Returns:
            ``{name: tensor}`` in the order of :attr:`STEPS`, which gives each one's
            operation and shape. ``scores`` is before masking, ``attn`` after
            masking and softmax (before dropout).
        """
        check_tensors(x=(x, "batch seq_len d_model"),
                      key_mask=(key_mask, "batch seq_len", "bool?"),
                      like=self.qkv.weight, sizes=dict(d_model=self.d_model))
        B, T, D = x.shape
        H, Dh = self.n_heads, self.d_head
        qkv = self.qkv(x)  # (B, T, 3D): Q, K, V from one matmul
        q, k, v = qkv.split(D, dim=2)  # 3 x (B, T, D)
        # split D into H heads of Dh and move the head axis forward
        q_heads = q.view(B, T, H, Dh).transpose(1, 2)  # (B, H, T, Dh)
        k_heads = k.view(B, T, H, Dh).transpose(1, 2)  # (B, H, T, Dh)
        v_heads = v.view(B, T, H, Dh).transpose(1, 2)  # (B, H, T, Dh)
        # every head scores every (query, key) pair: QK^T / sqrt(Dh)
        scores = q_heads @ k_heads.transpose(-2, -1) / math.sqrt(Dh)  # (B, H, T, T)
        allowed = self._allowed(T, key_mask, x.device)
        if allowed is None:
            attn = softmax(scores, dim=-1)  # (B, H, T, T), rows sum to 1
        else:
            # a row with no visible key attends nowhere (zeros) instead of NaN
            has_key = allowed.any(dim=-1, keepdim=True)  # (B|1, 1, T, 1)
            masked = scores.masked_fill(~(allowed | ~has_key), float("-inf"))
            attn = softmax(masked, dim=-1) * has_key  # (B, H, T, T)
        heads = self.attn_dropout(attn) @ v_heads  # (B, H, T, Dh)
        # put the heads side by side again: (B, H, T, Dh) -> (B, T, H*Dh)
        concat = heads.transpose(1, 2).contiguous().view(B, T, D)  # (B, T, D)
        out = self.resid_dropout(self.proj(concat))  # (B, T, D)
        return {
            "qkv": qkv,
            "q": q,
            "q_heads": q_heads,
            "scores": scores,
            "attn": attn,
            "heads": heads,
            "concat": concat,
            "out": out,
        }

    def forward(
        self, x: Tensor, key_mask: Tensor | None = None, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]:
        """``(B, T, D) -> (B, T, D)``, and the ``(B, H, T, T)`` weights if asked.

        ``key_mask`` as in :meth:`forward_steps`; with ``return_weights=True`` the
        weights (after masking and softmax, before dropout) come too.
        """
        steps = self.forward_steps(x, key_mask)
        return (steps["out"], steps["attn"]) if return_weights else steps["out"]


class MLP(nn.Module):
    """Position-wise feed-forward net ``D -> 4D -> D`` with GELU (GPT-2's MLP).

    GELU uses the tanh approximation, as GPT-2 did.

    Taught on: "Multi-head attention and the Transformer block (GPT-2 style)".
    """

    def __init__(self, d_model: int, d_ff: int | None = None, dropout: float = 0.0):
        super().__init__()
        self.d_model = check_int("d_model", d_model)
        d_ff = 4 * d_model if d_ff is None else check_int("d_ff", d_ff)
        check_dropout("dropout", dropout)
        self.fc = nn.Linear(d_model, d_ff)
        self.act = nn.GELU(approximate="tanh")
        self.proj = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """``(..., D)`` -> ``(..., D)``."""
        check_tensor("x", x, "... d_model", like=self.fc.weight, d_model=self.d_model)
        return self.dropout(self.proj(self.act(self.fc(x))))  # (B, T, D)


class TransformerBlock(nn.Module):
    r"""One Transformer block: attention and MLP, each with a residual connection.

    Pre-LN (GPT-2): :math:`x \leftarrow x + \mathrm{Attn}(\mathrm{LN}_1(x))`, then
    :math:`x \leftarrow x + \mathrm{FFN}(\mathrm{LN}_2(x))`.
    Post-LN (``pre_ln=False``, the 2017 Transformer):
    :math:`x \leftarrow \mathrm{LN}_1(x + \mathrm{Attn}(x))`, then
    :math:`x \leftarrow \mathrm{LN}_2(x + \mathrm{FFN}(x))`.
    Either way it has ``12 d² + 13 d`` parameters (:func:`block_parameter_count`).

    Args:
        d_model: Width ``D``.
        n_heads: Number of attention heads.
        pre_ln: LayerNorm before each sub-layer (True) or after the residual sum.
        dropout: Dropout inside attention and the MLP.
        causal: Causal self-attention (True for a language model).

    Taught on: "Multi-head attention and the Transformer block (GPT-2 style)".
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        pre_ln: bool = True,
        dropout: float = 0.0,
        causal: bool = True,
    ) -> None:
        super().__init__()
        self.pre_ln = check_bool("pre_ln", pre_ln)
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = MultiHeadSelfAttention(
            d_model, n_heads, causal=causal, dropout=dropout
        )
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = MLP(d_model, dropout=dropout)

    def forward(self, x: Tensor, key_mask: Tensor | None = None) -> Tensor:
        """``(B, T, D)`` -> ``(B, T, D)``; ``key_mask`` as in the attention."""
        check_tensors(x=(x, "batch seq_len d_model"),  # before LayerNorm's own errors
                      key_mask=(key_mask, "batch seq_len", "bool?"),
                      like=self.ln1.weight, sizes=dict(d_model=self.attn.d_model))
        if self.pre_ln:
            x = x + self.attn(self.ln1(x), key_mask)  # (B, T, D)
            x = x + self.ffn(self.ln2(x))  # (B, T, D)
        else:
            x = self.ln1(x + self.attn(x, key_mask))  # (B, T, D)
            x = self.ln2(x + self.ffn(x))  # (B, T, D)
        return x


@dataclass(frozen=True)
class GPT2Config:
    """Sizes of a GPT-2-style language model.

    Attributes:
        vocab_size: Number of token ids (GPT-2's BPE: 50257).
        context_length: Longest sequence; the number of learned positions.
        d_model: Width of every hidden vector.
        n_layers: Number of Transformer blocks.
        n_heads: Attention heads per block (must divide ``d_model``).
        dropout: Dropout probability (0 for inference and small experiments).
    """

    vocab_size: int = 50257
    context_length: int = 1024
    d_model: int = 768
    n_layers: int = 12
    n_heads: int = 12
    dropout: float = 0.0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context_length", "d_model", "n_layers", "n_heads"):
            check_int(name, getattr(self, name))
        check_divisible("d_model", self.d_model, "n_heads", self.n_heads)
        check_dropout("dropout", self.dropout)

    def parameter_breakdown(self) -> dict[str, int]:
        """Parameters of :class:`TransformerLM` by formula, by child module.

        ``tok_emb`` V·D, ``pos_emb`` context·D, ``blocks`` L·(12 D² + 13 D)
        (:func:`block_parameter_count`), ``ln_f`` 2 D; the output layer is tied to
        ``tok_emb`` and adds none.
        """
        V, C = self.vocab_size, self.context_length
        D, L = self.d_model, self.n_layers
        return {"tok_emb": V * D, "pos_emb": C * D,
                "blocks": L * block_parameter_count(D), "ln_f": 2 * D}

    def parameter_count(self) -> int:
        """``V·D + context·D + L·(12 D² + 13 D) + 2 D``: all parameters, by formula."""
        return sum(self.parameter_breakdown().values())

    def matmul_parameter_count(self) -> int:
        r"""Weights of the matrix products, :math:`12Ld^2 + dV`.

        Per block ``qkv`` (3d²), ``proj`` (d²) and the MLP (8d²); the output layer is
        the token embedding (tied), a lookup on the way in but a ``d × V`` product on
        the way out. Biases, LayerNorms and positions are element-wise or lookups.

        Taught on: "Where the compute and the memory go".
        """
        return 12 * self.n_layers * self.d_model**2 + self.d_model * self.vocab_size


GPT2_SMALL = GPT2Config(
    vocab_size=50257, context_length=1024, d_model=768, n_layers=12, n_heads=12
)
"""The smallest GPT-2 (124M parameters with the output layer tied)."""


def block_parameter_count(d_model: int) -> int:
    """``12 d² + 13 d``: parameters of one :class:`TransformerBlock`.

    ``qkv`` 3d² + 3d, ``proj`` d² + d, MLP (4d² + 4d) + (4d² + d),
    two LayerNorms 4d.
    """
    check_int("d_model", d_model)
    return 12 * d_model**2 + 13 * d_model


# one check_type of llmlab.checks, with the hint that names Llama's API
def _check_config(config: object) -> GPT2Config:
    return check_type(
        "config", config, GPT2Config,
        hint="this is the GPT-2-style model's; a LlamaConfig belongs to "
        "llmlab.models.llama (its TransformerLM.from_config)",
    )


class TransformerLM(nn.Module):
    """A GPT-2-style language model.

    Token + learned position embeddings, ``n_layers`` Pre-LN blocks, a final
    LayerNorm and an output layer whose weight *is* the token embedding (tied),
    so it adds no parameters. Weights start as in GPT-2: normal with std 0.02,
    the residual output projections scaled by ``1/sqrt(2 n_layers)``.

    The arguments come in the order of the Llama-style ``TransformerLM``.
    ``load_state_dict`` refuses a state dict whose ``lm_head.weight`` differs from
    its ``tok_emb.weight`` (one of them would silently win).

    Args:
        vocab_size: Number of token ids ``V``.
        context_length: Longest sequence (number of learned positions).
        d_model: Width ``D``.
        n_layers: Number of blocks ``L``.
        n_heads: Heads per block (must divide ``d_model``).
        dropout: Dropout on the embeddings and inside the blocks.

    Taught on: "Multi-head attention and the Transformer block (GPT-2 style)".
    """

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        d_model: int,
        n_layers: int,
        n_heads: int,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        # the config checks every size (and that n_heads divides d_model)
        GPT2Config(vocab_size, context_length, d_model, n_layers, n_heads, dropout)
        self.vocab_size, self.context_length = vocab_size, context_length
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(context_length, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, dropout=dropout) for _ in range(n_layers)
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.tok_emb.weight  # tied: one (V, D) matrix
        self.register_load_state_dict_pre_hook(_refuse_untied_output)
        self._init_weights(n_layers)

    @classmethod
    def from_config(cls, config: GPT2Config) -> TransformerLM:
        """Build the model of ``config`` (e.g. :data:`GPT2_SMALL`)."""
        _check_config(config)
        return cls(
            config.vocab_size, config.context_length, config.d_model, config.n_layers,
            config.n_heads, config.dropout,
        )

    @torch.no_grad()
    def _init_weights(self, n_layers: int) -> None:
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif ".ln" in name or name.startswith("ln_f"):
                p.fill_(1.0)
            else:
                residual_out = name.endswith("proj.weight")
                std = 0.02 / math.sqrt(2 * n_layers) if residual_out else 0.02
                p.normal_(0.0, std)

    def forward(self, idx: Tensor, key_mask: Tensor | None = None) -> Tensor:
        """Token ids ``(B, T)`` -> logits ``(B, T, V)``.

        ``key_mask`` (optional boolean ``(B, T)``): True at real tokens, False at
        padding, which no position attends to.
        """
        check_tensors(idx=(idx, "batch seq_len", "index:vocab_size"),
                      key_mask=(key_mask, "batch seq_len", "bool?"),
                      device=self.tok_emb.weight.device,
                      sizes=dict(vocab_size=self.vocab_size,
                                 seq_len=(1, self.context_length, "context_length")))
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))  # (B, T, D)
        for block in self.blocks:
            x = block(x, key_mask)  # (B, T, D)
        return self.lm_head(self.ln_f(x))  # (B, T, V)


def _refuse_untied_output(module: nn.Module, state_dict: dict, prefix: str,
                          *_: object) -> None:
    """Load pre-hook of :class:`TransformerLM`: the two tied matrices must agree."""
    emb = state_dict.get(prefix + "tok_emb.weight")
    head = state_dict.get(prefix + "lm_head.weight")
    if not isinstance(emb, Tensor) or not isinstance(head, Tensor) or emb is head:
        return  # a missing key is reported by load_state_dict itself
    if emb.is_meta or head.is_meta:
        return
    if emb.shape != head.shape or not torch.equal(emb, head.to(emb.device)):
        shapes = f" (shapes {tuple(emb.shape)} and {tuple(head.shape)})" * (
            emb.shape != head.shape)
        raise ValueError(
            f"state_dict's {prefix}lm_head.weight differs from its "
            f"{prefix}tok_emb.weight{shapes}, but this model ties them (one (V, D) "
            "matrix), so one would silently overwrite the other; load a state dict "
            "of a tied model"
        )
