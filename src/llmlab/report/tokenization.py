"""Tables and figures of :mod:`llmlab.experiments.tokenization`, in the reader's language.

Tokens are shown as chips (:func:`tokens_html`): one ``<code class="llmlab-tok">``
per token, spaces as ``␣``, newlines as ``↵``, tabs as ``⇥``, and the bytes of a
token that is not valid UTF-8 on its own (part of a character) as ``\\xNN``, with
a dashed outline. The chips are the same in every language: they are data. In a
terminal (:func:`llmlab.report.output_mode` ``text``) a chip prints as ``[token]``.

Taught on: "Tokenization".
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from llmlab.checks import check_choice, check_int, check_sizes, check_str, check_type
from llmlab.experiments.tokenization import (
    BPEStepsResult,
    ChineseTokenizersResult,
    CorpusTrainingResult,
    GPT2AgreementResult,
    GranularityResult,
    PitfallsResult,
    TrainingTimingResult,
)
from llmlab.report import (
    Label,
    Localized,
    _as_printed,
    fmt_float,
    fmt_int,
    fmt_pct,
    label,
    line_plot,
    table,
    yes_no,
)

__all__ = [
    "agreement_table",
    "boundary_table",
    "bpe_segmentation_table",
    "bpe_steps_table",
    "chinese_example_table",
    "chinese_tokenizers_table",
    "compression_figure",
    "compression_table",
    "first_merges_table",
    "merge_speed_line",
    "granularity_examples",
    "granularity_table",
    "is_partial",
    "longest_tokens_table",
    "partial_decode_table",
    "pitfalls_table",
    "timing_settings_table",
    "timing_table",
    "token_kinds_table",
    "token_text",
    "tokens_html",
    "utf8_corpus_table",
    "utf8_table",
    "verbatim_html",
]

LANGUAGE_NAMES = {
    "en": label("英文（莎士比亚）", "English (Shakespeare)"),
    "zh": label("中文（唐诗）", "Chinese (Tang poems)"),
}
SCHEME_NAMES = {
    "character": label("字符", "characters"),
    "byte": label("字节（UTF-8）", "bytes (UTF-8)"),
    "word": label("词（GPT-2 的预分词片段）", "words (GPT-2 pre-tokens)"),
    "subword": label("子词（GPT-2 的 BPE）", "subwords (GPT-2's BPE)"),
}
TOKENIZER_NAMES = {
    "gpt2": label("GPT-2", "GPT-2"),
    "bpe_en": label("我们的 BPE（莎士比亚）", "our BPE (Shakespeare)"),
    "bpe_zh": label("我们的 BPE（唐诗）", "our BPE (Tang poems)"),
}
AGREEMENT_NAMES = {
    "english": label("英文", "English prose"),
    "chinese": label("中文", "Chinese"),
    "code": label("代码", "code"),
    "emoji": label("emoji", "emoji"),
    "spaces": label("连续的空白", "runs of whitespace"),
    "digits": label("数字", "digits"),
    "special": label("特殊 token", "special tokens"),
}
PITFALL_NAMES = {
    ("document_boundary", "special"): label("文档边界：作为特殊 token",
                                            "boundary, as a special token"),
    ("document_boundary", "plain_text"): label("文档边界：当作普通文本",
                                               "boundary, as plain text"),
    ("overlapping_special", "double"): label("重叠的特殊 token：最长的优先",
                                             "overlapping specials: longest wins"),
    ("leading_space", "no_space"): label("不带空格", "no space"),
    ("leading_space", "space"): label("前面一个空格", "one leading space"),
    ("leading_space", "two_spaces"): label("前面两个空格", "two leading spaces"),
    ("case", "lower"): label("小写", "lower case"),
    ("case", "title"): label("首字母大写", "title case"),
    ("case", "upper"): label("全大写", "upper case"),
    ("digits", "year"): label("年份", "a year"),
    ("digits", "long"): label("长数字", "a long number"),
    ("digits", "grouped"): label("千位分隔", "with separators"),
    ("digits", "decimal"): label("小数", "a decimal"),
    ("trailing_whitespace", "none"): label("结尾没有空白", "no trailing whitespace"),
    ("trailing_whitespace", "space"): label("结尾一个空格", "a trailing space"),
    ("trailing_whitespace", "newline"): label("结尾一个换行", "a trailing newline"),
    ("indent", "spaces"): label("四个空格缩进", "indented by four spaces"),
    ("indent", "tab"): label("制表符缩进", "indented by a tab"),
}
TIMING_ROWS = [
    ("merges_naive", label("合并循环", "merge loop"),
     label("每次合并后重数所有的对", "recount every pair after each merge")),
    ("merges_incremental", label("合并循环", "merge loop"),
     label("只更新合并碰到的对", "update only what a merge touches")),
    ("pretokenize_serial", label("预分词整个文件", "pre-tokenize the whole file"),
     label("1 个进程", "1 process")),
    ("pretokenize_parallel", label("预分词整个文件", "pre-tokenize the whole file"),
     None),  # "N processes", from the result
    ("encode_uncached", label("编码", "encode"),
     label("不缓存预分词片段的编号", "no pre-token cache")),
    ("encode_cached", label("编码", "encode"),
     label("缓存每个预分词片段的编号", "cache each pre-token's ids")),
]

_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥"}


# --------------------------------------------------------------------------
# tokens as text and as chips
# --------------------------------------------------------------------------
def is_partial(token: bytes | str) -> bool:
    """True when ``token`` (bytes) is not valid UTF-8 on its own: part of a character."""
    check_type("token", token, (bytes, str), expected="bytes or str")
    if isinstance(token, str):
        return False
    try:
        token.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def token_text(token: bytes | str) -> str:
    """A token as a reader sees it: ``b" the"`` -> ``"␣the"``, ``b"\\xe6"`` -> ``"\\xe6"``.

    Valid UTF-8 is decoded; the bytes that are not are written ``\\xNN``.
    Spaces, newlines and tabs are made visible; other invisible characters
    (a zero-width joiner, control bytes) are written as escapes.
    """
    check_type("token", token, (bytes, str), expected="bytes or str")
    if isinstance(token, bytes):
        token = token.decode("utf-8", errors="backslashreplace")
    out = []
    for char in token:
        if char in _VISIBLE:
            out.append(_VISIBLE[char])
        elif char.isprintable() and unicodedata.category(char) != "Cf":
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def _escape(text: str) -> str:
    """HTML that Markdown leaves alone: every ASCII symbol as a numeric entity."""
    return "".join(c if c.isalnum() or ord(c) > 127 else f"&#{ord(c)};" for c in text)


def tokens_html(tokens: Iterable[bytes | str]) -> str:
    """Inline HTML: one chip per token (the same in every language).

    A token that is part of a character gets the class ``llmlab-partial``.
    A line may break between chips, never inside one. Printed in a terminal
    (output mode ``text``), the tokens as text: ``[␣the][␣cat]``.
    """
    return _as_printed(_tokens_html(tokens))


def _tokens_html(tokens: Iterable[bytes | str]) -> str:
    """:func:`tokens_html`'s HTML, whatever the output mode."""
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
        raise TypeError(f"tokens must be a list of tokens (bytes or str), got "
                        f"{type(tokens).__name__}; one token goes in a list: [token]")
    chips = []
    for i, token in enumerate(tokens):
        check_type(f"tokens[{i}]", token, (bytes, str), expected="bytes or str")
        cls = "llmlab-tok llmlab-partial" if is_partial(token) else "llmlab-tok"
        chips.append(f'<code class="{cls}">{_escape(token_text(token))}</code>')
    return '<span class="llmlab-toks">' + "<wbr>".join(chips) + "</span>"


