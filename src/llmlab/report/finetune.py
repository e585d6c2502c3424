"""Tables and figures of :mod:`llmlab.experiments.finetune`, in the reader's language.

Taught on: "Fine-tuning".
"""

from __future__ import annotations

from llmlab.checks import check_int, check_type
from llmlab.experiments.finetune import (
    ANSWERS,
    FinetuneComparison,
    FinetuneRun,
    FinetuneTask,
    LoRAAtScale,
)
from llmlab.finetune import IGNORE_INDEX, supervised_example
from llmlab.report import Label, Localized, fmt_float, fmt_int, fmt_pct, label, line_plot, table
from llmlab.report.distributed import fmt_bytes
from llmlab.report.tokenization import tokens_html
from llmlab.tokenization import Tokenizer

__all__ = [
    "comparison_table",
    "examples_table",
    "forgetting_table",
    "loss_figure",
    "lora_checks_table",
    "masking_table",
    "outputs_table",
    "run_name",
    "scale_table",
    "seeds_table",
]


def _shown(text: str) -> str:
    """A prompt or an answer in a table cell: its line breaks shown as ``\\n``."""
    return "`" + text.replace("\n", "\\n") + "`"


def run_name(run: FinetuneRun) -> Label:
    """How a table names a run: the method, its rank, whether the prompt is masked."""
    check_type("run", run, FinetuneRun)
    if run.method == "lora":
        return label(f"LoRA，r = {run.rank}", f"LoRA, r = {run.rank}")
    if run.mask_prompt:
        return label("全量微调，遮住提示", "full, prompt masked")
    return label("全量微调，不遮提示", "full, prompt not masked")


def examples_table(task: FinetuneTask, n: int = 4) -> Localized:
    """The first ``n`` training examples: prompt and answer."""
    check_type("task", task, FinetuneTask)
    check_int("n", n, maximum=len(task.train))
    headers = [label("提示", "prompt"), label("答案", "answer")]
    return table(headers, [[_shown(p), _shown(a)] for p, a in task.train[:n]])


def masking_table(tokenizer: Tokenizer, prompt: str, response: str) -> Localized:
    """One example position by position: the token read, and the token to predict
    with the prompt masked and without (``·``: not in the loss); tokens as chips
    (:func:`llmlab.report.tokenization.tokens_html`: a piece of a character as its bytes)."""
    check_type("tokenizer", tokenizer, Tokenizer)
    masked = supervised_example(tokenizer, prompt, response, mask_prompt=True)
    plain = supervised_example(tokenizer, prompt, response, mask_prompt=False)

    def shown(token_id: int) -> str:  # a chip, as the tokenization lecture shows tokens
        return "·" if token_id == IGNORE_INDEX else tokens_html([tokenizer.vocab[token_id]])

    headers = [label("位置", "position"), label("读入的 token", "token read"),
               label("目标（遮住提示）", "target (prompt masked)"),
               label("目标（不遮）", "target (not masked)")]
    rows = [[i, shown(t), shown(m), shown(u)]
            for i, (t, m, u) in enumerate(zip(masked[0], masked[1], plain[1]))]
    return table(headers, rows)


def _accuracy_headers(corpus: str) -> list[Label]:
    """The columns of a held-out accuracy: one per answer, then their mean."""
    return [*[label(f"答 `{a}` 的准确率", f"accuracy on `{a}`") for a in ANSWERS[corpus]],
            label("平均", "mean")]


def comparison_table(comparison: FinetuneComparison) -> Localized:
    """One row for the base model, then one per run: what is trained, what it
    costs in optimizer state, and the held-out accuracy per answer and overall."""
    check_type("comparison", comparison, FinetuneComparison)
    first = comparison.full
    headers = [label("模型", "model"), label("可训练参数", "trainable parameters"),
               label("占比", "share"), label("优化器状态", "optimizer state"),
               *_accuracy_headers(comparison.corpus)]
    base = first.base_accuracy
    rows = [[label("基座模型（未微调）", "base model (not fine-tuned)"), "0", fmt_pct(0.0),
             "0 B", *[fmt_pct(a) for a in base], fmt_pct(sum(base) / len(base))]]
    for run in comparison.runs:
        rows.append([run_name(run), fmt_int(run.trainable), fmt_pct(run.trainable_share, 2),
                     fmt_bytes(run.optimizer_state_bytes), *[fmt_pct(a) for a in run.accuracy],
                     fmt_pct(run.mean_accuracy)])
    return table(headers, rows)


