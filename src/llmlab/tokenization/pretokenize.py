"""Pre-tokenization: special tokens first, then GPT-2's regular expression.

BPE never merges across a pre-token: the text is first split on the special
tokens (which are kept whole, or dropped when training), then each piece is cut
into pre-tokens by GPT-2's pattern (contractions, runs of letters or digits with
at most one leading space, runs of other symbols, whitespace). Training counts
each distinct pre-token once, with its frequency (:func:`count_pretokens`); a
large file is counted in parallel chunks cut where no pre-token or special
token can straddle the cut (:func:`chunk_boundaries`).

Taught on: "Tokenization".
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import regex

from llmlab.checks import check_int, check_path, check_str

__all__ = [
    "GPT2_PATTERN",
    "PARALLEL_MIN_BYTES",
    "check_special_tokens",
    "chunk_boundaries",
    "count_pretokens",
    "count_pretokens_file",
    "pretokenize",
    "special_token_pattern",
    "split_on_special_tokens",
]

GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)
"""GPT-2's pre-tokenizer pattern (as in tiktoken's ``gpt2`` and CS336)."""

_PRETOKEN = regex.compile(GPT2_PATTERN)

PARALLEL_MIN_BYTES = 4 * 2**20
"""Files smaller than this are pre-tokenized in one process.

