"""Tables and figures of :mod:`llmlab.experiments.alignment`, in the reader's language.

Taught on: "Preference alignment".
"""

from __future__ import annotations

from llmlab.checks import check_int, check_type
from llmlab.experiments.alignment import AlignmentComparison, AlignmentRun, PreferencePairs
from llmlab.report import Label, Localized, fmt_float, fmt_pct, label, line_plot, table

__all__ = [
    "agreement_table",
    "halves_figure",
    "lines_table",
    "loss_figure",
    "pairs_table",
    "rewards_table",
    "run_name",
    "samples_table",
    "steps_table",
]


def _line(text: str | None) -> str:
    """A sampled line in a table cell; an unfinished one marked as such."""
    if text is None:
        return "…"
    return "`" + text.replace("`", "'") + "`" if text else "·"


def run_name(run: AlignmentRun | None) -> Label:
    """How a table names a run (``None``: the base model)."""
    if run is None:
        return label("基座模型", "base model")
    check_type("run", run, AlignmentRun)
    if run.method == "sft":
        return label("只用 chosen 做 SFT", "SFT on chosen")
    return label(f"DPO，β = {run.beta:g}", f"DPO, β = {run.beta:g}")


def pairs_table(pairs: PreferencePairs, n: int = 4) -> Localized:
    """The first ``n`` example pairs: the prompt line, the chosen and the rejected line."""
    check_type("pairs", pairs, PreferencePairs)
    headers = [label("提示（上一行）", "prompt (the line before)"),
               label("chosen（评判偏好）", "chosen (the judge prefers)"),
               label("rejected（评判不偏好）", "rejected (the judge does not)")]
    rows = [[_line(p), _line(c), _line(r)] for p, c, r in pairs.examples[:n]]
    return table(headers, rows, align="lll")


def lines_table(*runs: AlignmentRun, pairs: PreferencePairs) -> Localized:
    """Two rows for the base model (its lines sampled twice: the second time with the
    trained models' draws), then one per run: the lines it writes at the held-out
    prompts, judged, and how far they are from the base model's."""
    check_type("pairs", pairs, PreferencePairs)
    for i, run in enumerate(runs):
        check_type(f"runs[{i}]", run, AlignmentRun)
    headers = [label("模型", "model"), label("偏好的行", "preferred lines"),
               label("KL / token（nats）", "KL / token (nats)"), label("重复", "repetition"),
               label("没写完的行", "unfinished lines")]
    models = [(run_name(None), pairs.base),
              (label("基座模型（再采样一次）", "base model, sampled again"), pairs.base_again),
              *[(run_name(r), r.lines) for r in runs]]
    rows = [[name, fmt_pct(stats.preferred_share), fmt_float(stats.kl_per_token, 3),
             fmt_pct(stats.repetition), f"{stats.unfinished} / {stats.samples}"]
            for name, stats in models]
    return table(headers, rows)


def rewards_table(*runs: AlignmentRun) -> Localized:
    """Per run: its implicit rewards on the training pairs (accuracy, margin, how the
    chosen and the rejected lines moved) and on the held-out pairs."""
    for i, run in enumerate(runs):
        check_type(f"runs[{i}]", run, AlignmentRun)
    headers = [label("模型", "model"),
               label("奖励准确率（训练对）", "reward accuracy (training pairs)"),
               label("log 比值差（nats）", "log-ratio margin (nats)"),
               label("Δ log π(chosen)", "Δ log π(chosen)"),
               label("Δ log π(rejected)", "Δ log π(rejected)"),
               label("与评判一致（留出对）", "agrees with the judge (held-out pairs)")]
    rows = [[run_name(run), fmt_pct(run.reward_accuracy), fmt_float(run.margin, 2),
             fmt_float(run.chosen_change, 2), fmt_float(run.rejected_change, 2),
             fmt_pct(run.held_out_accuracy)] for run in runs]
    return table(headers, rows)


def agreement_table(*runs: AlignmentRun) -> Localized:
    """Per run: how often its implicit reward ranks the chosen line first, on the
    training pairs its batches drew, on the training pairs no batch drew, and on the
    held-out pairs (at prompts of the base model's validation text)."""
    if not runs:
        raise ValueError("runs is empty; expected at least one AlignmentRun")
    for i, run in enumerate(runs):
        check_type(f"runs[{i}]", run, AlignmentRun)
    headers = [label("模型", "model"), label("被抽到的训练对", "training pairs drawn"),
               label("一致：抽到的", "agrees: drawn"),
               label("一致：没抽到的", "agrees: never drawn"),
               label("一致：留出对", "agrees: held-out pairs")]
    rows = [[run_name(run), f"{run.drawn_pairs} / {run.pairs}", fmt_pct(run.drawn_accuracy),
             "—" if run.undrawn_accuracy is None else fmt_pct(run.undrawn_accuracy),
             fmt_pct(run.held_out_accuracy)] for run in runs]
    return table(headers, rows)


