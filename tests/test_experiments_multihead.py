"""Tests for llmlab.experiments.multihead on reduced settings."""

import inspect
import math
import pickle

import pytest
import torch

from llmlab.experiments.multihead import (
    ResidualAblationResult,
    WhyMultiheadResult,
    collapse_score,
    evaluate_copy_model,
    run_copy_runs,
    run_residual_ablation,
    run_why_multihead,
    train_copy_model,
)

torch.set_num_threads(1)

SMALL_HEADS = dict(heads=(1, 3), seeds=(0, 1), steps=30, n_eval=100)
SMALL_DEEP = dict(n_layers=3, d_model=16, steps=12, window=4, n_eval=100)


@pytest.fixture(scope="module")
def heads_result():
    return run_why_multihead.uncached(**SMALL_HEADS)


@pytest.fixture(scope="module")
def deep_result():
    return run_residual_ablation.uncached(**SMALL_DEEP)


def test_why_multihead_structure(heads_result):
    r = heads_result
    assert isinstance(r, WhyMultiheadResult)
    assert r.heads == [1, 3] and r.seeds == [0, 1] and r.offsets == [1, 2, 4]
    assert len(r.accuracy) == 2 and all(len(runs) == 2 for runs in r.accuracy)
    assert all(len(accs) == 3 for runs in r.accuracy for accs in runs)
    assert all(0.0 <= a <= 1.0 for runs in r.accuracy for accs in runs for a in accs)
    assert r.chance == pytest.approx(0.1)
    for n_heads in r.heads:
        assert r.worst_target(n_heads) <= min(r.target_accuracy(n_heads)) + 1e-12
    # one row per head, one column per offset 0..max(offsets)+3; rows are averages
    # of attention distributions, so each sums to at most 1
    assert [len(p) for p in r.offset_attention] == [1, 3]
    assert all(len(row) == 8 and sum(row) <= 1 + 1e-5 for p in r.offset_attention
               for row in p)
    assert [len(r.head_offsets(h)) for h in r.heads] == [1, 3]
    pickle.loads(pickle.dumps(r))


def test_copy_runs_keep_the_first_seeds_full_attention_maps():
    """What the copy-task notebook draws: causal rows of weights that sum to 1."""
    runs = run_copy_runs.uncached(3, seeds=(0, 1), steps=30, n_eval=100)
    attn = torch.tensor(runs.attention)  # (H, T, T)
    assert attn.shape == (3, 12, 12)
    assert torch.allclose(attn.sum(-1), torch.ones(3, 12), atol=1e-5)
    assert torch.all(attn.triu(1) == 0)  # no weight on later keys
    # the per-offset profile is these maps read along the diagonals
    queries = torch.arange(4, 12)  # t >= max(offsets)
    for h in range(3):
        for o in range(5):
            assert runs.profile[h][o] == pytest.approx(
                attn[h, queries, queries - o].mean().item(), abs=1e-5)


def test_parameter_count_does_not_depend_on_heads(heads_result):
    assert len(set(heads_result.n_params)) == 1


def test_why_multihead_is_deterministic(heads_result):
    again = run_why_multihead.uncached(**SMALL_HEADS)
    assert again.accuracy == heads_result.accuracy
    assert again.offset_attention == heads_result.offset_attention


def test_why_multihead_errors(heads_result):
    with pytest.raises(ValueError, match=r"d_model \(24\).*n_heads \(5\)"):
        run_why_multihead.uncached(heads=(5,), steps=1)
    with pytest.raises(ValueError, match="offsets"):
        run_why_multihead.uncached(offsets=(1, 12), steps=1)
    with pytest.raises(ValueError, match="n_heads must be one of"):
        heads_result.worst_target(2)


def test_copy_model_learns_one_offset_quickly():
    torch.manual_seed(0)
    model = train_copy_model(1, offsets=(1,), steps=150)
    accs, attn = evaluate_copy_model(model, offsets=(1,), n_eval=200)
    assert accs[0] > 0.5  # chance is 0.1
    assert attn.shape == (200, 1, 12, 12)


def test_residual_ablation_structure(deep_result):
    r = deep_result
    assert isinstance(r, ResidualAblationResult)
    assert r.kinds == ["pre_ln", "post_ln", "no_residual"]
    assert list(r.losses) == list(r.collapse) == list(r.accuracy) == r.kinds
    assert [len(c) for c in r.losses.values()] == [12, 12, 12]
    assert all(-1.0 <= c <= 1.0 for c in r.collapse.values())
    assert all(0.0 <= a <= 1.0 for a in r.accuracy.values())
    assert r.chance_loss == pytest.approx(math.log(10))
    first = r.first_loss("pre_ln")
    assert first == pytest.approx(sum(r.losses["pre_ln"][:4]) / 4)
    last = sum(r.losses["no_residual"][-4:]) / 4
    assert r.last_loss("no_residual") == pytest.approx(last)
    with pytest.raises(ValueError, match="kind must be one of"):
        r.first_loss("resnet")
    pickle.loads(pickle.dumps(r))


def test_residual_ablation_is_deterministic(deep_result):
    again = run_residual_ablation.uncached(**SMALL_DEEP)
    assert again.losses == deep_result.losses and again.collapse == deep_result.collapse


