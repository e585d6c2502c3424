"""Tables and figures of :mod:`llmlab.experiments.training`, in the reader's language.

Generated text is shown as it came out, with two substitutions so that it reads
on a page: control characters (an untrained model emits them) become ``�``, as
undecodable bytes already do; in a table cell a newline becomes ``↵``. Tokens are
shown as the tokenization lecture shows them (:mod:`llmlab.report.tokenization`).

Taught on: "Training and generating text".
"""

from __future__ import annotations

import ast
import collections
import inspect
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from llmlab.checks import (
    check_bool,
    check_choice,
    check_int,
    check_sizes,
    check_str,
    check_strs,
    check_type,
)
from llmlab.experiments.base_models import BaseModelResult
from llmlab.experiments.distributed import UtilisationTiming
from llmlab.experiments.training import (
    AdamWCheckResult,
    CheckpointResumeResult,
    GenerationTiming,
    GradientClippingResult,
    HighLearningRateResult,
    KVCacheCheckResult,
    LossAtInitResult,
    LrScheduleResult,
    OverfittingResult,
    Sample,
    SamplingResult,
    ThroughputTiming,
    TrainingRunResult,
    poem_halves,
    poem_shape_share,
)
from llmlab.report import (
    Label,
    Localized,
    _draw,
    bar_plot_svg,
    figure,
    fmt_float,
    fmt_int,
    fmt_pct,
    label,
    table,
    text,
    yes_no,
)

__all__ = [
    "CORPUS_NAMES",
    "RULE_NAMES",
    "adamw_table",
    "base_curves_figure",
    "base_models_table",
    "base_quality_table",
    "base_samples_markdown",
    "checkpoint_table",
    "clipping_table",
    "continuations_markdown",
    "char_tokens_line",
    "encoding_table",
    "fmt_bytes",
    "generation_timing_figure",
    "generation_timing_summary",
    "grad_norm_figure",
    "high_lr_figure",
    "overfitting_figure",
    "run_time_table",
    "validation_noise_table",
    "half_lengths_table",
    "kv_equality_table",
    "kv_memory_table",
    "loss_at_init_table",
    "loss_curves_figure",
    "lr_schedule_figure",
    "model_line",
    "mostly_couplets",
    "mostly_shaped",
    "next_token_figure",
    "overflow_table",
    "poem_shape_table",
    "printable",
    "run_settings_table",
    "samples_markdown",
    "sampling_table",
    "source_block",
    "throughput_table",
    "token_name",
    "undecodable_line",
    "undecodable_share",
    "vocab_table",
]

CORPUS_NAMES = {
    "shakespeare": label("莎士比亚", "Shakespeare"),
    "tang": label("唐诗", "Tang poems"),
}

RULE_NAMES = {
    "greedy": label("贪心", "greedy"),
    "temperature=0.5": label("温度 0.5", "temperature 0.5"),
    "temperature=1.0": label("温度 1.0", "temperature 1.0"),
    "temperature=1.5": label("温度 1.5", "temperature 1.5"),
    "top_k=5": "top-k, k = 5",
    "top_p=0.9": "top-p, p = 0.9",
}

_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # all but "\n"


# a local composite (a list and each of its items), built from llmlab.checks
def _check_results(name: str, value: object, kind: type) -> None:
    """A non-empty list or tuple of ``kind`` results."""
    expected = kind.__name__
    check_type(name, value, (list, tuple), expected=f"a list of {expected}")
    if not value:
        raise ValueError(f"{name} must hold at least one {expected}, got {value!r}")
    for i, r in enumerate(value):
        check_type(f"{name}[{i}]", r, kind)



# a local composite (each row's corpus, text, tokens and ids), built from llmlab.checks
def _check_encoding_rows(rows: object) -> None:
    """``(corpus, text, tokens, ids)`` rows, one id per token."""
    check_type("rows", rows, (list, tuple),
               expected="a list of (corpus, text, tokens, ids)")
    for i, row in enumerate(rows):
        if not isinstance(row, (list, tuple)) or len(row) != 4:
            raise ValueError(f"rows[{i}] must be a (corpus, text, tokens, ids) tuple, "
                             f"got {row!r}")
        corpus, line, tokens, ids = row
        check_choice(f"rows[{i}] corpus", corpus, CORPUS_NAMES)
        check_str(f"rows[{i}] text", line)
        if len(tokens) != len(ids):
            raise ValueError(f"rows[{i}] must have one id per token, got {len(tokens)} "
                             f"tokens and {len(ids)} ids")


def printable(s: str) -> str:
    """``s`` with control characters (newline kept) shown as ``�``."""
    check_str("s", s)
    return _CONTROL.sub("\ufffd", s)


def token_name(token: str) -> str:
    """A token's text as a reader can see it: ``␣`` for a space, ``↵`` for a newline."""
    check_str("token", token)
    return printable(token.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥"))


def _code_span(s: str) -> str:
    """``s`` as inline code whatever backticks it holds; newlines as ``↵``."""
    s = printable(s).replace("\n", "↵")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def source_block(obj: Any, start: str | None = None, stop: str | None = None
                 ) -> Localized:
    """``obj``'s source as a fenced Python block, without its docstring.

    Printed for a page (:func:`~llmlab.report.output_mode` ``markdown``) and
    displayed in a notebook, the fenced block; printed in a terminal, the code.

    With ``start`` (and ``stop``), only the lines from the first one containing
    ``start`` up to, not including, the first later one containing ``stop``,
    dedented. A marker that is not found raises ``ValueError`` (the page that shows
    the excerpt then fails to build instead of showing the wrong lines).
    """
    if not (callable(obj) or inspect.ismodule(obj)):
        raise TypeError(f"obj must be a function, class or module, got "
                        f"{type(obj).__name__}")
    if start is not None:
        check_str("start", start, nonempty=True)
    if stop is not None:
        check_str("stop", stop, nonempty=True)
        if start is None:
            raise ValueError(f"stop ({stop!r}) needs start: the excerpt runs from the "
                             "line of start up to the line of stop")
    lines = textwrap.dedent(inspect.getsource(obj)).splitlines()
    node = ast.parse("\n".join(lines)).body[0]
    body = getattr(node, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], "value", None), ast.Constant) and isinstance(
            body[0].value.value, str):  # a docstring: leave its lines out
        del lines[body[0].lineno - 1:body[0].end_lineno]
    if start is not None:
        first = next((i for i, line in enumerate(lines) if start in line), None)
        if first is None:
            raise ValueError(f"{start!r} is not in the source of {obj.__qualname__}")
        last = len(lines)
        if stop is not None:
            last = next((i for i in range(first + 1, len(lines)) if stop in lines[i]),
                        None)
            if last is None:
                raise ValueError(f"{stop!r} does not follow {start!r} in the source "
                                 f"of {obj.__qualname__}")
        lines = textwrap.dedent("\n".join(lines[first:last])).splitlines()
    block = "```python\n" + "\n".join(lines).rstrip() + "\n```\n"
    return Localized(lambda lang: block)  # the same code in every language


