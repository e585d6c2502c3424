"""A byte-level BPE tokenizer: encode text to ids, decode ids to text.

The interface is CS336 assignment 1's: ``Tokenizer(vocab, merges,
special_tokens)``, ``Tokenizer.from_files``, ``encode``, ``encode_iterable``,
``decode``; :meth:`Tokenizer.save` and :meth:`Tokenizer.load` keep a trained
tokenizer in one JSON file (what ``llmlab-train`` writes next to its
checkpoint). :class:`ByteTokenizer` is the same interface with no merges: the
256 bytes. Encoding splits on the special tokens (longest first), cuts the
rest into GPT-2 pre-tokens, and applies the merges to each pre-token by rank:
repeatedly join the adjacent pair that was merged earliest in training. Each
pre-token's ids are cached, so frequent words cost one dictionary lookup.

Taught on: "Tokenization".
"""

from __future__ import annotations

import functools
import json
import numbers
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import regex

from llmlab.checks import (
    check_int,
    check_iterable,
    check_path,
    check_str,
    check_type,
)
from llmlab.tokenization.pretokenize import (
    GPT2_PATTERN,
    check_special_tokens,
    special_token_pattern,
)

__all__ = ["END_OF_TEXT", "ByteTokenizer", "Tokenizer", "bytes_to_unicode", "gpt2_tokenizer"]

END_OF_TEXT = "<|endoftext|>"
"""GPT-2's end-of-text token: the one special token of the course's BPE tokenizers
(between documents in training, at the end of an answer in fine-tuning)."""

