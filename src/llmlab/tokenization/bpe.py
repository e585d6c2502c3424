"""Byte-level BPE training (the interface of CS336 assignment 1).

Training starts from the 256 single bytes and repeatedly merges the most
frequent adjacent pair of tokens into a new token. Pairs are counted inside
pre-tokens only (:mod:`llmlab.tokenization.pretokenize`), over each distinct
pre-token once, weighted by how often it occurs; overlapping occurrences count
too (``aaa`` holds ``(a, a)`` twice, though merging it saves one token). When two
pairs are equally frequent, the lexicographically greater pair of byte strings is
merged (the rule of the CS336 assignment 1 handout; Hugging Face's ``tokenizers``
takes the pair of smaller ids instead).

Two merge loops compute the same merges:

* :func:`learn_merges_naive` recounts every pair after every merge: easy to
  read, and slow, ``O(merges x corpus)``.
* :func:`learn_merges` counts pairs once, then updates only the pre-tokens that
  contain the merged pair (an index from each pair to the words holding it),
  and finds the best pair with a heap whose stale entries are skipped when
  popped (lazy invalidation).

Taught on: "Tokenization".
"""

from __future__ import annotations

import heapq
import os
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from llmlab.checks import check_int, check_path, check_type
from llmlab.tokenization.pretokenize import check_special_tokens, count_pretokens_file

__all__ = [
    "Merge",
    "check_vocab_size",
    "learn_merges",
    "learn_merges_naive",
    "train_bpe",
    "train_bpe_from_counts",
    "vocab_from_merges",
]


class Merge(NamedTuple):
    """One merge: the pair of tokens joined, and how often the pair occurred.

    ``count`` counts every adjacent occurrence, overlapping ones included: a run
    of ``n`` equal tokens holds ``n - 1`` occurrences of their pair, while the
    merge (left to right) joins only ``n // 2`` of them.

    Taught on: "Tokenization".
    """

    pair: tuple[bytes, bytes]
    count: int


def check_vocab_size(vocab_size: object, num_special: int) -> int:
    """Validate ``vocab_size``: an int of at least 256 + ``num_special``.

    Taught on: "Tokenization".
    """
    check_int("vocab_size", vocab_size, minimum=None)
    least = 256 + num_special
    if vocab_size < least:
        raise ValueError(
            f"vocab_size ({vocab_size}) must be at least 256 + the number of "
            f"special tokens ({num_special}) = {least}"
        )
    return vocab_size


# a local composite (a mapping's keys and values), built from llmlab.checks
def _check_counts(pretoken_counts: object) -> Mapping[bytes, int]:
    check_type("pretoken_counts", pretoken_counts, Mapping,
               expected="a mapping of bytes to int")
    for word, n in pretoken_counts.items():
        if not isinstance(word, bytes):
            raise TypeError(
                f"pretoken_counts keys must be bytes, got {type(word).__name__}"
            )
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(
                f"pretoken_counts values must be positive ints, got {n!r} for {word!r}"
            )
    return pretoken_counts


def _merge_word(word: list[int], a: int, b: int, new: int) -> list[int]:
    """``word`` with every ``(a, b)``, left to right, replaced by ``new``."""
    out: list[int] = []
    i, n = 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def learn_merges_naive(
    pretoken_counts: Mapping[bytes, int], num_merges: int
) -> list[Merge]:
    """BPE merges, recounting every pair after every merge (the teaching loop).

    Args:
        pretoken_counts: Each distinct pre-token (UTF-8 bytes) and its count.
        num_merges: How many merges to make; fewer when no pair is left.

    Returns:
        The merges in the order made, each with the count that chose it.

    Taught on: "Tokenization".
    """
    _check_counts(pretoken_counts)
    check_int("num_merges", num_merges, minimum=0)
    tokens = [bytes([i]) for i in range(256)]  # id -> bytes
    words = [list(w) for w in pretoken_counts]
    freqs = list(pretoken_counts.values())
    merges: list[Merge] = []
    for _ in range(num_merges):
        # 1. count every adjacent pair, weighted by the pre-token's count
        counts: Counter[tuple[int, int]] = Counter()
        for word, n in zip(words, freqs):
            for pair in zip(word, word[1:]):
                counts[pair] += n
        if not counts:
            break
        # 2. the most frequent pair; ties go to the greater pair of byte strings
        a, b = max(counts, key=lambda p: (counts[p], tokens[p[0]], tokens[p[1]]))
        # 3. a new token, and every occurrence of the pair rewritten
        merges.append(Merge((tokens[a], tokens[b]), counts[a, b]))
        tokens.append(tokens[a] + tokens[b])
        words = [_merge_word(w, a, b, len(tokens) - 1) for w in words]
    return merges


