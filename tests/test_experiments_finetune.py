"""llmlab.experiments.finetune and llmlab.report.finetune on reduced settings."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
from conftest import run_script

from llmlab.experiments.finetune import (
    ANSWERS,
    QUESTIONS,
    FinetuneComparison,
    lora_at_scale,
    run_finetune,
    run_finetune_comparison,
    score_base_model,
    task_examples,
)
from llmlab.finetune import IGNORE_INDEX, supervised_data
from llmlab.models.llama import LLAMA2_7B
from llmlab.pretrained import load, training_text
from llmlab.report import finetune as report

torch.set_num_threads(1)


@pytest.mark.parametrize("corpus", ["tang", "shakespeare"])
def test_task_examples_alternate_answers_and_hold_out_the_corpus_end(corpus: str) -> None:
    task = task_examples(corpus, n_train=8, n_held_out=4)
    assert len(task.train) == 16 and len(task.held_out) == 8
    for pairs in (task.train, task.held_out):
        assert [a for _, a in pairs] == list(ANSWERS[corpus]) * (len(pairs) // 2)
        assert all(p.endswith(QUESTIONS[corpus]) for p, _ in pairs)
    lines = training_text(corpus).split("\n")
    tail = "\n".join(lines[int(len(lines) * 0.9):])  # the base model's validation tenth
    for prompt, answer in task.held_out:
        shown = prompt.removesuffix(QUESTIONS[corpus])
        assert shown in tail
        if corpus == "tang":
            assert len(shown) == (5 if answer == "五言" else 7)
        else:
            assert shown.endswith("?" if answer == "Ask" else ".")
    assert not {p for p, _ in task.train} & {p for p, _ in task.held_out}
    assert task_examples(corpus, n_train=8, n_held_out=4) == task  # seeded


@pytest.fixture(scope="module")
def comparison() -> FinetuneComparison:
    return run_finetune_comparison.uncached("shakespeare", ranks=(2,), steps=2)


def test_a_comparison_runs_full_masked_unmasked_then_each_rank(comparison) -> None:
    full, unmasked, (lora,) = comparison.full, comparison.unmasked, comparison.lora
    assert (full.method, full.mask_prompt, unmasked.mask_prompt) == ("full", True, False)
    assert (lora.method, lora.rank, lora.lr, full.lr) == ("lora", 2, 1e-2, 2e-3)
    assert comparison.runs == [full, unmasked, lora]
    model, _ = load("shakespeare")
    n = sum(p.numel() for p in model.parameters())
    assert full.trainable == full.total_parameters == n
    assert lora.trainable == 2 * (128 + 128) * 2 * 4  # q and v of 4 blocks, d = 128
    assert lora.total_parameters == n + lora.trainable
    for run in comparison.runs:  # AdamW: m and v, float32, per trainable parameter
        assert run.optimizer_state_bytes == 8 * run.trainable
        assert len(run.losses) == 2 and run.base_accuracy == [0.0, 0.0]
        assert len(run.outputs) == 2 and run.corpus_loss_before > 0
    assert full.corpus_loss_before == lora.corpus_loss_before  # the same base model
    base = score_base_model("shakespeare")  # one part, shared by every run
    assert (base.accuracy, base.corpus_loss) == (full.base_accuracy, full.corpus_loss_before)
    assert lora.init_difference == 0.0 and lora.merge_difference < 1e-4
    assert full.init_difference is None and full.merge_difference is None


def test_the_masked_run_learns_only_the_answer_and_its_end(comparison) -> None:
    """The first step's loss is the base model's loss on the answer and its end:
    its log-probability of ``Ask``/``Tell`` then <|endoftext|>, which it never wrote."""
    model, tokenizer = load("shakespeare")
    task = task_examples("shakespeare")
    data = supervised_data(tokenizer, task.train)
    counted = (data.targets != IGNORE_INDEX).sum(-1)
    assert counted.tolist() == [len(tokenizer.encode(a)) + 1 for _, a in task.train]
    assert comparison.full.losses[0] > comparison.unmasked.losses[0] > 0


def test_lora_at_scale_counts_llama2_7b_from_its_config() -> None:
    scale = lora_at_scale(4)
    assert scale.total_parameters == LLAMA2_7B.parameter_count()
    assert scale.trainable == 4 * (4096 + 4096) * 2 * 32
    assert scale.full_adamw_bytes == 8 * scale.total_parameters
    assert scale.lora_adamw_bytes == 8 * scale.trainable


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_report_tables_name_every_run(comparison, lang: str, monkeypatch) -> None:
    monkeypatch.setenv("LLMLAB_OUTPUT", "markdown")
    monkeypatch.setenv("LLMLAB_LANG", lang)
    table = str(report.comparison_table(comparison))
    assert len(table.strip().splitlines()) == 2 + 1 + 3  # header, rule, base, three runs
    assert ("LoRA，r = 2" if lang == "zh" else "LoRA, r = 2") in table
    assert "`Ask`" in table and "`Tell`" in table
    forgetting = str(report.forgetting_table(comparison))
    assert len(forgetting.strip().splitlines()) == 2 + 3
    checks = str(report.lora_checks_table(comparison))
    assert "0.0e+00" in checks
    _, tokenizer = load("shakespeare")
    masking = str(report.masking_table(tokenizer, "Why?\nAsk or tell? ", "Ask"))
    rows = masking.strip().splitlines()[2:]
    cells = [re.split(r"(?<!\\)\|", row)[3].strip() for row in rows]  # unescaped |
    targets = ["".join(re.findall(r'llmlab-tok">(.*?)</code>', c)) or c for c in cells]
    # the answer's tokens and the end count; the prompt and the last position do not
    assert targets[-4:-1] == ["As", "k", "&#60;&#124;endoftext&#124;&#62;"]
    assert set(targets[:-4] + targets[-1:]) == {"·"}
    assert "<img" in str(report.loss_figure(comparison))
    seeds = str(report.seeds_table(comparison.full, dataclasses.replace(
        comparison.unmasked, seed=3, accuracy=[0.25, 0.5])))
    rows = seeds.strip().splitlines()[2:]
    assert len(rows) == 2 and rows[0].startswith("| 0 ") and rows[1].startswith("| 3 ")
    assert rows[1].endswith("| 25.0% | 50.0% | 37.5% |")
    with pytest.raises(ValueError, match=r"runs\[1\] is a run on 'tang'; expected every run "
                                         r"on 'shakespeare'"):
        report.seeds_table(comparison.full, dataclasses.replace(comparison.full, corpus="tang"))


def test_the_seeds_script_tabulates_each_seed_and_the_spread(comparison, monkeypatch,
                                                             capsys) -> None:
    accuracy = {1: [0.5, 1.0], 4: [1.0, 1.0]}  # the masked full run's, per seed

    def run(corpus, ranks=(1, 4, 8), seed=0):
        full = dataclasses.replace(comparison.full, accuracy=accuracy[seed])
        return dataclasses.replace(comparison, corpus=corpus, full=full)

    run_script("seeds", ["finetuning", "--seeds", "1", "4"], monkeypatch,
               run_finetune_comparison=run)
    out = capsys.readouterr().out
    forgot = comparison.full.forgetting
    assert f"| 1 | tang: full, masked | 50.0% / 100.0% | 75.0% | {forgot:.3f} |" in out
    assert "| 4 | shakespeare: LoRA r = 2 | " in out
    assert "mean accuracy (%) over seeds 1, 4:" in out
    assert "| tang: full, masked | 75.0 | 87.5 | 100.0 |" in out


def test_a_run_does_not_depend_on_what_ran_before_it_in_the_process() -> None:
    """Workers run jobs one after another: a LoRA run draws its A from its own seed,
    not from whatever random numbers an earlier job left behind."""
    first = run_finetune.uncached("shakespeare", method="lora", rank=1, steps=2)
    torch.randn(1000)  # an earlier job's draws
    again = run_finetune.uncached("shakespeare", method="lora", rank=1, steps=2)
    assert again.losses == first.losses and again.accuracy == first.accuracy