def verbatim_html(text: str) -> str:
    """Inline HTML: ``text`` in one code span, whitespace made visible (in a
    terminal, output mode ``text``: that text alone)."""
    return _as_printed(_verbatim_html(text))


def _verbatim_html(text: str) -> str:
    """:func:`verbatim_html`'s HTML, whatever the output mode."""
    check_str("text", text)
    return f'<code class="llmlab-verbatim">{_escape(token_text(text))}</code>'


def _nowrap(html: str) -> str:
    return f'<span class="llmlab-merge">{html}</span>'


def _merge_html(pair: tuple[bytes, bytes]) -> str:
    a, b = pair
    chips = [_tokens_html([t]) for t in (a, b, a + b)]
    return _nowrap(f"{chips[0]} + {chips[1]} → {chips[2]}")


def _hex(data: bytes) -> str:
    return " ".join(f"{b:02x}" for b in data)


# --------------------------------------------------------------------------
# 1. characters, bytes, words, subwords
# --------------------------------------------------------------------------
def utf8_table(chars: str) -> Localized:
    """One row per character: its code point, its UTF-8 bytes (hex), how many."""
    check_str("chars", chars, nonempty=True)
    rows = [[_verbatim_html(c), f"U+{ord(c):04X}", f"`{_hex(c.encode('utf-8'))}`",
             len(c.encode("utf-8"))] for c in chars]
    headers = [label("字符", "character"), label("码位", "code point"),
               label("UTF-8 字节（十六进制）", "UTF-8 bytes (hex)"),
               label("字节数", "bytes")]
    return table(headers, rows, align="lllr")