Measured with ``benchmarks/tokenization.py`` on 2 shared cores: with the second
core free, 2 processes took 0.23 s instead of 0.41 s on 4.4 MB and lost below
about 2 MB (starting workers and merging their counts); with the second core
busy, they only won from 16 MiB. The lecture's corpora (about 1 MB) are
pre-tokenized serially either way."""


def check_special_tokens(special_tokens: object) -> list[str]:
    """Validate ``special_tokens``: a sequence of distinct, non-empty strings.

    Returns them as a list (``None`` gives ``[]``).

    Raises:
        TypeError: Not a list/tuple of ``str`` (a lone string is refused too).
        ValueError: An empty or duplicated token.

    Taught on: "Tokenization".
    """
    if special_tokens is None:
        return []
    if isinstance(special_tokens, (str, bytes)) or not isinstance(
        special_tokens, (list, tuple)
    ):
        raise TypeError(
            "special_tokens must be a list of str (or None), got "
            f"{type(special_tokens).__name__}"
        )
    tokens = list(special_tokens)
    for token in tokens:
        if not isinstance(token, str):
            raise TypeError(
                f"special_tokens must hold str, got {type(token).__name__} ({token!r})"
            )
        if not token:
            raise ValueError("special_tokens must not contain the empty string")
    duplicates = sorted(t for t, n in Counter(tokens).items() if n > 1)
    if duplicates:
        raise ValueError(f"special_tokens has duplicates: {duplicates}")
    return tokens


def special_token_pattern(special_tokens: Sequence[str]) -> regex.Pattern | None:
    """A pattern matching any special token, longest first (``None`` if none).

    Longest first means that when ``"<|endoftext|>"`` and
    ``"<|endoftext|><|endoftext|>"`` are both special, the double one wins.

    Taught on: "Tokenization".
    """
    special_tokens = check_special_tokens(special_tokens)
    if not special_tokens:
        return None
    ordered = sorted(special_tokens, key=len, reverse=True)
    return regex.compile("|".join(regex.escape(t) for t in ordered))


def split_on_special_tokens(text: str, special_tokens: Sequence[str]) -> list[str]:
    """Cut ``text`` at its special tokens, keeping them as separate pieces.

    Example: ``split_on_special_tokens("a<|eot|>b", ["<|eot|>"])`` is
    ``["a", "<|eot|>", "b"]``. Empty pieces are dropped.

    Taught on: "Tokenization".
    """
    check_str("text", text)
    pattern = special_token_pattern(check_special_tokens(special_tokens))
    if pattern is None:
        return [text] if text else []
    pieces = regex.split(f"({pattern.pattern})", text)
    return [p for p in pieces if p]


def pretokenize(text: str) -> list[str]:
    """Cut ``text`` (holding no special token) into GPT-2 pre-tokens.

    ``pretokenize("Hello, world!")`` is ``["Hello", ",", " world", "!"]``.

    Taught on: "Tokenization".
    """
    return _PRETOKEN.findall(check_str("text", text))


def _count_text(text: str, split: regex.Pattern | None) -> Counter[str]:
    counts: Counter[str] = Counter()
    segments = [text] if split is None else split.split(text)
    for segment in segments:  # special tokens are dropped: never merged
        counts.update(_PRETOKEN.findall(segment))
    return counts


def count_pretokens(
    text: str, special_tokens: Sequence[str] | None = None
) -> dict[bytes, int]:
    """How often each pre-token occurs, as UTF-8 bytes; special tokens dropped.

    This is what BPE training works on: each distinct pre-token once, with its
    count, instead of the whole text.

    Taught on: "Tokenization".
    """
    check_str("text", text)
    split = special_token_pattern(check_special_tokens(special_tokens))
    counts = _count_text(text, split)
    return {word.encode("utf-8"): n for word, n in counts.items()}


_NEWLINE = regex.compile(rb"\n")
_SPACE = regex.compile(r"\s")


def _next_cut(fh, start: int, size: int) -> int | None:
    """The first safe cut at or after byte ``start`` (see :func:`chunk_boundaries`)."""
    pos = start
    while pos < size:
        fh.seek(pos - 1)
        window = fh.read(2**16 + 1)  # from the byte before pos
        for m in _NEWLINE.finditer(window, 1):
            i = m.start()
            # the character before the newline (a truncated one decodes to U+FFFD)
            before = window[max(0, i - 4) : i].decode("utf-8", errors="replace")[-1]
            if before != "\ufffd" and not _SPACE.match(before):
                return pos - 1 + i
        pos += len(window) - 1
    return None


def chunk_boundaries(path: str | os.PathLike, num_chunks: int) -> list[int]:
    """Byte offsets that cut a UTF-8 file into at most ``num_chunks`` safe pieces.

    Each cut is at a newline whose preceding character is not whitespace:
    every GPT-2 pre-token ends there (no alternative of the pattern runs from a
    non-space character into whitespace, and the next pre-token starts at the
    newline either way), and no special token is cut as long as none contains
    a newline (:func:`count_pretokens_file` checks). The offsets start with 0
    and end with the file size; there may be fewer pieces than asked for (a
    file with few newlines).

    Taught on: "Tokenization".
    """
    check_path("path", path)
    check_int("num_chunks", num_chunks)
    size = os.path.getsize(path)
    bounds = [0]
    with open(path, "rb") as fh:
        for i in range(1, num_chunks):
            target = size * i // num_chunks
            if target <= bounds[-1]:
                continue
            cut = _next_cut(fh, target, size)
            if cut is None:
                break
            bounds.append(cut)
    return [*bounds, size] if size else [0]


def _count_chunk(args: tuple[str, int, int, tuple[str, ...]]) -> Counter[str]:
    path, start, end, special_tokens = args
    with open(path, "rb") as fh:
        fh.seek(start)
        text = fh.read(end - start).decode("utf-8")
    return _count_text(text, special_token_pattern(special_tokens))


def _available_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def count_pretokens_file(
    path: str | os.PathLike,
    special_tokens: Sequence[str] | None = None,
    num_processes: int | None = None,
) -> dict[bytes, int]:
    """:func:`count_pretokens` of a UTF-8 file, in parallel chunks when large.

    Args:
        path: The file.
        special_tokens: Tokens to drop (never merged).
        num_processes: Worker processes; ``None`` picks one per CPU for files of
            at least :data:`PARALLEL_MIN_BYTES` and 1 (no pool) below that.

    Taught on: "Tokenization".
    """
    tokens = tuple(check_special_tokens(special_tokens))
    check_path("path", path)
    if num_processes is not None:
        check_int("num_processes", num_processes)
    size = os.path.getsize(path)
    if num_processes is None:
        num_processes = _available_cpus() if size >= PARALLEL_MIN_BYTES else 1
    if any("\n" in t for t in tokens):
        num_processes = 1  # a cut at a newline could fall inside a special token
    bounds = chunk_boundaries(path, num_processes) if num_processes > 1 else [0, size]
    jobs = [(str(path), a, b, tokens) for a, b in zip(bounds, bounds[1:])]
    if len(jobs) <= 1:
        text = Path(path).read_text(encoding="utf-8")
        counts = _count_text(text, special_token_pattern(tokens))
    else:
        counts = Counter()
        with ProcessPoolExecutor(max_workers=min(num_processes, len(jobs))) as pool:
            for part in pool.map(_count_chunk, jobs):
                counts.update(part)
    return {word.encode("utf-8"): n for word, n in counts.items()}