def seeds_table(*runs: FinetuneRun) -> Localized:
    """One row per run, its seed first: the held-out accuracy per answer and
    overall (runs of one corpus, for instance one setting at several seeds)."""
    if not runs:
        raise ValueError("runs is empty; expected at least one FinetuneRun")
    for i, run in enumerate(runs):
        check_type(f"runs[{i}]", run, FinetuneRun)
        if run.corpus != runs[0].corpus:
            raise ValueError(f"runs[{i}] is a run on {run.corpus!r}; expected every run "
                             f"on {runs[0].corpus!r}, the corpus of runs[0]")
    headers = [label("种子", "seed"), label("模型", "model"),
               *_accuracy_headers(runs[0].corpus)]
    rows = [[run.seed, run_name(run), *[fmt_pct(a) for a in run.accuracy],
             fmt_pct(run.mean_accuracy)] for run in runs]
    return table(headers, rows, align="ll" + "r" * (len(headers) - 2))


def lora_checks_table(comparison: FinetuneComparison) -> Localized:
    """Per LoRA run: its largest logit difference from the base model before
    training, and the merged model's from the adapted one after."""
    check_type("comparison", comparison, FinetuneComparison)
    headers = [label("秩", "rank"),
               label("训练前：适配后 − 基座（最大绝对差）",
                     "before training: adapted − base (largest |difference|)"),
               label("训练后：合并后 − 适配后（最大绝对差）",
                     "after training: merged − adapted (largest |difference|)")]
    rows = [[run.rank, f"{run.init_difference:.1e}", f"{run.merge_difference:.1e}"]
            for run in comparison.lora]
    return table(headers, rows)


def forgetting_table(*comparisons: FinetuneComparison) -> Localized:
    """Per run: the loss on the end of the base model's own corpus (text it never
    trained on) before and after fine-tuning, and how much it rose."""
    for i, comparison in enumerate(comparisons):
        check_type(f"comparisons[{i}]", comparison, FinetuneComparison)
    headers = [label("基座模型", "base model"), label("微调方式", "fine-tuning"),
               label("之前（nats/token）", "before (nats/token)"),
               label("之后", "after"), label("上升", "rise")]
    names = {"tang": label("唐诗", "Tang poems"), "shakespeare": label("莎士比亚", "Shakespeare")}
    rows = [[names[c.corpus], run_name(run), fmt_float(run.corpus_loss_before, 3),
             fmt_float(run.corpus_loss_after, 3), fmt_float(run.forgetting, 3)]
            for c in comparisons for run in c.runs]
    return table(headers, rows)


def outputs_table(run: FinetuneRun) -> Localized:
    """The fine-tuned model's greedy answers to two held-out prompts."""
    check_type("run", run, FinetuneRun)
    headers = [label("提示（训练时没见过）", "prompt (not seen in training)"),
               label("模型写出的", "what the model writes")]
    return table(headers, [[_shown(p), _shown(a)] for p, a in run.outputs])


def loss_figure(comparison: FinetuneComparison) -> Localized:
    """Training loss per step of every run of ``comparison``."""
    check_type("comparison", comparison, FinetuneComparison)
    series = {run_name(run): (list(range(1, len(run.losses) + 1)), run.losses)
              for run in comparison.runs}
    return line_plot(series, xlabel=label("步", "step"),
                     ylabel=label("训练损失（只算计入损失的 token）",
                                  "training loss (the tokens that count)"),
                     alt=label("每种微调方式每一步的训练损失", "training loss per step of each run"))


def scale_table(scale: LoRAAtScale) -> Localized:
    """Llama 2 7B: parameters and AdamW state, full fine-tuning vs LoRA."""
    check_type("scale", scale, LoRAAtScale)
    headers = [label("微调方式", "fine-tuning"), label("可训练参数", "trainable parameters"),
               label("占比", "share"),
               label("AdamW 状态（float32 的 m 和 v）", "AdamW state (float32 m and v)")]
    rows = [[label("全量微调", "full fine-tuning"), fmt_int(scale.total_parameters),
             fmt_pct(1.0), fmt_bytes(scale.full_adamw_bytes)],
            [label(f"LoRA，r = {scale.rank}（q、v）", f"LoRA, r = {scale.rank} (q, v)"),
             fmt_int(scale.trainable), fmt_pct(scale.trainable_share, 3),
             fmt_bytes(scale.lora_adamw_bytes)]]
    return table(headers, rows)