def utf8_corpus_table(r: GranularityResult) -> Localized:
    """Per language: characters, UTF-8 bytes, bytes per character, characters by length."""
    check_type("r", r, GranularityResult)
    rows = []
    for lang in r.languages:
        counts = r.utf8_length_counts[lang]
        by_length = ", ".join(
            f"{n}: {fmt_int(c)}" for n, c in sorted(counts.items()))
        rows.append([LANGUAGE_NAMES[lang], fmt_int(r.num_chars[lang]),
                     fmt_int(r.sequence_length[lang]["byte"]),
                     fmt_float(r.utf8_bytes_per_char[lang], 2), by_length])
    headers = [label("样本", "sample"), label("字符", "characters"),
               label("UTF-8 字节", "UTF-8 bytes"), label("字节/字符", "bytes/character"),
               label("字符数，按字节长度", "characters by byte length")]
    return table(headers, rows)


def _vocab_cell(bound: int | None) -> Label | str:
    return fmt_int(bound) if bound is not None else label("不封闭", "open")


def granularity_table(r: GranularityResult) -> Localized:
    """Per unit: vocabulary size, then per language the sequence length and unseen share."""
    check_type("r", r, GranularityResult)
    names = {"en": ("英文", "English"), "zh": ("中文", "Chinese")}
    rows = []
    for s in r.schemes:
        row: list = [SCHEME_NAMES[s], _vocab_cell(r.vocab_bound[s])]
        row += [fmt_int(r.sequence_length[lang][s]) for lang in r.languages]
        for lang in r.languages:
            unseen = r.unseen_rate[lang].get(s)
            row.append(fmt_pct(unseen) if unseen is not None else label("不会", "never"))
        rows.append(row)
    headers: list = [label("切分单位", "unit"), label("词表大小", "vocabulary size")]
    headers += [label(f"{names[lang][0]}：序列长度", f"{names[lang][1]}: sequence length")
                for lang in r.languages]
    headers += [label(f"{names[lang][0]}：新文本里没见过的",
                      f"{names[lang][1]}: unseen in new text") for lang in r.languages]
    return table(headers, rows)


