"""The corpora and tokenizer files the lectures use, shipped as package data.

Nothing is downloaded: ``pip install llmlab`` installs these files, and
``NOTICE.md`` beside them names each source and licence.

* ``shakespeare.txt``: "tiny Shakespeare" (1.1 MB of English, public domain).
* ``tang_poems.json``: 4,003 poems of 全唐诗 and the 366 of 唐诗三百首, traditional
  characters (chinese-poetry, MIT). Read it with :func:`tang_poems`.
* ``vocab.json``, ``merges.txt``: GPT-2's tokenizer (OpenAI GPT-2, MIT), read by
  :meth:`llmlab.tokenization.Tokenizer.from_files`.

The lectures' two corpora, :data:`CORPORA`, are read whole by :func:`corpus_text`.

Taught on: "Tokenization".
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from llmlab.checks import check_str

__all__ = [
    "CORPORA",
    "GPT2_MERGES",
    "GPT2_VOCAB",
    "NAMES",
    "TANG_COLLECTIONS",
    "corpus_text",
    "path",
    "shakespeare",
    "tang_poems",
]

_DIR = Path(__file__).resolve().parent

NAMES: tuple[str, ...] = (
    "shakespeare.txt",
    "tang_poems.json",
    "vocab.json",
    "merges.txt",
    "NOTICE.md",
    "LICENSE-chinese-poetry",
)
"""The files :func:`path` knows."""

TANG_COLLECTIONS: tuple[str, ...] = ("quan_tang_shi", "tang300")
"""The collections in ``tang_poems.json``: 全唐诗 (4,003 poems), 唐诗三百首 (366)."""

CORPORA: tuple[str, ...] = ("shakespeare", "tang")
"""The corpora the lectures train on, by key: tiny Shakespeare, the Tang poems
(:func:`corpus_text`)."""

GPT2_VOCAB: Path = _DIR / "vocab.json"
"""GPT-2's ``vocab.json`` (``encoder.json``): token string -> id, 50,257 entries."""

GPT2_MERGES: Path = _DIR / "merges.txt"
"""GPT-2's ``merges.txt`` (``vocab.bpe``): 50,000 merges in rank order."""


def path(name: str) -> Path:
    """The path of the shipped data file ``name`` (one of :data:`NAMES`).

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: ``name`` is not one of :data:`NAMES`.

    Taught on: "Tokenization".
    """
    check_str("name", name)
    if name not in NAMES:
        raise ValueError(
            f"name ({name!r}) is not a shipped data file; expected one of "
            f"{', '.join(NAMES)}"
        )
    return _DIR / name


@functools.cache
def shakespeare() -> str:
    """Tiny Shakespeare, the whole text (1,115,394 characters, ASCII).

    Taught on: "Tokenization".
    """
    return path("shakespeare.txt").read_text(encoding="utf-8")


@functools.cache
def _tang(collection: str) -> tuple[str, ...]:
    with path("tang_poems.json").open(encoding="utf-8") as fh:
        poems = json.load(fh)[collection]
    return tuple("\n".join(p["paragraphs"]) for p in poems)


def tang_poems(collection: str = "quan_tang_shi") -> list[str]:
    """The Tang poems of one collection, one string per poem.

    A poem's string is its lines (the ``paragraphs`` of the source, each a
    couplet such as ``"秦川雄帝宅，函谷壯皇居。"``) joined with ``"\\n"``, with no
    title, author or trailing newline. Characters are traditional, as in the
    source.

    Args:
        collection: ``"quan_tang_shi"`` (全唐诗, 4,003 poems, the default) or
            ``"tang300"`` (唐诗三百首, 366 poems; some also appear in the first).

    Raises:
        ValueError: ``collection`` is not one of :data:`TANG_COLLECTIONS`.

    Taught on: "Tokenization".
    """
    if collection not in TANG_COLLECTIONS:
        check_str("collection", collection)
        raise ValueError(
            f"collection ({collection!r}) must be one of {', '.join(TANG_COLLECTIONS)}"
        )
    return list(_tang(collection))


def corpus_text(corpus: str) -> str:
    """The whole text of a corpus of :data:`CORPORA`.

    ``"shakespeare"`` is :func:`shakespeare`. ``"tang"`` is the 全唐诗 poems of
    :func:`tang_poems` joined by ``"\\n"``, one couplet per line: a poem boundary
    looks like a line break. An empty line between poems would be a second
    ``"\\n"`` token, the likeliest single token after a line break (the next
    character is one of thousands), and samples at a low temperature would fill
    up with empty lines.

    Raises:
        TypeError: ``corpus`` is not a string.
        ValueError: ``corpus`` is not one of :data:`CORPORA`.

    Taught on: "Tokenization".
    """
    if corpus == "shakespeare":
        return shakespeare()
    if corpus == "tang":
        return "\n".join(tang_poems())
    check_str("corpus", corpus)
    raise ValueError(f"corpus ({corpus!r}) must be one of {', '.join(CORPORA)}")