def fmt_bytes(n: int) -> str:
    """``2147483648`` -> ``"2.00 GiB"``; below 1 KiB, plain bytes."""
    check_int("n", n, minimum=0)
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def undecodable_share(texts: Sequence[str]) -> float:
    """Share of characters that are ``�`` (bytes that form no UTF-8 character)."""
    check_strs("texts", texts)
    chars = sum(len(t) for t in texts)
    return sum(t.count("\ufffd") for t in texts) / chars if chars else 0.0


def mostly_shaped(texts: Sequence[str]) -> int:
    """How many of ``texts`` have more than half of their lines in the poem shape."""
    check_strs("texts", texts)
    counts = [poem_shape_share(t) for t in texts]
    return sum(shaped > lines / 2 for shaped, lines in counts if lines)


def mostly_couplets(texts: Sequence[str]) -> int:
    """How many of ``texts`` have more than half of their lines couplets (any halves)."""
    check_strs("texts", texts)
    counts = [(len(poem_halves(t)), poem_shape_share(t)[1]) for t in texts]
    return sum(couplets > lines / 2 for couplets, lines in counts if lines)


# --- (1) loss ----------------------------------------------------------------------


def loss_at_init_table(r: LossAtInitResult) -> Localized:
    """Per vocabulary size: ln V, our loss, PyTorch's, the perplexity."""
    check_type("r", r, LossAtInitResult)
    rows = [(fmt_int(v), fmt_float(lv), fmt_float(loss), fmt_float(ref),
             fmt_float(ppl, 1))
            for v, lv, loss, ref, ppl in zip(r.vocab_sizes, r.log_vocab, r.losses,
                                              r.torch_losses, r.perplexities)]
    headers = ["vocab_size", "ln(vocab_size)", label("损失（我们的）", "loss (ours)"),
               "F.cross_entropy", label("困惑度", "perplexity")]
    return table(headers, rows)


def overflow_table(r: LossAtInitResult) -> Localized:
    """The naive ``-log(softmax)`` against :func:`cross_entropy` on huge logits."""
    check_type("r", r, LossAtInitResult)
    logits = "[" + ", ".join(f"{x:g}" for x in r.big_logits) + "]"
    rows = [("`-log(softmax(o))[x]`", str(r.naive_loss)),
            ("`cross_entropy(o, x)`", fmt_float(r.stable_loss))]
    return table([label(f"o = {logits}，x = {r.target}", f"o = {logits}, x = {r.target}"),
                  label("损失", "loss")], rows)


# --- (2) optimiser -----------------------------------------------------------------


def adamw_table(r: AdamWCheckResult) -> Localized:
    """Our AdamW against ``torch.optim.AdamW``: weights and losses after each run."""
    check_type("r", r, AdamWCheckResult)
    loss_gap = max(abs(a - b) for a, b in zip(r.losses_ours, r.losses_torch))
    rows = [
        (label("步数", "steps"), fmt_int(r.steps)),
        (label("参数量", "parameters"), fmt_int(r.n_parameters)),
        (label("第 1 步的损失（我们的 / PyTorch）", "loss at step 1 (ours / PyTorch)"),
         f"{fmt_float(r.losses_ours[0], 4)} / {fmt_float(r.losses_torch[0], 4)}"),
        (label(f"第 {r.steps} 步的损失（我们的 / PyTorch）",
               f"loss at step {r.steps} (ours / PyTorch)"),
         f"{fmt_float(r.losses_ours[-1], 4)} / {fmt_float(r.losses_torch[-1], 4)}"),
        (label("每一步损失的最大差", "largest loss difference, any step"),
         f"{loss_gap:.1e}"),
        (label("每一步权重的最大差", "largest weight difference, any step"),
         f"{max(r.max_abs_diff):.1e}"),
    ]
    return table([label("AdamW，两种实现", "AdamW, two implementations"),
                  label("值", "value")], rows)


def lr_schedule_figure(r: LrScheduleResult) -> Localized:
    """The learning rate per iteration, warm-up end and cosine end marked."""
    check_type("r", r, LrScheduleResult)
    tw, tc = r.warmup_iters, r.cosine_cycle_iters

    def make(lang: str) -> str:
        def draw(fig: Any, ax: Any) -> None:
            ax.plot(r.iterations, r.learning_rates, linewidth=1.8)
            marks = ((tw, label(f"预热结束 $T_w$ = {tw}", f"warm-up ends, $T_w$ = {tw}")),
                     (tc, label(f"余弦结束 $T_c$ = {tc}", f"cosine ends, $T_c$ = {tc}")))
            for x, name in marks:
                ax.axvline(x, color="grey", linestyle=":", linewidth=1)
                ax.annotate(text(name, lang), (x, r.max_learning_rate), fontsize=8,
                            xytext=(4, -12), textcoords="offset points")
            ax.axhline(r.min_learning_rate, color="grey", linestyle="--", linewidth=1)
            ax.annotate(rf"$\alpha_{{\min}}$ = {r.min_learning_rate:g}",
                        (0, r.min_learning_rate), fontsize=8, xytext=(4, 4),
                        textcoords="offset points")
            ax.set_xlabel(text(label("迭代 t", "iteration t"), lang))
            ax.set_ylabel(text(label(r"学习率 $\alpha_t$", r"learning rate $\alpha_t$"),
                               lang))
            ax.grid(True, alpha=0.3)

        return _draw(lang, 6.0, 3.0, draw)

    return figure(make, data=[r.iterations, r.learning_rates, tw, tc], alt=label(
        f"学习率随迭代的变化：前 {tw} 步从 0 线性升到 {r.max_learning_rate:g}，"
        f"再按余弦降到第 {tc} 步的 {r.min_learning_rate:g}，之后保持不变",
        f"The learning rate per iteration: a linear rise from 0 to "
        f"{r.max_learning_rate:g} over {tw} steps, a cosine down to "
        f"{r.min_learning_rate:g} at step {tc}, flat after that"))


def clipping_table(r: GradientClippingResult) -> Localized:
    """Our clipping against ``clip_grad_norm_`` on one set of gradients."""
    check_type("r", r, GradientClippingResult)
    rows = [
        (label("裁剪前的全局范数", "global norm before"), fmt_float(r.norm_before, 4),
         fmt_float(r.torch_norm_before, 4)),
        (label("裁剪后的全局范数", "global norm after"), fmt_float(r.norm_after, 4),
         fmt_float(r.torch_norm_after, 4)),
    ]
    headers = [f"max_l2_norm = {r.max_l2_norm:g}", "gradient_clipping", "clip_grad_norm_"]
    return table(headers, rows)


def _run_names(runs: Sequence[TrainingRunResult]) -> tuple[str, str]:
    """``("莎士比亚和唐诗两次训练", "the Shakespeare and Tang poems runs")``, any count."""
    names = [CORPUS_NAMES[r.corpus] for r in runs]
    count = {1: "", 2: "两次", 3: "三次"}.get(len(runs), f"{len(runs)} 次")
    zh = f"{'和'.join(n.zh for n in names)}{count}训练"
    en = f"the {' and '.join(n.en for n in names)} run{'s' if len(runs) > 1 else ''}"
    return zh, en


