"""Whole language models, one module per family.

* :mod:`llmlab.models.gpt2`: GPT-2-style (LayerNorm, GELU MLP, learned positions,
  biases, tied output layer).
* :mod:`llmlab.models.llama`: Llama-style (RMSNorm, SwiGLU, RoPE, no biases),
  with CS336 assignment 1 state-dict names.

The two families share class names (``TransformerBlock``, ``TransformerLM``),
so import them from their module: ``from llmlab.models.gpt2 import TransformerLM``.
"""
