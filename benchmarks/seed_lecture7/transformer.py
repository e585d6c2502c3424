"""The `transformer` module the lecture-7 seed script imports, over llmlab.models.gpt2.

The seed (``../shared/seeds/000_6097f6583093305d.txt``) imports
``MultiHeadSelfAttention, TransformerBlock, TransformerLM, count_parameters`` from a
``transformer.py`` it does not include. ``benchmarks/build.py`` runs it with this
folder first on ``sys.path``, so that the script trains the course's own modules.
Where the seed's interface differs from ours, the adapters below translate its calls.
"""

from llmlab.models.gpt2 import MultiHeadSelfAttention as _MultiHeadSelfAttention
from llmlab.models.gpt2 import TransformerBlock, count_parameters
from llmlab.models.gpt2 import TransformerLM as _TransformerLM

__all__ = ["MultiHeadSelfAttention", "TransformerBlock", "TransformerLM", "count_parameters"]


class MultiHeadSelfAttention(_MultiHeadSelfAttention):
    """The seed's ``forward(x, pad_mask=None, return_attn=False)``.

    Its ``pad_mask`` is True at padding (``key_padding_mask``); our ``key_mask`` is
    the negation. Its ``return_attn`` is our ``return_weights``.
    """

    def forward(self, x, pad_mask=None, return_attn=False):
        key_mask = None if pad_mask is None else ~pad_mask
        return super().forward(x, key_mask, return_weights=return_attn)


def TransformerLM(vocab_size, d_model, n_heads, n_layers, max_len, dropout=0.0):  # noqa: N802
    """The seed's call ``TransformerLM(V, d_model=, n_heads=, n_layers=, max_len=)``.

    Ours takes ``(vocab_size, context_length, d_model, n_layers, n_heads, dropout)``.
    """
    return _TransformerLM(vocab_size, max_len, d_model, n_layers, n_heads, dropout)