def test_residual_ablation_errors():
    with pytest.raises(ValueError, match="kinds"):
        run_residual_ablation.uncached(kinds=("resnet",), steps=1, window=1)
    with pytest.raises(ValueError, match="offset"):
        run_residual_ablation.uncached(offset=12, steps=1, window=1)
    with pytest.raises(ValueError, match="window"):
        run_residual_ablation.uncached(steps=3, window=4)


def test_collapse_score():
    same = torch.ones(2, 5, 8)
    assert collapse_score(same) == pytest.approx(1.0)
    eye = torch.eye(4).expand(3, 4, 4)  # orthogonal positions
    assert collapse_score(eye) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="hidden must have shape"):
        collapse_score(torch.ones(5, 8))


def test_no_residual_collapses_at_init_even_when_small():
    r = run_residual_ablation.uncached(
        n_layers=8, d_model=32, steps=1, window=1, n_eval=10
    )
    no_res = r.collapse["no_residual"]
    assert no_res > 0.95 and no_res > max(r.collapse["pre_ln"], r.collapse["post_ln"])


def test_experiments_train_the_taught_module(monkeypatch):
    """One implementation: every forward of training and evaluation is the module's own."""
    from llmlab.experiments.multihead import run_residual_variant
    from llmlab.models.gpt2 import MultiHeadSelfAttention

    calls = []
    original = MultiHeadSelfAttention.forward_steps

    def counted(self, *args, **kwargs):
        calls.append(self.n_heads)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(MultiHeadSelfAttention, "forward_steps", counted)
    run_copy_runs.uncached(2, seeds=(0,), steps=3, n_eval=10)
    assert calls == [2] * (3 + 1)  # three training steps, one evaluation
    calls.clear()
    run_residual_variant.uncached("post_ln", n_layers=2, steps=2, n_eval=10)
    assert len(calls) == 2 * (1 + 2 + 1)  # per block: the collapse probe, 2 steps, eval
    for fn in (run_copy_runs, run_why_multihead, run_residual_variant, run_residual_ablation):
        assert "fast" not in inspect.signature(fn.uncached).parameters


# ---------------------------------------------------------------------------
# the lecture's diagrams (drawn by llmlab.report.diagrams)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("B, T, D, H", [(2, 4, 8, 2), (1, 3, 12, 3), (3, 2, 16, 8), (2, 4, 8, 1)])
def test_head_split_shows_the_shapes_of_view_and_transpose(B, T, D, H):
    from llmlab.experiments.multihead import run_head_split

    r = run_head_split(B=B, T=T, d_model=D, n_heads=H)
    x = torch.randn(B, T, D)
    heads = x.view(B, T, H, D // H).transpose(1, 2)
    assert r.shapes == {
        "x": tuple(x.shape),
        "view": tuple(x.view(B, T, H, D // H).shape),
        "transpose": tuple(heads.shape),
        "transpose_back": tuple(heads.transpose(1, 2).shape),
        "merged": tuple(heads.transpose(1, 2).contiguous().view(B, T, D).shape),
    }
    assert r.shapes["transpose"] == (B, H, T, D // H)
    # the numbered elements: element t·D + d of a sequence lands in head d // (D/H)
    numbers = torch.arange(T * D).view(T, D)
    assert torch.equal(r.x, numbers) and torch.equal(r.split, numbers.view(T, H, D // H))
    for h in range(H):
        assert torch.equal(r.heads[h], numbers[:, h * D // H:(h + 1) * D // H])
    assert r.round_trip is True
    # after the heads' transpose, .view needs .contiguous() (unless one axis is 1)
    assert r.view_without_contiguous_fails is (H > 1 and T > 1)
    assert r.back_contiguous is not r.view_without_contiguous_fails


def test_head_split_matches_the_attention_module():
    from llmlab.experiments.multihead import run_head_split
    from llmlab.models.gpt2 import MultiHeadSelfAttention

    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(8, 2)
    steps = attn.forward_steps(torch.randn(2, 4, 8))
    shapes = run_head_split(B=2, T=4, d_model=8, n_heads=2).shapes
    assert tuple(steps["q_heads"].shape) == shapes["transpose"]
    assert tuple(steps["heads"].transpose(1, 2).shape) == shapes["transpose_back"]
    assert tuple(steps["concat"].shape) == shapes["merged"]
    assert not steps["heads"].transpose(1, 2).is_contiguous()  # what the diagram's note says


@pytest.mark.parametrize("pre_ln, order", [(True, ["ln1", "attn", "ln2", "ffn"]),
                                           (False, ["attn", "ln1", "ffn", "ln2"])])
def test_block_order_is_the_forward_pass_s(pre_ln, order):
    from llmlab.experiments.multihead import run_block_order

    r = run_block_order.uncached(pre_ln=pre_ln)
    assert r.pre_ln is pre_ln and r.order == order
    before = torch.get_rng_state()
    assert run_block_order.uncached(pre_ln=pre_ln, seed=3).order == order  # any weights
    assert torch.equal(torch.get_rng_state(), before)  # a forked RNG
