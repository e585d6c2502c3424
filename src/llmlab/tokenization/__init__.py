"""Tokenization: byte-level BPE training and the tokenizer (CS336's interface).

* :func:`train_bpe` learns ``(vocab, merges)`` from a text file;
  :func:`train_bpe_from_counts` from pre-token counts of a string.
* :class:`Tokenizer` encodes and decodes with any such pair, or with GPT-2's
  files (:meth:`Tokenizer.from_files`, :func:`gpt2_tokenizer`); it keeps itself
  in one file (:meth:`Tokenizer.save`, :meth:`Tokenizer.load`).
* :class:`ByteTokenizer` is the same interface over the 256 bytes (no merges).

Taught on: "Tokenization".
"""

from llmlab.tokenization.bpe import (
    Merge,
    learn_merges,
    learn_merges_naive,
    train_bpe,
    train_bpe_from_counts,
    vocab_from_merges,
)
from llmlab.tokenization.pretokenize import (
    GPT2_PATTERN,
    chunk_boundaries,
    count_pretokens,
    count_pretokens_file,
    pretokenize,
    split_on_special_tokens,
)
from llmlab.tokenization.tokenizer import (
    END_OF_TEXT,
    ByteTokenizer,
    Tokenizer,
    bytes_to_unicode,
    gpt2_tokenizer,
)

__all__ = [
    "END_OF_TEXT",
    "ByteTokenizer",
    "GPT2_PATTERN",
    "Merge",
    "Tokenizer",
    "bytes_to_unicode",
    "chunk_boundaries",
    "count_pretokens",
    "count_pretokens_file",
    "gpt2_tokenizer",
    "learn_merges",
    "learn_merges_naive",
    "pretokenize",
    "split_on_special_tokens",
    "train_bpe",
    "train_bpe_from_counts",
    "vocab_from_merges",
]
