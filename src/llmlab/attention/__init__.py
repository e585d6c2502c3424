"""Attention from scratch: dot products, softmax, masks, the teaching variants.

Pages import from here: ``from llmlab.attention import MultiHeadAttention``.

Taught on: "Self-attention from scratch".
"""

from llmlab.attention.basics import (
    SimpleAttention,
    causal_weights_masked,
    causal_weights_renormalised,
    cosine_similarity,
    dot_scores_loop,
    dot_scores_matmul,
    dot_scores_torch_dot,
    simple_self_attention,
    softmax_naive,
    sum_normalise,
    toy_embeddings,
)
from llmlab.attention.display import source_markdown
from llmlab.attention.teaching import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    copy_v2_into_v1,
    mha_from_wrapper,
    mha_step_shapes,
)

__all__ = [
    "CausalAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "SelfAttentionV1",
    "SelfAttentionV2",
    "SimpleAttention",
    "causal_weights_masked",
    "causal_weights_renormalised",
    "copy_v2_into_v1",
    "cosine_similarity",
    "dot_scores_loop",
    "dot_scores_matmul",
    "dot_scores_torch_dot",
    "mha_from_wrapper",
    "mha_step_shapes",
    "simple_self_attention",
    "source_markdown",
    "softmax_naive",
    "sum_normalise",
    "toy_embeddings",
]
