"""The small Llama-style model the FLOP and memory tests count and measure."""

from __future__ import annotations

import torch

from llmlab.models.llama import LlamaConfig, TransformerLM

SMALL = LlamaConfig(vocab_size=256, context_length=32, d_model=64, num_layers=2,
                    num_heads=4, d_ff=176)


def small_model(config: LlamaConfig = SMALL, seed: int = 0) -> TransformerLM:
    """``config``'s model, its weights drawn from ``seed``."""
    torch.manual_seed(seed)
    return TransformerLM.from_config(config)
