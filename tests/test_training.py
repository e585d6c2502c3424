"""llmlab.training: loss, AdamW, clipping, schedule, batches, checkpoints, the loop.

Each piece is compared with PyTorch's own implementation where one exists
(``F.cross_entropy``, ``torch.optim.AdamW``, ``clip_grad_norm_``).
"""

from __future__ import annotations

import copy
import io
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from llmlab.models.llama import TransformerLM
from llmlab.tokenization import ByteTokenizer
from llmlab.training import (
    AdamW,
    TrainEvent,
    checkpoint_extra,
    cosine_schedule,
    cross_entropy,
    estimate_loss,
    get_batch,
    get_lr_cosine_schedule,
    gradient_clipping,
    load_checkpoint,
    perplexity,
    save_checkpoint,
    split_tokens,
    train,
)

torch.set_num_threads(1)

SRC = Path(__file__).resolve().parent.parent / "src"


def _lm(seed: int = 0, vocab_size: int = 32, context_length: int = 16) -> TransformerLM:
    torch.manual_seed(seed)
    return TransformerLM(vocab_size=vocab_size, context_length=context_length,
                         d_model=16, num_layers=2, num_heads=2, d_ff=32)


def _tokens(n: int = 2000, vocab_size: int = 32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # a learnable stream: mostly "next id", sometimes a random jump
    ids = np.cumsum(np.where(rng.random(n) < 0.9, 1, rng.integers(0, vocab_size, n)))
    return (ids % vocab_size).astype(np.uint16)


# --- cross-entropy ------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(7, 11), (2, 5, 11), (2, 3, 4, 11)])
def test_cross_entropy_matches_torch(shape):
    torch.manual_seed(0)
    logits = torch.randn(*shape) * 3
    targets = torch.randint(0, shape[-1], shape[:-1])
    expected = F.cross_entropy(logits.reshape(-1, shape[-1]), targets.reshape(-1))
    torch.testing.assert_close(cross_entropy(logits, targets), expected)


def test_cross_entropy_is_stable_for_huge_logits():
    logits = torch.tensor([[1e4, 0.0, -1e4], [0.0, 1e4, 5e3]])
    targets = torch.tensor([1, 2])
    naive = -torch.log(torch.softmax(logits, -1)).gather(1, targets[:, None]).mean()
    assert torch.isinf(naive)  # the naive formula fails here ...
    ours = cross_entropy(logits, targets)  # ... ours does not
    torch.testing.assert_close(ours, F.cross_entropy(logits, targets))
    assert math.isfinite(float(ours)) and float(ours) == pytest.approx(7500.0)


def test_cross_entropy_gradient_matches_torch():
    torch.manual_seed(0)
    a = torch.randn(4, 6, 9, requires_grad=True)
    b = a.detach().clone().requires_grad_()
    t = torch.randint(0, 9, (4, 6))
    cross_entropy(a, t).backward()
    F.cross_entropy(b.reshape(-1, 9), t.reshape(-1)).backward()
    torch.testing.assert_close(a.grad, b.grad)


def test_cross_entropy_half_precision_is_computed_in_float32():
    logits = torch.randn(3, 50).to(torch.bfloat16)
    targets = torch.tensor([1, 2, 3])
    out = cross_entropy(logits, targets)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, F.cross_entropy(logits.float(), targets))


def test_uniform_logits_give_log_vocab_and_perplexity_vocab():
    logits = torch.zeros(5, 100)
    loss = cross_entropy(logits, torch.arange(5))
    assert float(loss) == pytest.approx(math.log(100))
    assert perplexity(loss) == pytest.approx(100.0)
    assert perplexity(0.0) == 1.0


@pytest.mark.parametrize(
    "logits, targets, exc, match",
    [
        (torch.zeros(3, 4, dtype=torch.long), torch.zeros(3, dtype=torch.long),
         ValueError, r"logits must be a floating-point"),
        (torch.zeros(3, 4), torch.zeros(3), ValueError, r"targets must hold integer"),
        (torch.zeros(3, 4), torch.zeros(2, dtype=torch.long), ValueError,
         r"targets must have shape \(3,\)"),
        (torch.zeros(3, 4), torch.tensor([0, 1, 4]), ValueError,
         r"targets must lie in \[0, 4\)"),
        (torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), ValueError,
         r"targets is empty"),
        ([[0.0]], torch.zeros(1, dtype=torch.long), TypeError,
         r"logits must be a torch"),
    ],
)
def test_cross_entropy_bad_inputs(logits, targets, exc, match):
    with pytest.raises(exc, match=match):
        cross_entropy(logits, targets)