def grad_norm_figure(runs: Sequence[TrainingRunResult]) -> Localized:
    """Each run's gradient norm before clipping, per step, and the threshold."""
    _check_results("runs", runs, TrainingRunResult)
    clip = runs[0].settings.max_grad_norm

    def make(lang: str) -> str:
        def draw(fig: Any, ax: Any) -> None:
            for r in runs:
                ax.plot(r.iterations, r.grad_norms, linewidth=1.2,
                        label=text(CORPUS_NAMES[r.corpus], lang))
            ax.axhline(clip, color="grey", linestyle="--", linewidth=1,
                       label=text(label(f"裁剪阈值 {clip:g}", f"clip threshold {clip:g}"),
                                  lang))
            ax.set_xlabel(text(label("训练步数", "training step"), lang))
            ax.set_ylabel(text(label("裁剪前的梯度范数", "gradient norm before clipping"),
                               lang))
            ax.grid(True, alpha=0.3)
            ax.legend(frameon=False)

        return _draw(lang, 6.0, 3.0, draw)

    zh, en = _run_names(runs)
    return figure(make, data=[[r.grad_norms for r in runs], clip], alt=label(
        f"{zh}每一步裁剪前的梯度范数，虚线是阈值 {clip:g}",
        f"The gradient norm before clipping at every step of {en}, with the threshold "
        f"{clip:g} dashed"))


def high_lr_figure(r: HighLearningRateResult, lecture: TrainingRunResult) -> Localized:
    """The gradient norm per step at a high peak learning rate, beside the lecture
    run's first steps, with the clipping threshold."""
    check_type("r", r, HighLearningRateResult)
    check_type("lecture", lecture, TrainingRunResult)
    clip = r.settings.max_grad_norm
    n = len(r.iterations)

    def make(lang: str) -> str:
        def draw(fig: Any, ax: Any) -> None:
            ax.plot(lecture.iterations[:n], lecture.grad_norms[:n], linewidth=1.2,
                    label=text(label(f"峰值学习率 {lecture.settings.max_lr:g}（本讲）",
                                     f"peak learning rate {lecture.settings.max_lr:g} "
                                     "(this lecture)"), lang))
            ax.plot(r.iterations, r.grad_norms, linewidth=1.2, marker="o", markersize=3,
                    label=text(label(f"峰值学习率 {r.settings.max_lr:g}",
                                     f"peak learning rate {r.settings.max_lr:g}"), lang))
            ax.axhline(clip, color="grey", linestyle="--", linewidth=1,
                       label=text(label(f"裁剪阈值 {clip:g}", f"clip threshold {clip:g}"),
                                  lang))
            ax.set_yscale("log")
            ax.set_xlabel(text(label("训练步数", "training step"), lang))
            ax.set_ylabel(text(label("裁剪前的梯度范数", "gradient norm before clipping"),
                               lang))
            ax.grid(True, alpha=0.3)
            ax.legend(frameon=False)

        return _draw(lang, 6.0, 3.0, draw)

    return figure(make, data=[r.grad_norms, lecture.grad_norms[:n], clip], alt=label(
        f"莎士比亚模型前 {n} 步裁剪前的梯度范数：峰值学习率 {lecture.settings.max_lr:g} "
        f"与 {r.settings.max_lr:g}，虚线是阈值 {clip:g}（对数纵轴）",
        f"The Shakespeare model's gradient norm before clipping over its first {n} "
        f"steps at peak learning rates {lecture.settings.max_lr:g} and "
        f"{r.settings.max_lr:g}, the threshold {clip:g} dashed (log scale)"))


def overfitting_figure(r: OverfittingResult) -> Localized:
    """Training loss per step and validation loss of a run on a tiny slice."""
    check_type("r", r, OverfittingResult)

    def make(lang: str) -> str:
        def draw(fig: Any, ax: Any) -> None:
            ax.plot(r.iterations, r.train_losses, linewidth=1, alpha=0.7,
                    label=text(label(f"训练（{r.train_tokens:,} 个 token 反复用）",
                                     f"training ({r.train_tokens:,} tokens, repeated)"),
                               lang))
            ax.plot(r.val_iterations, r.val_losses, marker="o", markersize=4,
                    linewidth=1.6, label=text(label("验证", "validation"), lang))
            ax.axvline(r.best_val_iteration, color="grey", linestyle=":", linewidth=1,
                       label=text(label("验证损失最低处", "lowest validation loss"),
                                  lang))
            ax.set_xlabel(text(label("训练步数", "training step"), lang))
            ax.set_ylabel(text(label("交叉熵（nat / token）", "cross-entropy (nats / token)"),
                               lang))
            ax.grid(True, alpha=0.3)
            ax.legend(frameon=False, fontsize=8)

        return _draw(lang, 6.0, 3.2, draw)

    return figure(make, data=[r.train_losses, r.val_losses], alt=label(
        f"只用 {r.train_tokens:,} 个 token 训练时的损失曲线：训练损失一路下降，"
        f"验证损失在第 {r.best_val_iteration} 步之后上升",
        f"Loss curves when training on {r.train_tokens:,} tokens only: the training "
        f"loss keeps falling, the validation loss rises after step "
        f"{r.best_val_iteration}"))


# --- (3) training runs --------------------------------------------------------------


def encoding_table(rows: Sequence[tuple[str, str, Sequence[bytes], Sequence[int]]]
                   ) -> Localized:
    """One row per ``(corpus, text, tokens, ids)``: the text and its length, then
    each token with its id.

    Tokens are the tokenization lecture's chips (a part of a character has a
    dashed outline); a line may break between two tokens, never inside a token
    and its id.
    """
    _check_encoding_rows(rows)
    from llmlab.report.tokenization import _tokens_html, _verbatim_html

    body = []
    for corpus, line, tokens, ids in rows:
        pairs = "<wbr> ".join(
            f'<span class="llmlab-merge">{_tokens_html([t])}&nbsp;{i}</span>'
            for t, i in zip(tokens, ids))
        size = label(f"{len(line)} 个字符 → {len(ids)} 个 token",
                     f"{len(line)} characters → {len(ids)} tokens")
        body.append((CORPUS_NAMES[corpus],
                     label(f"{_verbatim_html(line)}<br>{size.zh}",
                           f"{_verbatim_html(line)}<br>{size.en}"), pairs))
    headers = [label("语料", "corpus"), label("文本", "text"),
               label("token 与编号", "tokens and ids")]
    return table(headers, body, align="lll")


