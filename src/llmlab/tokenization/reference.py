"""Reference implementations to check ours against (optional dependencies).

:func:`tiktoken_encoding` builds OpenAI's ``tiktoken`` encoder offline from a
tokenizer's own ranks (nothing is downloaded). ``tiktoken`` is in the ``test``
extra (``pip install 'llmlab[test]'``); the site's build installs it.

Taught on: "Tokenization".
"""

from __future__ import annotations

from typing import Any

from llmlab.checks import check_str, check_type
from llmlab.tokenization.pretokenize import GPT2_PATTERN
from llmlab.tokenization.tokenizer import Tokenizer

__all__ = ["require", "tiktoken_encoding"]


def require(module: str, why: str) -> Any:
    """Import ``module`` or raise a ``ModuleNotFoundError`` that says how to get it.

    Taught on: "Tokenization".
    """
    import importlib

    check_str("module", module, nonempty=True)
    check_str("why", why)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        raise ModuleNotFoundError(
            f"{module} is needed {why}; install it with pip install 'llmlab[test]' "
            f"(or pip install {module})"
        ) from err


def tiktoken_encoding(tokenizer: Tokenizer, name: str = "llmlab-gpt2") -> Any:
    """A ``tiktoken.Encoding`` with ``tokenizer``'s ranks, pattern and special tokens.

    tiktoken merges by the rank of the merged token (its id); for GPT-2's files
    that order is the merge order, so it encodes exactly as GPT-2 does.

    Taught on: "Tokenization".
    """
    check_type("tokenizer", tokenizer, Tokenizer)
    check_str("name", name, nonempty=True)
    tiktoken = require("tiktoken", "to compare with OpenAI's tiktoken")
    specials = tokenizer.special_ids
    special_ids = set(specials.values())
    ranks = {tok: i for i, tok in tokenizer.vocab.items() if i not in special_ids}
    return tiktoken.Encoding(
        name, pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=specials
    )