@pytest.mark.parametrize("loss, exc, match", [
    (-1.0, ValueError, r"loss must be a number >= 0"),
    (float("nan"), ValueError, r"loss must be a number >= 0"),
    ("1", TypeError, r"loss must be a float"),
    (torch.ones(2), ValueError, r"loss must be one number"),
])
def test_perplexity_bad_inputs(loss, exc, match):
    with pytest.raises(exc, match=match):
        perplexity(loss)


# --- AdamW --------------------------------------------------------------------------


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adamw_matches_torch_step_for_step(weight_decay):
    ours_model, ref_model = _lm(1), _lm(1)
    kwargs = dict(lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=weight_decay)
    ours = AdamW(ours_model.parameters(), **kwargs)
    ref = torch.optim.AdamW(ref_model.parameters(), **kwargs)
    data = torch.from_numpy(_tokens().astype(np.int64))
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for step in range(60):
        x, y = get_batch(data, 4, 16, generator=gen)
        for model, opt in ((ours_model, ours), (ref_model, ref)):
            opt.zero_grad()
            F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
            opt.step()
        for p, q in zip(ours_model.parameters(), ref_model.parameters()):
            worst = max(worst, float((p - q).detach().abs().max()))
            q.data.copy_(p.data)  # compare each step from the same weights
    assert worst < 1e-6, worst
    state = ours.state[next(ours_model.parameters())]
    assert set(state) == {"step", "m", "v"} and state["step"] == 60


def test_adamw_matches_torch_over_many_steps_without_resync():
    torch.manual_seed(0)
    w1 = torch.nn.Parameter(torch.randn(20, 10))
    w2 = torch.nn.Parameter(w1.detach().clone())
    target = torch.randn(20, 10)
    start = float(((w1.detach() - target) ** 2).sum())
    ours = AdamW([w1], lr=1e-2, weight_decay=0.01)
    ref = torch.optim.AdamW([w2], lr=1e-2, weight_decay=0.01)
    for _ in range(300):
        for w, opt in ((w1, ours), (w2, ref)):
            opt.zero_grad()
            ((w - target) ** 2).sum().backward()
            opt.step()
    torch.testing.assert_close(w1, w2, atol=1e-5, rtol=1e-5)
    assert float(((w1.detach() - target) ** 2).sum()) < 0.1 * start  # it learnt


def test_adamw_skips_parameters_without_grad_and_follows_group_lr():
    a, b = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(3))
    opt = AdamW([{"params": [a]}, {"params": [b], "lr": 0.0}], lr=0.1, weight_decay=0.0)
    a.grad = torch.ones(3)
    opt.step()
    assert torch.allclose(a, torch.full((3,), 0.9))  # first Adam step moves by lr
    assert torch.equal(b, torch.ones(3)) and b not in opt.state


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(lr=-1.0), ValueError, r"lr must be a finite number in \[0"),
    (dict(lr=float("nan")), ValueError, r"lr must be"),
    (dict(betas=(0.9, 1.0)), ValueError,
     r"betas\[1\] must be a finite number in \[0, 1\)"),
    (dict(betas=(0.9,)), ValueError, r"betas must be a pair"),
    (dict(eps=0.0), ValueError, r"eps must be a finite number in \(0"),
    (dict(weight_decay=-0.1), ValueError, r"weight_decay must be"),
    (dict(lr="0.1"), TypeError, r"lr must be a number"),
])
def test_adamw_bad_inputs(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        AdamW([torch.nn.Parameter(torch.ones(1))], **kwargs)


# --- gradient clipping -------------------------------------------------------------


@pytest.mark.parametrize("max_norm", [0.01, 1.0, 1e4])
def test_gradient_clipping_matches_torch(max_norm):
    a, b = _lm(2), _lm(2)
    x = torch.randint(0, 32, (2, 16))
    for model in (a, b):
        model(x).square().mean().backward()
    next(a.parameters()).grad = None  # a parameter without a gradient is skipped
    next(b.parameters()).grad = None
    norm = gradient_clipping(a.parameters(), max_norm)
    expected = torch.nn.utils.clip_grad_norm_(b.parameters(), max_norm)
    assert norm == pytest.approx(float(expected), rel=1e-6)
    for p, q in zip(a.parameters(), b.parameters()):
        if q.grad is None:
            assert p.grad is None
        else:
            torch.testing.assert_close(p.grad, q.grad)
    clipped = math.sqrt(sum(float(p.grad.square().sum()) for p in a.parameters()
                            if p.grad is not None))
    assert clipped == pytest.approx(min(norm, max_norm), rel=1e-4)


def test_gradient_clipping_without_grads_and_bad_inputs():
    assert gradient_clipping([torch.nn.Parameter(torch.ones(2))], 1.0) == 0.0
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="max_l2_norm must be"):
            gradient_clipping([], bad)