def granularity_examples(r: GranularityResult, language: str) -> Localized:
    """The example sentence of ``language`` (``"en"``, ``"zh"``) cut by each scheme.

    A Markdown list: one line per scheme, with how many units it makes.
    """
    check_type("r", r, GranularityResult)
    check_choice("language", language, r.example_units)
    lines = [(s, r.example_units[language][s]) for s in r.schemes]

    def make(lang: str) -> str:
        out = []
        for s, units in lines:
            name = SCHEME_NAMES[s].text(lang)
            if lang == "zh":
                out.append(f"- **{name}**（{len(units)} 个）：{_tokens_html(units)}")
            else:
                out.append(f"- **{name}** ({len(units)}): {_tokens_html(units)}")
        return "\n".join(out) + "\n"

    return Localized(make)


# --------------------------------------------------------------------------
# 2. BPE step by step
# --------------------------------------------------------------------------
def bpe_steps_table(r: BPEStepsResult) -> Localized:
    """One row per merge: the pair, its count, the other candidates, sizes after it."""
    check_type("r", r, BPEStepsResult)
    rows = [[0, "", "", "", 256, r.initial_num_tokens]]
    for k, step in enumerate(r.steps, start=1):
        others = ", ".join(_nowrap(f"{_tokens_html(a_b)} {c}")
                           for a_b, c in step.candidates[1:])
        rows.append([k, _merge_html(step.pair), step.count, others, step.vocab_size,
                     step.num_tokens])
    headers = [label("合并", "merge"), label("合并的对", "pair merged"),
               label("出现次数", "count"), label("其余候选（次数）", "other candidates (count)"),
               label("词表大小", "vocabulary size"),
               label("全文的 token 数", "tokens in the text")]
    return table(headers, rows, align="rlrlrr")


def bpe_segmentation_table(r: BPEStepsResult, after: Sequence[int] = (0, 3, 6, 12)
                           ) -> Localized:
    """Each distinct word's tokens after ``after[i]`` merges (0: single bytes)."""
    check_type("r", r, BPEStepsResult)
    after = check_sizes("after", after, minimum=0)
    after = [k for k in after if 0 <= k <= len(r.steps)]
    rows = []
    for i, (word, n) in enumerate(zip(r.words, r.word_counts)):
        cells = []
        for k in after:
            seg = [bytes([b]) for b in word] if k == 0 else r.steps[k - 1].segmentation[i]
            cells.append(_tokens_html(seg))
        rows.append([_verbatim_html(word.decode("utf-8")), n, *cells])
    headers = [label("词", "word"), label("次数", "count"),
               *[label(f"合并 {k} 次后", f"after {k} merges") for k in after]]
    return table(headers, rows, align="lr" + "l" * len(after))


# --------------------------------------------------------------------------
# 3. training on the corpora
# --------------------------------------------------------------------------
def first_merges_table(r: CorpusTrainingResult, n: int = 10) -> Localized:
    """The first ``n`` merges of each corpus, with the counts that chose them."""
    check_type("r", r, CorpusTrainingResult)
    check_int("n", n)
    curves = r.curves
    rows = []
    for i in range(min(n, *(len(c.first_merges) for c in curves))):
        row: list = [i + 1]
        for c in curves:
            row += [_merge_html(c.first_merges[i]), fmt_int(c.first_counts[i])]
        rows.append(row)
    headers: list = [label("名次", "rank")]
    for c in curves:
        headers += [LANGUAGE_NAMES[c.language], label("次数", "count")]
    return table(headers, rows, align="r" + "lr" * len(curves))


def compression_table(r: CorpusTrainingResult) -> Localized:
    """Held-out bytes and characters per token at each vocabulary size."""
    check_type("r", r, CorpusTrainingResult)
    sizes = r.curves[0].vocab_sizes
    rows = []
    for j, size in enumerate(sizes):
        row: list = [fmt_int(size), fmt_int(size - 257)]
        for c in r.curves:
            row += [fmt_float(c.bytes_per_token[j], 2), fmt_float(c.chars_per_token[j], 2)]
        rows.append(row)
    headers: list = [label("词表大小", "vocabulary size"), label("合并数", "merges")]
    for c in r.curves:
        name = {"en": ("英文", "English"), "zh": ("中文", "Chinese")}[c.language]
        headers += [label(f"{name[0]}：字节/token", f"{name[1]}: bytes/token"),
                    label(f"{name[0]}：字符/token", f"{name[1]}: characters/token")]
    return table(headers, rows)