_PRETOKEN = regex.compile(GPT2_PATTERN)
# a cut that no pre-token straddles: a whitespace character after a non-space
_CUT = regex.compile(r"\S(?=\s)", flags=regex.REVERSE)
_STREAM_CHARS = 2**16  # encode_iterable encodes the text it holds in pieces this big
_NO_RANK = 2**62  # the rank of a pair that was never merged


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte to a printable character (``vocab.json``'s alphabet).

    Printable Latin-1 bytes map to themselves; the other 68 (control bytes,
    space, ...) map to ``chr(256 + k)`` in order, so a space is ``"Ġ"`` and a
    newline ``"Ċ"``.

    Taught on: "Tokenization".
    """
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars = list(printable)
    k = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + k)
            k += 1
    return dict(zip(printable, map(chr, chars)))


# a local composite (a byte-level BPE vocab's ids and tokens), built from llmlab.checks
def _check_vocab(vocab: object) -> dict[int, bytes]:
    check_type("vocab", vocab, Mapping, expected="a dict of int to bytes")
    for i, token in vocab.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise ValueError(f"vocab keys must be ids (ints >= 0), got {i!r}")
        if not isinstance(token, bytes) or not token:
            raise TypeError(
                f"vocab values must be non-empty bytes, got {token!r} at id {i}"
            )
    tokens = set(vocab.values())
    missing = [b for b in range(256) if bytes([b]) not in tokens]
    if missing:
        raise ValueError(
            f"vocab must hold all 256 single bytes (byte-level BPE); missing "
            f"{len(missing)}, e.g. {bytes(missing[:4])!r}"
        )
    return dict(vocab)


def _merge_error(rank: int, pair: tuple, token_ids: dict[bytes, int]) -> Exception:
    """The error that ``merges[rank]`` deserves, once it failed to resolve."""
    if len(pair) != 2 or not all(isinstance(t, bytes) for t in pair):
        return TypeError(f"merges[{rank}] must be a pair of bytes, got {pair!r}")
    a, b = pair
    unknown = [t for t in (a, b, a + b) if t not in token_ids]
    return ValueError(
        f"merges[{rank}] ({a!r}, {b!r}) names tokens missing from vocab: {unknown}"
    )


class Tokenizer:
    """Byte-level BPE: ``encode`` text to ids and ``decode`` ids back to text.

    Args:
        vocab: Id to token bytes; must hold all 256 single bytes.
        merges: The merged pairs in the order learned (their rank).
        special_tokens: Strings encoded whole (longest first when they
            overlap); one missing from ``vocab`` is appended with a new id.
        cache_size: How many pre-tokens' ids to remember (``0``: none); the
            cache is emptied when full.

    Example:
        >>> tok = gpt2_tokenizer()
        >>> tok.encode("Hello, world!")
        [15496, 11, 995, 0]

    Taught on: "Tokenization".
    """

    def __init__(
        self,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Sequence[str] | None = None,
        *,
        cache_size: int = 2**16,
    ) -> None:
        self.vocab = _check_vocab(vocab)
        self.special_tokens = check_special_tokens(special_tokens)
        check_int("cache_size", cache_size, minimum=0)
        # bytes -> id; the lowest id wins if a token occurs twice
        self._ids: dict[bytes, int] = {}
        for i in sorted(self.vocab):
            self._ids.setdefault(self.vocab[i], i)
        self._special_ids: dict[str, int] = {}
        for token in self.special_tokens:
            raw = token.encode("utf-8")
            if raw not in self._ids:
                new = max(self.vocab) + 1
                self.vocab[new] = raw
                self._ids[raw] = new
            self._special_ids[token] = self._ids[raw]
        self._special = special_token_pattern(self.special_tokens)

        if isinstance(merges, (str, bytes)) or not isinstance(merges, Sequence):
            raise TypeError(
                f"merges must be a list of pairs, got {type(merges).__name__}"
            )
        self.merges = [tuple(m) for m in merges]
        # (left id, right id) -> its rank, and the id of the merged token
        self._rank: dict[tuple[int, int], int] = {}
        self._merged: dict[tuple[int, int], int] = {}
        token_ids = self._ids
        for rank, pair in enumerate(self.merges):
            try:
                a, b = pair
                left, right, new = token_ids[a], token_ids[b], token_ids[a + b]
                if type(a) is not bytes or type(b) is not bytes:
                    raise TypeError
            except (KeyError, TypeError, ValueError):
                raise _merge_error(rank, pair, token_ids)
            if (left, right) not in self._rank:  # a repeated merge keeps its first rank
                self._rank[left, right] = rank
                self._merged[left, right] = new
        self._byte_ids = [self._ids[bytes([b])] for b in range(256)]
        self._cache: dict[str, list[int]] = {}
        self._cache_size = cache_size
        # the longest proper prefixes of special tokens, for encode_iterable
        self._special_prefixes = sorted(
            {t[:k] for t in self.special_tokens for k in range(1, len(t))},
            key=len,
            reverse=True,
        )

    def clear_cache(self) -> None:
        """Forget the cached ids of pre-tokens (their memory; ids do not change)."""
        self._cache.clear()

    @property
    def special_ids(self) -> dict[str, int]:
        """Each special token's id."""
        return dict(self._special_ids)

    @property
    def vocab_size(self) -> int:
        """Number of ids (``max id + 1``)."""
        return max(self.vocab) + 1

    @classmethod
    def from_files(
        cls,
        vocab_path: str | os.PathLike,
        merges_path: str | os.PathLike,
        special_tokens: Sequence[str] | None = None,
        **kwargs: int,
    ) -> Tokenizer:
        """Load GPT-2-format files: ``vocab.json`` and ``merges.txt``.

        Both files spell bytes with GPT-2's printable alphabet
        (:func:`bytes_to_unicode`). ``merges.txt`` has one ``left right`` pair
        per line, in rank order; a first line ``#version: ...`` and blank lines
        are skipped.

        Raises:
            ValueError: A file is missing, is not valid JSON / UTF-8, has a
                malformed line or a character outside GPT-2's alphabet, or a
                merge names a token that ``vocab.json`` lacks.

        Taught on: "Tokenization".
        """
        decoder = {c: b for b, c in bytes_to_unicode().items()}
        # one str.translate per token: alphabet characters become the Latin-1
        # character of their byte; the others an unencodable one (caught below)
        table = {ord(c): b for c, b in decoder.items()}
        table.update({b: 0xFFFF for b in range(256) if chr(b) not in decoder})

        def to_bytes(token: str, where: str) -> bytes:
            try:
                return token.translate(table).encode("latin-1")
            except UnicodeEncodeError:
                bad = next(c for c in token if c not in decoder)
                raise ValueError(
                    f"{where}: {token!r} has a character outside GPT-2's byte "
                    f"alphabet: {bad!r}"
                ) from None

        text = _read(vocab_path, "vocab_path")
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"vocab_path ({str(vocab_path)!r}) is not JSON: {err}"
            ) from err
        if not isinstance(raw, dict) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in raw.values()
        ):
            raise ValueError(
                f"vocab_path ({str(vocab_path)!r}) must hold a JSON object of token "
                "string -> integer id"
            )
        where = f"vocab_path ({str(vocab_path)!r})"
        vocab = {i: to_bytes(token, where) for token, i in raw.items()}
        if len(vocab) != len(raw):
            raise ValueError(f"{where} gives the same id to two tokens")

        merges: list[tuple[bytes, bytes]] = []
        known = set(vocab.values())
        lines = _read(merges_path, "merges_path").splitlines()
        for number, line in enumerate(lines, start=1):
            if (number == 1 and line.startswith("#version")) or not line.strip():
                continue
            parts = line.split(" ")
            try:  # the fast path; a bad line is diagnosed below
                left, right = parts
                a = left.translate(table).encode("latin-1")
                b = right.translate(table).encode("latin-1")
                if not (a and b and a in known and b in known):
                    raise ValueError
            except (ValueError, UnicodeEncodeError):
                where = f"merges_path ({str(merges_path)!r}) line {number}"
                if len(parts) != 2 or not all(parts):
                    raise ValueError(
                        f"{where}: expected 'left right', got {line!r}"
                    ) from None
                a, b = (to_bytes(p, where) for p in parts)
                unknown = [p for p, t in zip(parts, (a, b)) if t not in known]
                raise ValueError(
                    f"{where}: unknown tokens {unknown} (not in vocab_path)"
                ) from None
            merges.append((a, b))
        return cls(vocab, merges, special_tokens, **kwargs)

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write the vocabulary, merges and special tokens to the JSON file ``path``.

        Tokens are spelled in hex (``{"vocab": {id: hex}, "merges": [[hex, hex],
        ...], "special_tokens": [...]}``), so any bytes round-trip; :meth:`load`
        reads it back. The file is written whole to a temporary name, then
        renamed: a reader never sees half of it.

        Raises:
            ValueError: ``path`` exists and ``overwrite`` is false.
        """
        check_path("path", path)
        check_type("overwrite", overwrite, bool)
        path = Path(path)
        if path.exists() and not overwrite:
            raise ValueError(f"path ({str(path)!r}) exists; pass overwrite=True to "
                             "replace it")
        blob = {
            "vocab": {str(i): token.hex() for i, token in sorted(self.vocab.items())},
            "merges": [[a.hex(), b.hex()] for a, b in self.merges],
            "special_tokens": list(self.special_tokens),
        }
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(blob, indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike, *, cache_size: int = 2**16) -> Tokenizer:
        """The tokenizer :meth:`save` wrote to ``path`` (``cache_size`` as in the class).

        Raises:
            ValueError: The file is missing, is not JSON, or is not such a file.
        """
        check_int("cache_size", cache_size, minimum=0)
        text = _read(path, "path")
        try:
            blob = json.loads(text)
            vocab = {int(i): bytes.fromhex(h) for i, h in blob["vocab"].items()}
            merges = [(bytes.fromhex(a), bytes.fromhex(b)) for a, b in blob["merges"]]
            special_tokens = blob["special_tokens"]
            return cls(vocab, merges, special_tokens, cache_size=cache_size)
        except (KeyError, ValueError, TypeError, AttributeError) as err:
            raise ValueError(f"path ({str(path)!r}) is not a tokenizer file written "
                             f"by Tokenizer.save ({err!r})") from None

    # -- encoding ---------------------------------------------------------
    def _bpe(self, word: str) -> list[int]:
        """The ids of one pre-token: its bytes, merged by rank.

        Repeatedly merge the adjacent pair that was merged earliest in
        training, keeping the rank of every adjacent pair in a list so that a
        merge only looks up the two pairs it creates.
        """
        ids = [self._byte_ids[b] for b in word.encode("utf-8")]
        rank, merged = self._rank, self._merged
        ranks = [rank.get(p, _NO_RANK) for p in zip(ids, ids[1:])]
        while ranks:
            best = min(ranks)
            if best == _NO_RANK:
                break
            i = ranks.index(best)  # the leftmost pair of that rank
            new = merged[ids[i], ids[i + 1]]
            ids[i : i + 2] = [new]
            del ranks[i]
            if i > 0:
                ranks[i - 1] = rank.get((ids[i - 1], new), _NO_RANK)
            if i < len(ranks):
                ranks[i] = rank.get((new, ids[i + 1]), _NO_RANK)
        return ids

    def _encode_ordinary(self, text: str, out: list[int]) -> None:
        """Append the ids of ``text`` (no special tokens) to ``out``."""
        cache = self._cache
        for word in _PRETOKEN.findall(text):
            ids = cache.get(word)
            if ids is None:
                ids = self._bpe(word)
                if self._cache_size:
                    if len(cache) >= self._cache_size:
                        cache.clear()
                    cache[word] = ids
            out.extend(ids)

    def _encode(self, text: str) -> list[int]:
        out: list[int] = []
        if self._special is None:
            self._encode_ordinary(text, out)
            return out
        start = 0
        for m in self._special.finditer(text):
            self._encode_ordinary(text[start : m.start()], out)
            out.append(self._special_ids[m.group()])
            start = m.end()
        self._encode_ordinary(text[start:], out)
        return out

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``.

        Raises:
            TypeError: ``text`` is not a ``str``.
            ValueError: ``text`` holds a lone surrogate (no UTF-8 encoding).

        Taught on: "Tokenization".
        """
        check_str("text", text)
        try:
            return self._encode(text)
        except UnicodeEncodeError as err:
            raise _surrogate_error("text", err) from None

    def _safe_cut(self, text: str) -> int:
        """An index ``i`` such that ``text[:i]`` encodes the same whatever follows."""
        m = _CUT.search(text)
        cut = 0 if m is None else m.end()  # just before a whitespace character
        if self._special is None:
            return cut
        # not inside a special token, nor where one might start
        for prefix in self._special_prefixes:
            if text.endswith(prefix):
                cut = min(cut, len(text) - len(prefix))
                break
        for m in self._special.finditer(text):
            if m.start() < cut < m.end():
                return m.start()
            if m.start() >= cut:
                break
        return cut

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Yield the ids of the concatenated strings of ``iterable``, lazily.

        Encodes exactly like ``encode("".join(iterable))`` while holding only
        about 64 K characters at a time (plus the longest run without a
        space-after-non-space cut), so a file of any size streams in bounded
        memory: ``encode_iterable(open(path))``. Text is held back at each cut
        so that no pre-token or special token is split between two pieces.

        Raises:
            TypeError: ``iterable`` yields something other than ``str``.

        Taught on: "Tokenization".
        """
        if isinstance(iterable, (str, bytes)):
            raise TypeError(
                "iterable must yield str pieces (e.g. an open text file), got "
                f"a {type(iterable).__name__}; use encode() for one string"
            )
        held = ""
        for piece in iterable:
            if not isinstance(piece, str):
                raise TypeError(
                    f"iterable must yield str, got {type(piece).__name__}"
                )
            held += piece
            if len(held) < _STREAM_CHARS:
                continue
            cut = self._safe_cut(held)
            if cut:
                yield from self._encode_checked(held[:cut])
                held = held[cut:]
        if held:
            yield from self._encode_checked(held)

    def _encode_checked(self, text: str) -> list[int]:
        try:
            return self._encode(text)
        except UnicodeEncodeError as err:
            raise _surrogate_error("iterable", err) from None

    # -- decoding ---------------------------------------------------------
    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``; invalid UTF-8 becomes U+FFFD (never raises on it).

        Raises:
            ValueError: An id is not in the vocabulary.
            TypeError: ``ids`` is not iterable, or an id is not an integer (floats
                and bools are refused).

        Taught on: "Tokenization".
        """
        if hasattr(ids, "tolist"):  # a tensor or an array
            ids = ids.tolist()
        elif not isinstance(ids, (list, tuple)):
            ids = list(check_iterable("ids", ids, _IDS))
        vocab = self.vocab
        try:
            parts = [vocab[i] for i in ids]
        except (KeyError, TypeError):
            parts = None
        # floats and bools hash like ints, so they would pass the lookup
        if parts is None or any(isinstance(i, (bool, float)) for i in ids):
            for i in ids:
                if isinstance(i, bool) or not isinstance(i, numbers.Integral):
                    raise TypeError(
                        f"ids must hold ints, got {type(i).__name__} ({i!r})"
                    )
                if i not in vocab:
                    raise ValueError(
                        f"ids holds {i}, which is not in the vocabulary "
                        f"(ids 0..{self.vocab_size - 1})"
                    )
        return b"".join(parts).decode("utf-8", errors="replace")