def run_settings_table(runs: Sequence[TrainingRunResult]) -> Localized:
    """One column per run: data, optimisation, what it cost and where it got.

    The model's shape is :func:`model_line` (the same for every run of the lecture).
    """
    _check_results("runs", runs, TrainingRunResult)
    def row(name: Label, values: list[Any]) -> tuple:
        return (name, *values)

    s = [r.settings for r in runs]
    rows = [
        row(label("分词器", "tokenizer"), [_tokenizer_cell(r) for r in runs]),
        row(label("训练 / 验证 token", "train / validation tokens"),
            [f"{fmt_int(r.train_tokens)} / {fmt_int(r.val_tokens)}" for r in runs]),
        row(label("每个 token 的字符数（验证集）", "characters per token (validation)"),
            [fmt_float(r.chars_per_token, 2) for r in runs]),
        row(label("步数 × 批大小 × 上下文", "steps × batch × context"),
            [f"{x.steps} × {x.batch_size} × {x.context_length}" for x in s]),
        row(label("学习率（峰值 → 最低），预热", "learning rate (peak → floor), warm-up"),
            [f"{x.max_lr:g} → {x.min_lr:g}, {x.warmup_iters}" for x in s]),
        row(label("见过的 token（占训练集）", "tokens seen (share of the training set)"),
            [f"{fmt_int(r.tokens_seen)} ({fmt_pct(r.tokens_seen / r.train_tokens)})"
             for r in runs]),
        row(label("FLOPs（6N + 12·L·d·T，乘以 D）", "FLOPs ((6N + 12·L·d·T) · D)"),
            [f"{r.flops:.2e}" for r in runs]),
        row(label("验证损失：开始 → 结束", "validation loss: start → end"),
            [f"{fmt_float(r.val_losses[0])} → {fmt_float(r.final_val_loss)}"
             for r in runs]),
        row(label("结束时的验证损失 / ln V", "final validation loss / ln V"),
            [fmt_pct(r.val_loss_vs_uniform) for r in runs]),
        row(label("验证困惑度：开始 → 结束", "validation perplexity: start → end"),
            [f"{fmt_float(math.exp(r.val_losses[0]), 0)} → "
             f"{fmt_float(math.exp(r.final_val_loss), 0)}" for r in runs]),
    ]
    return table([label("设置与结果", "setting or result"),
                  *[CORPUS_NAMES[r.corpus] for r in runs]], rows,
                 align="l" + "l" * len(runs))


def vocab_table(sizes: Sequence[int], en_chars: dict[int, float],
                one_token: dict[int, float], d_model: int) -> Localized:
    """Per vocabulary size: merges, English characters per token, the share of
    Chinese characters that are one token, and the parameters of the two
    vocabulary layers (embeddings and ``lm_head``, ``2 · V · d_model``)."""
    sizes = check_sizes("sizes", sizes, minimum=257)  # 256 bytes + <|endoftext|>
    for name, values in (("en_chars", en_chars), ("one_token", one_token)):
        check_type(name, values, Mapping, expected="a dict {vocabulary size: value}")
        missing = [v for v in sizes if v not in values]
        if missing:
            raise ValueError(f"{name} must have a value for every size of sizes, "
                             f"got none for {missing}")
    check_int("d_model", d_model)
    rows = [(fmt_int(v), fmt_int(v - 257), fmt_float(en_chars[v], 2),
             fmt_pct(one_token[v]), fmt_int(2 * v * d_model)) for v in sizes]
    headers = ["V", label("合并", "merges"),
               label("英文：每个 token 的字符数", "English: characters per token"),
               label("中文：单独成一个 token 的字", "Chinese: characters that are one token"),
               label("嵌入层 + lm_head 的参数", "parameters of embeddings + lm_head")]
    return table(headers, rows)


def _tokenizer_cell(r: TrainingRunResult) -> Label:
    v = fmt_int(r.settings.vocab_size)
    if r.tokenizer == "bytes":
        return label(f"字节，V = {v}", f"bytes, V = {v}")
    m, n = fmt_int(r.num_merges), fmt_int(r.tokenizer_chars)
    return label(f"BPE，V = {v}（{m} 个合并，学自前 {n} 个字符）",
                 f"BPE, V = {v} ({m} merges, on the first {n} characters)")


def model_line(r: TrainingRunResult) -> Label:
    """The model of a run in one line: its shape and parameter counts."""
    check_type("r", r, TrainingRunResult)
    x = r.settings
    shape = (f"d_model={x.d_model}, num_layers={x.num_layers}, num_heads={x.num_heads}, "
             f"d_ff={x.d_ff}, context_length={x.context_length}")
    n, ne = fmt_int(r.n_parameters), fmt_int(r.n_non_embedding)
    return label(f"模型：`TransformerLM({shape})`，{n} 个参数，不含嵌入层 {ne} 个",
                 f"model: `TransformerLM({shape})`, {n} parameters, {ne} without the "
                 "embeddings")


def loss_curves_figure(runs: Sequence[TrainingRunResult]) -> Localized:
    """Training loss per step and validation loss, per run, with ``ln V`` dashed."""
    _check_results("runs", runs, TrainingRunResult)
    vocab_sizes = sorted({r.settings.vocab_size for r in runs})

    def make(lang: str) -> str:
        def draw(fig: Any, ax: Any) -> None:
            for i, r in enumerate(runs):
                colour, name = f"C{i}", text(CORPUS_NAMES[r.corpus], lang)
                ax.plot(r.iterations, r.train_losses, color=colour, linewidth=1,
                        alpha=0.55, label=text(label(f"{name}：训练", f"{name}: training"),
                                               lang))
                ax.plot(r.val_iterations, r.val_losses, color=colour, marker="o",
                        markersize=4, linewidth=1.6,
                        label=text(label(f"{name}：验证", f"{name}: validation"), lang))
            for j, v in enumerate(vocab_sizes):
                ax.axhline(math.log(v), color="grey", linestyle=("--", ":")[j % 2],
                           linewidth=1, label=text(label(
                               f"ln {v}（均匀瞎猜）", f"ln {v} (uniform guess)"), lang))
            ax.set_xlabel(text(label("训练步数", "training step"), lang))
            ax.set_ylabel(text(label("交叉熵（nat / token）", "cross-entropy (nats / token)"),
                               lang))
            ax.grid(True, alpha=0.3)
            ax.legend(frameon=False, fontsize=8)

        return _draw(lang, 6.0, 3.6, draw)

    zh, en = _run_names(runs)
    logs = " / ".join(f"ln {v}" for v in vocab_sizes)
    return figure(make, data=[[(r.train_losses, r.val_losses) for r in runs],
                              vocab_sizes], alt=label(
        f"{zh}的损失曲线：每一步的训练损失和每隔几步的验证损失，虚线是均匀瞎猜的 {logs}",
        f"Loss curves of {en}: training loss at every step, validation loss every few "
        f"steps, and {logs} (a uniform guess) dashed"))


