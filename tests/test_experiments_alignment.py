"""llmlab.experiments.alignment and llmlab.report.alignment on reduced settings."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import run_script

from llmlab.alignment import sequence_logprobs
from llmlab.experiments.alignment import (
    AlignmentComparison,
    _line_stats,
    line_prompts,
    prefers,
    repetition,
    run_alignment,
    run_alignment_comparison,
    run_preference_pairs,
    sample_lines,
    two_standard_errors,
)
from llmlab.pretrained import card, load, training_text
from llmlab.report import alignment as report

torch.set_num_threads(1)


def test_the_judges():
    assert prefers("tang", "秦川雄帝宅，函谷壯皇居。")
    assert not prefers("tang", "伊我軒宮，奇樹青葱。")  # 4 + 4
    assert not prefers("tang", None)  # unfinished
    assert prefers("shakespeare", "What say you to this, my lord?")
    assert prefers("shakespeare", "Thus to retort your manifest appeal,  ")
    assert not prefers("shakespeare", "Good my lord.")  # three words
    assert not prefers("shakespeare", "And all the daughters of my father's")  # runs on
    assert not prefers("shakespeare", "")
    assert repetition("tang", "春風春雨，春色滿城。") == pytest.approx(0.25)
    assert repetition("shakespeare", "no, no, no more") == pytest.approx(0.5)


@pytest.mark.parametrize("corpus", ["tang", "shakespeare"])
def test_prompts_are_lines_from_their_part_of_the_corpus(corpus):
    """Training prompts lie in the tokens the base model trained on, held-out ones in
    its validation split (split by tokens, as llmlab-train split them)."""
    model, tokenizer = load(corpus)
    text = training_text(corpus)
    ids = tokenizer.encode(text)
    cut = tokenizer.decode(ids[:card(corpus).training["train_tokens"]])  # the trained text
    trained, validation = text[:len(cut) - 1], text[len(cut) + 1:]
    train, held = line_prompts(corpus, 200), line_prompts(corpus, 200, held_out=True)
    assert train == line_prompts(corpus, 200) and len(set(train)) == 200  # seeded
    assert all(p.endswith("\n") and "\n" + p in "\n" + trained for p in train)
    assert all(p in validation + "\n" for p in held)
    assert not set(train) & set(held)
    if corpus == "shakespeare":
        assert not any(p.rstrip("\n").endswith(":") for p in train + held)


def test_two_standard_errors_are_the_formula_and_hold_about_95_percent():
    """The page's noise: 2·√(p(1 − p)/n), and for a difference 2·√(p(1 − p)/n +
    q(1 − q)/m); largest at ½. Shares drawn from the binomial fall outside it about
    4.6% of the time (the normal approximation's two-sided 2σ)."""
    assert two_standard_errors(256) == pytest.approx(2 * (0.25 / 256) ** 0.5)
    assert two_standard_errors(256, m=256) == pytest.approx(2 * (0.5 / 256) ** 0.5)
    assert two_standard_errors(100, 0.9, m=50, q=0.6) == pytest.approx(
        2 * (0.9 * 0.1 / 100 + 0.6 * 0.4 / 50) ** 0.5)
    assert two_standard_errors(100, 0.3, m=100) == two_standard_errors(100, 0.3, m=100, q=0.3)
    assert two_standard_errors(64, 1.0) == 0.0  # a share that cannot vary
    assert all(two_standard_errors(90, p) < two_standard_errors(90) for p in (0.1, 0.3, 0.7))
    generator = torch.Generator().manual_seed(0)
    n, p, m, q = 256, 0.3, 128, 0.5
    shares = torch.bernoulli(torch.full((20_000, n), p), generator=generator).mean(1)
    others = torch.bernoulli(torch.full((20_000, m), q), generator=generator).mean(1)
    outside = ((shares - p).abs() > two_standard_errors(n, p)).float().mean()
    assert 0.03 < outside < 0.065
    differences = (shares - others) - (p - q)
    outside = (differences.abs() > two_standard_errors(n, p, m=m, q=q)).float().mean()
    assert 0.03 < outside < 0.065


def test_sample_lines_stop_at_the_newline_and_repeat_with_the_seed():
    model, tokenizer = load("tang")
    prompts = line_prompts("tang", 5)  # of several token lengths
    rows = sample_lines(model, tokenizer, prompts, 3, seed=2)
    newline = tokenizer.encode("\n")
    assert [len(r) for r in rows] == [3] * 5
    for per_prompt in rows:
        for ids in per_prompt:
            assert ids[-1:] == newline or len(ids) == 24
            assert newline[0] not in ids[:-1]
    assert sample_lines(model, tokenizer, prompts, 3, seed=2) == rows


@pytest.fixture(scope="module")
def pairs():
    return run_preference_pairs.uncached("tang", train_prompts=6, held_out_prompts=4,
                                         samples=4)


def test_a_pair_is_a_preferred_and_an_other_line_of_one_prompt(pairs):
    model, tokenizer = load("tang")
    newline = tokenizer.encode("\n")
    assert pairs.train and pairs.base.samples == 4 * 4
    for prompt, chosen, rejected in pairs.train + pairs.held_out:
        assert tokenizer.decode(prompt).endswith("\n")
        assert chosen[-1:] == newline and prefers("tang", tokenizer.decode(chosen[:-1]))
        line = tokenizer.decode(rejected[:-1]) if rejected[-1:] == newline else None
        assert not prefers("tang", line)
    # the reference log-probabilities are the base model's, pair by pair
    prompt, chosen, rejected = pairs.train[0]
    ids = torch.tensor([prompt + chosen])
    mask = torch.zeros_like(ids, dtype=torch.bool)
    mask[0, len(prompt):] = True
    with torch.no_grad():
        expected = sequence_logprobs(model, ids, mask).item()
    assert pairs.train_reference[0][0] == pytest.approx(expected, abs=1e-3)
    base = pairs.base
    assert 0 < base.preferred <= base.samples and base.kl_per_token == 0.0


def test_the_base_model_is_sampled_again_as_a_trained_model_is(pairs):
    """base_again: the held-out prompts sampled with the draws run_alignment gives a
    trained model's lines (seed + 1), judged the same way; another sample than base."""
    model, tokenizer = load("tang")
    rows = sample_lines(model, tokenizer, pairs.held_out_prompts, pairs.samples, seed=1)
    assert pairs.base_again == _line_stats("tang", tokenizer, pairs.held_out_prompts, rows)
    assert pairs.base_again.samples == pairs.base.samples
    assert pairs.base_again.kl_per_token == 0.0
    assert pairs.base_again.examples != pairs.base.examples  # other draws


@pytest.fixture(scope="module")
def runs():
    dpo = run_alignment.uncached("tang", beta=0.5, steps=3, batch_size=4, prompts=6)
    sft = run_alignment.uncached("tang", method="sft", steps=3, batch_size=4, prompts=6)
    return dpo, sft


def test_dpo_starts_at_log_2_and_moves_the_pairs_apart(runs):
    dpo, sft = runs
    assert dpo.losses[0] == pytest.approx(0.6931, abs=1e-3) and len(dpo.losses) == 3
    assert dpo.margin > 0 and dpo.rejected_change < 0
    assert sft.chosen_change > 0 and sft.losses[0] > 1.0  # cross-entropy, nats per token
    for run in runs:
        lines = run.lines
        assert lines.samples == 32 * 8 and 0 <= lines.preferred <= lines.samples
        assert lines.kl_per_token > 0  # moved away from the base model
        assert sum(lines.halves.values()) <= lines.samples - lines.unfinished
        assert sum(lines.halves_share(n) for n in lines.halves) == pytest.approx(1.0)
        assert lines.halves_share(99) == 0.0  # no first half of 99 characters


def test_the_report_shows_every_run(runs):
    dpo, sft = runs
    pairs = run_preference_pairs("tang", train_prompts=6)  # the runs' own pairs
    comparison = AlignmentComparison(pairs, [dpo], sft)
    table = report.lines_table(*comparison.runs, pairs=pairs).make("en")
    assert "DPO, β = 0.5" in table and "SFT on chosen" in table and "base model" in table
    assert "base model, sampled again" in table
    assert f"{dpo.lines.preferred_share:.1%}" in table and table.count("\n") == 6
    rewards = report.rewards_table(*comparison.runs).make("en")
    assert f"{dpo.margin:.2f}" in rewards and rewards.count("\n") == 4
    samples = report.samples_table(dpo, pairs=pairs).make("zh")
    assert "基座模型" in samples and "DPO，β = 0.5" in samples
    # the first line at each of the first prompts, the same prompts for every model
    assert dpo.lines.examples[0] in samples or dpo.lines.examples[0] is None
    assert report.pairs_table(pairs, n=2).make("en").count("\n") == 4  # header, rule, 2 rows, end
    steps = report.steps_table(dpo, pairs=pairs).make("en")
    assert steps.count("\n") == 4 and "| 3 " in steps  # the base model, then 3 steps
    assert f"{dpo.lines.halves_share(4):.1%}" in steps and f"{dpo.margin:.2f}" in steps
    with pytest.raises(ValueError, match=r"runs\[0\] must be a run on the pairs' corpus"):
        report.steps_table(dataclasses.replace(dpo, corpus="shakespeare"), pairs=pairs)
    for figure in (report.halves_figure(comparison), report.loss_figure(comparison)):
        svg = figure.make("en")
        assert "<svg" in svg and svg.rstrip().endswith("</svg>") and figure.alt is not None


def test_the_seeds_script_follows_each_beta_from_10_to_30_steps(runs, monkeypatch, capsys):
    dpo, _ = runs

    def run(corpus, beta, steps, seed):  # a share of its own for each run
        assert corpus == "tang"
        lines = dataclasses.replace(dpo.lines, preferred=3 * steps + seed, samples=256)
        return dataclasses.replace(dpo, beta=beta, steps=steps, lines=lines)

    pairs = run_preference_pairs("tang", train_prompts=6)  # the runs' own pairs

    def pairs_of(corpus, seed):
        assert corpus == "tang" and seed in (1, 2)
        return pairs

    run_script("seeds", ["alignment-longer", "--seeds", "1", "2"], monkeypatch,
               run_alignment=run, run_preference_pairs=pairs_of)
    out = capsys.readouterr().out
    assert (f"| 2 | {pairs.base.preferred_share:.1%} | {pairs.base_again.preferred_share:.1%} "
            f"| DPO β = 0.5 | 30 | {92 / 256:.1%} | {dpo.lines.kl_per_token:.3f} | "
            f"{dpo.lines.halves_share(4):.1%} | {dpo.reward_accuracy:.1%} | "
            f"{dpo.margin:.2f} | {dpo.chosen_change:+.2f} | {dpo.rejected_change:+.2f} | "
            f"{dpo.held_out_accuracy:.1%} |") in out
    assert out.count("| DPO β = 0.1 | 10 |") == 2  # one row a seed
    assert "change of regular lines from 10 to 30 steps (points) over seeds 1, 2:" in out
    assert "| DPO β = 0.1 | +23.4 | +23.4 | +23.4 |" in out  # 60 more lines of 256


def test_the_kl_over_many_rows_is_the_mean_log_ratio_of_every_sampled_token():
    # more rows than one forward pass takes: the chunks add up to the whole
    base, tokenizer = load("tang")
    policy, _ = load("tang")
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=torch.Generator().manual_seed(0)))
    prompts = line_prompts("tang", 10, held_out=True)
    rows = sample_lines(policy, tokenizer, prompts, 8)  # 80 rows
    total, tokens = 0.0, 0
    for prompt, per_prompt in zip(prompts, rows):
        ids = tokenizer.encode(prompt)
        for row in per_prompt:
            x = torch.tensor([ids + row])
            mask = torch.zeros_like(x, dtype=torch.bool)
            mask[0, len(ids):] = True
            with torch.no_grad():
                total += (sequence_logprobs(policy, x, mask)
                          - sequence_logprobs(base, x, mask)).item()
            tokens += len(row)
    stats = _line_stats("tang", tokenizer, prompts, rows, policy, base)
    assert stats.samples == 80 and stats.kl_per_token == pytest.approx(total / tokens,
                                                                      rel=1e-4)


