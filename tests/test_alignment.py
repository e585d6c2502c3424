"""llmlab.alignment: the DPO loss and a response's log-probability.

``dpo_loss`` against the formula evaluated per element in float64 (``math``), at
margins of ±1000 (finite, at its limits), at a policy equal to its reference
(``log 2``, zero rewards), and the sign of its gradients; ``sequence_logprobs``
against an explicit loop over rows and positions, and differentiable.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from llmlab.alignment import dpo_loss, implicit_reward_accuracy, sequence_logprobs
from llmlab.models.llama import TransformerLM

torch.set_num_threads(1)


def _neg_log_sigmoid(m: float) -> float:
    """``-log σ(m) = log(1 + e^{-m})``, written so that neither side overflows."""
    return math.log1p(math.exp(-m)) if m >= 0 else -m + math.log1p(math.exp(m))


def _logps(seed: int, n: int = 8) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [-20 * torch.rand(n, generator=g, dtype=torch.float64) for _ in range(4)]


@pytest.mark.parametrize("beta", [0.1, 0.5, 2.0])
def test_dpo_loss_is_the_formula(beta):
    pc, pr, rc, rr = _logps(0)
    losses, chosen, rejected = dpo_loss(pc, pr, rc, rr, beta)
    for i in range(len(pc)):
        c = beta * (pc[i].item() - rc[i].item())
        r = beta * (pr[i].item() - rr[i].item())
        assert chosen[i].item() == pytest.approx(c, rel=1e-12, abs=1e-12)
        assert rejected[i].item() == pytest.approx(r, rel=1e-12, abs=1e-12)
        assert losses[i].item() == pytest.approx(_neg_log_sigmoid(c - r), rel=1e-12)
    assert losses.shape == chosen.shape == rejected.shape == (len(pc),)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dpo_loss_at_margins_of_1000(dtype):
    beta = 0.5
    big = torch.tensor([1000.0, -1000.0], dtype=dtype)
    zero = torch.zeros(2, dtype=dtype)
    losses, _, _ = dpo_loss(big, zero, zero, zero, beta)  # margins β·(±1000)
    assert torch.isfinite(losses).all()
    assert losses[0].item() == pytest.approx(0.0, abs=1e-30)  # e^{-500}
    assert losses[1].item() == pytest.approx(beta * 1000, rel=1e-6)
    # the same margins from the rejected side
    losses, _, _ = dpo_loss(zero, -big, zero, zero, beta)
    assert losses[0].item() == pytest.approx(0.0, abs=1e-30)
    assert losses[1].item() == pytest.approx(beta * 1000, rel=1e-6)


def test_policy_equal_to_reference_gives_log_2():
    pc, pr, _, _ = _logps(1)
    for dtype, tol in ((torch.float32, 1e-6), (torch.float64, 1e-12)):
        c, r = pc.to(dtype), pr.to(dtype)
        losses, chosen, rejected = dpo_loss(c, r, c.clone(), r.clone(), 0.1)
        torch.testing.assert_close(losses, torch.full_like(c, math.log(2)),
                                   rtol=tol, atol=tol)
        assert (chosen == 0).all() and (rejected == 0).all()


def test_gradients_raise_chosen_and_lower_rejected():
    pc, pr, rc, rr = (t.float() for t in _logps(2))
    pc.requires_grad_(True)
    pr.requires_grad_(True)
    losses, chosen, rejected = dpo_loss(pc, pr, rc, rr, 0.1)
    losses.sum().backward()
    assert (pc.grad < 0).all()  # raising the chosen log-prob lowers the loss
    assert (pr.grad > 0).all()  # raising the rejected one raises it
    assert not chosen.requires_grad and not rejected.requires_grad  # for watching


def test_implicit_reward_accuracy():
    chosen = torch.tensor([1.0, 0.0, -1.0, 2.0])
    rejected = torch.tensor([0.0, 0.0, 0.0, 1.0])
    assert implicit_reward_accuracy(chosen, rejected) == 0.5  # a tie is wrong


def _model() -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(vocab_size=11, context_length=8, d_model=16, num_layers=1,
                         num_heads=2, d_ff=32)


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 11, (3, 7), generator=g)
    mask = torch.zeros(3, 7, dtype=torch.bool)
    mask[0, 2:] = True  # a response after a 2-token prompt
    mask[1, 4:6] = True  # a shorter one, then padding
    mask[2, 6] = True  # one token, the last
    return ids, mask


def test_sequence_logprobs_is_a_loop_over_rows_and_positions():
    model = _model()
    ids, mask = _batch()
    got = sequence_logprobs(model, ids, mask)
    with torch.no_grad():
        logits = model(ids)
    expected = []
    for b in range(ids.shape[0]):
        total = 0.0
        for t in range(1, ids.shape[1]):
            if mask[b, t]:
                total += F.log_softmax(logits[b, t - 1].double(), dim=-1)[ids[b, t]].item()
        expected.append(total)
    assert got.shape == (3,) and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), torch.tensor(expected, dtype=torch.float64),
                               rtol=1e-5, atol=1e-5)
    assert len(set(got.tolist())) == 3  # the rows differ


def test_sequence_logprobs_is_differentiable():
    model = _model()
    ids, mask = _batch()
    sequence_logprobs(model, ids, mask).sum().backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


def test_dpo_step_on_sequence_logprobs_prefers_the_chosen():
    """One DPO step from policy = reference raises the chosen's log-probability
    relative to the rejected's."""
    policy, reference = _model(), _model()
    ids, mask = _batch()
    chosen_ids, rejected_ids = ids, ids.roll(1, dims=1)
    rejected_mask = mask.clone()

    def margin():
        with torch.no_grad():
            return (sequence_logprobs(policy, chosen_ids, mask)
                    - sequence_logprobs(policy, rejected_ids, rejected_mask))

    before = margin()
    with torch.no_grad():
        ref_c = sequence_logprobs(reference, chosen_ids, mask)
        ref_r = sequence_logprobs(reference, rejected_ids, rejected_mask)
    losses, _, _ = dpo_loss(sequence_logprobs(policy, chosen_ids, mask),
                            sequence_logprobs(policy, rejected_ids, rejected_mask),
                            ref_c, ref_r, 0.1)
    torch.testing.assert_close(losses, torch.full_like(losses, math.log(2)))
    losses.mean().backward()
    with torch.no_grad():
        for p in policy.parameters():
            p -= 0.05 * p.grad
    assert (margin() - before).sum() > 0