_IDS = "an iterable of token ids (a list of ints or a tensor)"


class ByteTokenizer:
    """The byte-level tokenizer: token id ``i`` is the byte ``i`` of UTF-8 text.

    The vocabulary is the 256 byte values, so any text encodes and nothing is
    unknown. ``encode``/``decode`` follow the interface of the BPE ``Tokenizer``
    (a BPE tokenizer with no merges is exactly this one).

    Taught on: "Training and generating text".
    """

    vocab_size = 256

    def encode(self, text: str) -> list[int]:
        """UTF-8 bytes of ``text`` as ids."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return list(text.encode("utf-8"))

    def encode_iterable(self, iterable: Iterable[str]) -> Iterable[int]:
        """Ids of each string in turn (e.g. the lines of an open file)."""
        if isinstance(iterable, (str, bytes)):
            raise TypeError("iterable must yield str pieces (e.g. an open text file), "
                            f"got a {type(iterable).__name__}; use encode() for one")
        for text in iterable:
            yield from self.encode(text)

    def decode(self, ids: Iterable[int]) -> str:
        """Bytes back to text; a cut multi-byte character becomes U+FFFD."""
        if hasattr(ids, "tolist"):  # a tensor or an array
            ids = ids.tolist()
        else:
            ids = list(check_iterable("ids", ids, _IDS))
        for i in ids:  # ints: not floats, not bools
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"ids must hold ints, got {type(i).__name__} {i!r}")
        if any(not 0 <= i < 256 for i in ids):
            raise ValueError("ids must lie in [0, 256) (bytes) for ByteTokenizer")
        return bytes(ids).decode("utf-8", errors="replace")


def _surrogate_error(name: str, err: UnicodeEncodeError) -> ValueError:
    char = err.object[err.start]
    return ValueError(
        f"{name} holds a lone surrogate ({char!r}), which has no UTF-8 encoding; "
        "expected text that str.encode('utf-8') accepts"
    )


def _read(path: object, name: str) -> str:
    check_path(name, path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{name} ({str(path)!r}) does not exist") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{name} ({str(path)!r}) is not UTF-8: {err.reason}") from None
    except OSError as err:
        raise ValueError(f"{name} ({str(path)!r}) cannot be read: {err}") from err


@functools.cache
def gpt2_tokenizer() -> Tokenizer:
    """GPT-2's tokenizer from the shipped files, with ``<|endoftext|>`` (id 50256).

    Loaded once per process (a fraction of a second) and shared: treat it as
    read-only.

    Taught on: "Tokenization".
    """
    from llmlab.data import GPT2_MERGES, GPT2_VOCAB

    return Tokenizer.from_files(GPT2_VOCAB, GPT2_MERGES, [END_OF_TEXT])