def test_the_seeds_script_tabulates_each_seed_and_the_spread(runs, monkeypatch, capsys):
    dpo, sft = runs
    pairs = run_preference_pairs("tang", train_prompts=6)  # the runs' own pairs
    base = pairs.base.preferred / pairs.base.samples
    preferred = {0: 40, 3: 200, 7: 100}  # a DPO run per seed, each its own share

    def comparison(corpus, seed):
        assert corpus == "tang"
        lines = dataclasses.replace(dpo.lines, preferred=preferred[seed], samples=256)
        return AlignmentComparison(pairs, [dataclasses.replace(dpo, lines=lines)], sft)

    run_script("seeds", ["alignment", "--seeds", "0", "3", "7"], monkeypatch,
               run_alignment_comparison=comparison)
    out = capsys.readouterr().out
    gains = {seed: 100 * (k / 256 - base) for seed, k in preferred.items()}
    again = pairs.base_again.preferred_share
    assert (f"| 3 | {base:.1%} | {again:.1%} | DPO β = 0.5 | {200 / 256:.1%} | "
            f"{gains[3]:+.1f} | {dpo.lines.kl_per_token:.3f} | {dpo.chosen_change:+.2f} | "
            f"{dpo.rejected_change:+.2f} |") in out
    assert "gain (points) over seeds 0, 3, 7:" in out
    assert (f"| DPO β = 0.5 | {gains[0]:+.1f} | {gains[7]:+.1f} | {gains[3]:+.1f} |"
            in out)  # smallest, median, largest
    sft_gain = 100 * (sft.lines.preferred_share - base)
    assert f"| SFT | {sft_gain:+.1f} | {sft_gain:+.1f} | {sft_gain:+.1f} |" in out
    with pytest.raises(SystemExit) as exit_:
        run_script("seeds", ["alignment", "--seeds", "-1"], monkeypatch)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == ("seeds.py: error: --seeds must be at least 0, got "
                                       "[-1]\n")


