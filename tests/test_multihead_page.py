"""The multi-head lecture: what its tables show (its exercises: ``test_exercises.py``).

* The shape table prints :attr:`MultiHeadSelfAttention.STEPS`: its operations must be
  the code that runs.
* The read-out table's numbers (:meth:`WhyMultiheadResult.answered`) mean what the page
  says they mean.
"""

from __future__ import annotations

import inspect
import re

import pytest
import torch

from llmlab.experiments.multihead import (
    _eval_batch,
    run_residual_ablation,
    run_why_multihead,
    train_copy_model,
)
from llmlab.models.gpt2 import MultiHeadSelfAttention


torch.set_num_threads(1)


def test_the_steps_table_shows_the_code_that_runs() -> None:
    """Every operation in ``STEPS`` is in ``forward_steps`` (dropout, off by default,
    and ``self.`` left out; ``attn`` summarises the masked softmax)."""
    source = inspect.getsource(MultiHeadSelfAttention.forward_steps).replace("self.", "")
    source = source.replace("attn_dropout(attn)", "attn")
    source = source.replace("resid_dropout(proj(concat))", "proj(concat)")
    for name, (op, _) in MultiHeadSelfAttention.STEPS.items():
        if name == "attn":
            assert "softmax(" in source and "masked_fill(" in source
            continue
        assert op.replace("√Dh", "math.sqrt(Dh)") in source, (name, op)
    # the merge: a view of the transposed heads needs contiguous memory
    assert ".contiguous().view(B, T, D)" in MultiHeadSelfAttention.STEPS["concat"][0]


SMALL = dict(heads=(1, 2), seeds=(0, 1), steps=40, n_eval=64)


@pytest.fixture(scope="module")
def small_result():
    return run_why_multihead.uncached(**SMALL)


def test_answered_is_what_each_read_out_said(small_result) -> None:
    """``answered(a, a)`` is the accuracy; ``answered(a, a) + answered(a, b)`` the share
    of predictions that are the token at ``t - a`` or the one at ``t - b``."""
    r = small_result
    offsets = tuple(r.offsets)
    start = max(offsets)
    for n_heads in r.heads:
        for s, seed in enumerate(r.seeds):
            model = train_copy_model(n_heads, seed, offsets, steps=SMALL["steps"])
            x = _eval_batch(SMALL["n_eval"], 12, 10)
            with torch.no_grad():
                logits, _ = model(x)
            tokens = {k: x[:, start - k : 12 - k] for k in offsets}
            for j, a in enumerate(offsets):
                pred = logits[j][:, start:].argmax(-1)
                acc = (pred == tokens[a]).float().mean().item()
                assert r.answered(n_heads, seed, a, a) == pytest.approx(acc)
                assert r.accuracy[r.heads.index(n_heads)][s][j] == pytest.approx(acc)
                for b in offsets:
                    if b != a:
                        either = ((pred == tokens[a]) | (pred == tokens[b])).float().mean()
                        total = r.answered(n_heads, seed, a, a) + r.answered(
                            n_heads, seed, a, b)
                        assert total == pytest.approx(either.item())


def test_ranked_orders_the_targets_by_accuracy(small_result) -> None:
    r = small_result
    for n_heads in r.heads:
        for s, seed in enumerate(r.seeds):
            ranked = r.ranked(n_heads, seed)
            assert sorted(ranked) == sorted(r.offsets)
            accs = [r.accuracy[r.heads.index(n_heads)][s][r.offsets.index(k)] for k in ranked]
            assert accs == sorted(accs, reverse=True)
    with pytest.raises(ValueError, match="seed must be one of"):
        r.ranked(1, 7)
    with pytest.raises(ValueError, match="target must be one of the offsets"):
        r.answered(1, 0, 3, 1)


def test_answer_table_in_both_languages(small_result) -> None:
    from llmlab.report.multihead import why_multihead_answer_table

    table = why_multihead_answer_table(small_result, [(1, 0), (2, 1)])
    zh, en = table.render("zh"), table.render("en")
    assert "1 个头，种子 0" in zh and "1 head, seed 0" in en and "2 heads, seed 1" in en
    rows = [line for line in en.splitlines()[2:] if line.strip()]
    assert len(rows) == 2 * len(small_result.offsets)  # one row per read-out
    for row in rows:  # the read-out's own column, and only it, is bold
        cells = [c.strip() for c in row.strip("|").split("|")]
        k = int(re.search(r"t−(\d+)", cells[1]).group(1))
        bold = [i for i, c in enumerate(cells[2:]) if c.startswith("**")]
        assert bold == [small_result.offsets.index(k)]


def test_residual_result_counts_its_predictions() -> None:
    r = run_residual_ablation.uncached(kinds=("pre_ln",), n_layers=1, d_model=8, n_heads=2,
                                       steps=2, window=1, n_eval=10)
    assert (r.seq_len, r.n_eval) == (12, 10)
    assert r.n_predictions == 10 * (12 - 3) and r.chance == pytest.approx(0.1)