def compression_figure(r: CorpusTrainingResult) -> Localized:
    """Held-out UTF-8 bytes per token against vocabulary size, one line per corpus."""
    check_type("r", r, CorpusTrainingResult)
    series = {LANGUAGE_NAMES[c.language]: (c.vocab_sizes, c.bytes_per_token)
              for c in r.curves}
    return line_plot(
        series,
        title=label("词表越大，每个 token 装下的字节越多", "Bigger vocabulary, more bytes per token"),
        xlabel=label("词表大小（256 个字节 + 1 个特殊 token + 合并数）",
                     "vocabulary size (256 bytes + 1 special token + merges)"),
        ylabel=label("留出文本的 UTF-8 字节/token", "held-out UTF-8 bytes per token"),
        alt=label("折线图：英文（莎士比亚）和中文（唐诗）留出文本上平均每个 token 的 UTF-8 字节数，"
                  "随词表大小增长，两条线都越来越平",
                  "Line chart: held-out UTF-8 bytes per token for English (Shakespeare) "
                  "and Chinese (Tang poems) as the vocabulary grows; both lines flatten"),
    )


def longest_tokens_table(r: CorpusTrainingResult, n: int = 8) -> Localized:
    """The ``n`` longest tokens each corpus taught BPE, with their length in bytes."""
    check_type("r", r, CorpusTrainingResult)
    check_int("n", n)
    rows = []
    for i in range(min(n, *(len(c.longest_tokens) for c in r.curves))):
        row: list = [i + 1]
        for c in r.curves:
            t = c.longest_tokens[i]
            row += [_tokens_html([t]), len(t)]
        rows.append(row)
    headers: list = [label("名次", "rank")]
    for c in r.curves:
        headers += [LANGUAGE_NAMES[c.language], label("字节", "bytes")]
    return table(headers, rows, align="r" + "lr" * len(r.curves))


def token_kinds_table(r: CorpusTrainingResult) -> Localized:
    """Learned tokens by what they decode to: part of a character, one, several."""
    check_type("r", r, CorpusTrainingResult)
    kinds = ("partial", "one_char", "multi_char")
    rows = [[LANGUAGE_NAMES[c.language], *[fmt_int(c.token_kinds.get(k, 0)) for k in kinds],
             fmt_int(sum(c.token_kinds.values()))] for c in r.curves]
    headers = [label("语料", "corpus"), label("半个字符（单独不是合法的 UTF-8）",
                                               "part of a character (not UTF-8 alone)"),
               label("正好一个字符", "one character"), label("多个字符", "several characters"),
               label("合计", "total")]
    return table(headers, rows)


# --------------------------------------------------------------------------
# 4. GPT-2's tokenizer vs tiktoken
# --------------------------------------------------------------------------
def agreement_table(r: GPT2AgreementResult) -> Localized:
    """Each text: our tokens, how many, whether tiktoken's ids equal ours, round trip."""
    check_type("r", r, GPT2AgreementResult)
    rows = [[AGREEMENT_NAMES.get(c.key, c.key), _tokens_html(c.tokens), len(c.ids),
             yes_no(c.equal), yes_no(c.round_trip)] for c in r.cases]
    headers = [label("文本", "text"), label("我们的 token", "our tokens"),
               label("token 数", "tokens"),
               label(f"与 {r.reference} 的编号相同", f"same ids as {r.reference}"),
               label("解码后复原", "decodes back")]
    return table(headers, rows, align="llrcc")