def test_a_seed_reaches_the_pairs_every_run_of_a_comparison_reads():
    from llmlab.build.cache import cache_key, plan

    calls = plan(run_alignment_comparison, "tang", seed=1)
    keys = {cache_key(fn, **kwargs) for fn, kwargs in calls
            if fn is run_preference_pairs}
    assert keys == {cache_key(run_preference_pairs, "tang", seed=1)}  # one set of pairs
    runs = [kwargs for fn, kwargs in calls if fn is run_alignment]
    assert len(runs) == 4 and all(kwargs["seed"] == 1 for kwargs in runs)
    assert keys != {cache_key(run_preference_pairs, "tang")}  # seed 0's are others


def test_the_runs_split_the_training_pairs_into_drawn_and_never_drawn(runs):
    dpo, sft = runs
    assert dpo.drawn_pairs == sft.drawn_pairs  # one seed draws the same rows for both
    for run in runs:
        assert 0 < run.drawn_pairs <= min(run.pairs, run.steps * run.batch_size)
        undrawn = run.pairs - run.drawn_pairs
        assert (run.undrawn_accuracy is None) == (undrawn == 0)
        whole = run.drawn_accuracy * run.drawn_pairs + (run.undrawn_accuracy or 0) * undrawn
        assert whole / run.pairs == pytest.approx(run.reward_accuracy)
    table = report.agreement_table(*runs).make("en").splitlines()
    assert table[2].startswith(f"| DPO, β = 0.5 | {dpo.drawn_pairs} / {dpo.pairs} |")
    never = "—" if sft.undrawn_accuracy is None else f"{sft.undrawn_accuracy:.1%}"
    assert table[3].endswith(f"| {never} | {sft.held_out_accuracy:.1%} |")
