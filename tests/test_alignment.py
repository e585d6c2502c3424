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

from llmlab.alignment import PreferenceData, dpo_loss, implicit_reward_accuracy, sequence_logprobs
from llmlab.models.llama import TransformerLM
from llmlab.training import IGNORE_INDEX, AdamW, estimate_loss, train

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


# --- PreferenceData: pairs as rows of the training loop ---------------------------------
_PAIRS = [([1, 2, 3], [4, 5], [6, 7, 8]), ([9, 10], [11], [12, 13]), ([2], [3, 4, 5], [6])]


def _lm(seed: int = 0) -> TransformerLM:
    torch.manual_seed(seed)
    return TransformerLM(vocab_size=16, context_length=8, d_model=16, num_layers=1,
                         num_heads=2, d_ff=32)


def _alone(model, prompt, response):
    """``sequence_logprobs`` of one unpadded sequence."""
    ids = torch.tensor([prompt + response])
    mask = torch.zeros_like(ids, dtype=torch.bool)
    mask[0, len(prompt):] = True
    with torch.no_grad():
        return sequence_logprobs(model, ids, mask).item()


def test_preference_data_lays_out_pairs_and_scores_the_reference_once():
    reference = _lm()
    data = PreferenceData(_PAIRS, reference, beta=0.1, pad_id=0)
    assert len(data) == 3 and data.context_length == 6 and data.input_ids.shape == (3, 2, 6)
    assert data.input_ids[1, 1].tolist() == [9, 10, 12, 13, 0, 0]  # rejected of pair 1, padded
    assert data.response_mask[1, 1].tolist() == [False, False, True, True, False, False]
    expected = [[_alone(reference, p, c), _alone(reference, p, r)] for p, c, r in _PAIRS]
    torch.testing.assert_close(data.reference_logps, torch.tensor(expected), atol=1e-5, rtol=0)
    # the same log-probabilities, given instead of the model
    given = PreferenceData(_PAIRS, data.reference_logps, beta=0.1, pad_id=0)
    assert torch.equal(given.reference_logps, data.reference_logps)


def test_rows_cut_the_padding_a_batch_shares():
    data = PreferenceData(_PAIRS, _lm(), beta=0.1, pad_id=0)
    ids, mask, ref = data.rows(torch.tensor([1]))
    assert ids.shape == mask.shape == (1, 2, 4) and ref.shape == (1, 2)  # 9 10 12 13
    ids, _, _ = data.rows(torch.tensor([1, 0]))
    assert ids.shape == (2, 2, 6)  # 1 2 3 6 7 8


@pytest.mark.parametrize("chunk", [1, 2, 3, 32])
def test_policy_logps_in_chunks_are_each_sequence_alone(chunk):
    policy = _lm(1)
    data = PreferenceData(_PAIRS, _lm(), beta=0.1, pad_id=0)
    expected = torch.tensor([[_alone(policy, p, c), _alone(policy, p, r)]
                             for p, c, r in _PAIRS])
    torch.testing.assert_close(data.policy_logps(policy, chunk=chunk), expected,
                               atol=1e-5, rtol=0)


def test_train_on_preference_data_starts_at_log_2_and_separates_the_pairs():
    policy, reference = _lm(), _lm()  # equal weights
    data = PreferenceData(_PAIRS, reference, beta=0.5, pad_id=0)
    before = data.rewards(data.policy_logps(policy))
    assert all(torch.equal(r, torch.zeros(3)) for r in before)
    result = train(policy, AdamW(policy.parameters(), lr=1e-2, weight_decay=0.0), data,
                   steps=15, batch_size=3)
    assert result.losses[0] == pytest.approx(math.log(2), abs=1e-6)
    assert result.losses[-1] < 0.2
    chosen, rejected = data.rewards(data.policy_logps(policy))
    assert implicit_reward_accuracy(chosen, rejected) == 1.0
    # the loss the loop minimised is dpo_loss of the policy's own log-probabilities
    logps = data.policy_logps(policy)
    losses, _, _ = dpo_loss(logps[:, 0], logps[:, 1], data.reference_logps[:, 0],
                            data.reference_logps[:, 1], 0.5)
    policy.eval()
    with torch.no_grad():
        assert data.loss(policy, data.rows(torch.arange(3))).item() == pytest.approx(
            losses.mean().item(), abs=1e-5)


def test_batch_rows_keep_each_pair_whole():
    data = PreferenceData(_PAIRS, _lm(), beta=0.1, pad_id=0)
    batch = data.batch(4, torch.Generator().manual_seed(0))
    half = tuple(t[slice(0, 2)] for t in batch)  # what train(batch_rows=...) keeps
    assert half[0].shape[:2] == (2, 2) and half[2].shape == (2, 2)
    for ids, mask in zip(half[0], half[1]):  # chosen and rejected share their prompt
        start = int(mask[0].nonzero()[0])
        assert torch.equal(ids[0, :start], ids[1, :start])


def test_chosen_only_is_the_chosen_lines_as_supervised_examples():
    reference = _lm(1)
    data = PreferenceData(_PAIRS, reference, beta=0.1, pad_id=0)
    sft = data.chosen_only()
    assert len(sft) == 3
    for row, (p, c, _) in enumerate(_PAIRS):
        assert sft.inputs[row, :len(p) + len(c)].tolist() == p + c
        counted = sft.targets[row][sft.targets[row] != IGNORE_INDEX].tolist()
        assert counted == c  # the response's tokens, each predicted once
    # its summed cross-entropy is minus the chosen lines' log-probabilities
    with torch.no_grad():
        logits = reference(sft.inputs)
    nll = F.cross_entropy(logits.flatten(0, 1), sft.targets.flatten(), reduction="none")
    per_row = nll.view(3, -1).sum(-1)
    torch.testing.assert_close(-per_row, data.reference_logps[:, 0], atol=1e-4, rtol=0)


def test_train_keeps_its_rows_of_each_pair_and_estimate_loss_reads_pairs(monkeypatch):
    data = PreferenceData(_PAIRS, _lm(), beta=0.1, pad_id=0)
    seen = []  # the batches the loss is asked for
    loss = PreferenceData.loss
    monkeypatch.setattr(PreferenceData, "loss",
                        lambda self, m, batch: seen.append(batch) or loss(self, m, batch))
    policy = _lm()
    train(policy, AdamW(policy.parameters(), lr=1e-3), data, steps=2, batch_size=4,
          batch_rows=slice(2, 4), seed=3)
    monkeypatch.undo()
    full = data.batch(4, torch.Generator().manual_seed(3))  # what every rank draws
    ids, mask, ref = seen[0]
    assert ids.shape[:2] == (2, 2) and torch.equal(ref, full[2][2:4])
    assert torch.equal(ids, full[0][2:4, :, :ids.shape[-1]])  # rows 2 and 3, whole pairs
    # validation on pairs: the mean DPO loss over evenly spaced pairs
    reference_copy = _lm()
    same = PreferenceData(_PAIRS, reference_copy, beta=0.1, pad_id=0)
    assert estimate_loss(reference_copy, same, batch_size=3, context_length=6,
                         num_batches=1) == pytest.approx(math.log(2), abs=1e-6)