# --- schedule -----------------------------------------------------------------------


def test_cosine_schedule_matches_cs336_reference_values():
    # the expected values of CS336 assignment 1's test_get_lr_cosine_schedule
    expected = [
        0, 0.14285714285714285, 0.2857142857142857, 0.42857142857142855,
        0.5714285714285714, 0.7142857142857143, 0.8571428571428571, 1.0,
        0.9887175604818206, 0.9554359905560885, 0.9018241671106134,
        0.8305704108364301, 0.7452476826029011, 0.6501344202803414,
        0.5499999999999999, 0.44986557971965857, 0.3547523173970989,
        0.26942958916356996, 0.19817583288938662, 0.14456400944391146,
        0.11128243951817937, 0.1, 0.1, 0.1, 0.1,
    ]
    got = [get_lr_cosine_schedule(it, 1.0, 0.1, 7, 21) for it in range(25)]
    assert got == pytest.approx(expected)
    schedule = cosine_schedule(1.0, 0.1, 7, 21)
    assert [schedule(it) for it in range(25)] == got


def test_cosine_schedule_without_warmup_starts_at_max():
    assert get_lr_cosine_schedule(0, 3e-3, 3e-4, 0, 100) == 3e-3
    assert get_lr_cosine_schedule(100, 3e-3, 3e-4, 0, 100) == pytest.approx(3e-4)


@pytest.mark.parametrize("args, exc, match", [
    ((-1, 1.0, 0.1, 7, 21), ValueError, r"it must be an int >= 0"),
    ((1.5, 1.0, 0.1, 7, 21), TypeError, r"it must be an int"),
    ((0, 0.1, 1.0, 7, 21), ValueError, r"min_learning_rate \(1.0\) must not exceed"),
    ((0, 1.0, 0.1, 21, 21), ValueError, r"cosine_cycle_iters \(21\) must be greater"),
    ((0, float("nan"), 0.1, 7, 21), ValueError, r"max_learning_rate must be"),
    ((0, 1.0, 0.1, -1, 21), ValueError, r"warmup_iters must be an int >= 0"),
])
def test_cosine_schedule_bad_inputs(args, exc, match):
    with pytest.raises(exc, match=match):
        get_lr_cosine_schedule(*args)


