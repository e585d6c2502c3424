"""The `transformer` module the lecture-7 seed script imports, over llmlab.models.gpt2.

The seed (``../shared/seeds/000_6097f6583093305d.txt``) imports
``MultiHeadSelfAttention, TransformerBlock, TransformerLM, count_parameters`` from a
``transformer.py`` it does not include. ``benchmarks/build.py`` runs it with this
folder first on ``sys.path``, so that the script trains the course's own modules.
"""

from llmlab.models.gpt2 import MultiHeadSelfAttention, TransformerBlock, count_parameters
from llmlab.models.gpt2 import TransformerLM as _TransformerLM

__all__ = ["MultiHeadSelfAttention", "TransformerBlock", "TransformerLM", "count_parameters"]


def TransformerLM(vocab_size, d_model, n_heads, n_layers, max_len, dropout=0.0):  # noqa: N802
    """The seed's call ``TransformerLM(V, d_model=, n_heads=, n_layers=, max_len=)``."""
    return _TransformerLM(vocab_size, d_model, n_heads, n_layers, max_len, dropout)
