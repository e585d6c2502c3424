"""Bad input gets a clear error across the public API.

Every case below is one distinct mistake a reader can make. Each must raise a
``ValueError`` (``TypeError`` where the argument is not even the right kind of
object) whose message names the argument and says what was expected; the
``match`` pattern checks both.

NaN policy (where NaN matters):

* token ids and positions are integer tensors, so a float tensor (the only
  kind that can hold NaN) is refused by the dtype check;
* NaN in a scalar hyper-parameter (``eps``, RoPE's ``theta``, ``dropout``)
  would poison every output silently, so it is refused when the module is built;
* NaN in activations (attention inputs, norm inputs) is *not* searched for: it
  propagates to the output, as in ``nn.LayerNorm`` / ``F.scaled_dot_product_attention``,
  and scanning every tensor would cost a device sync on each call.
  ``test_nan_activations_propagate_instead_of_raising`` pins that decision.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import llmlab.models.gpt2 as gpt2
import llmlab.models.llama as llama
from llmlab.attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    causal_weights_masked,
    copy_v2_into_v1,
    dot_scores_matmul,
    simple_self_attention,
    toy_embeddings,
)
from llmlab.feed_forward import SwiGLU, swiglu_hidden_dim
from llmlab.functional import causal_mask, scaled_dot_product_attention, softmax
from llmlab.layers import Embedding, Linear
from llmlab.norm import LayerNorm, RMSNorm, rms_norm
from llmlab.position import RotaryPositionalEmbedding, rope_complex, rope_frequencies
from llmlab.report import fmt_shape, heatmap_svg, img_tag, markdown_table

torch.set_num_threads(1)

NAN = float("nan")


def _x(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(*shape, dtype=dtype)


def _ids(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.long)


def _gpt2_lm() -> gpt2.TransformerLM:
    return gpt2.TransformerLM(vocab_size=10, d_model=8, n_heads=2, n_layers=1, max_len=4)


def _llama_lm() -> llama.TransformerLM:
    return llama.TransformerLM(vocab_size=10, context_length=4, d_model=8,
                               num_layers=1, num_heads=2, d_ff=16)


def _mha() -> MultiHeadAttention:
    return MultiHeadAttention(d_in=4, d_out=4, context_length=6, dropout=0.0, num_heads=2)


# (id, call, exception, match): match names the argument and the expected value.
CASES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # --- llmlab.functional ------------------------------------------------
    ("softmax 0-d", lambda: softmax(torch.tensor(1.0)),
     ValueError, r"softmax needs at least one dimension"),
    ("softmax dim out of range", lambda: softmax(_x(2, 3), dim=2),
     ValueError, r"dim=2 is out of range .* 2 dims"),
    ("causal_mask 0 tokens", lambda: causal_mask(0),
     ValueError, r"n_tokens must be a positive int, got 0"),
    ("causal_mask float size", lambda: causal_mask(2.5),
     ValueError, r"n_tokens must be a positive int, got 2\.5"),
    ("sdpa rank 1", lambda: scaled_dot_product_attention(_x(4), _x(3, 4), _x(3, 4)),
     ValueError, r"Q, K, V need at least 2 dims"),
    ("sdpa d_k mismatch",
     lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 5), _x(3, 5)),
     ValueError, r"Q and K must share d_k; got 4 and 5"),
    ("sdpa keys/values mismatch",
     lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 4), _x(2, 4)),
     ValueError, r"K and V must have the same number of keys; got 3 and 2"),
    ("sdpa float mask",
     lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 4), _x(3, 4), _x(3, 3)),
     ValueError, r"mask must be a boolean tensor .*got torch\.float32"),
    ("sdpa mask shape",
     lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 4), _x(3, 4),
                                          torch.ones(2, 5, dtype=torch.bool)),
     ValueError, r"mask of shape \(2, 5\) does not broadcast .*\(3, 3\)"),
    ("sdpa empty sequence",
     lambda: scaled_dot_product_attention(_x(2, 0, 4), _x(2, 0, 4), _x(2, 0, 4)),
     ValueError, r"n_queries >= 1, n_keys >= 1.*got 0 queries and 0 keys"),
    ("sdpa integer Q",
     lambda: scaled_dot_product_attention(_x(3, 4, dtype=torch.long), _x(3, 4), _x(3, 4)),
     ValueError, r"Q must be floating point, got dtype torch\.int64"),
    # --- llmlab.attention: helpers -----------------------------------------
    ("toy_embeddings no words", lambda: toy_embeddings([]),
     ValueError, r"words must hold at least one token"),
    ("toy_embeddings dim 0", lambda: toy_embeddings(["a"], dim=0),
     ValueError, r"dim must be at least 1, got 0"),
    ("dot scores 2-D query", lambda: dot_scores_matmul(_x(2, 3), _x(4, 3)),
     ValueError, r"query must be 1-D \(d,\), got shape \(2, 3\)"),
    ("dot scores keys width", lambda: dot_scores_matmul(_x(3), _x(4, 2)),
     ValueError, r"keys must be 2-D \(num_tokens, 3\), got shape \(4, 2\)"),
    ("simple attention 1-D", lambda: simple_self_attention(_x(3)),
     ValueError, r"x must be \(num_tokens, d\) or \(batch, num_tokens, d\)"),
    ("causal weights not square", lambda: causal_weights_masked(_x(3, 4)),
     ValueError, r"scores must be \(\.\.\., T, T\).*got \(3, 4\)"),
    # --- llmlab.attention: the teaching variants ----------------------------
    ("V1 d_out 0", lambda: SelfAttentionV1(d_in=3, d_out=0),
     ValueError, r"d_out must be a positive integer, got 0"),
    ("V1 unbatched input", lambda: SelfAttentionV1(3, 2)(_x(6, 3)),
     ValueError, r"x must have shape \(batch, num_tokens, d_in=3\).*\(6, 3\)"),
    ("V2 wrong d_in", lambda: SelfAttentionV2(3, 2)(_x(1, 6, 4)),
     ValueError, r"x has 4 features in its last dim, expected d_in=3"),
    ("copy V2 into V1 mismatched",
     lambda: copy_v2_into_v1(SelfAttentionV1(3, 2), SelfAttentionV2(3, 4)),
     ValueError, r"v1 is \(d_in=3, d_out=2\) but v2 is \(d_in=3, d_out=4\)"),
    ("causal dropout > 1", lambda: CausalAttention(3, 2, 6, dropout=1.5),
     ValueError, r"dropout must be a probability in \[0, 1\], got 1\.5"),
    ("causal dropout NaN", lambda: CausalAttention(3, 2, 6, dropout=NAN),
     ValueError, r"dropout must be a probability in \[0, 1\], got nan"),
    ("causal too long", lambda: CausalAttention(3, 2, 6, 0.0)(_x(2, 7, 3)),
     ValueError, r"num_tokens=7, more than context_length=6"),
    ("causal empty sequence", lambda: CausalAttention(3, 2, 6, 0.0)(_x(2, 0, 3)),
     ValueError, r"num_tokens=0; expected at least 1"),
    ("wrapper too long", lambda: MultiHeadAttentionWrapper(4, 3, 8, 0.0, 2)(_x(1, 9, 4)),
     ValueError, r"num_tokens=9, more than context_length=8"),
    ("wrapper num_heads 0", lambda: MultiHeadAttentionWrapper(4, 3, 8, 0.0, 0),
     ValueError, r"num_heads must be a positive integer, got 0"),
    ("MHA heads do not divide d_out",
     lambda: MultiHeadAttention(d_in=3, d_out=6, context_length=6, dropout=0.0,
                                num_heads=4),
     ValueError, r"d_out \(6\) must be divisible by num_heads \(4\)"),
    ("MHA integer input", lambda: _mha()(_x(1, 3, 4, dtype=torch.long)),
     ValueError, r"x must be a floating-point tensor, got dtype torch\.int64"),
    ("MHA empty sequence", lambda: _mha()(_x(1, 0, 4)),
     ValueError, r"num_tokens=0; expected at least 1"),
    # --- llmlab.layers / norm / feed_forward / position ---------------------
    ("Linear wrong in_features", lambda: Linear(3, 4)(_x(2, 5)),
     ValueError, r"x must end in in_features \(3\), got shape \(2, 5\)"),
    ("Linear integer input", lambda: Linear(3, 4)(_x(2, 3, dtype=torch.long)),
     ValueError, r"x must be a floating-point tensor, got dtype torch\.int64"),
    ("Linear out_features 0", lambda: Linear(3, 0),
     ValueError, r"out_features \(0\) must be positive"),
    ("Embedding float ids", lambda: Embedding(10, 4)(torch.tensor([1.0, NAN])),
     ValueError, r"token_ids must be integers, got dtype torch\.float32"),
    ("Embedding id out of range", lambda: Embedding(10, 4)(torch.tensor([3, 10])),
     ValueError, r"token_ids must lie in \[0, 10\) \(num_embeddings\)"),
    ("RMSNorm wrong d_model", lambda: RMSNorm(4)(_x(2, 5)),
     ValueError, r"x must end in d_model \(4\), got shape \(2, 5\)"),
    ("RMSNorm integer input", lambda: RMSNorm(4)(_x(2, 4, dtype=torch.long)),
     ValueError, r"x must be a floating-point tensor, got dtype torch\.int64"),
    ("RMSNorm negative eps", lambda: RMSNorm(4, eps=-1e-5),
     ValueError, r"eps must be a finite number >= 0, got -1e-05"),
    ("LayerNorm NaN eps", lambda: LayerNorm(4, eps=NAN),
     ValueError, r"eps must be a finite number >= 0, got nan"),
    ("LayerNorm integer input", lambda: LayerNorm(4)(_x(2, 4, dtype=torch.int32)),
     ValueError, r"x must be a floating-point tensor, got dtype torch\.int32"),
    ("LayerNorm 0-d", lambda: LayerNorm(4)(torch.tensor(1.0)),
     ValueError, r"x must end in d_model \(4\), got shape \(\)"),
    ("rms_norm weight shape", lambda: rms_norm(_x(2, 4), weight=_x(5)),
     ValueError, r"weight must have shape \(d_model,\) = \(4,\), got \(5,\)"),
    ("SwiGLU wrong width", lambda: SwiGLU(4, 8)(_x(2, 5)),
     ValueError, r"x must end in in_features \(4\), got shape \(2, 5\)"),
    ("swiglu_hidden_dim 0", lambda: swiglu_hidden_dim(0),
     ValueError, r"d_model \(0\) and multiple_of \(64\) must be positive"),
    ("RoPE odd d_k", lambda: RotaryPositionalEmbedding(1e4, d_k=5, max_seq_len=8),
     ValueError, r"d_k must be even and positive .* got 5"),
    ("RoPE NaN theta", lambda: rope_frequencies(NAN, 4),
     ValueError, r"theta must be a finite positive number, got nan"),
    ("RoPE position out of range",
     lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(3, 4), torch.tensor([0, 1, 8])),
     ValueError, r"token_positions must lie in \[0, 8\) \(max_seq_len\)"),
    ("RoPE negative position",
     lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(3, 4), torch.tensor([0, -1, 2])),
     ValueError, r"token_positions must lie in \[0, 8\).*from -1"),
    ("RoPE float positions",
     lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(3, 4), torch.tensor([0.0, 1, 2])),
     ValueError, r"token_positions must be integers, got dtype torch\.float32"),
    ("RoPE positions length",
     lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(3, 4), torch.arange(4)),
     ValueError, r"token_positions must end in seq_len \(3\), got shape \(4,\)"),
    ("rope_complex positions length",
     lambda: rope_complex(_x(3, 4), torch.arange(4), theta=1e4),
     ValueError, r"token_positions must end in seq_len \(3\), got shape \(4,\)"),
    # --- llmlab.models.gpt2 --------------------------------------------------
    ("GPT-2 attention heads", lambda: gpt2.MultiHeadSelfAttention(d_model=10, n_heads=3),
     ValueError, r"d_model \(10\) must be divisible by n_heads \(3\)"),
    ("GPT-2 attention rank 2", lambda: gpt2.MultiHeadSelfAttention(8, 2)(_x(3, 8)),
     ValueError, r"x must have shape \(batch, seq_len, d_model=8\), got \(3, 8\)"),
    ("GPT-2 attention empty", lambda: gpt2.MultiHeadSelfAttention(8, 2)(_x(1, 0, 8)),
     ValueError, r"seq_len=0; expected at least 1"),
    ("GPT-2 float pad_mask",
     lambda: gpt2.MultiHeadSelfAttention(8, 2)(_x(1, 3, 8), torch.zeros(1, 3)),
     ValueError, r"pad_mask must be a boolean tensor .*got torch\.float32"),
    ("GPT-2 pad_mask shape",
     lambda: gpt2.MultiHeadSelfAttention(8, 2)(_x(1, 3, 8),
                                               torch.zeros(1, 4, dtype=torch.bool)),
     ValueError, r"pad_mask must have shape \(batch, seq_len\) = \(1, 3\), got \(1, 4\)"),
    ("GPT-2 dropout 1", lambda: gpt2.MultiHeadSelfAttention(8, 2, dropout=1.0),
     ValueError, r"dropout must be in \[0, 1\), got 1\.0"),
    ("GPT-2 block wrong width", lambda: gpt2.TransformerBlock(8, 2)(_x(1, 3, 7)),
     ValueError, r"x must have shape \(batch, seq_len, d_model=8\), got \(1, 3, 7\)"),
    ("GPT-2 MLP wrong width", lambda: gpt2.MLP(8)(_x(1, 3, 7)),
     ValueError, r"x must end in d_model \(8\), got \(1, 3, 7\)"),
    ("GPT-2 LM float ids", lambda: _gpt2_lm()(torch.full((1, 3), NAN)),
     ValueError, r"idx must hold integer token ids, got dtype torch\.float32"),
    ("GPT-2 LM id too large", lambda: _gpt2_lm()(torch.tensor([[1, 10]])),
     ValueError, r"token ids must be in \[0, vocab_size=10\), got min 1 and max 10"),
    ("GPT-2 LM negative id", lambda: _gpt2_lm()(torch.tensor([[-1, 2]])),
     ValueError, r"token ids must be in \[0, vocab_size=10\), got min -1"),
    ("GPT-2 LM too long", lambda: _gpt2_lm()(_ids(1, 5)),
     ValueError, r"seq_len \(5\) is longer than max_len \(4\)"),
    ("GPT-2 LM empty", lambda: _gpt2_lm()(_ids(1, 0)),
     ValueError, r"idx has seq_len=0; expected at least 1"),
    ("GPT-2 LM rank 1", lambda: _gpt2_lm()(_ids(3)),
     ValueError, r"idx must be token ids of shape \(batch, seq_len\), got \(3,\)"),
    ("GPT-2 block_param_count 0", lambda: gpt2.block_param_count(0),
     ValueError, r"d_model must be a positive int, got 0"),
    # --- llmlab.models.llama -------------------------------------------------
    ("Llama attention heads", lambda: llama.MultiHeadSelfAttention(d_model=10, num_heads=3),
     ValueError, r"d_model \(10\) must be divisible by num_heads \(3\)"),
    ("Llama attention num_heads 0", lambda: llama.MultiHeadSelfAttention(8, 0),
     ValueError, r"num_heads must be at least 1, got 0"),
    ("Llama RoPE without max_seq_len", lambda: llama.MultiHeadSelfAttention(8, 2, 1e4),
     ValueError, r"max_seq_len is required when theta"),
    ("Llama attention empty", lambda: llama.MultiHeadSelfAttention(8, 2)(_x(1, 0, 8)),
     ValueError, r"seq_len=0; expected at least 1"),
    ("Llama attention past RoPE table",
     lambda: llama.MultiHeadSelfAttention(8, 2, 1e4, 4)(_x(1, 5, 8)),
     ValueError, r"token_positions must lie in \[0, 4\) \(max_seq_len\)"),
    ("Llama block wrong width", lambda: llama.TransformerBlock(8, 2, 16)(_x(1, 3, 7)),
     ValueError, r"x must end in d_model \(8\), got shape \(1, 3, 7\)"),
    ("Llama LM float ids", lambda: _llama_lm()(torch.ones(1, 3)),
     ValueError, r"in_indices must hold integer token ids, got dtype torch\.float32"),
    ("Llama LM id too large", lambda: _llama_lm()(torch.tensor([[1, 10]])),
     ValueError, r"token_ids must lie in \[0, 10\) \(num_embeddings\)"),
    ("Llama LM too long", lambda: _llama_lm()(_ids(1, 5)),
     ValueError, r"1 <= seq_len <= context_length \(4\), got shape \(1, 5\)"),
    ("Llama LM empty", lambda: _llama_lm()(_ids(1, 0)),
     ValueError, r"1 <= seq_len <= context_length \(4\), got shape \(1, 0\)"),
    ("Llama config heads", lambda: llama.LlamaConfig(10, 4, 10, 1, 3, 16),
     ValueError, r"d_model \(10\) must be divisible by num_heads \(3\)"),
    ("Llama config num_heads 0", lambda: llama.LlamaConfig(10, 4, 10, 1, 0, 16),
     ValueError, r"num_heads must be a positive int, got 0"),
    # --- llmlab.report -------------------------------------------------------
    ("table align", lambda: markdown_table(["a", "b"], [[1, 2]], align="lx"),
     ValueError, r"align must have one of 'l', 'c', 'r' per column \(2 columns\)"),
    ("table short row", lambda: markdown_table(["a", "b"], [[1]]),
     ValueError, r"row 0 has 1 cells, expected 2"),
    ("heatmap 3-D", lambda: heatmap_svg(_x(2, 2, 2)),
     ValueError, r"matrix must be 2-D, got shape \(2, 2, 2\)"),
    ("img_tag bytes", lambda: img_tag(b"<svg/>", alt="x"),
     TypeError, r"svg must be SVG text \(str\), got bytes"),
    ("fmt_shape int", lambda: fmt_shape(5),
     TypeError, r"shape must be a sequence of ints .*got 5"),
]


def test_enough_distinct_bad_inputs() -> None:
    ids = [case[0] for case in CASES]
    assert len(set(ids)) == len(ids), "duplicate case ids"
    assert len(ids) >= 30, f"only {len(ids)} bad inputs"


@pytest.mark.parametrize(("call", "error", "match"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_is_refused_with_a_clear_message(
    call: Callable[[], object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        call()


def test_nan_activations_propagate_instead_of_raising() -> None:
    """The documented choice: NaN in activations flows through, row by row."""
    x = torch.randn(2, 3, 4)
    x[0, 1, 2] = NAN
    for norm in (RMSNorm(4), LayerNorm(4)):
        y = norm(x)
        assert torch.isnan(y[0, 1]).all()  # the poisoned row
        assert not torch.isnan(y[1]).any()  # the others are untouched
    # attention raises nothing either; note that even a *future* NaN reaches
    # position 0, through 0 * NaN = NaN in weights @ values (torch's SDPA agrees)
    out = _mha().eval()(x)
    assert torch.isnan(out[0]).all() and not torch.isnan(out[1]).any()