# --- batches ------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda a: a,
    lambda a: torch.from_numpy(a.astype(np.int64)),
])
def test_get_batch_windows_and_targets(make):
    dataset = make(np.arange(100, dtype=np.int64))
    x, y = get_batch(dataset, 32, 7, "cpu", torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (32, 7) and x.dtype == y.dtype == torch.int64
    assert torch.equal(y, x + 1)  # targets are the inputs shifted by one
    assert torch.equal(x[:, 1:], x[:, :-1] + 1)  # contiguous windows
    assert int(x[:, 0].min()) >= 0 and int(y[:, -1].max()) <= 99


def test_get_batch_covers_every_start_uniformly():
    dataset = np.arange(100)
    gen = torch.Generator().manual_seed(0)
    starts = torch.cat([get_batch(dataset, 256, 7, generator=gen)[0][:, 0]
                        for _ in range(40)])
    counts = torch.bincount(starts, minlength=100)
    assert counts[:93].min() > 0 and counts[93:].sum() == 0  # starts 0..92 only
    expected = len(starts) / 93
    assert float(counts[:93].float().std()) < 0.2 * expected  # roughly uniform


def test_get_batch_reads_a_memmap_and_is_reproducible(tmp_path):
    path = tmp_path / "tokens.bin"
    np.arange(1000, dtype=np.uint16).tofile(path)
    data = np.memmap(path, dtype=np.uint16, mode="r")
    a = get_batch(data, 4, 16, "cpu", torch.Generator().manual_seed(3))
    b = get_batch(data, 4, 16, "cpu", torch.Generator().manual_seed(3))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert torch.equal(a[1], a[0] + 1)


def test_get_batch_unknown_device_raises_torchs_error():
    # CS336's test accepts either: a CUDA build says "invalid device ordinal"
    # (RuntimeError), a CPU-only build "Torch not compiled with CUDA" (AssertionError)
    with pytest.raises((RuntimeError, AssertionError)):
        get_batch(np.arange(100), 2, 4, "cuda:99")
    with pytest.raises(RuntimeError):
        get_batch(np.arange(100), 2, 4, "not-a-device")


@pytest.mark.parametrize("dataset, batch_size, context_length, exc, match", [
    (np.arange(8), 2, 8, ValueError, r"dataset has 8 tokens.*more than context_length"),
    (np.arange(100.0), 2, 4, ValueError, r"dataset must hold integer token ids"),
    (np.arange(100).reshape(10, 10), 2, 4, ValueError, r"dataset must be 1-D"),
    (list(range(100)), 2, 4, ValueError, r"dataset must be a numpy array"),
    (np.arange(100), 0, 4, ValueError, r"batch_size must be an int >= 1, got 0"),
    (np.arange(100), 2, 0, ValueError, r"context_length must be an int >= 1, got 0"),
    (np.arange(100), 2.0, 4, ValueError, r"batch_size must be an int"),
    (np.arange(100), 2, True, ValueError, r"context_length must be an int"),
])
def test_get_batch_bad_inputs(dataset, batch_size, context_length, exc, match):
    with pytest.raises(exc, match=match):
        get_batch(dataset, batch_size, context_length, "cpu")


def test_split_tokens_holds_out_the_tail():
    train_part, val_part = split_tokens(np.arange(100), 0.1)
    assert np.array_equal(train_part, np.arange(90))
    assert np.array_equal(val_part, np.arange(90, 100))
    with pytest.raises(ValueError, match=r"validation_fraction must be a finite number in \(0, 1\)"):
        split_tokens(np.arange(100), 1.0)
    with pytest.raises(ValueError, match="too few to split"):
        split_tokens(np.arange(3), 0.1)


def test_byte_tokenizer_round_trips_utf8():
    tok = ByteTokenizer()
    text = "To be, or not to be — 床前明月光"
    ids = tok.encode(text)
    assert ids == list(text.encode("utf-8")) and tok.decode(ids) == text
    assert list(tok.encode_iterable(["ab", "c"])) == [97, 98, 99]
    assert tok.decode(ids[:-1]).endswith("\ufffd")  # a cut character is replaced
    with pytest.raises(TypeError, match="text must be a str"):
        tok.encode(b"bytes")
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 256\)"):
        tok.decode([256])


# --- checkpoints and resume ---------------------------------------------------------


def _run(model, opt, data, steps, start, gen):
    return train(model, opt, data, steps=steps, batch_size=4, context_length=16,
                 lr_schedule=cosine_schedule(1e-2, 1e-3, 3, 20), max_grad_norm=1.0,
                 generator=gen, start_iteration=start)