# --------------------------------------------------------------------------
# 5. Chinese: GPT-2 vs a BPE trained on Chinese
# --------------------------------------------------------------------------
def chinese_tokenizers_table(r: ChineseTokenizersResult) -> Localized:
    """One column per tokenizer: vocabulary, tokens per character, context in characters."""
    check_type("r", r, ChineseTokenizersResult)
    n = fmt_int(r.context_length)
    measures = [
        (label("词表大小", "vocabulary size"), lambda k: fmt_int(r.vocab_sizes[k])),
        (label("英文：每个字符的 token 数", "English: tokens per character"),
         lambda k: fmt_float(r.tokens_per_char[k]["en"], 2)),
        (label("中文：每个字符的 token 数", "Chinese: tokens per character"),
         lambda k: fmt_float(r.tokens_per_char[k]["zh"], 2)),
        (label(f"{n} 个 token 装下的英文字符", f"English characters in {n} tokens"),
         lambda k: fmt_int(round(r.context_chars[k]["en"]))),
        (label(f"{n} 个 token 装下的汉字", f"Chinese characters in {n} tokens"),
         lambda k: fmt_int(round(r.context_chars[k]["zh"]))),
        (label("中文 token 里半个字符的比例", "Chinese tokens that are part of a character"),
         lambda k: fmt_pct(r.partial_fraction[k])),
    ]
    rows = [[name, *[value(k) for k in r.tokenizers]] for name, value in measures]
    headers = [label("留出文本上", "on held-out text"),
               *[TOKENIZER_NAMES[k] for k in r.tokenizers]]
    return table(headers, rows)


def chinese_example_table(r: ChineseTokenizersResult) -> Localized:
    """The example line as each tokenizer cuts it."""
    check_type("r", r, ChineseTokenizersResult)
    rows = [[TOKENIZER_NAMES[k], _tokens_html(r.example_tokens[k]),
             len(r.example_tokens[k]), r.example_partial[k]] for k in r.tokenizers]
    headers = [label("分词器", "tokenizer"), label("切出的 token", "tokens"),
               label("token 数", "count"),
               label("其中半个字符的", "of which part of a character")]
    return table(headers, rows, align="llrr")


# --------------------------------------------------------------------------
# 6. special tokens and pitfalls
# --------------------------------------------------------------------------
def pitfalls_table(r: PitfallsResult, groups: Sequence[str] | None = None) -> Localized:
    """The cases of ``groups`` (all by default): text, tokens, ids."""
    check_type("r", r, PitfallsResult)
    if groups is not None:
        if not isinstance(groups, (list, tuple)):
            raise TypeError(f"groups must be a list of group names or None, got "
                            f"{type(groups).__name__} {groups!r}")
        known = dict.fromkeys(c.group for c in r.cases)
        for i, g in enumerate(groups):
            check_choice(f"groups[{i}]", g, known)
    rows = [[PITFALL_NAMES.get((c.group, c.key), label(c.key, c.key)),
             _verbatim_html(c.text), _tokens_html(c.tokens),
             "`" + ", ".join(map(str, c.ids)) + "`"]
            for c in r.cases if groups is None or c.group in groups]
    headers = [label("情形", "case"), label("文本", "text"), label("切出的 token", "tokens"),
               label("编号", "ids")]
    return table(headers, rows, align="llll")


def boundary_table(r: PitfallsResult) -> Localized:
    """:func:`pitfalls_table` of the document-boundary and overlapping-special cases."""
    check_type("r", r, PitfallsResult)
    return pitfalls_table(r, ("document_boundary", "overlapping_special"))


def partial_decode_table(r: PitfallsResult) -> Localized:
    """``decode(ids[:k])`` for every ``k``: a cut inside a character shows U+FFFD."""
    check_type("r", r, PitfallsResult)
    rows = []
    for k, text in enumerate(r.partial_decodes, start=1):
        ids, raw = r.partial_ids[:k], b"".join(r.partial_tokens[:k])
        rows.append([k, "`" + ", ".join(map(str, ids)) + "`", f"`{_hex(raw)}`",
                     _verbatim_html(text), text.count("\ufffd")])
    headers = [label("前 k 个 token", "first k tokens"), label("编号", "ids"),
               label("字节（十六进制）", "bytes (hex)"), label("解码结果", "decoded"),
               label("U+FFFD 的个数", "U+FFFD count")]
    return table(headers, rows, align="rlllr")