def samples_table(*runs: AlignmentRun, pairs: PreferencePairs, n: int = 3) -> Localized:
    """The first ``n`` lines each model writes at the held-out prompts (the same
    prompts for every model), side by side."""
    check_type("pairs", pairs, PreferencePairs)
    for i, run in enumerate(runs):
        check_type(f"runs[{i}]", run, AlignmentRun)
    headers = [label("模型", "model"), *[label(f"第 {i + 1} 行", f"line {i + 1}")
                                          for i in range(n)]]
    rows = [[run_name(None), *[_line(t) for t in pairs.base.examples[:n]]]]
    rows += [[run_name(run), *[_line(t) for t in run.lines.examples[:n]]] for run in runs]
    return table(headers, rows, align="l" * (n + 1))


def steps_table(*runs: AlignmentRun, pairs: PreferencePairs,
                first_half: int = 4) -> Localized:
    """Tang runs side by side with the number of steps each trained, after the base
    model: the lines each writes at the held-out prompts (the share the judge prefers,
    the KL from the base model, the share of couplet lines whose first half has
    ``first_half`` characters) and its implicit reward (the accuracy and the log-ratio
    margin on the training pairs, the agreement with the judge on the held-out pairs)."""
    check_type("pairs", pairs, PreferencePairs)
    if pairs.corpus != "tang":
        raise ValueError(f"pairs must be the Tang model's (corpus 'tang'): the table "
                         f"counts couplet halves; got corpus {pairs.corpus!r}")
    for i, run in enumerate(runs):
        check_type(f"runs[{i}]", run, AlignmentRun)
        if run.corpus != pairs.corpus:
            raise ValueError(f"runs[{i}] must be a run on the pairs' corpus "
                             f"({pairs.corpus!r}), got one on {run.corpus!r}")
    n = check_int("first_half", first_half)
    headers = [label("模型", "model"), label("步数", "steps"),
               label("偏好的行", "preferred lines"),
               label("KL / token（nats）", "KL / token (nats)"),
               label(f"前半句 {n} 字的成联行", f"couplet lines, first half of {n}"),
               label("奖励准确率（训练对）", "reward accuracy (training pairs)"),
               label("log 比值差（nats）", "log-ratio margin (nats)"),
               label("与评判一致（留出对）", "agrees with the judge (held-out pairs)")]
    base = pairs.base
    rows = [[run_name(None), "0", fmt_pct(base.preferred_share),
             fmt_float(base.kl_per_token, 3), fmt_pct(base.halves_share(n)), "—", "—", "—"]]
    rows += [[run_name(run), str(run.steps), fmt_pct(run.lines.preferred_share),
              fmt_float(run.lines.kl_per_token, 3), fmt_pct(run.lines.halves_share(n)),
              fmt_pct(run.reward_accuracy), fmt_float(run.margin, 2),
              fmt_pct(run.held_out_accuracy)] for run in runs]
    return table(headers, rows)


def halves_figure(comparison: AlignmentComparison) -> Localized:
    """Tang: the share of the finished lines that form a couplet (two halves, a comma
    and a full stop), by the length of their first half, per model."""
    check_type("comparison", comparison, AlignmentComparison)
    series = {}
    for run, stats in [(None, comparison.pairs.base)] + [(r, r.lines) for r in comparison.runs]:
        total = sum(stats.halves.values())
        xs = list(range(3, 10))
        series[run_name(run)] = (xs, [stats.halves.get(x, 0) / total for x in xs])
    return line_plot(series, xlabel=label("前半句的字数", "characters in the first half"),
                     ylabel=label("占写完的成联行的比例", "share of the finished couplet lines"),
                     alt=label("各模型写出的成联行前半句字数的分布",
                               "how long the first half of each model's couplet lines is"))


def loss_figure(comparison: AlignmentComparison) -> Localized:
    """The DPO loss per step of each β."""
    check_type("comparison", comparison, AlignmentComparison)
    series = {run_name(run): (list(range(1, len(run.losses) + 1)), run.losses)
              for run in comparison.dpo}
    return line_plot(series, xlabel=label("步", "step"), ylabel=label("DPO 损失", "DPO loss"),
                     alt=label("每个 β 每一步的 DPO 损失", "DPO loss per step for each β"))