@pytest.mark.parametrize("to_file", [False, True])
def test_resume_continues_bit_for_bit(tmp_path, to_file):
    data = _tokens()
    n = 6
    # uninterrupted: 2n steps
    straight = _lm(5)
    opt = AdamW(straight.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    full = _run(straight, opt, data, 2 * n, 0, gen)
    # n steps, save, a fresh model/optimizer/generator, load, n more
    first = _lm(5)
    opt1 = AdamW(first.parameters(), lr=1e-2)
    gen1 = torch.Generator().manual_seed(0)
    part1 = _run(first, opt1, data, n, 0, gen1)
    out = io.BytesIO() if to_file else tmp_path / "ckpt.pt"
    save_checkpoint(first, opt1, n, out, generator=gen1, extra={"note": "half"})
    if to_file:
        out.seek(0)
    second = _lm(99)  # different initial weights: all must come from the file
    opt2 = AdamW(second.parameters(), lr=1e-2)
    gen2 = torch.Generator().manual_seed(12345)
    assert load_checkpoint(out, second, opt2, generator=gen2) == n
    part2 = _run(second, opt2, data, n, n, gen2)
    for p, q in zip(straight.parameters(), second.parameters()):
        assert torch.equal(p, q)
    assert part1.losses + part2.losses == full.losses
    assert part2.iterations == list(range(n + 1, 2 * n + 1))
    if to_file:
        out.seek(0)
    assert checkpoint_extra(out) == {"note": "half"}


def test_load_checkpoint_restores_global_rng_and_refuses_missing_generator(tmp_path):
    model = _lm()
    opt = AdamW(model.parameters())
    torch.manual_seed(7)
    save_checkpoint(model, opt, 0, tmp_path / "c.pt")
    expected = torch.rand(3)
    # resuming (an optimizer given) restores torch's global random state ...
    torch.manual_seed(8)
    load_checkpoint(tmp_path / "c.pt", model, AdamW(model.parameters()))
    assert torch.equal(torch.rand(3), expected)
    # ... loading weights alone leaves it as it is
    torch.manual_seed(8)
    untouched = torch.rand(3)
    torch.manual_seed(8)
    load_checkpoint(tmp_path / "c.pt", model, None)
    assert torch.equal(torch.rand(3), untouched)
    assert not torch.equal(untouched, expected)
    with pytest.raises(ValueError, match="generator was given"):
        load_checkpoint(tmp_path / "c.pt", model, opt, generator=torch.Generator())


def test_a_weights_only_checkpoint_generates_but_cannot_resume(tmp_path):
    torch.manual_seed(0)
    model = _lm()
    half = _lm().half()
    half.load_state_dict(model.state_dict())
    save_checkpoint(half, None, 12, tmp_path / "w.pt")
    target = _lm()
    assert load_checkpoint(tmp_path / "w.pt", target, None) == 12
    for key, value in target.state_dict().items():
        assert value.dtype == torch.float32  # the model keeps its own dtype
        assert torch.equal(value, model.state_dict()[key].half().float())
    with pytest.raises(ValueError, match="holds no optimizer state"):
        load_checkpoint(tmp_path / "w.pt", target, AdamW(target.parameters()))


def test_save_checkpoint_bad_inputs(tmp_path):
    model = _lm()
    opt = AdamW(model.parameters())
    with pytest.raises(ValueError, match="iteration must be an int >= 0"):
        save_checkpoint(model, opt, -1, tmp_path / "c.pt")
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        save_checkpoint(model, opt, 0, tmp_path / "c.pt", generator=0)



# a child that saves a checkpoint (iteration 1, weights 1.0), then saves iteration 2
# (weights 2.0, a larger file) over it again and again, until it is killed
_SAVER = """
import sys, torch
from torch import nn
from llmlab.training import AdamW, save_checkpoint
torch.set_num_threads(1)
model = nn.Linear(1024, 1024)
opt = AdamW(model.parameters())
with torch.no_grad():
    model.weight.fill_(1.0)
save_checkpoint(model, opt, 1, sys.argv[1])
sys.stdout.write("saved\\n")
sys.stdout.flush()
with torch.no_grad():
    model.weight.fill_(2.0)
while True:
    save_checkpoint(model, opt, 2, sys.argv[1], extra={"pad": "x" * 4_000_000})
"""


def test_a_killed_save_leaves_the_previous_checkpoint_whole(tmp_path):
    target = tmp_path / "checkpoint.pt"
    env = dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="1")
    child = subprocess.Popen([sys.executable, "-c", _SAVER, str(target)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"saved\n", child.stderr.read()
        first = target.stat().st_size
        deadline = time.monotonic() + 30
        # wait until the next save is under way: a temporary file appears (or, were
        # the target written in place, the target changes)
        while time.monotonic() < deadline:
            if [p for p in tmp_path.iterdir() if p != target] or (
                    target.stat().st_size != first):
                break
            time.sleep(0.001)
        else:
            pytest.fail("the child never started a second save")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        child.stderr.close()
    model = nn.Linear(1024, 1024)
    iteration = load_checkpoint(target, model, None)  # a whole checkpoint
    assert iteration in (1, 2)
    assert torch.all(model.weight == float(iteration))


def test_a_failed_save_keeps_the_previous_checkpoint_and_no_temporary_file(
        tmp_path, monkeypatch):
    model = _lm()
    opt = AdamW(model.parameters())
    target = tmp_path / "c.pt"
    save_checkpoint(model, opt, 1, target)
    before = target.read_bytes()

    def broken(obj, f, *args, **kwargs):  # writes part of the file, then fails
        if hasattr(f, "write"):
            f.write(b"half a checkpoint")
        else:
            with open(f, "wb") as file:
                file.write(b"half a checkpoint")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(model, opt, 2, target)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def test_save_checkpoint_into_a_missing_folder_names_out(tmp_path):
    model = _lm()
    with pytest.raises(ValueError, match=r"^out \(.*\) is in a folder that does not "
                       r"exist"):
        save_checkpoint(model, AdamW(model.parameters()), 0, tmp_path / "no" / "c.pt")
    assert list(tmp_path.iterdir()) == []


def _state(model, opt):
    """Copies of what a load may change: weights, optimizer state, global RNG."""
    return ({k: v.clone() for k, v in model.state_dict().items()},
            copy.deepcopy(opt.state_dict()), torch.get_rng_state())


def _same_state(a, b) -> bool:
    (wa, oa, ra), (wb, ob, rb) = a, b
    return (wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
            and _equal(oa, ob) and torch.equal(ra, rb))


def _equal(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            _equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


def _trained(seed: int = 0, **sizes) -> tuple[TransformerLM, AdamW]:
    """A model and its AdamW after one step (so the optimizer has state)."""
    model = _lm(seed, **sizes)
    opt = AdamW(model.parameters(), lr=1e-2)
    train(model, opt, _tokens(vocab_size=model.vocab_size), steps=1, batch_size=2)
    return model, opt


def _bad_checkpoints(tmp_path):
    """(id, path, kwargs for load_checkpoint, error type, pattern)."""
    model, opt = _trained(1)
    good = tmp_path / "good.pt"
    save_checkpoint(model, opt, 3, good)
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n", encoding="utf-8")
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[:2000])
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    not_ours = tmp_path / "weights.pt"
    torch.save(model.state_dict(), not_ours)  # a state dict, not a checkpoint
    wider, wide_opt = _trained(2, vocab_size=40)
    save_checkpoint(wider, wide_opt, 3, tmp_path / "wider.pt")
    other, other_opt = _trained(3)
    other_opt.add_param_group({"params": [nn.Parameter(torch.zeros(3))]})
    save_checkpoint(other, other_opt, 3, tmp_path / "groups.pt")
    fewer = AdamW(list(other.parameters())[:-1])
    save_checkpoint(other, fewer, 3, tmp_path / "fewer.pt")
    blob = torch.load(good, weights_only=True)
    blob["optimizer"]["state"][0]["m"] = torch.zeros(2, 2)
    torch.save(blob, tmp_path / "state_shape.pt")
    no_key = torch.load(good, weights_only=True)
    del no_key["rng"]
    torch.save(no_key, tmp_path / "no_rng.pt")
    not_checkpoint = r"^src \(.*\) is not a checkpoint written by save_checkpoint"
    return [
        ("a text file", text, {}, ValueError, not_checkpoint),
        ("a truncated file", truncated, {}, ValueError, not_checkpoint),
        ("an empty file", empty, {}, ValueError, not_checkpoint),
        ("a state dict", not_ours, {}, ValueError, not_checkpoint + r".*'optimizer'"),
        ("no rng", tmp_path / "no_rng.pt", {}, ValueError, r"lacks 'rng'"),
        ("a missing file", tmp_path / "missing.pt", {}, ValueError,
         r"^src \(.*\) does not exist"),
        ("another model", tmp_path / "wider.pt", {}, ValueError,
         r"^model does not fit .*token_embeddings\.weight has shape \(32, 16\) in "
         r"model but \(40, 16\) in src"),
        ("more parameter groups", tmp_path / "groups.pt", {}, ValueError,
         r"^optimizer does not fit .*2 parameter groups.*1"),
        ("fewer parameters", tmp_path / "fewer.pt", {}, ValueError,
         r"^optimizer does not fit .*group 0 holds \d+ parameters in src but \d+"),
        ("a state of another shape", tmp_path / "state_shape.pt", {}, ValueError,
         r"^optimizer does not fit .*'m' of parameter 0 has shape \(2, 2\)"),
        ("a generator but none saved", good, {"generator": torch.Generator()},
         ValueError, r"^generator was given, but src holds no generator state"),
    ]


def test_a_failing_load_changes_nothing(tmp_path):
    cases = _bad_checkpoints(tmp_path)
    model, opt = _trained(0)
    torch.manual_seed(1234)
    before = _state(model, opt)
    for name, path, kwargs, error, pattern in cases:
        with pytest.raises(error, match=pattern):
            load_checkpoint(path, model, opt, **kwargs)
        assert _same_state(_state(model, opt), before), name
        message = str(pytest.raises(error, load_checkpoint, path, model, opt,
                                    **kwargs).value)
        assert "\n" not in message and "weights_only" not in message, (name, message)
    # the good file still loads, and does change them
    assert load_checkpoint(tmp_path / "good.pt", model, opt) == 3
    assert not _same_state(_state(model, opt), before)


def test_checkpoint_extra_of_a_text_file_says_so(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello", encoding="utf-8")
    with pytest.raises(ValueError, match="is not a checkpoint written by"):
        checkpoint_extra(text)


# --- the loop -----------------------------------------------------------------------


def test_train_lowers_the_loss_and_reports_plain_data():
    data = _tokens(4000)
    train_part, val_part = split_tokens(data)
    model = _lm(3)
    opt = AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    events: list[TrainEvent] = []
    result = train(model, opt, train_part, steps=60, batch_size=8, val_data=val_part,
                   eval_every=20, eval_batches=2, callback=events.append)
    assert result.iterations == list(range(1, 61)) and len(result.losses) == 60
    assert result.val_iterations == [0, 20, 40, 60]
    assert result.val_losses[0] > math.log(32) - 0.7  # about ln(V) at the start
    assert result.val_losses[-1] < 0.6 * result.val_losses[0]
    assert np.mean(result.losses[-10:]) < 0.6 * np.mean(result.losses[:5])
    assert result.tokens_seen == 60 * 8 * 16 and result.seconds > 0
    assert len(result.grad_norms) == 60 and result.learning_rates == [1e-2] * 60
    assert [e.iteration for e in events] == result.iterations
    assert [e.val_loss is not None for e in events].count(True) == 3
    assert all(isinstance(v, float) for v in result.losses + result.val_losses)


def test_batch_rows_train_on_a_share_of_the_batch_a_single_process_draws():
    """Data parallelism's seam: each share's loss is the loss of its rows of the batch
    one process draws, and the shares' mean gradient is the whole batch's."""
    data, steps = _tokens(), 3
    whole_model = _lm(1)
    grads: dict[str, list[dict[str, torch.Tensor]]] = {"whole": [], "0": [], "1": []}

    def keep(key, model):
        return lambda it: grads[key].append(
            {n: p.grad.clone() for n, p in model.named_parameters()})

    whole = train(whole_model, AdamW(whole_model.parameters()), data, steps=steps,
                  batch_size=8, after_backward=keep("whole", whole_model))
    halves = []
    for rank in (0, 1):
        model = _lm(1)  # the same weights: the first step's gradients compare
        halves.append(train(model, AdamW(model.parameters()), data, steps=steps,
                            batch_size=8, batch_rows=slice(4 * rank, 4 * rank + 4),
                            after_backward=keep(str(rank), model)))
    assert halves[0].losses[0] != halves[1].losses[0]
    assert (halves[0].losses[0] + halves[1].losses[0]) / 2 == pytest.approx(
        whole.losses[0], rel=1e-6)
    for name, g in grads["whole"][0].items():
        torch.testing.assert_close((grads["0"][0][name] + grads["1"][0][name]) / 2, g,
                                   rtol=1e-5, atol=1e-6)
    assert [len(grads[k]) for k in grads] == [steps] * 3
    assert halves[0].tokens_seen == steps * 4 * 16 and whole.tokens_seen == steps * 8 * 16
    assert halves[0].batch_size == 8  # the batch drawn; tokens_seen: the rows kept


def test_all_batch_rows_is_no_batch_rows_bit_for_bit():
    runs = []
    for rows in (None, slice(0, 8), slice(None)):
        model = _lm(2)
        record = train(model, AdamW(model.parameters()), _tokens(), steps=3,
                       batch_size=8, batch_rows=rows)
        runs.append((record.losses, record.grad_norms,
                     [p.detach().clone() for p in model.parameters()]))
    for losses, norms, params in runs[1:]:
        assert (losses, norms) == runs[0][:2]
        assert all(torch.equal(p, q) for p, q in zip(params, runs[0][2]))


def test_after_backward_sees_each_steps_gradients_before_clipping():
    model = _lm()
    seen: list[tuple[int, float]] = []

    def norm(iteration: int) -> None:
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        seen.append((iteration, float(torch.stack([g.norm() for g in grads]).norm())))

    record = train(model, AdamW(model.parameters()), _tokens(), steps=4, batch_size=4,
                   max_grad_norm=1e-3, start_iteration=10, after_backward=norm)
    assert [it for it, _ in seen] == [10, 11, 12, 13]  # the lr_schedule's iterations
    assert [n for _, n in seen] == pytest.approx(record.grad_norms, rel=1e-6)
    assert min(record.grad_norms) > 1e-3  # so each was clipped after the hook


def test_estimate_loss_is_deterministic_and_leaves_rng_alone():
    model, data = _lm(), _tokens()
    torch.manual_seed(0)
    a = estimate_loss(model, data, 4, 16, 3)
    after = torch.rand(1)
    torch.manual_seed(0)
    b = estimate_loss(model, data, 4, 16, 3)
    assert a == b and torch.equal(torch.rand(1), after)
    assert model.training  # the mode is restored


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(steps=0), ValueError, r"steps must be an int >= 1, got 0"),
    (dict(steps=-3), ValueError, r"steps must be an int >= 1, got -3"),
    (dict(steps=2.5), TypeError, r"steps must be an int"),
    (dict(batch_size=0), ValueError, r"batch_size must be an int >= 1"),
    (dict(context_length=32), ValueError, r"context_length \(32\) exceeds the model"),
    (dict(eval_every=0), ValueError, r"eval_every must be an int >= 1"),
    (dict(max_grad_norm=0.0), ValueError, r"max_grad_norm must be"),
    (dict(seed=-1), ValueError, r"seed must be an int >= 0"),
    (dict(val_data=np.arange(10)), ValueError, r"val_data has 10 tokens"),
    (dict(train_data=np.arange(16)), ValueError, r"train_data has 16 tokens"),
    (dict(batch_rows=[0, 1]), TypeError,
     r"batch_rows must be a slice of the batch's rows \(e.g. slice\(0, 4\)\), got list"),
    (dict(batch_rows=slice(2, 4)), ValueError,
     r"batch_rows \(slice\(2, 4, None\)\) keeps none of the batch_size \(2\) rows"),
    (dict(batch_rows=slice(0, 2, 0)), ValueError,
     r"batch_rows must be a slice of ints with a step >= 1, got slice\(0, 2, 0\)"),
    (dict(batch_rows=slice(1, None, -1)), ValueError,
     r"batch_rows must be a slice of ints with a step >= 1"),
    (dict(batch_rows=slice(0.0, 1.0)), ValueError,
     r"batch_rows must be a slice of ints with a step >= 1, got slice\(0.0, 1.0, None\)"),
    (dict(after_backward="print"), TypeError, r"after_backward must be callable"),
])
def test_train_bad_inputs(kwargs, exc, match):
    model = _lm()
    args = dict(train_data=_tokens(), steps=1, batch_size=2)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        train(model, AdamW(model.parameters()), **args)