def _merge_counting(
    word: list[int],
    a: int,
    b: int,
    new: int,
    n: int,
    delta: defaultdict[tuple[int, int], int],
    born: list[tuple[int, int]],
) -> list[int] | None:
    """:func:`_merge_word`, adding to ``delta`` the changes of the pairs around.

    Each occurrence ``x a b y`` turns the pairs ``(x, a)`` and ``(b, y)`` into
    ``(x', new)`` and ``(new, y)``, each weighted by the word's count ``n``
    (``x'`` is ``new`` itself when the previous pair was merged too; the change
    of ``(a, b)`` itself is left to the caller); the new pairs are appended to
    ``born``. Returns ``None`` when ``word`` does not hold the pair.
    """
    out: list[int] = []
    i, size = 0, len(word)
    found = False
    while i < size:
        try:
            j = word.index(a, i, size - 1)  # an `a` that has a right neighbour
        except ValueError:
            break
        if word[j + 1] != b:
            out.extend(word[i : j + 1])
            i = j + 1
            continue
        found = True
        out.extend(word[i:j])
        if out:  # the left neighbour
            delta[word[j - 1], a] -= n
            pair = (out[-1], new)
            delta[pair] += n
            born.append(pair)
        k = j + 2
        if k < size and not (word[k] == a and k + 1 < size and word[k + 1] == b):
            delta[b, word[k]] -= n  # the right neighbour, unless merged next
            pair = (new, word[k])
            delta[pair] += n
            born.append(pair)
        out.append(new)
        i = k
    if not found:
        return None
    out.extend(word[i:])
    return out


_INVERT = bytes(255 - i for i in range(256))


def _descending(token: bytes) -> str:
    """A key that sorts byte strings in reverse (a min-heap then pops the max).

    Each byte ``x`` becomes the character ``255 - x`` and a terminator above
    them all is appended, so a string sorts after every longer one it prefixes.
    """
    return token.translate(_INVERT).decode("latin-1") + "\u0100"


def learn_merges(pretoken_counts: Mapping[bytes, int], num_merges: int) -> list[Merge]:
    """BPE merges, updating pair counts incrementally (same result as the naive loop).

    Pairs are counted once; each merge then rewrites only the pre-tokens that
    hold the pair (found through an index ``pair -> word ids``) and changes the
    counts of the pairs around it. The best pair comes off a heap keyed by
    ``(-count, descending bytes)``; an entry whose count is out of date is
    skipped when popped, and a fresh one was pushed when the count changed.

    Args:
        pretoken_counts: Each distinct pre-token (UTF-8 bytes) and its count.
        num_merges: How many merges to make; fewer when no pair is left.

    Returns:
        The merges in the order made, each with the count that chose it.

    Taught on: "Tokenization".
    """
    _check_counts(pretoken_counts)
    check_int("num_merges", num_merges, minimum=0)
    tokens = [bytes([i]) for i in range(256)]  # id -> bytes
    keys = [_descending(t) for t in tokens]  # id -> tie-break key
    words = [list(w) for w in pretoken_counts]
    freqs = list(pretoken_counts.values())

    # 1. count every pair once, and index which words hold it
    pair_counts: defaultdict[tuple[int, int], int] = defaultdict(int)
    where: defaultdict[tuple[int, int], set[int]] = defaultdict(set)
    for i, (word, n) in enumerate(zip(words, freqs)):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += n
            where[pair].add(i)
    heap = [(-c, keys[a], keys[b], a, b) for (a, b), c in pair_counts.items()]
    heapq.heapify(heap)

    merges: list[Merge] = []
    while len(merges) < num_merges and heap:
        # 2. pop the best pair; skip entries whose count has changed since
        neg, _, _, a, b = heapq.heappop(heap)
        if pair_counts.get((a, b)) != -neg:
            continue
        new = len(tokens)
        merges.append(Merge((tokens[a], tokens[b]), -neg))
        tokens.append(tokens[a] + tokens[b])
        keys.append(_descending(tokens[new]))

        # 3. rewrite only the words holding the pair; collect the count changes
        delta: defaultdict[tuple[int, int], int] = defaultdict(int)
        born: list[tuple[int, int]] = []
        for i in where.pop((a, b)):
            merged = _merge_counting(words[i], a, b, new, freqs[i], delta, born)
            if merged is None:
                continue  # a stale index entry: the pair left this word earlier
            words[i] = merged
            for pair in born:  # the new pairs (those holding `new`) are in word i
                where[pair].add(i)
            born.clear()
        del pair_counts[a, b]  # every occurrence is gone
        delta.pop((a, b), None)

        # 4. apply them, and push the pairs whose count changed
        for pair, d in delta.items():
            if d == 0:
                continue
            c = pair_counts[pair] + d
            if c > 0:
                pair_counts[pair] = c
                heapq.heappush(heap, (-c, keys[pair[0]], keys[pair[1]], *pair))
            else:
                del pair_counts[pair]
                where.pop(pair, None)
    return merges