def validation_noise_table(runs: Sequence[TrainingRunResult]) -> Localized:
    """Per run: the curve's last point and its noise, then the trained model on the
    whole validation split and on as many training tokens (mean ± standard error),
    and the last training steps' losses."""
    _check_results("runs", runs, TrainingRunResult)

    def pm(mean: float, error: float) -> str:
        return f"{fmt_float(mean, 3)} ± {fmt_float(error, 3)}"

    rows = [
        (label("验证曲线的最后一点", "last point of the validation curve"),
         *[fmt_float(r.final_val_loss, 3) for r in runs]),
        (label("一个点的噪声：不相交的各段之间的标准差", "noise of one point: standard "
               "deviation between disjoint blocks"),
         *[label(f"{fmt_float(r.block_spread, 3)}（每段 {fmt_int(r.block_tokens)} 个 "
                 "token）", f"{fmt_float(r.block_spread, 3)} ({fmt_int(r.block_tokens)} "
                 "tokens a block)") for r in runs]),
        (label("训练好的模型，整个验证集（± 标准误）", "trained model, whole validation "
               "split (± standard error)"),
         *[f"{pm(r.held_out_loss, r.held_out_error)} ({len(r.val_block_losses)} × "
           f"{fmt_int(r.block_tokens)})" for r in runs]),
        (label("同一个模型，训练集上同样多的 token", "the same model, as many tokens of "
               "the training split"),
         *[pm(r.train_split_loss, r.train_split_error) for r in runs]),
        (label("最后 5 步的训练损失（平均）", "training loss of the last 5 steps (mean)"),
         *[fmt_float(sum(r.train_losses[-5:]) / 5, 3) for r in runs]),
    ]
    return table([label("损失（nat / token）", "loss (nats / token)"),
                  *[CORPUS_NAMES[r.corpus] for r in runs]], rows,
                 align="l" + "l" * len(runs))


def _stage(r: TrainingRunResult, s: Sample) -> Label:
    if s.iteration == 0:
        return label("第 0 步（未训练）", "step 0 (untrained)")
    if s.iteration == r.settings.steps:
        return label(f"第 {s.iteration} 步（训练结束）", f"step {s.iteration} (end)")
    return label(f"第 {s.iteration} 步", f"step {s.iteration}")


def samples_markdown(r: TrainingRunResult, first_only: bool = True) -> Localized:
    """The samples at each stage as text blocks (the first text, or all of them).

    The blocks have the class ``llmlab-sample``: the site wraps their long lines.
    """
    check_type("r", r, TrainingRunResult)
    check_bool("first_only", first_only)
    def make(lang: str) -> str:
        parts = []
        for s in r.samples:
            texts = s.texts[:1] if first_only else s.texts
            blocks = "\n".join(
                f"````{{.text .llmlab-sample}}\n{r.prompt}{printable(t).rstrip()}\n````"
                for t in texts)
            parts.append(f"**{text(_stage(r, s), lang)}**\n\n{blocks}")
        return "\n\n".join(parts) + "\n"

    return Localized(make)


def poem_shape_table(r: TrainingRunResult) -> Localized:
    """Per stage: couplet lines and shaped lines, of all lines; the real poems.

    The share of undecodable characters per stage is :func:`undecodable_line`, the
    halves' lengths :func:`half_lengths_table`.
    """
    check_type("r", r, TrainingRunResult)
    def share(n: int, lines: int) -> str:
        return f"{fmt_int(n)} / {fmt_int(lines)} ({fmt_pct(n / lines if lines else 0.0)})"

    rows = [(_stage(r, s), share(s.couplet_lines, s.lines), share(s.shaped_lines, s.lines),
             f"{mostly_couplets(s.texts)} / {len(s.texts)}")
            for s in r.samples]
    rows.append((label("验证集里的原诗", "the real poems (validation)"),
                 share(r.corpus_couplet_lines, r.corpus_lines),
                 share(r.corpus_shaped_lines, r.corpus_lines), "—"))
    headers = [label("样本", "sample"), label("成联的行", "couplet lines"),
               label("五七言的行", "lines of regular five- or seven-character verse"),
               label("多数行成联的段", "texts mostly couplets")]
    return table(headers, rows)


def half_lengths_table(r: TrainingRunResult) -> Localized:
    """Share of half lines of 3 to 7 characters (and other lengths): the final
    samples against the real poems."""
    check_type("r", r, TrainingRunResult)
    last = r.samples[-1]
    sample = collections.Counter(n for t in last.texts for pair in poem_halves(t)
                                 for n in pair)
    poems = collections.Counter(dict(r.corpus_half_lengths))
    cols = range(3, 8)

    def shares(counts: collections.Counter) -> list[str]:
        total = sum(counts.values())
        if not total:
            return ["—"] * (len(cols) + 1)
        rest = sum(v for k, v in counts.items() if k not in cols)
        return [*(fmt_pct(counts[n] / total) for n in cols), fmt_pct(rest / total)]

    headers = [label("半句的字数", "characters per half"), *map(str, cols),
               label("其他", "other")]
    rows = [(label(f"模型，第 {last.iteration} 步", f"model, step {last.iteration}"),
             *shares(sample)),
            (label("原诗", "real poems"), *shares(poems))]
    return table(headers, rows)


def char_tokens_line(r: TrainingRunResult) -> Label:
    """One line: the share of the validation text's characters that take 1, 2, 3 tokens."""
    check_type("r", r, TrainingRunResult)
    total = sum(n for _, n in r.char_tokens)
    parts = [(k, fmt_pct(n / total)) for k, n in r.char_tokens if n / total >= 0.001]
    zh = "，".join(f"{k} 个 token 的 {x}" for k, x in parts)
    en = ", ".join(f"{k} token{'s' if k > 1 else ''}: {x}" for k, x in parts)
    return label(f"验证集里的汉字，单独编码时：{zh}",
                 f"characters of the validation text, each encoded alone: {en}")


def undecodable_line(r: TrainingRunResult) -> Label:
    """One line: the share of ``�`` in the samples of each stage."""
    check_type("r", r, TrainingRunResult)
    shares = [fmt_pct(undecodable_share(s.texts)) for s in r.samples]
    steps = [s.iteration for s in r.samples]
    zh = "，".join(f"第 {i} 步 {x}" for i, x in zip(steps, shares))
    en = ", ".join(f"step {i} {x}" for i, x in zip(steps, shares))
    return label(f"无法解码的字符（`�`）所占的比例：{zh}",
                 f"share of undecodable characters (`�`): {en}")


def throughput_table(t: ThroughputTiming, toy: UtilisationTiming | None = None
                     ) -> Localized:
    """Tokens/s per repetition, the median and the model FLOP/s it amounts to; the
    forward and backward pass alone; with ``toy`` (the distributed lecture's
    :class:`~llmlab.experiments.distributed.UtilisationTiming`), its measurement of
    its own toy model beside ours."""
    check_type("t", t, ThroughputTiming)
    if toy is not None:
        check_type("toy", toy, UtilisationTiming)
    s = t.settings
    flops = fmt_int(round(t.flops_per_token))
    rows = [
        (label("机器", "machine"), t.machine),
        (label("模型与批", "model and batch"),
         f"V={s.vocab_size}, d_model={s.d_model}, num_layers={s.num_layers}, "
         f"d_ff={s.d_ff}, {s.batch_size} × {s.context_length}"),
        (label(f"每次重复（{t.steps} 步）的 token/s", f"tokens/s, each repetition "
               f"({t.steps} steps)"), ", ".join(fmt_int(round(x)) for x in t.tokens_per_s)),
        (label("中位数 token/s", "median tokens/s"), fmt_int(round(t.median_tokens_per_s))),
        (label("每个 token 的 FLOPs（6N + 12·L·d·T）", "FLOPs per token (6N + 12·L·d·T)"),
         flops),
        (label("整步训练：GFLOP/s", "whole training steps: GFLOP/s"),
         fmt_float(t.flops_per_s / 1e9, 1)),
        (label("只算前向加反向：GFLOP/s", "forward and backward alone: GFLOP/s"),
         fmt_float(t.forward_backward_flops_per_s / 1e9, 1)),
    ]
    if toy is not None:
        c = toy.config
        rows.append((label(
            f"分布式一讲的玩具模型（V={c['vocab_size']}, d_ff={c['d_ff']}），"
            "前向加反向：GFLOP/s",
            f"the distributed lecture's toy model (V={c['vocab_size']}, "
            f"d_ff={c['d_ff']}), forward and backward: GFLOP/s"),
            fmt_float(toy.achieved_flops / 1e9, 1)))
    return table([label("训练吞吐量", "training throughput"), label("值", "value")], rows)