def test_row_batches_are_the_documented_draws_of_the_seeded_generator():
    """train's documented draws: with ``seed``, step k's rows are the k-th
    ``torch.randint(0, N, (batch_size,))`` of ``torch.Generator().manual_seed(seed)``,
    with replacement (what ``TrainResult.rows_drawn`` records, next test)."""
    from llmlab.training import SupervisedData

    drawn: list[list[int]] = []

    class Recording(SupervisedData):
        def rows(self, index, device=None):
            drawn.append(index.tolist())
            return super().rows(index, device)

    examples = [([1 + i % 7, 2, 3], [2, 3, 4]) for i in range(11)]
    model = _lm(0)
    train(model, AdamW(model.parameters()), Recording(examples, pad_id=0), steps=6,
          batch_size=5, seed=3)
    generator = torch.Generator().manual_seed(3)
    assert drawn == [torch.randint(0, 11, (5,), generator=generator).tolist()
                     for _ in range(6)]
    assert any(len(set(rows)) < len(rows) for rows in drawn)  # with replacement


def test_train_records_the_rows_it_drew_and_a_corpus_none():
    from llmlab.training import SupervisedData

    examples = [([1 + i % 7, 2, 3], [2, 3, 4]) for i in range(11)]
    generator = torch.Generator().manual_seed(5)
    expected = [SupervisedData(examples, pad_id=0).draw(4, generator).tolist()
                for _ in range(3)]
    model = _lm(0)
    result = train(model, AdamW(model.parameters()), SupervisedData(examples, pad_id=0),
                   steps=3, batch_size=4, seed=5)
    assert result.rows_drawn == expected
    other = _lm(0)
    share = train(other, AdamW(other.parameters()), SupervisedData(examples, pad_id=0),
                  steps=3, batch_size=4, seed=5, batch_rows=slice(1, 3))
    assert share.rows_drawn == [rows[1:3] for rows in expected]  # this process's rows
    corpus = train(model, AdamW(model.parameters()), _tokens(), steps=2, batch_size=4)
    assert corpus.rows_drawn == []