# --------------------------------------------------------------------------
# 7. what makes training fast
# --------------------------------------------------------------------------
def timing_table(r: TrainingTimingResult) -> Localized:
    """Seconds for each way of doing each step, and the speed-up over the first way."""
    check_type("r", r, TrainingTimingResult)
    rows = []
    baseline: dict[str, float] = {}
    for key, step, way in TIMING_ROWS:
        if way is None:
            p = r.num_processes
            way = label(f"{p} 个进程", f"{p} processes")
        seconds = r.seconds[key]
        base = baseline.setdefault(step.en, seconds)
        rows.append([step, way, fmt_float(seconds * 1000, 1), f"{base / seconds:.2f}×"])
    headers = [label("步骤", "step"), label("做法", "how"), label("毫秒", "ms"),
               label("相对第一种做法的加速", "speed-up over the first way")]
    return table(headers, rows, align="llrr")


def merge_speed_line(r: TrainingTimingResult) -> Label:
    """The two merge loops compared as this machine measured them (this machine only)."""
    check_type("r", r, TrainingTimingResult)
    naive, fast = r.seconds["merges_naive"], r.seconds["merges_incremental"]
    ratio = fmt_float(naive / fast, 1)
    return label(f"这台机器上，朴素合并循环的用时是增量循环的 {ratio} 倍"
                 f"（{fmt_float(naive * 1000, 1)} 毫秒对 {fmt_float(fast * 1000, 1)} 毫秒）。",
                 f"On this machine the naive merge loop took {ratio}× as long as the "
                 f"incremental one ({fmt_float(naive * 1000, 1)} ms against "
                 f"{fmt_float(fast * 1000, 1)} ms).")


def timing_settings_table(r: TrainingTimingResult) -> Localized:
    """What was timed, and on what machine."""
    check_type("r", r, TrainingTimingResult)
    rows = [
        [label("合并循环的输入", "merge loops' input"),
         label(f"莎士比亚的前 {fmt_int(r.num_chars)} 个字符，"
               f"{fmt_int(r.num_pretokens)} 个预分词片段"
               f"（{fmt_int(r.num_unique_pretokens)} 个不同的），{r.num_merges} 次合并",
               f"the first {fmt_int(r.num_chars)} characters of Shakespeare, "
               f"{fmt_int(r.num_pretokens)} pre-tokens ({fmt_int(r.num_unique_pretokens)} "
               f"distinct), {r.num_merges} merges")],
        [label("预分词的文件", "file pre-tokenized"),
         label(f"shakespeare.txt，{fmt_int(r.file_bytes)} 字节",
               f"shakespeare.txt, {fmt_int(r.file_bytes)} bytes")],
        [label("编码", "encoding"),
         label(f"GPT-2 的分词器，{fmt_int(r.encode_chars)} 个字符",
               f"GPT-2's tokenizer, {fmt_int(r.encode_chars)} characters")],
        [label("计时", "timing"),
         label(f"{r.repeats} 次中最快的一次（朴素循环只跑 1 次）",
               f"best of {r.repeats} (the naive loop runs 1 time)")],
        [label("机器", "machine"),
         label(f"{r.machine}，{r.cpus} 个 CPU，Python {r.python}，"
               f"OMP_NUM_THREADS={r.omp_num_threads or '-'}",
               f"{r.machine}, {r.cpus} CPUs, Python {r.python}, "
               f"OMP_NUM_THREADS={r.omp_num_threads or '-'}")],
    ]
    return table([label("项目", "item"), label("值", "value")], rows, align="ll")
