"""BPE training and the tokenizer: known merges, GPT-2 agreement, streaming, errors.

The reference for GPT-2 is OpenAI's tiktoken, built offline from the same ranks
(``llmlab.tokenization.reference``); the reference for the fast merge loop is
the naive one, which recounts every pair after every merge.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmlab import data
from llmlab.tokenization import (
    GPT2_PATTERN,
    Merge,
    Tokenizer,
    bytes_to_unicode,
    chunk_boundaries,
    count_pretokens,
    count_pretokens_file,
    gpt2_tokenizer,
    learn_merges,
    learn_merges_naive,
    pretokenize,
    split_on_special_tokens,
    train_bpe,
    train_bpe_from_counts,
    vocab_from_merges,
)
from llmlab.tokenization.bpe import _descending
from llmlab.tokenization.reference import tiktoken_encoding

FAST = settings(max_examples=60, deadline=None, derandomize=True)
EOT = "<|endoftext|>"

# the CS336 handout's example (after Sennrich et al.), pre-tokenized on spaces
HANDOUT = {b"low": 5, b"lower": 2, b"widest": 3, b"newest": 6}
HANDOUT_MERGES = [
    (b"s", b"t"), (b"e", b"st"), (b"o", b"w"), (b"l", b"ow"), (b"w", b"est"),
    (b"n", b"e"), (b"ne", b"west"), (b"w", b"i"), (b"wi", b"d"), (b"wid", b"est"),
    (b"low", b"e"), (b"lowe", b"r"),
]  # fmt: skip

VARIED = {
    "english": "The quick brown fox jumps over the lazy dog. It's 9:30, isn't it?",
    "chinese": "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
    "traditional": "秦川雄帝宅，函谷壯皇居。",
    "code": 'def f(x):\n    return {"a": x ** 2}  # square\n\tpass\n',
    "emoji": "I ❤️ 🦀 and 👩‍👩‍👧 🇫🇷!",
    "spaces": "a  b   c    d\n\n\n  e \t\tf   ",
    "digits": "3.14159 2024 1000000 007 12345678901234567890",
    "special": f"first doc{EOT}second doc{EOT}",
    "mixed": "GPT-2 sees 'Ġ' for spaces; ünïcödé, Ελληνικά, русский, العربية",
    "empty": "",
    "trailing": "hello world   \n",
}


@pytest.fixture(scope="module")
def gpt2() -> Tokenizer:
    return gpt2_tokenizer()


@pytest.fixture(scope="module")
def reference(gpt2: Tokenizer):
    return tiktoken_encoding(gpt2)


@pytest.fixture(scope="module")
def small() -> Tokenizer:
    """A 400-entry tokenizer trained on 100 KB of Shakespeare, with EOT."""
    counts = count_pretokens(data.shakespeare()[:100_000])
    vocab, merges = train_bpe_from_counts(counts, 400, [EOT])
    return Tokenizer(vocab, merges, [EOT])


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------
# pre-tokenization
# ---------------------------------------------------------------------------
def test_pretokenize_follows_gpt2_pattern() -> None:
    assert pretokenize("Hello, world!") == ["Hello", ",", " world", "!"]
    assert pretokenize("I'm   here 2024") == ["I", "'m", "  ", " here", " 2024"]
    assert pretokenize("床前明月光，疑是") == ["床前明月光", "，", "疑是"]
    text = VARIED["code"] + VARIED["spaces"]
    assert "".join(pretokenize(text)) == text


def test_special_tokens_split_longest_first() -> None:
    double = EOT + EOT
    pieces = split_on_special_tokens(f"a{double}b{EOT}c", [EOT, double])
    assert pieces == ["a", double, "b", EOT, "c"]
    assert split_on_special_tokens("abc", []) == ["abc"]


def test_count_pretokens_drops_special_tokens() -> None:
    counts = count_pretokens(f"the cat{EOT}the cat", [EOT])
    assert counts == {b"the": 2, b" cat": 2}


def test_chunk_boundaries_cut_after_a_non_space_character(tmp_path: Path) -> None:
    text = "line one\n\n  indented\nzwei 二\n三\u3000\nend\n" * 50
    path = _write(tmp_path / "c.txt", text)
    bounds = chunk_boundaries(path, 8)
    raw = path.read_bytes()
    assert bounds[0] == 0 and bounds[-1] == len(raw) and bounds == sorted(set(bounds))
    assert len(bounds) > 4
    for cut in bounds[1:-1]:
        assert raw[cut : cut + 1] == b"\n"
        before = raw[:cut].decode("utf-8")[-1]
        assert not before.isspace()  # never after a space or U+3000
    serial = count_pretokens(text)
    assert count_pretokens_file(path, num_processes=3) == serial


# ---------------------------------------------------------------------------
# BPE training
# ---------------------------------------------------------------------------
def test_handout_example_merges() -> None:
    merges = learn_merges(HANDOUT, 12)
    assert [m.pair for m in merges] == HANDOUT_MERGES
    assert [m.count for m in merges] == [9, 9, 7, 7, 6, 6, 6, 3, 3, 3, 2, 2]
    assert learn_merges_naive(HANDOUT, 12) == merges


def test_ties_go_to_the_lexicographically_greater_pair() -> None:
    # every pair occurs once: the greatest pair of byte strings wins
    assert learn_merges({b"ab": 1, b"cd": 1, b"ba": 1}, 1) == [Merge((b"c", b"d"), 1)]
    # (b"s", b"t") beats (b"e", b"s") at 9 each in the handout example
    assert learn_merges(HANDOUT, 1)[0].pair == (b"s", b"t")
    # a string is greater than its prefix: after (a, b), the pairs (ab, a) and
    # (a, z) tie at 1, and (b"ab", b"a") > (b"a", b"z") because b"ab" > b"a"
    counts = {b"ab": 5, b"aba": 1, b"az": 1}
    assert [m.pair for m in learn_merges(counts, 2)] == [(b"a", b"b"), (b"ab", b"a")]
    assert learn_merges_naive(counts, 2) == learn_merges(counts, 2)


def test_hugging_face_breaks_ties_the_other_way() -> None:
    """The tie-break is a convention (the lecture says so): CS336's handout, and
    ``learn_merges``, take the lexicographically greater pair; Hugging Face's
    ``BpeTrainer`` takes the pair of smaller ids, single characters being numbered
    in sorted order, so among single characters the smaller pair wins."""
    tokenizers = pytest.importorskip("tokenizers")

    def hf_merges(words: dict[bytes, int], n: int) -> list[tuple[bytes, bytes]]:
        tok = tokenizers.Tokenizer(tokenizers.models.BPE())
        tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
        trainer = tokenizers.trainers.BpeTrainer(
            vocab_size=1000, min_frequency=0, show_progress=False)
        text = " ".join(" ".join([w.decode()] * k) for w, k in words.items())
        tok.train_from_iterator([text], trainer=trainer)
        merges = json.loads(tok.to_str())["model"]["merges"]
        pairs = [m if isinstance(m, list) else m.split(" ") for m in merges]
        return [(a.encode(), b.encode()) for a, b in pairs[:n]]

    # the handout's text: (s, t) and (e, s) tie at 9
    assert learn_merges(HANDOUT, 1)[0] == Merge((b"s", b"t"), 9)
    assert hf_merges(HANDOUT, 1) == [(b"e", b"s")]
    # every pair once: ours takes the greatest, theirs the smallest
    once = {b"ab": 1, b"cd": 1, b"ba": 1}
    assert learn_merges(once, 1)[0].pair == (b"c", b"d")
    assert hf_merges(once, 1) == [(b"a", b"b")]


@given(st.lists(st.binary(max_size=6), min_size=2, max_size=8))
@FAST
def test_descending_key_reverses_byte_order(tokens: list[bytes]) -> None:
    assert sorted(tokens, key=_descending) == sorted(tokens, reverse=True)


@given(
    st.dictionaries(
        st.binary(min_size=1, max_size=9).map(lambda b: bytes(97 + x % 3 for x in b)),
        st.integers(1, 5),
        min_size=1,
        max_size=10,
    ),
    st.integers(0, 25),
)
@FAST
def test_incremental_merges_equal_naive(counts: dict[bytes, int], n: int) -> None:
    # a three-letter alphabet makes ties and overlapping pairs (aaa) common
    assert learn_merges(counts, n) == learn_merges_naive(counts, n)


def test_incremental_equals_naive_on_real_text() -> None:
    english = count_pretokens(data.shakespeare()[:30_000])
    assert learn_merges(english, 60) == learn_merges_naive(english, 60)
    chinese = count_pretokens("\n".join(data.tang_poems()[:40]))
    assert learn_merges(chinese, 60) == learn_merges_naive(chinese, 60)


def test_train_bpe_vocab_layout_and_special_tokens(tmp_path: Path) -> None:
    text = f"low lower{EOT}newest widest<|pad|>low low" * 20
    path = _write(tmp_path / "corpus.txt", text)
    vocab, merges = train_bpe(path, 256 + 2 + 10, [EOT, "<|pad|>"])
    assert len(vocab) == 268 and len(merges) == 10
    assert [vocab[i] for i in range(256)] == [bytes([i]) for i in range(256)]
    assert vocab[256] == EOT.encode() and vocab[257] == b"<|pad|>"
    assert [vocab[258 + k] for k in range(10)] == [a + b for a, b in merges]
    # special tokens are never merged, nor merged across
    for a, b in merges:
        assert b"<" not in a + b and b"|" not in a + b
    assert vocab == vocab_from_merges(merges, [EOT, "<|pad|>"])


def test_merges_stay_inside_pretokens() -> None:
    text = data.shakespeare()[:50_000]
    vocab, merges = train_bpe_from_counts(count_pretokens(text), 600)
    for a, b in merges:
        token = (a + b).decode("utf-8")  # ASCII text: every token decodes
        assert pretokenize(token) == [token], token


def test_train_bpe_file_equals_counts_and_parallel_serial(tmp_path: Path) -> None:
    text = ("Ah, " + data.shakespeare()[:20_000] + EOT) * 3
    path = _write(tmp_path / "corpus.txt", text)
    serial = train_bpe(path, 400, [EOT], num_processes=1)
    assert serial == train_bpe(path, 400, [EOT], num_processes=2)
    assert serial == train_bpe_from_counts(count_pretokens(text, [EOT]), 400, [EOT])


def test_training_stops_when_no_pair_is_left(tmp_path: Path) -> None:
    vocab, merges = train_bpe(_write(tmp_path / "t.txt", "ab ab"), 1000)
    assert merges == [(b"a", b"b"), (b" ", b"ab")]
    assert len(vocab) == 258


# ---------------------------------------------------------------------------
# the tokenizer
# ---------------------------------------------------------------------------
def test_gpt2_known_ids(gpt2: Tokenizer) -> None:
    assert gpt2.encode("Hello, world!") == [15496, 11, 995, 0]
    assert gpt2.encode(EOT) == [50256]
    assert gpt2.vocab_size == 50257
    assert gpt2.decode([15496, 11, 995, 0]) == "Hello, world!"


@pytest.mark.parametrize("key", sorted(VARIED))
def test_gpt2_equals_tiktoken(gpt2: Tokenizer, reference, key: str) -> None:
    text = VARIED[key]
    ids = gpt2.encode(text)
    assert ids == reference.encode(text, allowed_special="all")
    assert gpt2.decode(ids) == text


def test_gpt2_equals_tiktoken_on_a_whole_book_page(gpt2: Tokenizer, reference) -> None:
    text = data.shakespeare()[:60_000] + "\n".join(data.tang_poems()[:200])
    assert gpt2.encode(text) == reference.encode(text)


def test_bytes_to_unicode_is_gpt2s_alphabet() -> None:
    table = bytes_to_unicode()
    assert len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("a")] == "a"


def test_overlapping_special_tokens_longest_wins(gpt2: Tokenizer) -> None:
    double = EOT + EOT
    tok = Tokenizer(gpt2.vocab, gpt2.merges, [EOT, double])
    ids = tok.encode(f"a{double}{EOT}b")
    assert ids[1:-1] == [tok.special_ids[double], 50256]
    assert tok.special_ids[double] == 50257  # appended to the vocabulary
    assert tok.decode(ids) == f"a{double}{EOT}b"


def test_without_special_tokens_they_are_plain_text(gpt2: Tokenizer) -> None:
    plain = Tokenizer(gpt2.vocab, gpt2.merges)
    ids = plain.encode(EOT)
    assert len(ids) > 1 and 50256 not in ids
    assert plain.decode(ids) == EOT


def test_small_tokenizer_round_trips_and_keeps_specials(small: Tokenizer) -> None:
    text = VARIED["special"] + VARIED["chinese"] + VARIED["emoji"]
    ids = small.encode(text)
    assert ids.count(small.special_ids[EOT]) == 2
    assert small.decode(ids) == text
    assert max(ids) < 400


def test_decode_replaces_invalid_utf8(gpt2: Tokenizer) -> None:
    ids = gpt2.encode("明")  # one character, several byte-level tokens
    assert len(ids) > 1
    assert "\ufffd" in gpt2.decode(ids[:1])
    assert gpt2.decode(ids) == "明"
    lone = Tokenizer(vocab_from_merges([]), [])
    assert lone.decode([0xE6, 0x98]) == "\ufffd"  # a truncated 3-byte sequence
    assert lone.decode([0xFF, ord("a")]) == "\ufffda"


def test_decode_accepts_tensors_and_arrays(gpt2: Tokenizer) -> None:
    import numpy as np
    import torch

    ids = gpt2.encode("tensor ids")
    assert gpt2.decode(torch.tensor(ids)) == "tensor ids"
    assert gpt2.decode(np.array(ids)) == "tensor ids"
    assert gpt2.decode(iter(ids)) == "tensor ids"


def test_cache_does_not_change_ids(gpt2: Tokenizer) -> None:
    uncached = Tokenizer(gpt2.vocab, gpt2.merges, [EOT], cache_size=0)
    tiny = Tokenizer(gpt2.vocab, gpt2.merges, [EOT], cache_size=3)
    text = data.shakespeare()[:5_000]
    assert uncached.encode(text) == tiny.encode(text) == gpt2.encode(text)
    assert len(tiny._cache) <= 3 and not uncached._cache


@given(st.text(max_size=60))
@FAST
def test_any_text_round_trips_gpt2(text: str) -> None:
    tok = gpt2_tokenizer()
    assert tok.decode(tok.encode(text)) == text


@given(st.text(max_size=60))
@FAST
def test_any_text_round_trips_small(small: Tokenizer, text: str) -> None:
    assert small.decode(small.encode(text)) == text


@given(
    st.lists(
        st.sampled_from(["a", " ", "  ", "\n", "'", "l", "s", "明", "1", "<|", "end",
                         "of", "text", "|>", EOT, "!", "\u3000", "é"]),
        max_size=40,
    ),
    st.lists(st.integers(0, 200), max_size=6),
)
@FAST
def test_encode_iterable_equals_encode_for_any_split(
    small: Tokenizer, parts: list[str], cuts: list[int]
) -> None:
    text = "".join(parts)
    cuts = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    double = Tokenizer(small.vocab, small.merges, [EOT, EOT + EOT])
    for tok in (small, double):
        assert list(tok.encode_iterable(iter(pieces))) == tok.encode(text)


def test_encode_iterable_holds_text_across_long_pieces(small: Tokenizer) -> None:
    # pieces longer than the streaming window, cut inside words and tokens
    text = (data.shakespeare()[:30_000] + EOT) * 6
    pieces = [text[i : i + 70_001] for i in range(0, len(text), 70_001)]
    assert list(small.encode_iterable(pieces)) == small.encode(text)


def test_encode_iterable_on_a_file(gpt2: Tokenizer, tmp_path: Path) -> None:
    text = data.shakespeare()[:200_000] + EOT + VARIED["chinese"] * 50
    path = _write(tmp_path / "f.txt", text)
    with open(path, encoding="utf-8") as fh:
        assert list(gpt2.encode_iterable(fh)) == gpt2.encode(text)


def test_encode_iterable_memory_is_bounded(gpt2: Tokenizer, tmp_path: Path) -> None:
    # a 3.6 MB file: its ids alone would take 7 MB as a list (900k ids)
    block = data.shakespeare()[:300_000]
    path = tmp_path / "big.txt"
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(12):
            fh.write(block)
    tok = Tokenizer(gpt2.vocab, gpt2.merges, [EOT])
    expected = len(tok.encode(block))  # also warms the (bounded) pre-token cache
    count = 0
    tracemalloc.start()
    try:
        with open(path, encoding="utf-8") as fh:
            for _ in tok.encode_iterable(fh):
                count += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 12 * expected
    assert peak < 2 * 2**20, f"peak {peak / 2**20:.1f} MiB"


# ---------------------------------------------------------------------------
# loading GPT-2 files
# ---------------------------------------------------------------------------
def _tiny_files(tmp_path: Path, merges: str, vocab: dict | str | None = None):
    table = bytes_to_unicode()
    if vocab is None:
        vocab = {table[b]: b for b in range(256)}
        vocab.update({"ĠĠ": 256, "ab": 257})
    vpath = tmp_path / "vocab.json"
    vpath.write_text(vocab if isinstance(vocab, str) else json.dumps(vocab), "utf-8")
    mpath = _write(tmp_path / "merges.txt", merges)
    return vpath, mpath


def test_from_files_reads_header_and_gpt2_alphabet(tmp_path: Path) -> None:
    vpath, mpath = _tiny_files(tmp_path, "#version: 0.2\nĠ Ġ\na b\n\n")
    tok = Tokenizer.from_files(vpath, mpath)
    assert tok.merges == [(b" ", b" "), (b"a", b"b")]
    assert tok.encode("ab  ") == [257, 256]  # "ab", "  "
    assert tok.encode("ab  ab") == [257, 32, 32, 257]  # "ab", " ", " ab"
    without = Tokenizer.from_files(*_tiny_files(tmp_path, "Ġ Ġ\na b"))
    assert without.merges == tok.merges


def test_shipped_gpt2_files_have_no_header() -> None:
    first = data.GPT2_MERGES.read_text(encoding="utf-8").splitlines()[0]
    assert not first.startswith("#") and len(gpt2_tokenizer().merges) == 50_000



# ---------------------------------------------------------------------------
# a trained tokenizer in one file: Tokenizer.save and Tokenizer.load
# ---------------------------------------------------------------------------
def test_a_saved_tokenizer_loads_back_the_same(tmp_path: Path) -> None:
    text = "hello world, hello there\u00e9\u6625 <|endoftext|> hello"
    vocab, merges = train_bpe(_write(tmp_path / "c.txt", text * 20), 280, [EOT])
    tok = Tokenizer(vocab, merges, [EOT])
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    back = Tokenizer.load(path)
    assert (back.vocab, back.merges, back.special_tokens) == (
        tok.vocab, tok.merges, tok.special_tokens)
    assert back.encode(text) == tok.encode(text) and back.decode(back.encode(text)) == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "tokenizer.json"]


def test_save_replaces_a_file_only_when_asked(tmp_path: Path) -> None:
    path = _write(tmp_path / "tokenizer.json", "mine")
    small = Tokenizer(vocab_from_merges([]), [])
    with pytest.raises(ValueError, match=r"path \(.*tokenizer\.json'\) exists; pass "
                                         r"overwrite=True"):
        small.save(path)
    assert path.read_text(encoding="utf-8") == "mine"
    small.save(path, overwrite=True)
    assert Tokenizer.load(path).vocab == small.vocab


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"vocab": {"0": "zz"}}',
                                  '{"vocab": {}, "merges": []}'])
def test_load_refuses_what_save_did_not_write(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path / "tokenizer.json", text)
    with pytest.raises(ValueError, match=r"path \(.*\) is not a tokenizer file"):
        Tokenizer.load(path)
    with pytest.raises(ValueError, match=r"path \(.*missing\.json'\) does not exist"):
        Tokenizer.load(tmp_path / "missing.json")


# ---------------------------------------------------------------------------
# bad input: the exception type, and a message naming the argument
# ---------------------------------------------------------------------------
def _train(path, vocab_size=300, special_tokens=None, **kw):
    return lambda: train_bpe(path, vocab_size, special_tokens, **kw)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return _write(tmp_path / "corpus.txt", "hello world, hello there")


@pytest.mark.parametrize(
    "vocab_size, special, error, match",
    [
        (255, None, ValueError, r"vocab_size \(255\) must be at least 256"),
        (257, [EOT, "<|pad|>"], ValueError, r"vocab_size \(257\).*\(2\) = 258"),
        (0, None, ValueError, r"vocab_size \(0\)"),
        (-5, None, ValueError, r"vocab_size \(-5\)"),
        (300.0, None, TypeError, r"vocab_size must be an int, got float"),
        (True, None, TypeError, r"vocab_size must be an int, got bool"),
        ("300", None, TypeError, r"vocab_size must be an int, got str"),
        (300, [EOT, EOT], ValueError, r"special_tokens has duplicates"),
        (300, [""], ValueError, r"special_tokens must not contain the empty"),
        (300, EOT, TypeError, r"special_tokens must be a list of str"),
        (300, [b"<|x|>"], TypeError, r"special_tokens must hold str, got bytes"),
    ],
)
def test_train_bpe_bad_arguments(corpus, vocab_size, special, error, match) -> None:
    with pytest.raises(error, match=match):
        _train(corpus, vocab_size, special)()


def test_train_bpe_good_controls(corpus: Path) -> None:
    # the boundaries of the cases above are accepted
    vocab, merges = train_bpe(corpus, 256)
    assert len(vocab) == 256 and merges == []
    vocab, _ = train_bpe(corpus, 258, [EOT, "<|pad|>"])
    assert len(vocab) == 258
    vocab, _ = train_bpe(str(corpus), 260, (EOT,))
    assert len(vocab) == 260


def test_train_bpe_bad_corpus(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"input_path \('.*missing.txt'\) does not"):
        train_bpe(tmp_path / "missing.txt", 300)
    with pytest.raises(ValueError, match=r"input_path .* is a directory"):
        train_bpe(tmp_path, 300)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café".encode("latin-1"))
    with pytest.raises(ValueError, match=r"input_path .* is not UTF-8"):
        train_bpe(latin1, 300)
    with pytest.raises(TypeError, match=r"input_path must be a str or os.PathLike"):
        train_bpe(123, 300)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"num_processes must be an int >= 1, got 0"):
        train_bpe(_write(tmp_path / "ok.txt", "ok"), 300, num_processes=0)


def test_learn_merges_bad_arguments() -> None:
    with pytest.raises(TypeError, match="pretoken_counts keys must be bytes"):
        learn_merges({"low": 5}, 3)  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="pretoken_counts values must be positive"):
        learn_merges({b"low": 0}, 3)
    with pytest.raises(ValueError, match=r"num_merges must be an int >= 0, got -1"):
        learn_merges(HANDOUT, -1)
    assert learn_merges(HANDOUT, 0) == []


def test_encode_refuses_non_str(gpt2: Tokenizer) -> None:
    for bad in (b"bytes", 42, None, ["a list"]):
        with pytest.raises(TypeError, match=r"text must be a str, got"):
            gpt2.encode(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"iterable must yield str, got bytes"):
        list(gpt2.encode_iterable([b"bytes"]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"iterable must yield str pieces"):
        list(gpt2.encode_iterable("one string"))
    assert gpt2.encode("") == [] and list(gpt2.encode_iterable([])) == []
    with pytest.raises(ValueError, match=r"text holds a lone surrogate \('\\ud800'\)"):
        gpt2.encode("ok \ud800")
    with pytest.raises(ValueError, match=r"iterable holds a lone surrogate"):
        list(gpt2.encode_iterable(["ok", "\udcff"]))


def test_decode_refuses_ids_outside_the_vocabulary(gpt2: Tokenizer) -> None:
    for bad in (50257, -1, 10**9):
        with pytest.raises(ValueError, match=rf"ids holds {bad}, which is not in"):
            gpt2.decode([15496, bad])
    for bad in (1.0, True, "1", None):
        with pytest.raises(TypeError, match=r"ids must hold ints"):
            gpt2.decode([15496, bad])
    assert gpt2.decode([0, 50256]) == "!" + EOT  # the last valid id


def test_tokenizer_bad_construction(gpt2: Tokenizer) -> None:
    bytes_only = vocab_from_merges([])
    with pytest.raises(ValueError, match=r"merges\[0\] .* missing from vocab"):
        Tokenizer(bytes_only, [(b"a", b"b")])
    with pytest.raises(ValueError, match=r"vocab must hold all 256 single bytes"):
        Tokenizer({0: b"a"}, [])
    with pytest.raises(TypeError, match=r"vocab must be a dict"):
        Tokenizer([b"a"], [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"merges\[0\] must be a pair of bytes"):
        Tokenizer(bytes_only, [("a", "b")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"special_tokens has duplicates"):
        Tokenizer(bytes_only, [], [EOT, EOT])
    with pytest.raises(ValueError, match=r"special_tokens must not contain the empty"):
        Tokenizer(bytes_only, [], [""])
    with pytest.raises(ValueError, match=r"cache_size must be an int >= 0, got -1"):
        Tokenizer(bytes_only, [], cache_size=-1)
    assert Tokenizer(bytes_only, [], [EOT]).special_ids == {EOT: 256}


@pytest.mark.parametrize(
    "merges, vocab, match",
    [
        ("a b\nxy z\n", None, r"merges_path .* line 2: unknown tokens \['xy'\]"),
        ("a b c\n", None, r"merges_path .* line 1: expected 'left right'"),
        ("a\n", None, r"merges_path .* line 1: expected 'left right'"),
        ("a b\n", "{not json", r"vocab_path .* is not JSON"),
        ("a b\n", '["a", "b"]', r"vocab_path .* must hold a JSON object"),
        ("a b\n", '{"a": "zero"}', r"vocab_path .* must hold a JSON object"),
        ("a b\n", '{"a": 0, "\\u0000": 1}', r"vocab_path .* outside GPT-2's byte"),
        ("a b\n", '{"a": 0, "b": 0}', r"vocab_path .* gives the same id to two"),
        ("a\u0000 b\n", None, r"merges_path .* line 1: .* outside GPT-2's byte"),
    ],
)
def test_from_files_malformed(tmp_path: Path, merges: str, vocab, match: str) -> None:
    vpath, mpath = _tiny_files(tmp_path, merges, vocab)
    with pytest.raises(ValueError, match=match):
        Tokenizer.from_files(vpath, mpath)


def test_from_files_missing_or_unreadable(tmp_path: Path) -> None:
    vpath, mpath = _tiny_files(tmp_path, "a b\n")
    with pytest.raises(ValueError, match=r"vocab_path \('.*nope.json'\) does not"):
        Tokenizer.from_files(tmp_path / "nope.json", mpath)
    with pytest.raises(ValueError, match=r"merges_path \('.*nope.txt'\) does not"):
        Tokenizer.from_files(vpath, tmp_path / "nope.txt")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe a b")
    with pytest.raises(ValueError, match=r"merges_path .* is not UTF-8"):
        Tokenizer.from_files(vpath, tmp_path / "bin.txt")
    with pytest.raises(TypeError, match=r"vocab_path must be a str or os.PathLike"):
        Tokenizer.from_files(None, mpath)  # type: ignore[arg-type]
    assert Tokenizer.from_files(str(vpath), str(mpath)).encode("ab") == [257]


def test_pattern_is_gpt2s() -> None:
    # the pattern tiktoken's gpt2 encoding uses, character for character
    assert GPT2_PATTERN == (
        r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    )