def vocab_from_merges(
    merges: Sequence[tuple[bytes, bytes]], special_tokens: Sequence[str] | None = None
) -> dict[int, bytes]:
    """The vocabulary that ``merges`` and ``special_tokens`` make.

    Layout: ids ``0..255`` are the single bytes (id ``i`` is ``bytes([i])``),
    then the special tokens in the order given (UTF-8), then one token per
    merge in the order made. Truncating ``merges`` therefore gives the
    vocabulary a shorter training run would have learned, with the same ids.

    Taught on: "Tokenization".
    """
    specials = check_special_tokens(special_tokens)
    check_type("merges", merges, (list, tuple), expected="a list of pairs of bytes")
    for rank, pair in enumerate(merges):
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2
                and all(isinstance(t, bytes) and t for t in pair)):
            raise TypeError(f"merges[{rank}] must be a pair of non-empty bytes, got "
                            f"{pair!r}")
    vocab = {i: bytes([i]) for i in range(256)}
    for token in specials:
        vocab[len(vocab)] = token.encode("utf-8")
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return vocab


def train_bpe_from_counts(
    pretoken_counts: Mapping[bytes, int],
    vocab_size: int,
    special_tokens: Sequence[str] | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """:func:`train_bpe` on pre-token counts already made (e.g. from a string).

    See :func:`llmlab.tokenization.count_pretokens`.

    Taught on: "Tokenization".
    """
    specials = check_special_tokens(special_tokens)
    check_vocab_size(vocab_size, len(specials))
    learned = learn_merges(pretoken_counts, vocab_size - 256 - len(specials))
    merges = [m.pair for m in learned]
    return vocab_from_merges(merges, specials), merges


# a local composite (a path that names an existing file), built from llmlab.checks
def _check_input_path(input_path: object) -> Path:
    path = Path(check_path("input_path", input_path))
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise ValueError(f"input_path ({str(path)!r}) {what}; expected a text file")
    return path


def train_bpe(
    input_path: str | os.PathLike,
    vocab_size: int,
    special_tokens: Sequence[str] | None = None,
    *,
    num_processes: int | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train a byte-level BPE tokenizer on a UTF-8 text file.

    The text is split on the special tokens (which are never merged and are
    added to the vocabulary whole), pre-tokenized with GPT-2's pattern, and
    merged until the vocabulary has ``vocab_size`` entries (fewer if the corpus
    runs out of pairs). Files of several MB are pre-tokenized in parallel.

    Args:
        input_path: The corpus, UTF-8 text.
        vocab_size: Final vocabulary size: 256 bytes + special tokens + merges.
        special_tokens: Strings kept whole, e.g. ``["<|endoftext|>"]``.
        num_processes: Processes for pre-tokenization (``None``: automatic, see
            :func:`llmlab.tokenization.count_pretokens_file`).

    Returns:
        ``(vocab, merges)``: ``vocab`` maps id to token bytes (layout in
        :func:`vocab_from_merges`); ``merges`` lists the merged pairs in order.

    Raises:
        TypeError: ``vocab_size`` is not an int, ``special_tokens`` not a list
            of str, ``input_path`` not a path.
        ValueError: ``vocab_size`` below 256 + the number of special tokens;
            empty or duplicate special tokens; ``input_path`` missing or not
            UTF-8.

    Taught on: "Tokenization".
    """
    specials = check_special_tokens(special_tokens)
    check_vocab_size(vocab_size, len(specials))
    path = _check_input_path(input_path)
    if num_processes is not None:
        check_int("num_processes", num_processes)
    try:
        counts = count_pretokens_file(path, specials, num_processes)
    except UnicodeDecodeError as err:
        raise ValueError(
            f"input_path ({str(path)!r}) is not UTF-8 text: {err.reason} at byte "
            f"{err.start}"
        ) from err
    except OSError as err:
        raise ValueError(f"input_path ({str(path)!r}) cannot be read: {err}") from err
    return train_bpe_from_counts(counts, vocab_size, specials)