def run_time_table(t: ThroughputTiming, runs: Sequence[TrainingRunResult],
                   measured: Sequence[float | None]) -> Localized:
    """Where a lecture run's time goes: each part's count times its measured time
    (from ``t``), per run, beside the run's whole time as ``measured`` (the cache's
    record of computing it, or None); then encoding the corpus, a cached part of its
    own (:func:`llmlab.experiments.training.corpus_ids`), which the run reads."""
    check_type("t", t, ThroughputTiming)
    _check_results("runs", runs, TrainingRunResult)
    if len(measured) != len(runs):
        raise ValueError(f"measured must hold one time per run ({len(runs)}), got "
                         f"{len(measured)}")

    def parts(r: TrainingRunResult) -> list[float]:
        evals = len(r.val_losses) * r.eval_batches  # forward passes of the curve
        blocks = len(r.val_block_losses) + len(r.train_block_losses)
        eval_s = sorted(t.eval_batch_seconds)[len(t.eval_batch_seconds) // 2]
        decode_s = sorted(t.decode_token_seconds)[len(t.decode_token_seconds) // 2]
        return [
            r.settings.steps * t.step_seconds,
            (evals + blocks * r.eval_batches) * eval_s,
            len(r.samples) * r.sample_tokens * decode_s,
        ]

    names = [label("训练步", "training steps"),
             label("验证：曲线上的点和最后的整段评估", "validation: the curve's points "
                   "and the final blocks"),
             label("采样：开始、中间、结束各一批", "sampling: a batch at start, "
                   "middle and end")]
    cols = [parts(r) for r in runs]
    rows = [(name, *[fmt_float(c[i], 1) for c in cols]) for i, name in enumerate(names)]
    rows.append((label("以上合计（估计）", "the above together (estimate)"),
                 *[fmt_float(sum(c), 1) for c in cols]))
    rows.append((label("实际计算这次训练的用时", "the run's recorded compute time"),
                 *["—" if m is None else fmt_float(m, 1) for m in measured]))
    rows.append((label("另算：整份语料编码一次（估计，缓存后各次训练共用）",
                       "apart: encoding the whole corpus once (estimate; cached, "
                       "shared by the runs)"),
                 *[fmt_float((r.train_chars + r.val_chars) / t.encode_chars_per_s, 1)
                   for r in runs]))
    return table([label("一次训练的用时（秒）", "a run's time (s)"),
                  *[CORPUS_NAMES[r.corpus] for r in runs]], rows,
                 align="l" + "r" * len(runs))


# --- (4) sampling --------------------------------------------------------------------


def sampling_table(r: SamplingResult) -> Localized:
    """Each rule: the tokens it keeps and the entropy of its next-token distribution."""
    check_type("r", r, SamplingResult)
    stats = {rule: (k, h) for rule, k, h in zip(r.distribution_rules, r.kept, r.entropies)}
    stats["greedy"] = (1, 0.0)  # all the probability on one token
    rows = [(RULE_NAMES[rule], stats[rule][0], fmt_float(stats[rule][1], 2))
            for rule in r.rules]
    headers = [label("规则", "rule"), label("保留的 token", "tokens kept"),
               label("熵（nat）", "entropy (nats)")]
    return table(headers, rows)


def continuations_markdown(r: SamplingResult) -> Localized:
    """The continuation under each rule, one content tab per rule, prompt included."""
    check_type("r", r, SamplingResult)
    def make(lang: str) -> str:
        tabs = []
        for rule, continuation in zip(r.rules, r.texts):
            shown = printable(continuation).rstrip()
            if not shown:  # only line breaks (greedy, here): draw them
                shown = "⏎" * continuation.count("\n")
            body = f"{r.prompt}{shown}"
            block = "\n".join("    " + line if line else "" for line in
                              f"````{{.text .llmlab-sample}}\n{body}\n````".split("\n"))
            tabs.append(f'=== "{text(RULE_NAMES[rule], lang)}"\n\n{block}')
        return "\n\n".join(tabs) + "\n"

    return Localized(make)


def next_token_figure(r: SamplingResult) -> Localized:
    """Grouped bars: the probability of the most likely next tokens under each rule."""
    check_type("r", r, SamplingResult)
    tokens = [token_name(t) for t in r.top_tokens]
    shown = r.prompt.replace(chr(10), "↵")

    def make(lang: str) -> str:
        return bar_plot_svg(
            {RULE_NAMES[rule]: probs for rule, probs in zip(r.distribution_rules,
                                                              r.distributions)}, tokens,
            xlabel=label(f"“{shown}”之后最可能的 {len(tokens)} 个 token",
                         f"the {len(tokens)} likeliest tokens after “{shown}”"),
            ylabel=label("下一个 token 的概率", "next-token probability"),
            width=6.4, height=3.4, lang=lang)

    return figure(make, data=[r.top_tokens, r.distributions], alt=label(
        f"柱状图：在 {len(tokens)} 个最可能的下一个 token 上，各条采样规则给出的概率",
        f"Bar chart: the probability each sampling rule gives the {len(tokens)} "
        "likeliest next tokens"))


# --- (5) KV cache --------------------------------------------------------------------


def kv_equality_table(r: KVCacheCheckResult) -> Localized:
    """Per prompt length: the largest logit difference, cache against recomputation."""
    check_type("r", r, KVCacheCheckResult)
    rows = [(n, r.context_length - n, f"{d:.1e}")
            for n, d in zip(r.prompt_lengths, r.max_abs_diff)]
    headers = [label("一次喂入的提示长度", "prompt fed at once"),
               label("之后逐个喂入的 token", "tokens then fed one by one"),
               label("logits 的最大差", "largest logit difference")]
    return table(headers, rows)


def kv_memory_table(r: KVCacheCheckResult) -> Localized:
    """Cached tokens: the formula's bytes and the tensors' ``nbytes``."""
    check_type("r", r, KVCacheCheckResult)
    rows = [(t, fmt_int(f), fmt_int(b))
            for t, f, b in zip(r.tokens, r.formula_bytes, r.tensor_bytes)]
    headers = [label("缓存的 token", "tokens cached"),
               label("公式（字节）", "formula (bytes)"),
               label("张量的 nbytes", "tensors' nbytes")]
    return table(headers, rows)


def generation_timing_summary(g: GenerationTiming) -> Localized:
    """What the timing measured, in words: ms per token at the shortest and the
    longest text with and without the cache, and the whole generation's speed.
    Measured, so it describes the machine in ``g.machine`` only."""
    check_type("g", g, GenerationTiming)
    first, last = g.lengths[0], g.lengths[-1]
    no, yes = g.ms_uncached, g.ms_cached
    ratio = fmt_float(no[-1] / yes[-1], 1)
    fast, slow = f"{g.tokens_per_s_cached:,.0f}", f"{g.tokens_per_s_uncached:,.0f}"
    lines = [
        label(f"- 每个 token 的毫秒数，文字从 {first} 个 token 到 {last} 个：没缓存 "
              f"{fmt_float(no[0], 2)} → {fmt_float(no[-1], 2)}，有缓存 "
              f"{fmt_float(yes[0], 2)} → {fmt_float(yes[-1], 2)}。",
              f"- Milliseconds per token, from a {first}-token text to a {last}-token one: "
              f"{fmt_float(no[0], 2)} → {fmt_float(no[-1], 2)} without the cache, "
              f"{fmt_float(yes[0], 2)} → {fmt_float(yes[-1], 2)} with it."),
        label(f"- 在 {last} 个 token 处，没缓存的一步用时是有缓存的 {ratio} 倍。",
              f"- At {last} tokens, a step without the cache takes {ratio}× as long as "
              "one with it."),
        label(f"- 整段生成：有缓存 {fast} token/s，没缓存 {slow} token/s。",
              f"- The whole generation: {fast} tokens/s with the cache, {slow} without."),
    ]
    return Localized(lambda lang: "\n".join(line.text(lang) for line in lines))


def generation_timing_figure(g: GenerationTiming) -> Localized:
    """Milliseconds per generated token against text length, with and without cache."""
    check_type("g", g, GenerationTiming)
    def make(lang: str) -> str:
        def draw(fig: Any, ax: Any) -> None:
            ax.plot(g.lengths, g.ms_uncached, marker="o", markersize=4,
                    label=text(label("不用缓存：每步重算整段文字",
                                     "no cache: the whole text every step"), lang))
            ax.plot(g.lengths, g.ms_cached, marker="o", markersize=4,
                    label=text(label("KV 缓存：每步只算新 token",
                                     "KV cache: the new token only"), lang))
            ax.set_ylim(bottom=0)
            ax.set_xlabel(text(label("文字长度（token）", "text length (tokens)"), lang))
            ax.set_ylabel(text(label("生成一个 token 的时间（ms）",
                                     "time per generated token (ms)"), lang))
            ax.set_title(g.machine, fontsize=8)
            ax.grid(True, alpha=0.3)
            ax.legend(frameon=False, fontsize=8)

        return _draw(lang, 6.0, 3.2, draw)

    return figure(make, data=[g.lengths, g.ms_cached, g.ms_uncached], alt=label(
        f"生成每个 token 的毫秒数随文字长度（到 {g.lengths[-1]} 个 token）的变化，"
        "有 KV 缓存和没有 KV 缓存各一条线（本机实测）",
        f"Milliseconds per generated token as the text grows to {g.lengths[-1]} "
        "tokens, with and without the KV cache (measured on this machine)"))


# --- (6) checkpoints -----------------------------------------------------------------


def checkpoint_table(r: CheckpointResumeResult) -> Localized:
    """Resumed runs against the uninterrupted one."""
    check_type("r", r, CheckpointResumeResult)
    n = r.steps_each
    rows = [
        (label("恢复全部状态，含取批的生成器", "everything restored, batch generator too"),
         yes_no(r.weights_equal and r.losses_equal), f"{r.max_abs_diff:g}"),
        (label("取批的生成器重新播种", "batch generator seeded afresh"),
         yes_no(r.without_generator_equal), f"{r.without_generator_max_abs_diff:.1e}"),
    ]
    headers = [label(f"{n} 步，保存，载入，再 {n} 步", f"{n} steps, save, load, {n} more"),
               label(f"与连续 {2 * n} 步逐位相同", f"bit-equal to {2 * n} straight steps"),
               label("权重的最大差", "largest weight difference")]
    return table(headers, rows)


# --- the base models ------------------------------------------------------------------


_DEVICE_WORDS = ((r"(\d+) cores?\b", r"\1 核"), (r"(\d+) threads?\b", r"\1 线程"))


def _device_zh(device: str) -> str:
    """Where a base model trained, as its provenance says it in English
    (``"cpu (AMD EPYC, 2 cores)"``), with the counts' words and the punctuation in
    Chinese (``"cpu（AMD EPYC，2 核）"``)."""
    for pattern, words in _DEVICE_WORDS:
        device = re.sub(pattern, words, device)
    return device.replace(", ", "，").replace(" (", "（").replace(")", "）")


def base_models_table(results: Sequence[BaseModelResult]) -> Localized:
    """One column per base model: its size, its training run, and how it was made
    (all from its shipped files)."""
    _check_results("results", results, BaseModelResult)
    cards = [r.card for r in results]
    rows = [
        (label("参数", "parameters"), *[fmt_int(r.n_parameters) for r in results]),
        (label("层 × 宽度 × 头，上下文", "layers × width × heads, context"),
         *[f"{c.config.num_layers} × {c.config.d_model} × {c.config.num_heads}, "
           f"{c.config.context_length}" for c in cards]),
        (label("分词器（词表）", "tokenizer (vocabulary)"),
         *[f"BPE ({fmt_int(c.config.vocab_size)})" if c.tokenizer == "bpe"
           else label("字节", "bytes") for c in cards]),
        (label("训练 / 验证 token", "train / validation tokens"),
         *[f"{fmt_int(c.training['train_tokens'])} / {fmt_int(c.training['val_tokens'])}"
           for c in cards]),
        (label("步数 × 批大小 × 上下文", "steps × batch × context"),
         *[f"{fmt_int(c.steps)} × {c.training['batch_size']} × "
           f"{c.config.context_length}" for c in cards]),
        (label("见过的 token（遍数）", "tokens seen (epochs)"),
         *[f"{fmt_int(c.tokens_seen)} ({fmt_float(c.epochs, 1)})" for c in cards]),
        (label("验证损失：第一次评估 → 结束（nat / token）",
               "validation loss: first evaluation → end (nats / token)"),
         *[label(f"{fmt_float(c.val_losses[0])}（第 {c.val_iterations[0]:,} 步）→ "
                 f"{fmt_float(c.val_losses[-1])}",
                 f"{fmt_float(c.val_losses[0])} (step {c.val_iterations[0]:,}) → "
                 f"{fmt_float(c.val_losses[-1])}") for c in cards]),
        (label("训练用时，设备", "training time, device"),
         *[label(f"{fmt_float(c.wall_seconds / 60, 1)} 分钟，{_device_zh(c.device)}",
                 f"{fmt_float(c.wall_seconds / 60, 1)} min, {c.device}") for c in cards]),
        (label("torch，提交", "torch, commit"),
         *[label(f"{c.torch}，`{c.commit[:10]}`", f"{c.torch}, `{c.commit[:10]}`")
           for c in cards]),
        (label("发布的文件", "shipped files"),
         *[f"{fmt_float(c.folder_bytes / 1e6, 2)} MB" for c in cards]),
    ]
    return table([label("基座模型", "base model"),
                  *[CORPUS_NAMES[c.name] for c in cards]], rows,
                 align="l" + "l" * len(cards))


def base_quality_table(results: Sequence[BaseModelResult]) -> Localized:
    """Held-out loss in three units and the sample measures, per base model.

    The measure that says something for each corpus is shown for it: known words
    for English; regular verse lines and known characters for Chinese.
    """
    _check_results("results", results, BaseModelResult)
    rows = []
    for r in results:
        h = r.held_out
        name = CORPUS_NAMES[r.card.name]
        rows.append((name, label("留出文本的损失", "held-out loss"),
                     label(f"{fmt_float(h.nats_per_token)} ± "
                           f"{fmt_float(h.standard_error)} nat / token",
                           f"{fmt_float(h.nats_per_token)} ± "
                           f"{fmt_float(h.standard_error)} nats / token"),
                     label(f"{fmt_int(h.tokens)} 个 token", f"{fmt_int(h.tokens)} tokens")))
        rows.append((name, label("同上，按字符", "the same, per character"),
                     label(f"{fmt_float(h.nats_per_character)} nat / 字符",
                           f"{fmt_float(h.nats_per_character)} nats / character"),
                     label(f"{fmt_int(h.characters)} 个字符",
                           f"{fmt_int(h.characters)} characters")))
        rows.append((name, label("同上，按字节", "the same, per byte"),
                     label(f"{fmt_float(h.bits_per_byte)} bit / 字节",
                           f"{fmt_float(h.bits_per_byte)} bits / byte"),
                     label(f"{fmt_int(h.bytes)} 个字节", f"{fmt_int(h.bytes)} bytes")))
        for q in r.samples:
            t = f"T = {q.temperature:g}"
            if r.card.name == "shakespeare":
                rows.append((name, label(f"采样中语料里有的词（{t}）",
                                         f"sampled words found in the corpus ({t})"),
                             fmt_pct(q.known_word_rate),
                             label(f"{fmt_int(q.words)} 个词", f"{fmt_int(q.words)} words")))
            else:
                rows.append((name, label(f"采样中五言、七言整齐的句（{t}）",
                                         f"sampled lines of regular verse ({t})"),
                             fmt_pct(q.verse_rate),
                             label(f"{fmt_int(q.lines)} 句", f"{fmt_int(q.lines)} lines")))
                rows.append((name, label(f"采样中语料里有的字（{t}）",
                                         f"sampled characters found in the corpus ({t})"),
                             fmt_pct(q.known_character_rate, 1),
                             label(f"{fmt_int(q.characters)} 个字",
                                   f"{fmt_int(q.characters)} characters")))
    return table([label("模型", "model"), label("指标", "measure"),
                  label("数值", "value"), label("基于", "over")], rows, align="lllr")


def base_curves_figure(results: Sequence[BaseModelResult],
                       tiny: Sequence[TrainingRunResult]) -> Localized:
    """Each base model's whole loss curve beside its corpus's tiny lecture run.

    Losses are per character and the x-axis counts characters read, so that runs
    whose tokenizers differ share a scale: a run's nats per token are divided by its
    validation text's characters per token, its tokens seen multiplied by it.
    """
    _check_results("results", results, BaseModelResult)
    _check_results("tiny", tiny, TrainingRunResult)
    by_corpus = {r.corpus: r for r in tiny}
    missing = [r.card.name for r in results if r.card.name not in by_corpus]
    if missing:
        raise ValueError(f"tiny must hold a run on each base model's corpus; it lacks "
                         f"{', '.join(missing)}")

    def make(lang: str) -> str:
        def draw(fig: Any, ax: Any) -> None:
            for i, r in enumerate(results):
                c, small = r.card, by_corpus[r.card.name]
                colour, name = f"C{i}", text(CORPUS_NAMES[c.name], lang)
                per = 1 / r.held_out.tokens_per_character  # characters per token
                tokens = c.training["batch_size"] * c.config.context_length
                ax.plot([i * tokens * per for i in c.iterations],
                        [x / per for x in c.losses], color=colour, linewidth=0.8,
                        alpha=0.35)
                ax.plot([i * tokens * per for i in c.val_iterations],
                        [x / per for x in c.val_losses], color=colour, marker="o",
                        markersize=3, linewidth=1.6, label=text(label(
                            f"{name}：基座模型（验证；淡线为训练）",
                            f"{name}: base model (validation; faint: training)"), lang))
                spt = small.settings.batch_size * small.settings.context_length
                cpt = small.chars_per_token
                read = [(i * spt * cpt, x / cpt) for i, x in
                        zip(small.val_iterations, small.val_losses) if i > 0]  # log axis
                ax.plot([x for x, _ in read], [y for _, y in read], color=colour, marker="s",
                        markersize=3, linewidth=1.2, linestyle="--", label=text(label(
                            f"{name}：上面的小模型（验证）",
                            f"{name}: the tiny run above (validation)"), lang))
            ax.set_xscale("log")
            ax.set_xlabel(text(label("读过的字符（对数刻度）", "characters read (log scale)"),
                               lang))
            ax.set_ylabel(text(label("交叉熵（nat / 字符）",
                                     "cross-entropy (nats / character)"), lang))
            ax.grid(True, alpha=0.3)
            ax.legend(frameon=False, fontsize=7.5, loc="center left",
                      bbox_to_anchor=(0.0, 0.47))

        return _draw(lang, 6.4, 3.8, draw)

    return figure(make, data=[[(r.card.losses, r.card.val_losses) for r in results],
                              [r.val_losses for r in tiny]], alt=label(
        "两个基座模型的整条损失曲线（每字符的交叉熵，横轴为读过的字符，对数刻度），"
        "旁边是上面小模型的验证损失",
        "The two base models' whole loss curves (cross-entropy per character against "
        "characters read, log scale), beside the tiny runs' validation loss"))


def base_samples_markdown(r: BaseModelResult, count: int = 3,
                          temperature: float | None = None) -> Localized:
    """The first ``count`` samples at ``temperature`` (default: the last one sampled)."""
    check_type("r", r, BaseModelResult)
    check_int("count", count, maximum=len(r.samples[0].texts))
    temps = [q.temperature for q in r.samples]
    chosen = r.samples[-1] if temperature is None else r.samples[
        temps.index(check_choice("temperature", temperature, temps))]
    blocks = "\n".join(f"````{{.text .llmlab-sample}}\n{printable(t).strip()}\n````"
                       for t in chosen.texts[:count])
    return Localized(lambda lang: blocks + "\n")
