"""Bad input gets a clear error across the public API.

Every case below is one distinct mistake a reader can make after copying a snippet
and changing an argument. Each must raise a ``ValueError`` (``TypeError`` where the
argument is not even the right kind of object) whose message names the argument
(checked on its own) and says what was got and what was expected (the ``match``
pattern). ``GOOD`` holds the controls: the same calls with a value that is just
right, which must go through. Every public name of the package that takes arguments
has at least one case (``test_every_public_name_has_a_bad_input``).

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

import importlib
import inspect
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import llmlab.checks as checks
import llmlab.experiments.attention as exp_attention
import llmlab.experiments.building_blocks as exp_blocks
import llmlab.experiments.multihead as exp_multihead
import llmlab.experiments.tokenization as exp_tok
import llmlab.experiments.training as exp_training
import llmlab.models.gpt2 as gpt2
import llmlab.models.llama as llama
import llmlab.report as report
import llmlab.report.attention as report_attention
import llmlab.report.building_blocks as report_blocks
import llmlab.report.multihead as report_multihead
from llmlab import data, provenance
from llmlab.attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    causal_weights_masked,
    causal_weights_renormalised,
    copy_v2_into_v1,
    cosine_similarity,
    dot_scores_loop,
    dot_scores_matmul,
    dot_scores_torch_dot,
    mha_from_wrapper,
    mha_step_shapes,
    simple_self_attention,
    softmax_naive,
    source_markdown,
    sum_normalise,
    toy_embeddings,
)
from llmlab.feed_forward import ReLUFFN, SwiGLU, gelu, relu, silu, swiglu_hidden_dim
from llmlab.functional import causal_mask, scaled_dot_product_attention, softmax
from llmlab.generation import generate, next_token_probabilities, sample_next_token
from llmlab.kv_cache import KVCache, LayerKVCache, kv_cache_bytes
from llmlab.layers import Embedding, Linear, trunc_normal_std
from llmlab.norm import LayerNorm, RMSNorm, rms_norm
from llmlab.params import count_parameters
from llmlab.position import RotaryPositionalEmbedding, rope_complex, rope_frequencies
from llmlab.report.build import computation_table
from llmlab.tokenization import (
    Tokenizer,
    chunk_boundaries,
    count_pretokens,
    count_pretokens_file,
    learn_merges,
    learn_merges_naive,
    pretokenize,
    split_on_special_tokens,
    train_bpe,
    train_bpe_from_counts,
    vocab_from_merges,
)
from llmlab.tokenization.bpe import check_vocab_size
from llmlab.tokenization.pretokenize import check_special_tokens, special_token_pattern
from llmlab.tokenization.reference import require, tiktoken_encoding
from llmlab.training import (
    AdamW,
    ByteTokenizer,
    checkpoint_extra,
    cosine_schedule,
    cross_entropy,
    estimate_loss,
    get_batch,
    get_lr_cosine_schedule,
    gradient_clipping,
    load_checkpoint,
    perplexity,
    save_checkpoint,
    split_tokens,
    train,
)

torch.set_num_threads(1)

NAN = float("nan")


def _x(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(*shape, dtype=dtype)


def _ids(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.long)


def _gpt2_lm() -> gpt2.TransformerLM:
    return gpt2.TransformerLM(vocab_size=10, context_length=4, d_model=8, n_layers=1,
                              n_heads=2)


def _llama_lm() -> llama.TransformerLM:
    return llama.TransformerLM(vocab_size=10, context_length=4, d_model=8,
                               num_layers=1, num_heads=2, d_ff=16)


def _mha() -> MultiHeadAttention:
    return MultiHeadAttention(d_in=4, d_out=4, context_length=6, dropout=0.0, num_heads=2)


def _bytes_vocab() -> dict[int, bytes]:
    return vocab_from_merges([])


def _opt(model: nn.Module) -> AdamW:
    return AdamW(model.parameters())


def _tokens() -> np.ndarray:
    return np.arange(64) % 10


@dataclass(frozen=True)
class Case:
    """One bad input: ``call()`` raises ``error``, names ``arg``, matches ``match``."""

    id: str
    target: str  # the public name the mistake is made against
    call: Callable[[], object] = field(repr=False)
    error: type[Exception]
    arg: str
    match: str


def case(id: str, target: str, call: Callable[[], object], error: type[Exception],
         arg: str, match: str) -> Case:
    return Case(id, target, call, error, arg, match)


V, T = ValueError, TypeError
F, A, L, G = "llmlab.functional", "llmlab.attention", "llmlab.layers", "llmlab.models.gpt2"
M = "llmlab.models.llama"
# the lecture on compute, memory and many devices (imported here, for its cases only)
import llmlab.compute as compute  # noqa: E402
import llmlab.distributed as dist  # noqa: E402
import llmlab.experiments.distributed as exp_dist  # noqa: E402

CASES: list[Case] = [
    # --- llmlab.checks -------------------------------------------------------------
    case("check_int bool", "llmlab.checks.check_int",
         lambda: checks.check_int("n", True), T, "n", r"n must be an int, got bool"),
    case("check_int below minimum", "llmlab.checks.check_int",
         lambda: checks.check_int("n", 0), V, "n", r"n must be an int >= 1, got 0"),
    case("check_int above maximum", "llmlab.checks.check_int",
         lambda: checks.check_int("n", 5, maximum=4), V, "n", r"n must be an int in \[1, 4\]"),
    case("check_finite_float inf", "llmlab.checks.check_finite_float",
         lambda: checks.check_finite_float("lr", float("inf")), V, "lr",
         r"lr must be a finite number in \(-inf, inf\), got inf"),
    case("check_finite_float str", "llmlab.checks.check_finite_float",
         lambda: checks.check_finite_float("lr", "0.1"), T, "lr", r"lr must be a number"),
    case("check_dropout 1", "llmlab.checks.check_dropout",
         lambda: checks.check_dropout(1.0), V, "dropout",
         r"dropout must be a finite number in \[0, 1\), got 1"),
    case("check_bool int", "llmlab.checks.check_bool",
         lambda: checks.check_bool("causal", 1), T, "causal", r"causal must be a bool"),
    case("check_str bytes", "llmlab.checks.check_str",
         lambda: checks.check_str("text", b"x"), T, "text", r"text must be a str, got bytes"),
    case("check_path int", "llmlab.checks.check_path",
         lambda: checks.check_path("path", 3), T, "path", r"path must be a str or os.PathLike"),
    case("check_type hint", "llmlab.checks.check_type",
         lambda: checks.check_type("config", 1, dict, hint="pass a dict"), T, "config",
         r"config must be a dict, got int; pass a dict"),
    case("check_callable", "llmlab.checks.check_callable",
         lambda: checks.check_callable("callback", 3), T, "callback",
         r"callback must be callable"),
    case("check_choice", "llmlab.checks.check_choice",
         lambda: checks.check_choice("kind", "x", ("a", "b")), V, "kind",
         r"kind must be one of 'a', 'b', got 'x'"),
    case("check_divisible", "llmlab.checks.check_divisible",
         lambda: checks.check_divisible("d_model", 10, "n_heads", 3), V, "n_heads",
         r"d_model \(10\) must be divisible by n_heads \(3\)"),
    case("check_sizes empty", "llmlab.checks.check_sizes",
         lambda: checks.check_sizes("lengths", ()), V, "lengths",
         r"lengths must hold at least one value, got \(\)"),
    case("check_floats nan", "llmlab.checks.check_floats",
         lambda: checks.check_floats("points", (1.0, NAN)), V, "points[1]",
         r"points\[1\] must be a finite number"),
    case("check_reduction empty dim", "llmlab.checks.check_reduction",
         lambda: checks.check_reduction("x", torch.empty(2, 0), -1), V, "x",
         r"x has size 0 along dim=-1"),
    case("check_tensor list", "llmlab.checks.check_tensor",
         lambda: checks.check_tensor("x", [1.0]), T, "x", r"x must be a torch.Tensor, got list"),
    case("check_tensors disagree", "llmlab.checks.check_tensors",
         lambda: checks.check_tensors(a=(_x(2, 3), "n d"), b=(_x(2, 4), "n d")), V, "b",
         r"b must have shape \(n, d\), got shape \(2, 4\): d is 4, but a has d 3"),
    case("check_token_ids empty", "llmlab.checks.check_token_ids",
         lambda: checks.check_token_ids("ids", _ids(0)), V, "ids", r"ids is empty"),
    # --- llmlab.functional ---------------------------------------------------------
    case("softmax 0-d", f"{F}.softmax", lambda: softmax(torch.tensor(1.0)), V, "x",
         r"x must have at least one dimension, got a 0-d tensor"),
    case("softmax dim out of range", f"{F}.softmax", lambda: softmax(_x(2, 3), dim=2), V,
         "dim", r"dim must be an int in \[-2, 1\], got 2"),
    case("softmax float dim", f"{F}.softmax", lambda: softmax(_x(2, 3), dim=1.0), T, "dim",
         r"dim must be an int, got float"),
    case("softmax empty along dim", f"{F}.softmax", lambda: softmax(torch.empty(2, 0)), V,
         "x", r"x has size 0 along dim=-1 \(shape \(2, 0\)\)"),
    case("softmax integer", f"{F}.softmax", lambda: softmax(_ids(3)), V, "x",
         r"x must be a floating-point tensor, got dtype torch\.int64"),
    case("softmax list", f"{F}.softmax", lambda: softmax([1.0, 2.0]), T, "x",
         r"x must be a torch\.Tensor, got list"),
    case("causal_mask 0 tokens", f"{F}.causal_mask", lambda: causal_mask(0), V, "seq_len",
         r"seq_len must be an int >= 1, got 0"),
    case("causal_mask float size", f"{F}.causal_mask", lambda: causal_mask(2.5), T,
         "seq_len", r"seq_len must be an int, got float 2\.5"),
    case("sdpa rank 1", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(4), _x(3, 4), _x(3, 4)), V, "Q",
         r"Q must have shape \(\.\.\., n_queries, d_k\), got a 1-D tensor"),
    case("sdpa d_k mismatch", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 5), _x(3, 5)), V, "K",
         r"d_k is 5, but Q has d_k 4"),
    case("sdpa keys/values mismatch", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 4), _x(2, 4)), V, "V",
         r"n_keys is 2, but K has n_keys 3"),
    case("sdpa float mask", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 4), _x(3, 4), _x(3, 3)), V,
         "mask", r"mask must be a boolean tensor, got dtype torch\.float32"),
    case("sdpa mask shape", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 4), _x(3, 4),
                                              torch.ones(2, 5, dtype=torch.bool)), V,
         "mask", r"mask of shape \(2, 5\) does not broadcast .*n_queries is 2, but Q"),
    case("sdpa empty sequence", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(2, 0, 4), _x(2, 0, 4), _x(2, 0, 4)), V,
         "Q", r"n_queries is 0, expected n_queries >= 1"),
    case("sdpa integer Q", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(3, 4, dtype=torch.long), _x(3, 4),
                                              _x(3, 4)), V, "Q",
         r"Q must be a floating-point tensor, got dtype torch\.int64"),
    case("sdpa mixed dtypes", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 4, dtype=torch.float64),
                                              _x(3, 4)), V, "K",
         r"K has dtype torch\.float64 but Q has torch\.float32"),
    case("sdpa leading dims", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(2, 3, 4), _x(3, 3, 4), _x(3, 3, 4)), V,
         "K", r"the leading dims of K \(3,\) do not broadcast with those of Q \(2,\)"),
    case("sdpa mask bigger than scores", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(_x(3, 4), _x(3, 4), _x(3, 4),
                                              torch.ones(2, 3, 3, dtype=torch.bool)), V,
         "mask", r"the leading dims of mask \(2,\) do not broadcast to those of Q"),
    case("sdpa mask on another device", f"{F}.scaled_dot_product_attention",
         lambda: scaled_dot_product_attention(
             _x(3, 4), _x(3, 4), _x(3, 4), torch.ones(3, 3, dtype=torch.bool,
                                                      device="meta")), V, "mask",
         r"mask is on meta but Q is on cpu"),
    # --- llmlab.attention: helpers -------------------------------------------------
    case("toy_embeddings no words", f"{A}.toy_embeddings", lambda: toy_embeddings([]), V,
         "words", r"words must hold at least one token"),
    case("toy_embeddings a string", f"{A}.toy_embeddings", lambda: toy_embeddings("abc"), T,
         "words", r"words must be a list of str, got str"),
    case("toy_embeddings dim 0", f"{A}.toy_embeddings", lambda: toy_embeddings(["a"], dim=0),
         V, "dim", r"dim must be an int >= 1, got 0"),
    case("toy_embeddings float seed", f"{A}.toy_embeddings",
         lambda: toy_embeddings(["a"], seed=1.5), T, "seed", r"seed must be an int"),
    case("dot scores 2-D query", f"{A}.dot_scores_matmul",
         lambda: dot_scores_matmul(_x(2, 3), _x(4, 3)), V, "query",
         r"query must have shape \(d,\), got a 2-D tensor of shape \(2, 3\)"),
    case("dot scores keys width", f"{A}.dot_scores_torch_dot",
         lambda: dot_scores_torch_dot(_x(3), _x(4, 2)), V, "keys",
         r"keys must have shape \(seq_len, d\), got shape \(4, 2\): d is 2, but query"),
    case("dot scores integer query", f"{A}.dot_scores_loop",
         lambda: dot_scores_loop(torch.tensor([1, 2]), _x(3, 2)), V, "query",
         r"query must be a floating-point tensor, got dtype torch\.int64"),
    case("cosine mixed dtypes", f"{A}.cosine_similarity",
         lambda: cosine_similarity(_x(3), _x(4, 3, dtype=torch.float64)), V, "keys",
         r"keys has dtype torch\.float64 but query has torch\.float32"),
    case("sum_normalise integer", f"{A}.sum_normalise",
         lambda: sum_normalise(torch.tensor([1, 2])), V, "scores",
         r"scores must be a floating-point tensor"),
    case("softmax_naive bad dim", f"{A}.softmax_naive",
         lambda: softmax_naive(_x(3), dim=1), V, "dim", r"dim must be an int in \[-1, 0\]"),
    case("simple attention 1-D", f"{A}.simple_self_attention",
         lambda: simple_self_attention(_x(3)), V, "x",
         r"x must have shape \(seq_len, d\) or \(batch, seq_len, d\), got a 1-D"),
    case("causal weights not square", f"{A}.causal_weights_masked",
         lambda: causal_weights_masked(_x(3, 4)), V, "scores",
         r"scores must have shape \(\.\.\., seq_len, seq_len\).*seq_len is 4, but scores"),
    case("causal weights scale 0", f"{A}.causal_weights_masked",
         lambda: causal_weights_masked(_x(3, 3), scale=0), V, "scale",
         r"scale must be a finite number in \(0, inf\), got 0"),
    case("renormalised weights NaN scale", f"{A}.causal_weights_renormalised",
         lambda: causal_weights_renormalised(_x(3, 3), scale=NAN), V, "scale",
         r"scale must be a finite number in \(0, inf\), got nan"),
    case("source_markdown of an instance", f"{A}.source_markdown",
         lambda: source_markdown(_mha()), T, "obj",
         r"obj must be a class or a function, got MultiHeadAttention"),
    case("source_markdown title", f"{A}.source_markdown",
         lambda: source_markdown(SelfAttentionV1, title=3), T, "title",
         r"title must be a str"),
    # --- llmlab.attention: the teaching variants -----------------------------------
    case("V1 d_out 0", f"{A}.SelfAttentionV1", lambda: SelfAttentionV1(d_in=3, d_out=0), V,
         "d_out", r"d_out must be an int >= 1, got 0"),
    case("V1 float d_in", f"{A}.SelfAttentionV1", lambda: SelfAttentionV1(2.5, 2), T,
         "d_in", r"d_in must be an int, got float 2\.5"),
    case("V1 unbatched input", f"{A}.SelfAttentionV1",
         lambda: SelfAttentionV1(3, 2)(_x(6, 3)), V, "x",
         r"x must have shape \(batch, seq_len, d_in=3\), got a 2-D tensor of shape \(6, 3\)"),
    case("V1 float64 input", f"{A}.SelfAttentionV1",
         lambda: SelfAttentionV1(3, 2)(_x(1, 6, 3, dtype=torch.float64)), V, "x",
         r"x has dtype torch\.float64 but the module's weights have torch\.float32"),
    case("V2 wrong d_in", f"{A}.SelfAttentionV2", lambda: SelfAttentionV2(3, 2)(_x(1, 6, 4)),
         V, "d_in", r"x must have shape .*: d_in is 4, expected d_in = 3"),
    case("V2 qkv_bias not a bool", f"{A}.SelfAttentionV2",
         lambda: SelfAttentionV2(3, 2, qkv_bias="no"), T, "qkv_bias",
         r"qkv_bias must be a bool, got str"),
    case("copy V2 into V1 mismatched", f"{A}.copy_v2_into_v1",
         lambda: copy_v2_into_v1(SelfAttentionV1(3, 2), SelfAttentionV2(3, 4)), V, "v1",
         r"v1 is \(d_in=3, d_out=2\) but v2 is \(d_in=3, d_out=4\)"),
    case("copy V2 into V1 swapped", f"{A}.copy_v2_into_v1",
         lambda: copy_v2_into_v1(SelfAttentionV2(3, 2), SelfAttentionV1(3, 2)), T, "v1",
         r"v1 must be a SelfAttentionV1, got SelfAttentionV2"),
    case("causal dropout > 1", f"{A}.CausalAttention",
         lambda: CausalAttention(3, 2, 6, dropout=1.5), V, "dropout",
         r"dropout must be a finite number in \[0, 1\), got 1\.5"),
    case("causal dropout 1 (the teaching and GPT-2 rule agree)", f"{A}.CausalAttention",
         lambda: CausalAttention(3, 2, 6, dropout=1.0), V, "dropout",
         r"dropout must be a finite number in \[0, 1\), got 1"),
    case("causal dropout NaN", f"{A}.CausalAttention",
         lambda: CausalAttention(3, 2, 6, dropout=NAN), V, "dropout",
         r"dropout must be a finite number in \[0, 1\), got nan"),
    case("causal context_length 2.5", f"{A}.CausalAttention",
         lambda: CausalAttention(3, 2, 2.5, 0.0), T, "context_length",
         r"context_length must be an int, got float"),
    case("causal too long", f"{A}.CausalAttention",
         lambda: CausalAttention(3, 2, 6, 0.0)(_x(2, 7, 3)), V, "context_length",
         r"seq_len is 7, expected 1 <= seq_len <= context_length \(6\)"),
    case("causal empty sequence", f"{A}.CausalAttention",
         lambda: CausalAttention(3, 2, 6, 0.0)(_x(2, 0, 3)), V, "seq_len",
         r"seq_len is 0, expected 1 <= seq_len <= context_length \(6\)"),
    case("wrapper too long", f"{A}.MultiHeadAttentionWrapper",
         lambda: MultiHeadAttentionWrapper(4, 3, 8, 0.0, 2)(_x(1, 9, 4)), V, "seq_len",
         r"seq_len is 9, expected 1 <= seq_len <= context_length \(8\)"),
    case("wrapper num_heads 0", f"{A}.MultiHeadAttentionWrapper",
         lambda: MultiHeadAttentionWrapper(4, 3, 8, 0.0, 0), V, "num_heads",
         r"num_heads must be an int >= 1, got 0"),
    case("MHA heads do not divide d_out", f"{A}.MultiHeadAttention",
         lambda: MultiHeadAttention(d_in=3, d_out=6, context_length=6, dropout=0.0,
                                    num_heads=4), V, "num_heads",
         r"d_out \(6\) must be divisible by num_heads \(4\)"),
    case("MHA num_heads True", f"{A}.MultiHeadAttention",
         lambda: MultiHeadAttention(4, 4, 6, 0.0, num_heads=True), T, "num_heads",
         r"num_heads must be an int, got bool"),
    case("MHA integer input", f"{A}.MultiHeadAttention",
         lambda: _mha()(_x(1, 3, 4, dtype=torch.long)), V, "x",
         r"x must be a floating-point tensor, got dtype torch\.int64"),
    case("MHA empty sequence", f"{A}.MultiHeadAttention", lambda: _mha()(_x(1, 0, 4)), V,
         "seq_len", r"seq_len is 0, expected 1 <= seq_len"),
    case("MHA input on another device", f"{A}.MultiHeadAttention",
         lambda: _mha()(torch.ones(1, 3, 4, device="meta")), V, "x",
         r"x is on meta but the module's weights is on cpu"),
    case("mha_step_shapes of a wrapper", f"{A}.mha_step_shapes",
         lambda: mha_step_shapes(MultiHeadAttentionWrapper(4, 2, 6, 0.0, 2), _x(1, 3, 4)),
         T, "mha", r"mha must be a MultiHeadAttention, got MultiHeadAttentionWrapper"),
    case("mha_step_shapes wrong width", f"{A}.mha_step_shapes",
         lambda: mha_step_shapes(_mha(), _x(1, 3, 5)), V, "d_in",
         r"d_in is 5, expected d_in = 4"),
    case("mha_from_wrapper of an MHA", f"{A}.mha_from_wrapper",
         lambda: mha_from_wrapper(_mha()), T, "wrapper",
         r"wrapper must be a MultiHeadAttentionWrapper, got MultiHeadAttention"),
    # --- llmlab.layers -------------------------------------------------------------
    case("trunc_normal_std negative", f"{L}.trunc_normal_std", lambda: trunc_normal_std(-1),
         V, "std", r"std must be a finite number in \(0, inf\), got -1"),
    case("trunc_normal_std cut 0", f"{L}.trunc_normal_std",
         lambda: trunc_normal_std(1.0, cut=0), V, "cut", r"cut must be a finite number"),
    case("Linear True", f"{L}.Linear", lambda: Linear(True, 4), T, "in_features",
         r"in_features must be an int, got bool"),
    case("Linear out_features 0", f"{L}.Linear", lambda: Linear(3, 0), V, "out_features",
         r"out_features must be an int >= 1, got 0"),
    case("Linear wrong in_features", f"{L}.Linear", lambda: Linear(3, 4)(_x(2, 5)), V,
         "in_features", r"x must have shape \(\.\.\., in_features=3\), got shape \(2, 5\)"),
    case("Linear integer input", f"{L}.Linear",
         lambda: Linear(3, 4)(_x(2, 3, dtype=torch.long)), V, "x",
         r"x must be a floating-point tensor, got dtype torch\.int64"),
    case("Linear float64 input", f"{L}.Linear",
         lambda: Linear(3, 4)(_x(2, 3, dtype=torch.float64)), V, "x",
         r"x has dtype torch\.float64 but the module's weights have torch\.float32"),
    case("Embedding float num_embeddings", f"{L}.Embedding", lambda: Embedding(10.0, 4), T,
         "num_embeddings", r"num_embeddings must be an int, got float"),
    case("Embedding float ids", f"{L}.Embedding",
         lambda: Embedding(10, 4)(torch.tensor([1.0, NAN])), V, "token_ids",
         r"token_ids must be an integer tensor, got dtype torch\.float32"),
    case("Embedding id out of range", f"{L}.Embedding",
         lambda: Embedding(10, 4)(torch.tensor([3, 10])), V, "token_ids",
         r"token_ids must lie in \[0, 10\) \(num_embeddings\), got values from 3 to 10"),
    # --- llmlab.norm ---------------------------------------------------------------
    case("RMSNorm float d_model", "llmlab.norm.RMSNorm", lambda: RMSNorm(2.5), T, "d_model",
         r"d_model must be an int, got float 2\.5"),
    case("RMSNorm wrong d_model", "llmlab.norm.RMSNorm", lambda: RMSNorm(4)(_x(2, 5)), V,
         "d_model", r"x must have shape \(\.\.\., d_model=4\), got shape \(2, 5\)"),
    case("RMSNorm integer input", "llmlab.norm.RMSNorm",
         lambda: RMSNorm(4)(_x(2, 4, dtype=torch.long)), V, "x",
         r"x must be a floating-point tensor, got dtype torch\.int64"),
    case("RMSNorm negative eps", "llmlab.norm.RMSNorm", lambda: RMSNorm(4, eps=-1e-5), V,
         "eps", r"eps must be a finite number in \[0, inf\), got -1e-05"),
    case("LayerNorm NaN eps", "llmlab.norm.LayerNorm", lambda: LayerNorm(4, eps=NAN), V,
         "eps", r"eps must be a finite number in \[0, inf\), got nan"),
    case("LayerNorm integer input", "llmlab.norm.LayerNorm",
         lambda: LayerNorm(4)(_x(2, 4, dtype=torch.int32)), V, "x",
         r"x must be a floating-point tensor, got dtype torch\.int32"),
    case("LayerNorm 0-d", "llmlab.norm.LayerNorm", lambda: LayerNorm(4)(torch.tensor(1.0)),
         V, "x", r"x must have shape \(\.\.\., d_model=4\), got a 0-D tensor"),
    case("LayerNorm input on another device", "llmlab.norm.LayerNorm",
         lambda: LayerNorm(4)(torch.ones(2, 4, device="meta")), V, "x",
         r"x is on meta but the module's weights is on cpu"),
    case("rms_norm weight shape", "llmlab.norm.rms_norm",
         lambda: rms_norm(_x(2, 4), weight=_x(5)), V, "weight",
         r"weight must have shape \(d_model,\), got shape \(5,\): d_model is 5, but x has"),
    case("rms_norm upcast not a bool", "llmlab.norm.rms_norm",
         lambda: rms_norm(_x(2, 4), upcast="yes"), T, "upcast", r"upcast must be a bool"),
    # --- llmlab.feed_forward -------------------------------------------------------
    case("relu integer", "llmlab.feed_forward.relu", lambda: relu(torch.tensor([-1, 2])), V,
         "x", r"x must be a floating-point tensor"),
    case("gelu list", "llmlab.feed_forward.gelu", lambda: gelu([0.5]), T, "x",
         r"x must be a torch\.Tensor, got list"),
    case("silu bool", "llmlab.feed_forward.silu", lambda: silu(torch.tensor([True])), V,
         "x", r"x must be a floating-point tensor, got dtype torch\.bool"),
    case("swiglu_hidden_dim 0", "llmlab.feed_forward.swiglu_hidden_dim",
         lambda: swiglu_hidden_dim(0), V, "d_model", r"d_model must be an int >= 1, got 0"),
    case("swiglu_hidden_dim 2.5", "llmlab.feed_forward.swiglu_hidden_dim",
         lambda: swiglu_hidden_dim(2.5), T, "d_model", r"d_model must be an int, got float"),
    case("swiglu_hidden_dim multiple_of 0", "llmlab.feed_forward.swiglu_hidden_dim",
         lambda: swiglu_hidden_dim(64, multiple_of=0), V, "multiple_of",
         r"multiple_of must be an int >= 1, got 0"),
    case("ReLUFFN d_ff 2.5", "llmlab.feed_forward.ReLUFFN", lambda: ReLUFFN(4, d_ff=2.5), T,
         "d_ff", r"d_ff must be an int, got float 2\.5"),
    case("ReLUFFN wrong width", "llmlab.feed_forward.ReLUFFN",
         lambda: ReLUFFN(4)(_x(2, 5)), V, "d_model", r"d_model is 5, expected d_model = 4"),
    case("SwiGLU wrong width", "llmlab.feed_forward.SwiGLU", lambda: SwiGLU(4, 8)(_x(2, 5)),
         V, "d_model", r"x must have shape \(\.\.\., d_model=4\), got shape \(2, 5\)"),
    case("SwiGLU d_model 0", "llmlab.feed_forward.SwiGLU", lambda: SwiGLU(0), V, "d_model",
         r"d_model must be an int >= 1, got 0"),
    # --- llmlab.position -----------------------------------------------------------
    case("RoPE odd d_k", "llmlab.position.RotaryPositionalEmbedding",
         lambda: RotaryPositionalEmbedding(1e4, d_k=5, max_seq_len=8), V, "d_k",
         r"d_k must be even and positive .* got 5"),
    case("RoPE max_seq_len 2.5", "llmlab.position.RotaryPositionalEmbedding",
         lambda: RotaryPositionalEmbedding(1e4, 4, max_seq_len=2.5), T, "max_seq_len",
         r"max_seq_len must be an int, got float 2\.5"),
    case("RoPE NaN theta", "llmlab.position.rope_frequencies",
         lambda: rope_frequencies(NAN, 4), V, "theta",
         r"theta must be a finite number in \(0, inf\), got nan"),
    case("RoPE frequencies d_k True", "llmlab.position.rope_frequencies",
         lambda: rope_frequencies(1e4, True), T, "d_k", r"d_k must be an int, got bool"),
    case("RoPE position out of range", "llmlab.position.RotaryPositionalEmbedding",
         lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(3, 4), torch.tensor([0, 1, 8])),
         V, "max_seq_len", r"token_positions must lie in \[0, 8\) \(max_seq_len\)"),
    case("RoPE negative position", "llmlab.position.RotaryPositionalEmbedding",
         lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(3, 4), torch.tensor([0, -1, 2])),
         V, "token_positions", r"token_positions must lie in \[0, 8\).*from -1"),
    case("RoPE float positions", "llmlab.position.RotaryPositionalEmbedding",
         lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(3, 4), torch.tensor([0.0, 1, 2])),
         V, "token_positions", r"token_positions must be an integer tensor"),
    case("RoPE positions length", "llmlab.position.RotaryPositionalEmbedding",
         lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(3, 4), torch.arange(4)), V,
         "token_positions", r"token_positions must have shape \(\.\.\., seq_len\), got "
         r"shape \(4,\): seq_len is 4, but x has seq_len 3"),
    case("RoPE wrong d_k", "llmlab.position.RotaryPositionalEmbedding",
         lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(3, 6), torch.arange(3)), V, "d_k",
         r"d_k is 6, expected d_k = 4"),
    case("rope_complex positions length", "llmlab.position.rope_complex",
         lambda: rope_complex(_x(3, 4), torch.arange(4), theta=1e4), V, "token_positions",
         r"token_positions must have shape .* seq_len is 4, but x has seq_len 3"),
    case("rope_complex odd width", "llmlab.position.rope_complex",
         lambda: rope_complex(_x(3, 5), torch.arange(3), theta=1e4), V, "d_k",
         r"d_k must be even"),
    # --- llmlab.params -------------------------------------------------------------
    case("count_parameters of a tensor", "llmlab.params.count_parameters",
         lambda: count_parameters(_x(3)), T, "module",
         r"module must be a torch\.nn\.Module, got Tensor"),
    case("count_parameters flag", "llmlab.params.count_parameters",
         lambda: count_parameters(Linear(2, 2), trainable_only=1), T, "trainable_only",
         r"trainable_only must be a bool"),
    # --- llmlab.models.gpt2 --------------------------------------------------------
    case("GPT-2 attention heads", f"{G}.MultiHeadSelfAttention",
         lambda: gpt2.MultiHeadSelfAttention(d_model=10, n_heads=3), V, "n_heads",
         r"d_model \(10\) must be divisible by n_heads \(3\)"),
    case("GPT-2 attention n_heads True", f"{G}.MultiHeadSelfAttention",
         lambda: gpt2.MultiHeadSelfAttention(8, n_heads=True), T, "n_heads",
         r"n_heads must be an int, got bool"),
    case("GPT-2 attention causal 1", f"{G}.MultiHeadSelfAttention",
         lambda: gpt2.MultiHeadSelfAttention(8, 2, causal=1), T, "causal",
         r"causal must be a bool, got int"),
    case("GPT-2 attention rank 2", f"{G}.MultiHeadSelfAttention",
         lambda: gpt2.MultiHeadSelfAttention(8, 2)(_x(3, 8)), V, "x",
         r"x must have shape \(batch, seq_len, d_model=8\), got a 2-D tensor"),
    case("GPT-2 attention empty", f"{G}.MultiHeadSelfAttention",
         lambda: gpt2.MultiHeadSelfAttention(8, 2)(_x(1, 0, 8)), V, "seq_len",
         r"seq_len is 0, expected seq_len >= 1"),
    case("GPT-2 float key_mask", f"{G}.MultiHeadSelfAttention",
         lambda: gpt2.MultiHeadSelfAttention(8, 2)(_x(1, 3, 8), torch.ones(1, 3)), V,
         "key_mask", r"key_mask must be a boolean tensor, got dtype torch\.float32"),
    case("GPT-2 key_mask shape", f"{G}.MultiHeadSelfAttention",
         lambda: gpt2.MultiHeadSelfAttention(8, 2)(_x(1, 3, 8),
                                                   torch.ones(1, 4, dtype=torch.bool)),
         V, "key_mask", r"key_mask must have shape \(batch, seq_len\), got shape \(1, 4\): "
         r"seq_len is 4, but x has seq_len 3"),
    case("GPT-2 key_mask batch", f"{G}.MultiHeadSelfAttention",
         lambda: gpt2.MultiHeadSelfAttention(8, 2).forward_steps(
             _x(2, 3, 8), torch.ones(1, 3, dtype=torch.bool)), V, "key_mask",
         r"batch is 1, but x has batch 2"),
    case("GPT-2 dropout 1", f"{G}.MultiHeadSelfAttention",
         lambda: gpt2.MultiHeadSelfAttention(8, 2, dropout=1.0), V, "dropout",
         r"dropout must be a finite number in \[0, 1\), got 1"),
    case("GPT-2 block wrong width", f"{G}.TransformerBlock",
         lambda: gpt2.TransformerBlock(8, 2)(_x(1, 3, 7)), V, "d_model",
         r"x must have shape \(batch, seq_len, d_model=8\), got shape \(1, 3, 7\)"),
    case("GPT-2 block pre_ln string", f"{G}.TransformerBlock",
         lambda: gpt2.TransformerBlock(8, 2, pre_ln="post"), T, "pre_ln",
         r"pre_ln must be a bool, got str"),
    case("GPT-2 MLP wrong width", f"{G}.MLP", lambda: gpt2.MLP(8)(_x(1, 3, 7)), V,
         "d_model", r"x must have shape \(\.\.\., d_model=8\), got shape \(1, 3, 7\)"),
    case("GPT-2 MLP d_ff 0", f"{G}.MLP", lambda: gpt2.MLP(8, d_ff=0), V, "d_ff",
         r"d_ff must be an int >= 1, got 0"),
    case("GPT-2 config heads", f"{G}.GPT2Config",
         lambda: gpt2.GPT2Config(d_model=10, n_heads=3), V, "n_heads",
         r"d_model \(10\) must be divisible by n_heads \(3\)"),
    case("GPT-2 config vocab_size 0", f"{G}.GPT2Config",
         lambda: gpt2.GPT2Config(vocab_size=0), V, "vocab_size",
         r"vocab_size must be an int >= 1, got 0"),
    case("GPT-2 config dropout NaN", f"{G}.GPT2Config",
         lambda: gpt2.GPT2Config(dropout=NAN), V, "dropout", r"dropout must be a finite"),
    case("GPT-2 LM n_layers 0", f"{G}.TransformerLM",
         lambda: gpt2.TransformerLM(10, 4, 8, n_layers=0, n_heads=2), V, "n_layers",
         r"n_layers must be an int >= 1, got 0"),
    case("GPT-2 LM context_length 2.5", f"{G}.TransformerLM",
         lambda: gpt2.TransformerLM(10, 2.5, 8, 1, 2), T, "context_length",
         r"context_length must be an int, got float"),
    case("GPT-2 LM from a LlamaConfig", f"{G}.TransformerLM",
         lambda: gpt2.TransformerLM.from_config(llama.LLAMA_TOY), T, "config",
         r"config must be a GPT2Config, got LlamaConfig; .*llmlab\.models\.llama"),
    case("GPT-2 LM float ids", f"{G}.TransformerLM",
         lambda: _gpt2_lm()(torch.full((1, 3), NAN)), V, "idx",
         r"idx must be an integer tensor, got dtype torch\.float32"),
    case("GPT-2 LM id too large", f"{G}.TransformerLM",
         lambda: _gpt2_lm()(torch.tensor([[1, 10]])), V, "vocab_size",
         r"idx must lie in \[0, 10\) \(vocab_size\), got values from 1 to 10"),
    case("GPT-2 LM negative id", f"{G}.TransformerLM",
         lambda: _gpt2_lm()(torch.tensor([[-1, 2]])), V, "idx",
         r"idx must lie in \[0, 10\) \(vocab_size\), got values from -1"),
    case("GPT-2 LM too long", f"{G}.TransformerLM", lambda: _gpt2_lm()(_ids(1, 5)), V,
         "context_length", r"seq_len is 5, expected 1 <= seq_len <= context_length \(4\)"),
    case("GPT-2 LM empty", f"{G}.TransformerLM", lambda: _gpt2_lm()(_ids(1, 0)), V,
         "seq_len", r"seq_len is 0, expected 1 <= seq_len"),
    case("GPT-2 LM rank 1", f"{G}.TransformerLM", lambda: _gpt2_lm()(_ids(3)), V, "idx",
         r"idx must have shape \(batch, seq_len\), got a 1-D tensor of shape \(3,\)"),
    case("GPT-2 LM key_mask length", f"{G}.TransformerLM",
         lambda: _gpt2_lm()(_ids(1, 3), key_mask=torch.ones(1, 2, dtype=torch.bool)), V,
         "key_mask", r"key_mask must have shape \(batch, seq_len\)"),
    case("GPT-2 block_param_count 0", f"{G}.block_param_count",
         lambda: gpt2.block_param_count(0), V, "d_model", r"d_model must be an int >= 1"),
    case("GPT-2 param breakdown of a LlamaConfig", f"{G}.gpt2_param_breakdown",
         lambda: gpt2.gpt2_param_breakdown(llama.LLAMA_TOY), T, "config",
         r"config must be a GPT2Config, got LlamaConfig"),
    case("GPT-2 param count of a dict", f"{G}.gpt2_param_count",
         lambda: gpt2.gpt2_param_count({"d_model": 8}), T, "config",
         r"config must be a GPT2Config, got dict"),
    # --- llmlab.models.llama -------------------------------------------------------
    case("Llama attention heads", f"{M}.MultiHeadSelfAttention",
         lambda: llama.MultiHeadSelfAttention(d_model=10, num_heads=3), V, "num_heads",
         r"d_model \(10\) must be divisible by num_heads \(3\)"),
    case("Llama attention num_heads True", f"{M}.MultiHeadSelfAttention",
         lambda: llama.MultiHeadSelfAttention(8, num_heads=True), T, "num_heads",
         r"num_heads must be an int, got bool"),
    case("Llama attention num_heads 0", f"{M}.MultiHeadSelfAttention",
         lambda: llama.MultiHeadSelfAttention(8, 0), V, "num_heads",
         r"num_heads must be an int >= 1, got 0"),
    case("Llama RoPE without max_seq_len", f"{M}.MultiHeadSelfAttention",
         lambda: llama.MultiHeadSelfAttention(8, 2, 1e4), V, "max_seq_len",
         r"max_seq_len is required when theta"),
    case("Llama RoPE odd head", f"{M}.MultiHeadSelfAttention",
         lambda: llama.MultiHeadSelfAttention(12, 4, 1e4, 8), V, "num_heads",
         r"d_model / num_heads \(d_head = 3\) must be even"),
    case("Llama attention empty", f"{M}.MultiHeadSelfAttention",
         lambda: llama.MultiHeadSelfAttention(8, 2)(_x(1, 0, 8)), V, "seq_len",
         r"seq_len is 0, expected seq_len >= 1"),
    case("Llama attention past RoPE table", f"{M}.MultiHeadSelfAttention",
         lambda: llama.MultiHeadSelfAttention(8, 2, 1e4, 4)(_x(1, 5, 8)), V, "max_seq_len",
         r"token_positions must lie in \[0, 4\) \(max_seq_len\)"),
    case("Llama attention float positions", f"{M}.MultiHeadSelfAttention",
         lambda: llama.MultiHeadSelfAttention(8, 2, 1e4, 4)(_x(1, 3, 8), _x(3)), V,
         "token_positions", r"token_positions must be an integer tensor"),
    case("Llama block wrong width", f"{M}.TransformerBlock",
         lambda: llama.TransformerBlock(8, 2, 16)(_x(1, 3, 7)), V, "d_model",
         r"x must have shape \(\.\.\., d_model=8\), got shape \(1, 3, 7\)"),
    case("Llama block d_ff 0", f"{M}.TransformerBlock",
         lambda: llama.TransformerBlock(8, 2, 0), V, "d_ff", r"d_ff must be an int >= 1"),
    case("Llama LM num_layers 0", f"{M}.TransformerLM",
         lambda: llama.TransformerLM(10, 4, 8, num_layers=0, num_heads=2, d_ff=16), V,
         "num_layers", r"num_layers must be an int >= 1, got 0"),
    case("Llama LM num_layers 2.5", f"{M}.TransformerLM",
         lambda: llama.TransformerLM(10, 4, 8, num_layers=2.5, num_heads=2, d_ff=16), T,
         "num_layers", r"num_layers must be an int, got float 2\.5"),
    case("Llama LM from a GPT2Config", f"{M}.TransformerLM",
         lambda: llama.TransformerLM.from_config(gpt2.GPT2_SMALL), T, "config",
         r"config must be a LlamaConfig, got GPT2Config; .*llmlab\.models\.gpt2"),
    case("Llama LM float ids", f"{M}.TransformerLM", lambda: _llama_lm()(torch.ones(1, 3)),
         V, "in_indices", r"in_indices must be an integer tensor, got dtype torch\.float32"),
    case("Llama LM id too large", f"{M}.TransformerLM",
         lambda: _llama_lm()(torch.tensor([[1, 10]])), V, "vocab_size",
         r"in_indices must lie in \[0, 10\) \(vocab_size\)"),
    case("Llama LM too long", f"{M}.TransformerLM", lambda: _llama_lm()(_ids(1, 5)), V,
         "context_length", r"seq_len is 5, expected 1 <= seq_len <= context_length \(4\)"),
    case("Llama LM empty", f"{M}.TransformerLM", lambda: _llama_lm()(_ids(1, 0)), V,
         "seq_len", r"seq_len is 0, expected 1 <= seq_len"),
    case("Llama LM 0-d ids", f"{M}.TransformerLM", lambda: _llama_lm()(torch.tensor(3)), V,
         "in_indices", r"in_indices must have shape \(\.\.\., seq_len\), got a 0-D tensor"),
    case("Llama LM kv_cache of the wrong kind", f"{M}.TransformerLM",
         lambda: _llama_lm()(_ids(1, 2), kv_cache=[]), T, "kv_cache",
         r"kv_cache must be a KVCache, got list"),
    case("Llama config heads", f"{M}.LlamaConfig", lambda: llama.LlamaConfig(10, 4, 10, 1, 3, 16),
         V, "num_heads", r"d_model \(10\) must be divisible by num_heads \(3\)"),
    case("Llama config num_heads 0", f"{M}.LlamaConfig",
         lambda: llama.LlamaConfig(10, 4, 10, 1, 0, 16), V, "num_heads",
         r"num_heads must be an int >= 1, got 0"),
    case("Llama config NaN rope_theta", f"{M}.LlamaConfig",
         lambda: llama.LlamaConfig(10, 4, 8, 1, 2, 16, rope_theta=NAN), V, "rope_theta",
         r"rope_theta must be a finite number in \(0, inf\), got nan"),
    case("llama_parameter_count negative vocab", f"{M}.llama_parameter_count",
         lambda: llama.llama_parameter_count(vocab_size=-100, d_model=8, num_layers=1,
                                             d_ff=16), V, "vocab_size",
         r"vocab_size must be an int >= 1, got -100"),
    # --- llmlab.kv_cache / llmlab.generation ---------------------------------------
    case("KVCache num_layers 0", "llmlab.kv_cache.KVCache", lambda: KVCache(0, 8), V,
         "num_layers", r"num_layers must be an int >= 1, got 0"),
    case("LayerKVCache float size", "llmlab.kv_cache.LayerKVCache",
         lambda: LayerKVCache(8.0), T, "max_seq_len", r"max_seq_len must be an int"),
    case("LayerKVCache update integer keys", "llmlab.kv_cache.LayerKVCache",
         lambda: LayerKVCache(8).update(_ids(1, 2, 3, 4), _x(1, 2, 3, 4)), V, "k",
         r"k must be a floating-point tensor"),
    case("LayerKVCache update other heads", "llmlab.kv_cache.LayerKVCache",
         lambda: LayerKVCache(8).update(_x(1, 2, 3, 4), _x(1, 3, 3, 4)), V, "v",
         r"v must have shape \(\.\.\., h, seq_len, d_head\).*h is 3, but k has h 2"),
    case("kv_cache_bytes negative tokens", "llmlab.kv_cache.kv_cache_bytes",
         lambda: kv_cache_bytes(1, 1, 1, -1), V, "tokens", r"tokens must be an int >= 0"),
    case("kv_cache_bytes float d_head", "llmlab.kv_cache.kv_cache_bytes",
         lambda: kv_cache_bytes(1, 1, 2.0, 1), T, "d_head", r"d_head must be an int"),
    case("generate without a model", "llmlab.generation.generate",
         lambda: generate(None, [1], 2), T, "model",
         r"model must be a TransformerLM, got NoneType"),
    case("generate with a model that has no layers", "llmlab.generation.generate",
         lambda: generate(Linear(2, 2), [1], 2), T, "model",
         r"model must be a language model .* Linear lacks vocab_size"),
    case("generate empty prompt", "llmlab.generation.generate",
         lambda: generate(_llama_lm(), [], 2), V, "prompt", r"prompt is empty"),
    case("generate max_new_tokens 0", "llmlab.generation.generate",
         lambda: generate(_llama_lm(), [1], 0), V, "max_new_tokens",
         r"max_new_tokens must be an int >= 1, got 0"),
    case("generate use_kv_cache 'no'", "llmlab.generation.generate",
         lambda: generate(_llama_lm(), [1], 2, use_kv_cache="no"), T, "use_kv_cache",
         r"use_kv_cache must be a bool"),
    case("next_token_probabilities top_p 0", "llmlab.generation.next_token_probabilities",
         lambda: next_token_probabilities(_x(5), top_p=0.0), V, "top_p",
         r"top_p must be a finite number in \(0, 1\]"),
    case("sample_next_token 2-D logits", "llmlab.generation.sample_next_token",
         lambda: sample_next_token(_x(2, 4)), V, "logits", r"logits must be \(vocab_size,\)"),
    # --- llmlab.training -----------------------------------------------------------
    case("cross_entropy float targets", "llmlab.training.cross_entropy",
         lambda: cross_entropy(_x(3, 4), _x(3)), V, "targets",
         r"targets must hold integer token ids"),
    case("cross_entropy targets elsewhere", "llmlab.training.cross_entropy",
         lambda: cross_entropy(torch.zeros(3, 4, device="meta"), _ids(3)), V, "targets",
         r"targets is on cpu but logits is on meta"),
    case("perplexity negative", "llmlab.training.perplexity", lambda: perplexity(-1.0), V,
         "loss", r"loss must be a number >= 0"),
    case("AdamW betas", "llmlab.training.AdamW",
         lambda: AdamW([nn.Parameter(_x(1))], betas=(0.9, 1.0)), V, "betas[1]",
         r"betas\[1\] must be a finite number in \[0, 1\)"),
    case("gradient_clipping 0", "llmlab.training.gradient_clipping",
         lambda: gradient_clipping([], 0.0), V, "max_l2_norm",
         r"max_l2_norm must be a finite number in \(0, inf\)"),
    case("schedule warmup too long", "llmlab.training.get_lr_cosine_schedule",
         lambda: get_lr_cosine_schedule(0, 1.0, 0.1, 21, 21), V, "cosine_cycle_iters",
         r"cosine_cycle_iters \(21\) must be greater than warmup_iters \(21\)"),
    case("cosine_schedule float warmup", "llmlab.training.cosine_schedule",
         lambda: cosine_schedule(1.0, 0.1, 2.5, 21), T, "warmup_iters",
         r"warmup_iters must be an int"),
    case("get_batch too short", "llmlab.training.get_batch",
         lambda: get_batch(np.arange(8), 2, 8), V, "context_length",
         r"dataset has 8 tokens.*more than context_length"),
    case("split_tokens fraction 1", "llmlab.training.split_tokens",
         lambda: split_tokens(np.arange(100), 1.0), V, "validation_fraction",
         r"validation_fraction must be a finite number in \(0, 1\), got 1"),
    case("split_tokens of a list", "llmlab.training.split_tokens",
         lambda: split_tokens(list(range(10))), T, "tokens",
         r"tokens must be a numpy array, numpy\.memmap or torch\.Tensor"),
    case("ByteTokenizer decode float", "llmlab.training.ByteTokenizer",
         lambda: ByteTokenizer().decode([65, 66.0]), T, "ids", r"ids must hold ints, got float"),
    case("ByteTokenizer encode_iterable of a str", "llmlab.training.ByteTokenizer",
         lambda: list(ByteTokenizer().encode_iterable("abc")), T, "iterable",
         r"iterable must yield str pieces"),
    case("save_checkpoint without an optimizer", "llmlab.training.save_checkpoint",
         lambda: save_checkpoint(Linear(2, 2), None, 0, io.BytesIO()), T, "optimizer",
         r"optimizer must be a torch\.optim\.Optimizer, got NoneType"),
    case("save_checkpoint to a number", "llmlab.training.save_checkpoint",
         lambda: save_checkpoint(Linear(2, 2), _opt(Linear(2, 2)), 0, 3), T, "out",
         r"out must be a path or a binary file object with \.write\(\), got int"),
    case("load_checkpoint into a tensor", "llmlab.training.load_checkpoint",
         lambda: load_checkpoint(io.BytesIO(), _x(2), None), T, "model",
         r"model must be a torch\.nn\.Module, got Tensor"),
    case("checkpoint_extra of None", "llmlab.training.checkpoint_extra",
         lambda: checkpoint_extra(None), T, "src", r"src must be a path or a binary file"),
    case("estimate_loss of a list", "llmlab.training.estimate_loss",
         lambda: estimate_loss(_llama_lm(), list(range(64)), 2, 4), T, "dataset",
         r"dataset must be a numpy array"),
    case("train steps -1", "llmlab.training.train",
         lambda: train(_llama_lm(), _opt(_llama_lm()), _tokens(), steps=-1, batch_size=2),
         V, "steps", r"steps must be an int >= 1, got -1"),
    case("train callback not callable", "llmlab.training.train",
         lambda: train(_llama_lm(), _opt(_llama_lm()), _tokens(), steps=1, batch_size=2,
                       callback="print"), T, "callback", r"callback must be callable"),
    case("train float val_data", "llmlab.training.train",
         lambda: train(_llama_lm(), _opt(_llama_lm()), _tokens(), steps=1, batch_size=2,
                       val_data=np.zeros(64)), V, "val_data",
         r"val_data must hold integer token ids, got dtype float64"),
    # --- llmlab.tokenization -------------------------------------------------------
    case("check_vocab_size below the bytes", "llmlab.tokenization.bpe.check_vocab_size",
         lambda: check_vocab_size(255, 0), V, "vocab_size",
         r"vocab_size \(255\) must be at least 256"),
    case("check_special_tokens a string",
         "llmlab.tokenization.pretokenize.check_special_tokens",
         lambda: check_special_tokens("<|endoftext|>"), T, "special_tokens",
         r"special_tokens must be a list of str"),
    case("special_token_pattern duplicates",
         "llmlab.tokenization.pretokenize.special_token_pattern",
         lambda: special_token_pattern(["<a>", "<a>"]), V, "special_tokens",
         r"special_tokens has duplicates"),
    case("split_on_special_tokens bytes", "llmlab.tokenization.split_on_special_tokens",
         lambda: split_on_special_tokens(b"a", []), T, "text", r"text must be a str"),
    case("pretokenize None", "llmlab.tokenization.pretokenize", lambda: pretokenize(None),
         T, "text", r"text must be a str, got NoneType"),
    case("count_pretokens bytes", "llmlab.tokenization.count_pretokens",
         lambda: count_pretokens(b"abc"), T, "text", r"text must be a str"),
    case("count_pretokens_file processes 0", "llmlab.tokenization.count_pretokens_file",
         lambda: count_pretokens_file(data.path("NOTICE.md"), num_processes=0), V,
         "num_processes", r"num_processes must be an int >= 1, got 0"),
    case("chunk_boundaries chunks 0", "llmlab.tokenization.chunk_boundaries",
         lambda: chunk_boundaries(data.path("NOTICE.md"), 0), V, "num_chunks",
         r"num_chunks must be an int >= 1, got 0"),
    case("learn_merges negative", "llmlab.tokenization.learn_merges",
         lambda: learn_merges({b"ab": 1}, -1), V, "num_merges",
         r"num_merges must be an int >= 0, got -1"),
    case("learn_merges_naive str keys", "llmlab.tokenization.learn_merges_naive",
         lambda: learn_merges_naive({"ab": 1}, 1), T, "pretoken_counts",
         r"pretoken_counts keys must be bytes"),
    case("vocab_from_merges of strings", "llmlab.tokenization.vocab_from_merges",
         lambda: vocab_from_merges([("a", "b")]), T, "merges",
         r"merges\[0\] must be a pair of non-empty bytes"),
    case("train_bpe_from_counts vocab 2.5", "llmlab.tokenization.train_bpe_from_counts",
         lambda: train_bpe_from_counts({b"ab": 1}, 2.5), T, "vocab_size",
         r"vocab_size must be an int, got float"),
    case("train_bpe path 123", "llmlab.tokenization.train_bpe",
         lambda: train_bpe(123, 300), T, "input_path",
         r"input_path must be a str or os\.PathLike"),
    case("Tokenizer cache_size -1", "llmlab.tokenization.Tokenizer",
         lambda: Tokenizer(_bytes_vocab(), [], cache_size=-1), V, "cache_size",
         r"cache_size must be an int >= 0, got -1"),
    case("Tokenizer vocab a list", "llmlab.tokenization.Tokenizer",
         lambda: Tokenizer([b"a"], []), T, "vocab", r"vocab must be a dict of int to bytes"),
    case("Tokenizer.from_files a number", "llmlab.tokenization.Tokenizer",
         lambda: Tokenizer.from_files(1, data.GPT2_MERGES), T, "vocab_path",
         r"vocab_path must be a str or os\.PathLike"),
    case("tiktoken_encoding of a dict", "llmlab.tokenization.reference.tiktoken_encoding",
         lambda: tiktoken_encoding({}), T, "tokenizer",
         r"tokenizer must be a Tokenizer, got dict"),
    case("require an empty module", "llmlab.tokenization.reference.require",
         lambda: require("", "to test"), V, "module", r"module must be a non-empty str"),
    # --- llmlab.data / llmlab.provenance -------------------------------------------
    case("data.path unknown", "llmlab.data.path", lambda: data.path("input.txt"), V, "name",
         r"name \('input\.txt'\) is not a shipped data file"),
    case("data.path int", "llmlab.data.path", lambda: data.path(3), T, "name",
         r"name must be a str, got int"),
    case("tang_poems unknown", "llmlab.data.tang_poems", lambda: data.tang_poems("tang"), V,
         "collection", r"collection \('tang'\) must be one of"),
    case("build_info device None", "llmlab.provenance.build_info",
         lambda: provenance.build_info(None), T, "device", r"device must be a non-empty str"),
    # --- llmlab.report -------------------------------------------------------------
    case("language unknown", "llmlab.report.language", lambda: report.language("fr"), V,
         "lang", r"lang must be one of \('zh', 'en'\), got 'fr'"),
    case("label bytes", "llmlab.report.label", lambda: report.label(b"x", "x"), T, "zh",
         r"zh must be a str, got bytes"),
    case("Label direct", "llmlab.report.Label", lambda: report.Label("x", None), T, "en",
         r"en must be a str, got NoneType"),
    case("text unknown language", "llmlab.report.text", lambda: report.text("x", "de"), V,
         "lang", r"lang must be one of"),
    case("yes_no of a string", "llmlab.report.yes_no", lambda: report.yes_no("yes"), T,
         "flag", r"flag must be a bool, got str"),
    case("Localized not callable", "llmlab.report.Localized",
         lambda: report.Localized("# table"), T, "make", r"make must be callable"),
    case("fmt_int of a float", "llmlab.report.fmt_int", lambda: report.fmt_int(2.7), T, "n",
         r"n must be an int, got float 2\.7"),
    case("fmt_int of a vector", "llmlab.report.fmt_int",
         lambda: report.fmt_int(torch.tensor([1, 2])), V, "n",
         r"n must be one number, got an array of shape \(2,\)"),
    case("fmt_float of a string", "llmlab.report.fmt_float", lambda: report.fmt_float("1"),
         T, "x", r"x must be a number, got str"),
    case("fmt_float negative digits", "llmlab.report.fmt_float",
         lambda: report.fmt_float(1.0, digits=-1), V, "digits",
         r"digits must be an int >= 0, got -1"),
    case("fmt_pct of None", "llmlab.report.fmt_pct", lambda: report.fmt_pct(None), T, "x",
         r"x must be a number, got NoneType"),
    case("fmt_shape int", "llmlab.report.fmt_shape", lambda: report.fmt_shape(5), T, "shape",
         r"shape must be a sequence of ints .*got 5"),
    case("fmt_shape float dim", "llmlab.report.fmt_shape",
         lambda: report.fmt_shape((2, 2.5)), T, "shape[1]", r"shape\[1\] must be an int"),
    case("table align", "llmlab.report.markdown_table",
         lambda: report.markdown_table(["a", "b"], [[1, 2]], align="lx"), V, "align",
         r"align must have one of 'l', 'c', 'r' per column \(2 columns\)"),
    case("table short row", "llmlab.report.markdown_table",
         lambda: report.markdown_table(["a", "b"], [[1]]), V, "row",
         r"row 0 has 1 cells, expected 2"),
    case("table no headers", "llmlab.report.markdown_table",
         lambda: report.markdown_table([], []), V, "headers",
         r"headers must name at least one column"),
    case("table headers a string", "llmlab.report.table",
         lambda: report.table("ab", [["x", "y"]]), T, "headers",
         r"headers must be a list of column titles, got str"),
    case("table row a string", "llmlab.report.table", lambda: report.table(["a"], ["x"]), T,
         "rows[0]", r"rows\[0\] must be a list of cells, got str"),
    case("heatmap 3-D", "llmlab.report.heatmap_svg", lambda: report.heatmap_svg(_x(2, 2, 2)),
         V, "matrix", r"matrix must be 2-D, got shape \(2, 2, 2\)"),
    case("heatmap empty", "llmlab.report.heatmap_svg",
         lambda: report.heatmap_svg(np.zeros((0, 3))), V, "matrix",
         r"matrix must hold at least one value"),
    case("heatmap labels", "llmlab.report.heatmap_svg",
         lambda: report.heatmap_svg(np.zeros((2, 2)), ["a"]), V, "row_labels",
         r"row_labels must have one label per row \(2\), got 1"),
    case("heatmap vmin above vmax", "llmlab.report.heatmap",
         lambda: report.heatmap(np.zeros((2, 2)), vmin=1.0, vmax=0.0,
                                alt=report.label("图", "figure")).render("en"), V, "vmin",
         r"vmin \(1\.0\) must be below vmax \(0\.0\)"),
    case("heatmap alt a string", "llmlab.report.heatmap",
         lambda: report.heatmap(np.zeros((2, 2)), alt="figure"), T, "alt",
         r"alt must be a Label \(both languages\), got str"),
    case("line plot empty series", "llmlab.report.line_plot_svg",
         lambda: report.line_plot_svg({}), V, "series", r"series must hold at least one line"),
    case("line plot ragged", "llmlab.report.line_plot",
         lambda: report.line_plot({"a": ([1, 2], [1])}, alt=report.label("图", "figure")), V,
         "series", r"series\['a'\] must have as many ys as xs"),
    case("line plot width 0", "llmlab.report.line_plot_svg",
         lambda: report.line_plot_svg({"a": ([1], [1])}, width=0), V, "width",
         r"width must be a finite number in \(0, inf\), got 0"),
    case("img_tag bytes", "llmlab.report.img_tag", lambda: report.img_tag(b"<svg/>", alt="x"),
         T, "svg", r"svg must be SVG text \(str\), got bytes"),
    case("figure not callable", "llmlab.report.figure",
         lambda: report.figure("<svg/>", report.label("图", "figure")), T, "make_svg",
         r"make_svg must be callable"),
    case("svg_from_figure of a string", "llmlab.report.svg_from_figure",
         lambda: report.svg_from_figure("fig"), T, "fig",
         r"fig must be a Matplotlib Figure, got str"),
    case("computation_table page 3", "llmlab.report.build.computation_table",
         lambda: computation_table(3), T, "page", r"page must be a str"),
    case("summary_recall_figure of a dict", "llmlab.report.attention.summary_recall_figure",
         lambda: report_attention.summary_recall_figure({}), T, "result",
         r"result must be a SummaryRecallResult, got dict"),
    case("summary_recall_figure learned of the wrong kind",
         "llmlab.report.attention.summary_recall_figure",
         lambda: report_attention.summary_recall_figure(
             exp_attention.run_summary_recall(lengths=(1,), trials=2), learned=[]), T,
         "learned", r"learned must be a LearnedRecallResult, got list"),
    case("recall_table of None", "llmlab.report.attention.recall_table",
         lambda: report_attention.recall_table(None, None), T, "result",
         r"result must be a SummaryRecallResult"),
    case("recall_table of other lengths", "llmlab.report.attention.recall_table",
         lambda: report_attention.recall_table(
             exp_attention.run_summary_recall(lengths=(1,), trials=2),
             exp_attention.run_learned_recall(lengths=(1, 2), steps=0, trials=2)), V,
         "learned.lengths", r"learned.lengths \(\[1, 2\]\) must equal result.lengths"),
    case("learned_recall_settings of None", "llmlab.report.attention.learned_recall_settings",
         lambda: report_attention.learned_recall_settings(None), T, "learned",
         r"learned must be a LearnedRecallResult"),
    case("scaling_table of None", "llmlab.report.attention.scaling_table",
         lambda: report_attention.scaling_table(None), T, "result",
         r"result must be a ScalingResult"),
    case("dropout_figure of a tensor", "llmlab.report.attention.dropout_figure",
         lambda: report_attention.dropout_figure(_x(3, 3)), T, "demo",
         r"demo must be a DropoutDemoResult, got Tensor"),
    case("timing_table of a list", "llmlab.report.attention.timing_table",
         lambda: report_attention.timing_table([]), T, "result", r"result must be a TimingResult"),
    case("why_multihead_table of the other result",
         "llmlab.report.multihead.why_multihead_table",
         lambda: report_multihead.why_multihead_table(
             exp_multihead.ResidualRun("pre_ln", 0.0, [], 0.0)), T, "result",
         r"result must be a WhyMultiheadResult, got ResidualRun"),
    case("why_multihead_seed_table of None", "llmlab.report.multihead.why_multihead_seed_table",
         lambda: report_multihead.why_multihead_seed_table(None), T, "result",
         r"result must be a WhyMultiheadResult"),
    case("why_multihead_answer_table of None",
         "llmlab.report.multihead.why_multihead_answer_table",
         lambda: report_multihead.why_multihead_answer_table(None, [(1, 0)]), T, "result",
         r"result must be a WhyMultiheadResult"),
    case("why_multihead_figure of None", "llmlab.report.multihead.why_multihead_figure",
         lambda: report_multihead.why_multihead_figure(None), T, "result",
         r"result must be a WhyMultiheadResult"),
    case("residual_table of None", "llmlab.report.multihead.residual_table",
         lambda: report_multihead.residual_table(None), T, "result",
         r"result must be a ResidualAblationResult"),
    case("residual_figure of None", "llmlab.report.multihead.residual_figure",
         lambda: report_multihead.residual_figure(None), T, "result",
         r"result must be a ResidualAblationResult"),
    case("init_statistics_table of None", "llmlab.report.building_blocks.init_statistics_table",
         lambda: report_blocks.init_statistics_table(None), T, "r",
         r"r must be a InitStatisticsResult"),
    case("norm_comparison_table of None", "llmlab.report.building_blocks.norm_comparison_table",
         lambda: report_blocks.norm_comparison_table(None), T, "r",
         r"r must be a NormComparisonResult"),
    case("low_precision_table of None", "llmlab.report.building_blocks.low_precision_table",
         lambda: report_blocks.low_precision_table(None), T, "r",
         r"r must be a LowPrecisionNormResult"),
    case("flops_table of None", "llmlab.report.building_blocks.flops_table",
         lambda: report_blocks.flops_table(None), T, "r", r"r must be a FlopsRuntimeResult"),
    case("kernels_table of None", "llmlab.report.building_blocks.kernels_table",
         lambda: report_blocks.kernels_table(None), T, "r", r"r must be a FlopsRuntimeResult"),
    case("norm_share_summary of None", "llmlab.report.building_blocks.norm_share_summary",
         lambda: report_blocks.norm_share_summary(None), T, "r",
         r"r must be a FlopsRuntimeResult"),
    case("activation_table of None", "llmlab.report.building_blocks.activation_table",
         lambda: report_blocks.activation_table(None), T, "r", r"r must be a ActivationResult"),
    case("activation_figure of None", "llmlab.report.building_blocks.activation_figure",
         lambda: report_blocks.activation_figure(None), T, "r",
         r"r must be a ActivationResult"),
    case("ffn_parity_table of None", "llmlab.report.building_blocks.ffn_parity_table",
         lambda: report_blocks.ffn_parity_table(None), T, "r", r"r must be a FFNParityResult"),
    case("rope_scores_figure of None", "llmlab.report.building_blocks.rope_scores_figure",
         lambda: report_blocks.rope_scores_figure(None), T, "r", r"r must be a RopeCheckResult"),
    case("rope_frequency_figure of None",
         "llmlab.report.building_blocks.rope_frequency_figure",
         lambda: report_blocks.rope_frequency_figure(None), T, "r",
         r"r must be a RopeCheckResult"),
    case("attention_check_table of None",
         "llmlab.report.building_blocks.attention_check_table",
         lambda: report_blocks.attention_check_table(None), T, "r",
         r"r must be a AttentionCheckResult"),
    case("parameter_check_table of None",
         "llmlab.report.building_blocks.parameter_check_table",
         lambda: report_blocks.parameter_check_table(None), T, "r",
         r"r must be a ParameterCheckResult"),
    # --- llmlab.experiments.attention ----------------------------------------------
    case("summary recall empty lengths", "llmlab.experiments.attention.run_summary_recall",
         lambda: exp_attention.run_summary_recall(lengths=()), V, "lengths",
         r"lengths must hold at least one value, got \(\)"),
    case("summary recall length 0", "llmlab.experiments.attention.run_summary_recall",
         lambda: exp_attention.run_summary_recall(lengths=(1, 0)), V, "lengths[1]",
         r"lengths\[1\] must be an int >= 1, got 0"),
    case("summary recall vocab 1", "llmlab.experiments.attention.run_summary_recall",
         lambda: exp_attention.run_summary_recall(vocab_size=1), V, "vocab_size",
         r"vocab_size must be an int >= 2, got 1"),
    case("learned recall steps -1", "llmlab.experiments.attention.run_learned_recall",
         lambda: exp_attention.run_learned_recall(steps=-1), V, "steps",
         r"steps must be an int >= 0, got -1"),
    case("learned recall lr 0", "llmlab.experiments.attention.run_learned_recall",
         lambda: exp_attention.run_learned_recall(lr=0.0), V, "lr",
         r"lr must be a finite number in \(0, inf\), got 0"),
    case("RecallAttention vocab 1", "llmlab.experiments.attention.RecallAttention",
         lambda: exp_attention.RecallAttention(1, 8, 6), V, "vocab_size",
         r"vocab_size must be an int >= 2, got 1"),
    case("RecallAttention target past the sequence",
         "llmlab.experiments.attention.RecallAttention",
         lambda: exp_attention.RecallAttention(10, 8, 6)(
             torch.zeros(2, 4, dtype=torch.long), torch.tensor([0, 4])), V, "target",
         r"target must lie in \[0, 4\) \(seq_len\), got values from 0 to 4"),
    case("scaling table d_k 0", "llmlab.experiments.attention.run_scaling_table",
         lambda: exp_attention.run_scaling_table(d_ks=(0,)), V, "d_ks[0]",
         r"d_ks\[0\] must be an int >= 1, got 0"),
    case("scaling table num_keys 1", "llmlab.experiments.attention.run_scaling_table",
         lambda: exp_attention.run_scaling_table(num_keys=1), V, "num_keys",
         r"num_keys must be an int >= 2, got 1"),
    case("dropout demo p 1", "llmlab.experiments.attention.run_dropout_demo",
         lambda: exp_attention.run_dropout_demo(p=1.0), V, "p",
         r"p must be a finite number in \[0, 1\), got 1"),
    case("dropout demo seq_len 0", "llmlab.experiments.attention.run_dropout_demo",
         lambda: exp_attention.run_dropout_demo(seq_len=0), V, "seq_len",
         r"seq_len must be an int >= 1, got 0"),
    case("sdpa_forward of a wrapper", "llmlab.experiments.attention.sdpa_forward",
         lambda: exp_attention.sdpa_forward(MultiHeadAttentionWrapper(4, 2, 6, 0.0, 2),
                                            _x(1, 3, 4)), T, "mha",
         r"mha must be a MultiHeadAttention"),
    case("timing heads 0", "llmlab.experiments.attention.time_attention_variants",
         lambda: exp_attention.time_attention_variants(num_heads=0), V, "num_heads",
         r"num_heads must be an int >= 1, got 0"),
    case("timing heads do not divide", "llmlab.experiments.attention.time_attention_variants",
         lambda: exp_attention.time_attention_variants(d_model=10, num_heads=3), V,
         "num_heads", r"d_model \(10\) must be divisible by num_heads \(3\)"),
    # --- llmlab.experiments.multihead ----------------------------------------------
    case("copy runs steps -1", "llmlab.experiments.multihead.run_copy_runs",
         lambda: exp_multihead.run_copy_runs(1, steps=-1), V, "steps",
         r"steps must be an int >= 1, got -1"),
    case("copy runs no seeds", "llmlab.experiments.multihead.run_copy_runs",
         lambda: exp_multihead.run_copy_runs(1, seeds=()), V, "seeds",
         r"seeds must hold at least one value"),
    case("copy runs lr 0", "llmlab.experiments.multihead.run_copy_runs",
         lambda: exp_multihead.run_copy_runs(1, lr=0), V, "lr",
         r"lr must be a finite number in \(0, inf\), got 0"),
    case("why multihead empty heads", "llmlab.experiments.multihead.run_why_multihead",
         lambda: exp_multihead.run_why_multihead(heads=()), V, "heads",
         r"heads must hold at least one value"),
    case("why multihead offset too far", "llmlab.experiments.multihead.run_why_multihead",
         lambda: exp_multihead.run_why_multihead(offsets=(1, 12)), V, "offsets[1]",
         r"offsets\[1\] must be an int in \[1, 11\], got 12"),
    case("why multihead heads do not divide", "llmlab.experiments.multihead.run_why_multihead",
         lambda: exp_multihead.run_why_multihead(heads=(5,)), V, "n_heads",
         r"d_model \(24\) must be divisible by n_heads \(5\)"),
    case("train_copy_model batch 0", "llmlab.experiments.multihead.train_copy_model",
         lambda: exp_multihead.train_copy_model(1, batch_size=0), V, "batch_size",
         r"batch_size must be an int >= 1, got 0"),
    case("evaluate_copy_model of an MHA", "llmlab.experiments.multihead.evaluate_copy_model",
         lambda: exp_multihead.evaluate_copy_model(_mha()), T, "model",
         r"model must be a OneLayerAttention"),
    case("OneLayerAttention targets 0", "llmlab.experiments.multihead.OneLayerAttention",
         lambda: exp_multihead.OneLayerAttention(10, 8, 2, 12, 0), V, "n_targets",
         r"n_targets must be an int >= 1, got 0"),
    case("OneLayerAttention too long", "llmlab.experiments.multihead.OneLayerAttention",
         lambda: exp_multihead.OneLayerAttention(10, 8, 2, 4, 1)(_ids(1, 5)), V, "seq_len",
         r"seq_len is 5, expected 1 <= seq_len <= 4"),
    case("collapse_score one position", "llmlab.experiments.multihead.collapse_score",
         lambda: exp_multihead.collapse_score(_x(2, 1, 4)), V, "hidden",
         r"hidden must have shape \(batch, seq_len, d\).*seq_len is 1, expected seq_len >= 2"),
    case("residual variant unknown kind", "llmlab.experiments.multihead.run_residual_variant",
         lambda: exp_multihead.run_residual_variant("resnet"), V, "kind",
         r"kind must be one of 'pre_ln', 'post_ln', 'no_residual', got 'resnet'"),
    case("residual variant heads", "llmlab.experiments.multihead.run_residual_variant",
         lambda: exp_multihead.run_residual_variant("pre_ln", n_heads=3), V, "n_heads",
         r"d_model \(32\) must be divisible by n_heads \(3\)"),
    case("residual ablation empty kinds", "llmlab.experiments.multihead.run_residual_ablation",
         lambda: exp_multihead.run_residual_ablation(kinds=()), V, "kinds",
         r"kinds must hold at least one of"),
    case("residual ablation window", "llmlab.experiments.multihead.run_residual_ablation",
         lambda: exp_multihead.run_residual_ablation(steps=3, window=4), V, "window",
         r"window must be an int in \[1, 3\], got 4"),
    # --- llmlab.experiments.building_blocks ----------------------------------------
    case("init statistics no shapes", "llmlab.experiments.building_blocks.run_init_statistics",
         lambda: exp_blocks.run_init_statistics(linear_shapes=()), V, "linear_shapes",
         r"linear_shapes must hold at least one"),
    case("init statistics triple", "llmlab.experiments.building_blocks.run_init_statistics",
         lambda: exp_blocks.run_init_statistics(linear_shapes=((2, 3, 4),)), V,
         "linear_shapes[0]", r"linear_shapes\[0\] must be a pair \(d_in, d_out\)"),
    case("norm comparison scale 0", "llmlab.experiments.building_blocks.run_norm_comparison",
         lambda: exp_blocks.run_norm_comparison(scale=0.0), V, "scale",
         r"scale must be a finite number in \(0, inf\)"),
    case("low precision d_model 0",
         "llmlab.experiments.building_blocks.run_low_precision_norm",
         lambda: exp_blocks.run_low_precision_norm(d_model=0), V, "d_model",
         r"d_model must be an int >= 1, got 0"),
    case("flops d_head 0", "llmlab.experiments.building_blocks.run_flops_vs_runtime",
         lambda: exp_blocks.run_flops_vs_runtime(d_head=0), V, "d_head",
         r"d_head must be an int >= 1, got 0"),
    case("flops seq_len 2.5", "llmlab.experiments.building_blocks.run_flops_vs_runtime",
         lambda: exp_blocks.run_flops_vs_runtime(seq_len=2.5), T, "seq_len",
         r"seq_len must be an int"),
    case("activations empty points",
         "llmlab.experiments.building_blocks.run_activation_values",
         lambda: exp_blocks.run_activation_values(points=()), V, "points",
         r"points must hold at least one value"),
    case("activations lo above hi", "llmlab.experiments.building_blocks.run_activation_values",
         lambda: exp_blocks.run_activation_values(lo=3.0, hi=-4.0), V, "lo",
         r"lo \(3\.0\) must be below hi \(-4\.0\)"),
    case("ffn parity empty", "llmlab.experiments.building_blocks.run_ffn_parity",
         lambda: exp_blocks.run_ffn_parity(d_models=()), V, "d_models",
         r"d_models must hold at least one value"),
    case("rope check odd d_k", "llmlab.experiments.building_blocks.run_rope_check",
         lambda: exp_blocks.run_rope_check(d_k=7), V, "d_k", r"d_k must be even"),
    case("attention check heads", "llmlab.experiments.building_blocks.run_attention_check",
         lambda: exp_blocks.run_attention_check(num_heads=3), V, "num_heads",
         r"d_model \(64\) must be divisible by num_heads \(3\)"),
    case("parameter check unknown preset",
         "llmlab.experiments.building_blocks.run_parameter_check",
         lambda: exp_blocks.run_parameter_check(names=("GPT2_SMALL",)), V, "names[0]",
         r"names\[0\] must be one of 'LLAMA_TOY', 'CS336_TINYSTORIES', 'LLAMA2_7B'"),
    # --- llmlab.experiments.tokenization -------------------------------------------
    case("tokenization corpus text unknown", "llmlab.experiments.tokenization.corpus_text",
         lambda: exp_tok.corpus_text("wiki"), V, "corpus", r"corpus \('wiki'\) must be one"),
    case("granularity num_chars 0", "llmlab.experiments.tokenization.run_granularity",
         lambda: exp_tok.run_granularity(num_chars=0), V, "num_chars",
         r"num_chars must be an int in \[1, "),
    case("bpe steps split", "llmlab.experiments.tokenization.run_bpe_steps",
         lambda: exp_tok.run_bpe_steps(split="chars"), V, "split",
         r"split \('chars'\) must be"),
    case("bpe steps empty text", "llmlab.experiments.tokenization.run_bpe_steps",
         lambda: exp_tok.run_bpe_steps(text=""), V, "text", r"text must be a non-empty str"),
    case("corpus training negative step",
         "llmlab.experiments.tokenization.run_corpus_training",
         lambda: exp_tok.run_corpus_training(merge_steps=(0, -1)), V, "merge_steps[1]",
         r"merge_steps\[1\] must be an int >= 0, got -1"),
    case("gpt2 agreement unknown key", "llmlab.experiments.tokenization.run_gpt2_agreement",
         lambda: exp_tok.run_gpt2_agreement(keys=("klingon",)), V, "keys[0]",
         r"keys\[0\] must be one of 'english'"),
    case("chinese tokenizers context 0",
         "llmlab.experiments.tokenization.run_chinese_tokenizers",
         lambda: exp_tok.run_chinese_tokenizers(context_length=0), V, "context_length",
         r"context_length must be an int >= 1, got 0"),
    case("pitfalls empty text", "llmlab.experiments.tokenization.run_tokenizer_pitfalls",
         lambda: exp_tok.run_tokenizer_pitfalls(partial_text=""), V, "partial_text",
         r"partial_text must be a non-empty str"),
    case("train corpus merges -1", "llmlab.experiments.tokenization.run_train_corpus",
         lambda: exp_tok.run_train_corpus("tang", 100, -1), V, "num_merges",
         r"num_merges must be an int >= 0, got -1"),
    case("time_training repeats 0", "llmlab.experiments.tokenization.time_training",
         lambda: exp_tok.time_training(repeats=0), V, "repeats",
         r"repeats must be an int >= 1, got 0"),
    # --- llmlab.experiments.training -----------------------------------------------
    case("TinyLMSettings warm-up too long", "llmlab.experiments.training.TinyLMSettings",
         lambda: exp_training.TinyLMSettings(steps=10, warmup_iters=10), V, "warmup_iters",
         r"warmup_iters must be an int in \[0, 9\], got 10"),
    case("TinyLMSettings min_lr above max", "llmlab.experiments.training.TinyLMSettings",
         lambda: exp_training.TinyLMSettings(min_lr=1.0), V, "min_lr",
         r"min_lr must be a finite number in \[0, 0\.01\], got 1"),
    case("training corpus text unknown", "llmlab.experiments.training.corpus_text",
         lambda: exp_training.corpus_text(3), T, "corpus", r"corpus must be a str, got int"),
    case("poem_line_has_shape of bytes", "llmlab.experiments.training.poem_line_has_shape",
         lambda: exp_training.poem_line_has_shape(b"x"), T, "line", r"line must be a str"),
    case("poem_shape_share flag", "llmlab.experiments.training.poem_shape_share",
         lambda: exp_training.poem_shape_share("a\nb", drop_last=0), T, "drop_last",
         r"drop_last must be a bool"),
    case("poem_line_halves of a list", "llmlab.experiments.training.poem_line_halves",
         lambda: exp_training.poem_line_halves(["白日"]), T, "line", r"line must be a str"),
    case("poem_halves flag", "llmlab.experiments.training.poem_halves",
         lambda: exp_training.poem_halves("a\nb", drop_last="no"), T, "drop_last",
         r"drop_last must be a bool"),
    case("corpus_tokenizer unknown corpus", "llmlab.experiments.training.corpus_tokenizer",
         lambda: exp_training.corpus_tokenizer("wiki", 256), V, "corpus",
         r"corpus must be one of 'shakespeare', 'tang', got 'wiki'"),
    case("corpus_tokenizer vocabulary a float",
         "llmlab.experiments.training.corpus_tokenizer",
         lambda: exp_training.corpus_tokenizer("tang", 300.0), T, "vocab_size",
         r"vocab_size must be an int, got float"),
    case("corpus_tokenizer vocabulary past the merges",
         "llmlab.experiments.training.corpus_tokenizer",
         lambda: exp_training.corpus_tokenizer("tang", 1258), V, "vocab_size",
         r"vocab_size must be an int in \[256, 1257\], got 1258"),
    case("corpus_ids unknown corpus", "llmlab.experiments.training.corpus_ids",
         lambda: exp_training.corpus_ids("wiki", 256), V, "corpus",
         r"corpus must be one of 'shakespeare', 'tang', got 'wiki'"),
    case("loss at init empty vocab", "llmlab.experiments.training.run_loss_at_init",
         lambda: exp_training.run_loss_at_init(vocab_sizes=()), V, "vocab_sizes",
         r"vocab_sizes must hold at least one value"),
    case("adamw check steps 0", "llmlab.experiments.training.run_adamw_check",
         lambda: exp_training.run_adamw_check(steps=0), V, "steps",
         r"steps must be an int >= 1, got 0"),
    case("lr schedule total 0", "llmlab.experiments.training.run_lr_schedule",
         lambda: exp_training.run_lr_schedule(total_iters=0), V, "total_iters",
         r"total_iters must be an int >= 1, got 0"),
    case("lr schedule warm-up past the cycle", "llmlab.experiments.training.run_lr_schedule",
         lambda: exp_training.run_lr_schedule(warmup_iters=200), V, "cosine_cycle_iters",
         r"cosine_cycle_iters \(150\) must be greater than warmup_iters \(200\)"),
    case("gradient clipping 0", "llmlab.experiments.training.run_gradient_clipping",
         lambda: exp_training.run_gradient_clipping(max_l2_norm=0.0), V, "max_l2_norm",
         r"max_l2_norm must be a finite number in \(0, inf\)"),
    case("training run unknown corpus", "llmlab.experiments.training.run_training_run",
         lambda: exp_training.run_training_run(corpus="klingon"), V, "corpus",
         r"corpus must be one of 'shakespeare', 'tang', got 'klingon'"),
    case("training run one step", "llmlab.experiments.training.run_training_run",
         lambda: exp_training.run_training_run(steps=1), V, "steps",
         r"steps must be an int >= 2, got 1"),
    case("training run sample rows", "llmlab.experiments.training.run_training_run",
         lambda: exp_training.run_training_run(sample_rows=(1, 1)), V, "sample_rows",
         r"sample_rows must be 3 counts"),
    case("sampling empty prompt", "llmlab.experiments.training.run_sampling",
         lambda: exp_training.run_sampling(prompt=""), V, "prompt",
         r"prompt must be a non-empty str"),
    case("sampling n_top above the vocabulary", "llmlab.experiments.training.run_sampling",
         lambda: exp_training.run_sampling(n_top=2000), V, "n_top",
         r"n_top must be an int in \[1, 1257\], got 2000"),
    case("kv cache check prompt too long", "llmlab.experiments.training.run_kv_cache_check",
         lambda: exp_training.run_kv_cache_check(prompt_lengths=(65,)), V,
         "prompt_lengths[0]", r"prompt_lengths\[0\] must be an int in \[1, 64\], got 65"),
    case("checkpoint resume 0 steps", "llmlab.experiments.training.run_checkpoint_resume",
         lambda: exp_training.run_checkpoint_resume(steps_each=0), V, "steps_each",
         r"steps_each must be an int >= 1, got 0"),
    # --- llmlab.compute / llmlab.distributed / llmlab.experiments.distributed ---
    case("activation_elements a GPT-2 config", "llmlab.compute.activation_elements",
         lambda: compute.activation_elements(gpt2.GPT2Config(10, 4, 8, 1, 2), 1), T,
         "config", r"config must be a LlamaConfig, got GPT2Config"),
    case("checkpointed_layers of a Linear", "llmlab.compute.checkpointed_layers",
         lambda: compute.checkpointed_layers(nn.Linear(2, 2)), V, "model",
         r"model must have a non-empty nn.ModuleList \.layers .*got a Linear with no "
         r"\.layers"),
    case("classify_saved two families of one size", "llmlab.compute.classify_saved",
         lambda: compute.classify_saved([], {"B·T·d": 8, "B·T·d_ff": 8}), V, "sizes",
         r"sizes must have distinct element counts, got \{'B·T·d': 8, 'B·T·d_ff': 8\}"),
    case("classify_saved kinds a str", "llmlab.compute.classify_saved",
         lambda: compute.classify_saved([], {"B·T·d": 8}, kinds="activation"), T, "kinds",
         r"kinds must be a tuple of kinds, got str 'activation'"),
    case("count_flops without a model", "llmlab.compute.count_flops",
         lambda: compute.count_flops(None, 1, 4), T, "model",
         r"model must be a torch.nn.Module, got NoneType"),
    case("count_llama_flops batch 0", "llmlab.compute.count_llama_flops",
         lambda: compute.count_llama_flops(llama.LLAMA_TOY, 0), V, "batch_size",
         r"batch_size must be an int >= 1, got 0"),
    case("flops_per_token parameters a float", "llmlab.compute.flops_per_token",
         lambda: compute.flops_per_token(1.24e8), T, "n_parameters",
         r"n_parameters must be an int, got float"),
    case("gpt2_matmul_parameters a Llama config", "llmlab.compute.gpt2_matmul_parameters",
         lambda: compute.gpt2_matmul_parameters(llama.LLAMA_TOY), T, "config",
         r"config must be a GPT2Config, got LlamaConfig; a LlamaConfig goes to "
         r"llama_matmul_parameters"),
    case("gpu_hours utilisation in percent", "llmlab.compute.gpu_hours",
         lambda: compute.gpu_hours(1e21, compute.A100_80GB, 40), V, "utilisation",
         r"utilisation must be a finite number in \(0, 1\], got 40"),
    case("gpu_hours accelerator by name", "llmlab.compute.gpu_hours",
         lambda: compute.gpu_hours(1e21, "A100", 0.4), T, "accelerator",
         r"accelerator must be an Accelerator, got str; look one up by name"),
    case("gradient_bytes of a parameter list", "llmlab.compute.gradient_bytes",
         lambda: compute.gradient_bytes(list(nn.Linear(2, 2).parameters())), T, "model",
         r"model must be a torch.nn.Module, got list"),
    case("implied_utilisation 0 hours", "llmlab.compute.implied_utilisation",
         lambda: compute.implied_utilisation(1e21, 0.0, compute.A100_80GB), V, "hours",
         r"hours must be a finite number in \(0, inf\), got 0"),
    case("llama_matmul_parameters a GPT-2 config", "llmlab.compute.llama_matmul_parameters",
         lambda: compute.llama_matmul_parameters(gpt2.GPT2Config(10, 4, 8, 1, 2)), T,
         "config", r"config must be a LlamaConfig, got GPT2Config; a GPT2Config goes to "
         r"gpt2_matmul_parameters"),
    case("matmul rate dtype by name", "llmlab.compute.matmul_flops_per_second",
         lambda: compute.matmul_flops_per_second(64, 1, dtype="bfloat16"), T, "dtype",
         r"dtype must be a torch.dtype \(e.g. torch.float32\), got str"),
    case("matmul rate integer dtype", "llmlab.compute.matmul_flops_per_second",
         lambda: compute.matmul_flops_per_second(64, 1, dtype=torch.int64), V, "dtype",
         r"dtype must be a floating-point torch.dtype, got torch.int64"),
    case("optimizer_state_bytes of a model", "llmlab.compute.optimizer_state_bytes",
         lambda: compute.optimizer_state_bytes(nn.Linear(2, 2)), T, "optimizer",
         r"optimizer must be a torch.optim.Optimizer, got Linear"),
    case("parameter_bytes of a generator", "llmlab.compute.parameter_bytes",
         lambda: compute.parameter_bytes(nn.Linear(2, 2).parameters()), T, "model",
         r"model must be a torch.nn.Module, got generator"),
    case("record_saved_tensors of a parameter list", "llmlab.compute.record_saved_tensors",
         lambda: compute.record_saved_tensors(list(nn.Linear(2, 2).parameters())), T,
         "model", r"model must be a torch.nn.Module or None, got list"),
    case("tensor_bytes of one tensor", "llmlab.compute.tensor_bytes",
         lambda: compute.tensor_bytes(_x(3, 4)), T, "tensors",
         r"tensors must be an iterable of tensors, got a single Tensor"),
    case("tensor_bytes of a number", "llmlab.compute.tensor_bytes",
         lambda: compute.tensor_bytes([_x(2), 3.0]), T, "tensors[1]",
         r"tensors\[1\] must be a torch.Tensor, got float"),
    case("training_state_bytes precision bf16", "llmlab.compute.training_state_bytes",
         lambda: compute.training_state_bytes(10, "bf16"), V, "precision",
         r"precision must be 'fp32' or 'mixed', got 'bf16'"),
    case("zero_bytes_per_device no devices", "llmlab.compute.zero_bytes_per_device",
         lambda: compute.zero_bytes_per_device(7.5e9, 0, 3), V, "n_devices",
         r"n_devices must be an int >= 1, got 0"),
    case("zero_bytes_per_device stage 4", "llmlab.compute.zero_bytes_per_device",
         lambda: compute.zero_bytes_per_device(7.5e9, 64, 4), V, "stage",
         r"stage must be 0, 1, 2 or 3, got 4"),
    case("all_reduce_seconds nothing to send", "llmlab.distributed.all_reduce_seconds",
         lambda: dist.all_reduce_seconds(0), V, "numel",
         r"numel must be an int >= 1, got 0"),
    case("ddp_train world_size 0", "llmlab.distributed.ddp_train",
         lambda: dist.ddp_train(llama.LLAMA_TOY, _tokens(), world_size=0), V,
         "world_size", r"world_size must be an int >= 1, got 0"),
    case("ddp_train max_grad_norm nan", "llmlab.distributed.ddp_train",
         lambda: dist.ddp_train(llama.LLAMA_TOY, _tokens(), context_length=8,
                                max_grad_norm=NAN), V, "max_grad_norm",
         r"max_grad_norm must be a finite number in \(0, inf\), got nan"),
    case("ddp_train tokens a list", "llmlab.distributed.ddp_train",
         lambda: dist.ddp_train(llama.LLAMA_TOY, list(range(100)), context_length=8), T,
         "train_data", r"train_data must be a 1-D numpy array or tensor of token ids, "
         r"got list"),
    case("distributed_train lr_schedule a rate", "llmlab.distributed.distributed_train",
         lambda: dist.distributed_train(_llama_lm(), _opt(_llama_lm()), _tokens(), steps=1,
                                        batch_size=2, context_length=4, lr_schedule=1e-3),
         T, "lr_schedule", r"lr_schedule must be callable, got float 0.001"),
    case("fsdp_train lr nan", "llmlab.distributed.fsdp_train",
         lambda: dist.fsdp_train(llama.LLAMA_TOY, _tokens(), context_length=8, lr=NAN), V,
         "lr", r"lr must be a finite number in \[0, inf\), got nan"),
    case("init_distributed backend mpi", "llmlab.distributed.init_distributed",
         lambda: dist.init_distributed("mpi"), V, "backend",
         r"backend must be one of auto, gloo, nccl, got 'mpi'"),
    case("launch a name", "llmlab.distributed.launch",
         lambda: dist.launch("train_rank"), T, "fn",
         r"fn must be callable, got str 'train_rank'"),
    case("launch a lambda", "llmlab.distributed.launch",
         lambda: dist.launch(lambda: 0), V, "fn",
         r"fn must be a module-level function \(the processes import it by name\), got "
         r".*<lambda>"),
    case("launch world_size 0", "llmlab.distributed.launch",
         lambda: dist.launch(dist.all_reduce_seconds, (8,), world_size=0), V, "world_size",
         r"world_size must be an int >= 1, got 0"),
    case("resolve_backend upper case", "llmlab.distributed.resolve_backend",
         lambda: dist.resolve_backend("NCCL"), V, "backend",
         r"backend must be one of auto, gloo, nccl, got 'NCCL'"),
    case("shard_fsdp without a model", "llmlab.distributed.shard_fsdp",
         lambda: dist.shard_fsdp(None), T, "model",
         r"model must be a torch.nn.Module, got NoneType"),
    case("train_rank strategy zero", "llmlab.distributed.train_rank",
         lambda: dist.train_rank(llama.LLAMA_TOY, _tokens(), strategy="zero", steps=1,
                                 batch_size=2, context_length=8), V, "strategy",
         r"strategy must be 'ddp' or 'fsdp', got 'zero'"),
    case("train_rank context past the model", "llmlab.distributed.train_rank",
         lambda: dist.train_rank(llama.LLAMA_TOY, _tokens(), strategy="ddp", steps=1,
                                 batch_size=2, context_length=65), V, "context_length",
         r"context_length \(65\) exceeds the model's context_length \(64\)"),
    case("wrap_ddp without a model", "llmlab.distributed.wrap_ddp",
         lambda: dist.wrap_ddp(None), T, "model",
         r"model must be a torch.nn.Module, got NoneType"),
    case("ddp check odd batch", "llmlab.experiments.distributed.run_ddp_check",
         lambda: exp_dist.run_ddp_check(batch_size=7), V, "batch_size",
         r"batch_size \(7\) must be a multiple of world_size \(2\)"),
    case("flop count one length", "llmlab.experiments.distributed.run_flop_count",
         lambda: exp_dist.run_flop_count(sweep_context_lengths=4096), T,
         "sweep_context_lengths", r"sweep_context_lengths must be a tuple of ints, got "
         r"int 4096"),
    case("fsdp check no processes", "llmlab.experiments.distributed.run_fsdp_check",
         lambda: exp_dist.run_fsdp_check(world_size=0), V, "world_size",
         r"world_size must be an int >= 1, got 0"),
    case("memory accounting batch 0", "llmlab.experiments.distributed.run_memory_accounting",
         lambda: exp_dist.run_memory_accounting(batch_size=0), V, "batch_size",
         r"batch_size must be an int >= 1, got 0"),
    case("parallel training 0 steps", "llmlab.experiments.distributed.run_parallel_training",
         lambda: exp_dist.run_parallel_training(steps=0), V, "steps",
         r"steps must be an int >= 1, got 0"),
    case("training cost utilisation in percent",
         "llmlab.experiments.distributed.run_training_cost",
         lambda: exp_dist.run_training_cost(utilisation=40), V, "utilisation",
         r"utilisation must be a finite number in \(0, 1\], got 40"),
    case("zero memory negative device count", "llmlab.experiments.distributed.run_zero_memory",
         lambda: exp_dist.run_zero_memory(n_devices=(8, -64)), V, "n_devices[1]",
         r"n_devices\[1\] must be an int >= 1, got -64"),
    case("cpu utilisation 0 steps", "llmlab.experiments.distributed.time_cpu_utilisation",
         lambda: exp_dist.time_cpu_utilisation(steps=0), V, "steps",
         r"steps must be an int >= 1, got 0"),
    case("ddp communication odd batch",
         "llmlab.experiments.distributed.time_ddp_communication",
         lambda: exp_dist.time_ddp_communication(batch_size=15), V, "batch_size",
         r"batch_size \(15\) must be a multiple of world_size \(2\)"),
    case("throughput settings a dict", "llmlab.experiments.training.time_training_throughput",
         lambda: exp_training.time_training_throughput(settings={}), T, "settings",
         r"settings must be a TinyLMSettings, got dict"),
    case("generation timing context 1", "llmlab.experiments.training.time_generation",
         lambda: exp_training.time_generation(context_length=1), V, "context_length",
         r"context_length must be an int >= 2, got 1"),
]

# Good-input controls: next to each family of mistakes, the call done right goes through.
GOOD: list[tuple[str, Callable[[], object]]] = [
    ("check_int at the minimum", lambda: checks.check_int("n", 1)),
    ("check_tensor returns the sizes",
     lambda: checks.check_tensor("x", _x(2, 3), "n d", d=3) == {"n": 2, "d": 3}),
    ("softmax of one element", lambda: softmax(_x(2, 1))),
    ("softmax along dim 0", lambda: softmax(_x(2, 3), dim=0)),
    ("causal_mask of 1", lambda: causal_mask(1)),
    ("sdpa with a (T, T) mask over a batch",
     lambda: scaled_dot_product_attention(_x(2, 3, 4), _x(2, 3, 4), _x(2, 3, 4),
                                          causal_mask(3))),
    ("sdpa with a broadcast key mask",
     lambda: scaled_dot_product_attention(_x(2, 3, 4), _x(2, 3, 4), _x(2, 3, 4),
                                          torch.ones(2, 1, 3, dtype=torch.bool))),
    ("sdpa in float64", lambda: scaled_dot_product_attention(
        *(_x(3, 4, dtype=torch.float64) for _ in range(3)))),
    ("toy_embeddings of one word", lambda: toy_embeddings(["a"], dim=1)),
    ("dot scores float64", lambda: dot_scores_loop(_x(2, dtype=torch.float64),
                                                    _x(3, 2, dtype=torch.float64))),
    ("causal weights scale 2", lambda: causal_weights_masked(_x(3, 3), scale=2.0)),
    ("simple attention batched", lambda: simple_self_attention(_x(2, 3, 4))),
    ("V1 at context 1", lambda: SelfAttentionV1(1, 1)(_x(1, 1, 1))),
    ("V1 in float64", lambda: SelfAttentionV1(3, 2).double()(_x(1, 2, 3, dtype=torch.float64))),
    ("causal at context_length", lambda: CausalAttention(3, 2, 6, 0.0)(_x(2, 6, 3))),
    ("causal dropout just under 1", lambda: CausalAttention(3, 2, 6, dropout=0.99)),
    ("MHA one head", lambda: MultiHeadAttention(4, 4, 6, 0.0, 1)(_x(1, 3, 4))),
    ("trunc_normal_std small", lambda: trunc_normal_std(1e-3)),
    ("Linear 1 -> 1", lambda: Linear(1, 1)(_x(5, 1))),
    ("Embedding last id", lambda: Embedding(10, 4)(torch.tensor([9]))),
    ("Embedding int32 ids", lambda: Embedding(10, 4)(torch.tensor([1, 2], dtype=torch.int32))),
    ("RMSNorm eps 0", lambda: RMSNorm(4, eps=0.0)(_x(2, 4))),
    ("RMSNorm bf16 input", lambda: RMSNorm(4)(_x(2, 4, dtype=torch.bfloat16))),
    ("rms_norm fp16 with a float32 gain",
     lambda: rms_norm(_x(2, 4, dtype=torch.float16), _x(4))),
    ("swiglu_hidden_dim 1", lambda: swiglu_hidden_dim(1)),
    ("ReLUFFN d_ff 1", lambda: ReLUFFN(4, d_ff=1)(_x(2, 4))),
    ("RoPE position max_seq_len - 1",
     lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(1, 4), torch.tensor([7]))),
    ("RoPE positions broadcast over heads",
     lambda: RotaryPositionalEmbedding(1e4, 4, 8)(_x(2, 3, 5, 4), torch.arange(5))),
    ("GPT-2 config divisible", lambda: gpt2.GPT2Config(d_model=12, n_heads=3)),
    ("GPT-2 LM at context_length", lambda: _gpt2_lm()(_ids(2, 4))),
    ("GPT-2 LM with a key mask",
     lambda: _gpt2_lm()(_ids(2, 3), key_mask=torch.ones(2, 3, dtype=torch.bool))),
    ("GPT-2 LM from its config", lambda: gpt2.TransformerLM.from_config(
        gpt2.GPT2Config(10, 4, 8, 1, 2))),
    ("GPT-2 attention with an all-False key_mask row",
     lambda: gpt2.MultiHeadSelfAttention(8, 2)(_x(1, 3, 8),
                                               torch.zeros(1, 3, dtype=torch.bool))),
    ("Llama attention with positions", lambda: llama.MultiHeadSelfAttention(8, 2, 1e4, 4)(
        _x(1, 3, 8), torch.tensor([1, 2, 3]))),
    ("Llama LM one layer, one token", lambda: _llama_lm()(_ids(1, 1))),
    ("Llama LM unbatched ids", lambda: _llama_lm()(_ids(4))),
    ("Llama LM from its config", lambda: llama.TransformerLM.from_config(llama.LLAMA_TOY,
                                                                         device="meta")),
    ("llama_parameter_count extra keywords",
     lambda: llama.llama_parameter_count(10, 8, 1, 16, num_heads=2)),
    ("KVCache step by step", lambda: _llama_lm()(_ids(1, 1), kv_cache=KVCache(1, 4))),
    ("kv_cache_bytes of no tokens", lambda: kv_cache_bytes(1, 1, 1, 0) == 0),
    ("generate one token", lambda: generate(_llama_lm(), [1], 1, greedy=True)),
    ("split_tokens a small fraction", lambda: split_tokens(np.arange(100), 0.01)),
    ("ByteTokenizer decode a tensor", lambda: ByteTokenizer().decode(torch.tensor([65]))),
    ("save_checkpoint to a buffer",
     lambda: save_checkpoint(Linear(2, 2), _opt(Linear(2, 2)), 0, io.BytesIO())),
    ("train one step", lambda: train(_llama_lm(), _opt(_llama_lm()), _tokens(), steps=1,
                                     batch_size=2)),
    ("vocab_from_merges of one merge", lambda: vocab_from_merges([(b"a", b"b")])),
    ("Tokenizer cache_size 0", lambda: Tokenizer(_bytes_vocab(), [], cache_size=0)),
    ("split_on_special_tokens without specials", lambda: split_on_special_tokens("ab", [])),
    ("fmt_int of a numpy int", lambda: report.fmt_int(np.int64(3)) == "3"),
    ("fmt_int of a 0-d tensor", lambda: report.fmt_int(torch.tensor(1234)) == "1,234"),
    ("fmt_float of a 0-d tensor", lambda: report.fmt_float(torch.tensor(0.5), 1) == "0.5"),
    ("fmt_float of nan is shown", lambda: report.fmt_float(NAN) == "nan"),
    ("fmt_pct of an int", lambda: report.fmt_pct(1) == "100.0%"),
    ("table from a generator", lambda: "| x |" in str(report.table(
        ["a"], ([c] for c in "x")))),
    ("heatmap 1 x 1", lambda: report.heatmap_svg([[1.0]], lang="en")),
    ("dropout demo p 0", lambda: exp_attention.run_dropout_demo.uncached(p=0.0, seq_len=2)),
    ("collapse_score of two positions", lambda: exp_multihead.collapse_score(
        torch.randn(2, 2, 4))),
    ("TinyLMSettings defaults", lambda: exp_training.TinyLMSettings()),
    ("poem_shape_share", lambda: exp_training.poem_shape_share("a\nb", drop_last=False)),
    ("tensor_bytes of a generator", lambda: compute.tensor_bytes(
        p for p in nn.Linear(2, 2).parameters()) == 24),
    ("record_saved_tensors without a model",
     lambda: compute.record_saved_tensors() is not None),
    ("checkpointed_layers of a Llama LM",
     lambda: compute.checkpointed_layers(_llama_lm()) is not None),
    ("classify_saved kinds as a list", lambda: compute.classify_saved(
        [], {"B·T·d": 8}, kinds=["activation", "buffer"]) == {"B·T·d": 0, "other": 0}),
]


def _case_ids() -> list[str]:
    return [c.id for c in CASES]


def test_enough_distinct_bad_inputs(record_property) -> None:
    ids = _case_ids()
    assert len(set(ids)) == len(ids), "duplicate case ids"
    record_property("bad_inputs", len(ids))
    record_property("good_controls", len(GOOD))
    assert len(ids) >= 150, f"only {len(ids)} bad inputs"


@pytest.mark.parametrize("bad", CASES, ids=_case_ids())
def test_bad_input_is_refused_with_a_clear_message(bad: Case) -> None:
    with pytest.raises(bad.error) as info:
        bad.call()
    message = str(info.value)
    # the message names the argument, as a whole word ...
    assert re.search(rf"(?<![\w]){re.escape(bad.arg)}(?![\w])", message), (
        f"{bad.id}: the message does not name {bad.arg!r}: {message}")
    # ... and says what it got and what was expected
    assert re.search(bad.match, message), f"{bad.id}: {message!r} !~ {bad.match!r}"
    assert type(info.value) is bad.error, f"{bad.id}: {type(info.value).__name__}"


@pytest.mark.parametrize(("name", "call"), GOOD, ids=[g[0] for g in GOOD])
def test_good_input_goes_through(name: str, call: Callable[[], object]) -> None:
    result = call()
    assert result is not False, name


# --------------------------------------------------------------------------------------
# every public name that takes arguments has a bad input
# --------------------------------------------------------------------------------------
PUBLIC_MODULES = [
    "llmlab.checks", "llmlab.functional", "llmlab.attention", "llmlab.layers",
    "llmlab.norm", "llmlab.feed_forward", "llmlab.position", "llmlab.params",
    "llmlab.models.gpt2", "llmlab.models.llama", "llmlab.kv_cache", "llmlab.generation",
    "llmlab.training", "llmlab.tokenization", "llmlab.tokenization.bpe",
    "llmlab.tokenization.pretokenize", "llmlab.tokenization.reference", "llmlab.data",
    "llmlab.provenance", "llmlab.report", "llmlab.report.attention",
    "llmlab.report.multihead", "llmlab.report.building_blocks", "llmlab.report.build",
    "llmlab.experiments.attention", "llmlab.experiments.multihead",
    "llmlab.experiments.building_blocks", "llmlab.experiments.tokenization",
    "llmlab.experiments.training", "llmlab.experiments.distributed", "llmlab.compute",
    "llmlab.distributed", "llmlab.report.tokenization", "llmlab.report.training",
    "llmlab.report.distributed", "llmlab.report.diagrams",
]
# Public names without a bad-input case, and why.
EXEMPT = {
    "llmlab.tokenization.bytes_to_unicode": "takes no arguments",
    "llmlab.tokenization.gpt2_tokenizer": "takes no arguments",
    "llmlab.data.shakespeare": "takes no arguments",
    "llmlab.provenance.git_commit": "takes no arguments",
    "llmlab.experiments.training.machine_description": "takes no arguments",
    "llmlab.distributed.AllReduceTimer": "takes no arguments (DDP calls its hook)",
}
# Not in PUBLIC_MODULES: llmlab.cache and llmlab.precompute (the build's machinery,
# left alone by this test), llmlab.cli (bad flags exit with code 2 and one line on
# stderr, tests/test_cli.py).


def _is_data_class(obj: object) -> bool:
    """Results and records: dataclasses and NamedTuples that experiments fill in."""
    if not inspect.isclass(obj):
        return False
    validated = {"GPT2Config", "LlamaConfig", "TinyLMSettings", "Label"}
    if obj.__name__ in validated:
        return False
    return hasattr(obj, "__dataclass_fields__") or hasattr(obj, "_fields")


def _public_callables() -> dict[str, object]:
    found: dict[int, tuple[str, object]] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if not callable(obj) or _is_data_class(obj) or inspect.isclass(obj) and (
                    issubclass(obj, BaseException)):
                continue
            home = getattr(obj, "__module__", module_name)
            name = f"{module_name}.{attr}"
            key = id(getattr(obj, "uncached", obj))
            # prefer the name of the module the object is defined in
            if key not in found or home == module_name:
                found[key] = (name, obj)
    return dict(found.values())


def test_every_public_name_has_a_bad_input() -> None:
    public = _public_callables()
    covered = set()
    by_object = {id(getattr(o, "uncached", o)): n for n, o in public.items()}
    for c in CASES:
        module_name, _, attr = c.target.rpartition(".")
        obj = getattr(importlib.import_module(module_name), attr)
        covered.add(by_object.get(id(getattr(obj, "uncached", obj)), c.target))
    missing = sorted(set(public) - covered - set(EXEMPT))
    assert not missing, f"public names without a bad-input case: {missing}"
    stale = sorted(set(EXEMPT) - set(public))
    assert not stale, f"EXEMPT names that are not public callables: {stale}"


# --------------------------------------------------------------------------------------
# property tests of the size and dtype checks
# --------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(value=st.one_of(st.integers(-50, 50), st.booleans(), st.floats(allow_nan=True),
                       st.text(max_size=3), st.none()),
       minimum=st.integers(-5, 5))
def test_check_int_accepts_exactly_the_ints_in_range(value, minimum) -> None:
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if is_int and value >= minimum:
        assert checks.check_int("size", value, minimum=minimum) == value
        return
    error = ValueError if is_int else TypeError
    with pytest.raises(error, match=r"^size must be an int"):
        checks.check_int("size", value, minimum=minimum)


@settings(max_examples=40, deadline=None)
@given(size=st.one_of(st.integers(-3, 6), st.booleans(), st.floats(-3, 6)))
def test_public_sizes_refuse_what_check_int_refuses(size) -> None:
    """Every size argument of a layer behaves as check_int: Linear, RMSNorm, RoPE..."""
    makers = {"in_features": lambda s: Linear(s, 2), "d_model": lambda s: RMSNorm(s),
              "n_heads": lambda s: gpt2.MultiHeadSelfAttention(12, s),
              "max_seq_len": lambda s: RotaryPositionalEmbedding(1e4, 4, s),
              "seq_len": causal_mask}
    ok = isinstance(size, int) and not isinstance(size, bool) and size >= 1
    for arg, make in makers.items():
        if ok and not (arg == "n_heads" and 12 % size):
            make(size)
            continue
        with pytest.raises((TypeError, ValueError), match=arg):
            make(size)


DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
          torch.uint8, torch.int32, torch.int64, torch.bool, torch.complex64]


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(DTYPES), kind=st.sampled_from(["float", "int", "bool"]),
       shape=st.lists(st.integers(1, 3), min_size=1, max_size=3))
def test_check_tensor_kinds_follow_the_dtype(dtype, kind, shape) -> None:
    x = torch.zeros(tuple(shape), dtype=dtype)
    accepted = {"float": dtype.is_floating_point, "bool": dtype == torch.bool,
                "int": not (dtype.is_floating_point or dtype.is_complex
                            or dtype == torch.bool)}[kind]
    if accepted:
        assert checks.check_tensor("x", x, "...", kind) == {}
    else:
        with pytest.raises(ValueError, match=rf"^x must be .* tensor, got dtype {dtype}"):
            checks.check_tensor("x", x, "...", kind)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=4),
       want=st.integers(1, 4))
def test_check_tensor_shapes(shape, want) -> None:
    """``"... d"`` with ``d=want``: passes iff the last dim is ``want``, else names d."""
    x = torch.zeros(tuple(shape))
    if shape and shape[-1] == want:
        assert checks.check_tensor("x", x, "... d", d=want) == {"d": want}
    else:
        with pytest.raises(ValueError, match=r"^x must have shape \(\.\.\., d=\d\)"):
            checks.check_tensor("x", x, "... d", d=want)


@settings(max_examples=30, deadline=None)
@given(a=st.sampled_from([torch.float16, torch.float32, torch.float64]),
       b=st.sampled_from([torch.float16, torch.float32, torch.float64]))
def test_tensors_that_meet_share_a_dtype(a, b) -> None:
    q, k = torch.zeros(2, 3, dtype=a), torch.zeros(2, 3, dtype=b)
    if a == b:
        checks.check_tensors(q=(q, "n d", "float"), k=(k, "n d", "float"))
    else:
        with pytest.raises(ValueError, match=rf"^k has dtype {b} but q has {a}"):
            checks.check_tensors(q=(q, "n d", "float"), k=(k, "n d", "float"))


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


def test_autocast_mixes_dtypes_on_purpose() -> None:
    """Under autocast bf16 activations meet fp32 weights by design; outside, refused."""
    module = SelfAttentionV1(3, 2)
    x = _x(1, 6, 3, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert module(x).dtype == torch.bfloat16
    with pytest.raises(ValueError, match=r"x has dtype torch\.bfloat16 but the module"):
        module(x)
