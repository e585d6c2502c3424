"""llmlab.finetune and the fine-tuning half of llmlab.training.

The masked loss against PyTorch's ``F.cross_entropy(..., ignore_index=-100)``; LoRA
against its definition (equal to the base at the start, merged equal to adapted,
gradients only in ``A`` and ``B``, ``r (d_in + d_out)`` trainable numbers per layer);
supervised examples masking exactly the prompt; and ``train`` on supervised data
touching the adapters only.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import llmlab.models.gpt2 as gpt2
from llmlab import pretrained
from llmlab.finetune import (
    END_OF_TEXT,
    IGNORE_INDEX,
    LoRALinear,
    SupervisedData,
    add_lora,
    end_of_text_id,
    exact_match,
    merge_lora,
    supervised_data,
    supervised_example,
)
from llmlab.generation import generate
from llmlab.layers import Linear
from llmlab.models.llama import TransformerLM
from llmlab.params import count_parameters
from llmlab.tokenization import Tokenizer, vocab_from_merges
from llmlab.training import AdamW, cross_entropy, estimate_loss, train

torch.set_num_threads(1)

PAIRS = [("2+3=", "5"), ("1+1=", "2"), ("4+4=", "8"), ("3+4=", "7"),
         ("6+1=", "7"), ("0+2=", "2")]


def _lm(seed: int = 0, vocab_size: int = 257, context_length: int = 16) -> TransformerLM:
    torch.manual_seed(seed)
    return TransformerLM(vocab_size=vocab_size, context_length=context_length,
                         d_model=16, num_layers=2, num_heads=2, d_ff=32)


def _byte_tokenizer() -> Tokenizer:
    """Bytes, no merges, and the end-of-text token at id 256."""
    return Tokenizer(vocab_from_merges([]), [], [END_OF_TEXT])


def _ids(seed: int = 1, vocab_size: int = 257, shape=(3, 10)) -> torch.Tensor:
    return torch.randint(0, vocab_size, shape, generator=torch.Generator().manual_seed(seed))


def _randomise_adapters(model: nn.Module, seed: int = 2) -> None:
    """Give every B a non-zero value, as training would."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, LoRALinear):
                m.lora_B.copy_(0.1 * torch.randn(m.lora_B.shape, generator=g))


# --------------------------------------------------------------------------------------
# the masked loss
# --------------------------------------------------------------------------------------
def test_cross_entropy_ignore_index_matches_torch():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 7, generator=g, requires_grad=True)
    targets = torch.randint(0, 7, (3, 5), generator=g)
    targets[0, :2] = IGNORE_INDEX  # a prompt
    targets[1] = IGNORE_INDEX  # a row fully masked among others
    targets[2, -1] = IGNORE_INDEX  # padding
    ours = cross_entropy(logits, targets, ignore_index=IGNORE_INDEX)
    ref_logits = logits.detach().clone().requires_grad_(True)
    ref = F.cross_entropy(ref_logits.reshape(-1, 7), targets.reshape(-1),
                          ignore_index=-100)
    torch.testing.assert_close(ours, ref)
    ours.backward()
    ref.backward()
    torch.testing.assert_close(logits.grad, ref_logits.grad)
    assert logits.grad[1].abs().max() == 0  # the masked row gets no gradient


def test_cross_entropy_ignore_index_is_the_plain_loss_of_the_counted_targets():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(4, 6, 11, generator=g).to(torch.bfloat16)
    targets = torch.randint(0, 11, (4, 6), generator=g)
    counted = torch.rand(4, 6, generator=g) < 0.5
    counted[0, 0] = True
    masked = targets.where(counted, 3)  # ignore_index may be a real id (padding)
    keep = masked != 3
    expected = cross_entropy(logits[keep], masked[keep])
    torch.testing.assert_close(cross_entropy(logits, masked, ignore_index=3), expected)
    # with nothing ignored it is the plain loss
    torch.testing.assert_close(cross_entropy(logits, targets, ignore_index=-100),
                               cross_entropy(logits, targets))


def test_cross_entropy_refuses_targets_that_select_no_token():
    with pytest.raises(ValueError, match=r"targets selects no token"):
        cross_entropy(torch.zeros(2, 3, 5), torch.full((2, 3), IGNORE_INDEX),
                      ignore_index=IGNORE_INDEX)
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 5\)"):
        cross_entropy(torch.zeros(2, 5), torch.tensor([-100, 7]), ignore_index=-100)
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 5\)"):  # no index
        cross_entropy(torch.zeros(2, 5), torch.tensor([-100, 1]))


# --------------------------------------------------------------------------------------
# LoRA
# --------------------------------------------------------------------------------------
def test_adapted_model_starts_equal_to_the_base():
    model = _lm()
    x = _ids()
    before = model(x)
    add_lora(model, rank=4, alpha=8.0, targets=("q_proj", "v_proj", "w2"))
    torch.testing.assert_close(model(x), before)
    assert isinstance(model.layers[0].attn.q_proj, LoRALinear)
    assert isinstance(model.layers[1].ffn.w2, LoRALinear)
    assert type(model.layers[0].attn.k_proj) is Linear


def test_adapted_shipped_base_model_starts_equal_to_the_base():
    model, tokenizer = pretrained.load("tang")
    x = torch.tensor([tokenizer.encode("春眠不觉晓，处处闻啼鸟。")])
    with torch.no_grad():
        before = model(x)
        add_lora(model, rank=8, alpha=16.0)
        torch.testing.assert_close(model(x), before)


def test_merged_model_equals_the_adapted_model_after_training_steps():
    model = _lm()
    add_lora(model, rank=4, alpha=8.0, targets=("q_proj", "v_proj", "w1", "lm_head"))
    opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    x = _ids(shape=(4, 12))
    for _ in range(5):
        loss = cross_entropy(model(x[:, :-1]), x[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert any(m.lora_B.abs().max() > 0 for m in model.modules()
               if isinstance(m, LoRALinear))  # the adapters did move
    with torch.no_grad():
        adapted = model(x)
        merged = merge_lora(model)
        assert merged is model
        assert not any(isinstance(m, LoRALinear) for m in model.modules())
        assert type(model.layers[0].attn.q_proj) is Linear
        torch.testing.assert_close(model(x), adapted, atol=1e-5, rtol=1e-5)
    # merging unfreezes nothing
    assert count_parameters(model, trainable_only=True) == 0
    with pytest.raises(ValueError, match=r"model \(TransformerLM\) has no LoRA adapters"):
        merge_lora(model)  # twice


def test_gradients_flow_only_into_a_and_b():
    model = _lm()
    add_lora(model, rank=2, alpha=4.0)
    _randomise_adapters(model)  # so that A gets a gradient too
    x = _ids()
    cross_entropy(model(x[:, :-1]), x[:, 1:]).backward()
    for name, p in model.named_parameters():
        if name.endswith(("lora_A", "lora_B")):
            assert p.requires_grad and p.grad is not None and p.grad.abs().max() > 0, name
        else:
            assert not p.requires_grad and p.grad is None, name


@pytest.mark.parametrize("targets", [("q_proj", "v_proj"), ("w1", "w2", "lm_head"),
                                     ("k_proj",)])
def test_trainable_count_is_the_formula(targets):
    model = _lm()
    sizes = [(m.in_features, m.out_features) for name, m in model.named_modules()
             if name.rpartition(".")[2] in targets]
    rank = 3
    n = add_lora(model, rank=rank, alpha=1.0, targets=targets)
    assert n == sum(rank * (d_in + d_out) for d_in, d_out in sizes)
    assert n == sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert n == count_parameters(model, trainable_only=True)


@pytest.mark.parametrize("bias", [True, False])
def test_lora_around_nn_linear_equals_its_definition(bias):
    torch.manual_seed(0)
    base = nn.Linear(6, 5, bias=bias)
    x = torch.randn(2, 3, 6)
    expected_base = base(x)
    layer = LoRALinear(base, rank=2, alpha=3.0)
    torch.testing.assert_close(layer(x), expected_base)  # B = 0 at the start
    assert not any(p.requires_grad for p in base.parameters())
    assert layer.lora_A.shape == (2, 6) and layer.lora_B.shape == (5, 2)
    assert layer.scaling == 1.5 and "rank=2, alpha=3" in repr(layer)
    with torch.no_grad():
        layer.lora_B.normal_()
        by_definition = expected_base + 1.5 * x @ (layer.lora_B @ layer.lora_A).T
        torch.testing.assert_close(layer(x), by_definition)
        merged = merge_lora(layer)
    assert type(merged) is nn.Linear and (merged.bias is not None) == bias
    torch.testing.assert_close(merged(x), by_definition)


def test_a_starts_kaiming_uniform():
    layer = LoRALinear(Linear(400, 300), rank=64, alpha=1.0)
    bound = 1 / 400 ** 0.5  # kaiming_uniform_(a=√5): U(-1/√fan_in, 1/√fan_in)
    assert layer.lora_A.abs().max() <= bound
    assert layer.lora_A.abs().max() > 0.9 * bound
    assert layer.lora_B.abs().max() == 0


@settings(max_examples=30, deadline=None)
@given(d_in=st.integers(1, 12), d_out=st.integers(1, 12), rank=st.integers(1, 14))
def test_lora_counts_r_times_d_in_plus_d_out(d_in, d_out, rank):
    if rank > min(d_in, d_out):
        with pytest.raises(ValueError, match=r"rank must be at most"):
            LoRALinear(nn.Linear(d_in, d_out), rank, 1.0)
        return
    layer = LoRALinear(nn.Linear(d_in, d_out), rank, 1.0)
    assert count_parameters(layer, trainable_only=True) == rank * (d_in + d_out)


def test_a_refused_add_lora_changes_nothing():
    model = _lm()
    state = copy.deepcopy(model.state_dict())
    bad = [dict(rank=2, alpha=1.0, targets=("q_proj", "query")),  # no such layer
           dict(rank=2, alpha=1.0, targets=("q_proj", "ln1")),  # not linear
           dict(rank=17, alpha=1.0),  # above min(d_in, d_out) = 16
           dict(rank=2, alpha=float("inf"))]
    for kwargs in bad:
        with pytest.raises(ValueError):
            add_lora(model, **kwargs)
        assert model.state_dict().keys() == state.keys()
        assert all(p.requires_grad for p in model.parameters())
    with pytest.raises(ValueError, match=r"linear layers are 'k_proj', 'lm_head', "
                       r"'output_proj', 'q_proj', 'v_proj', 'w1', 'w2', 'w3'"):
        add_lora(model, 2, 1.0, targets=("query",))
    add_lora(model, 2, 1.0)
    with pytest.raises(ValueError, match=r"model already has LoRA adapters"):
        add_lora(model, 2, 1.0, targets=("k_proj",))


def test_a_tied_output_layer_is_refused_and_untied_layers_adapt():
    model = gpt2.TransformerLM(vocab_size=10, context_length=4, d_model=8, n_layers=1,
                               n_heads=2)
    with pytest.raises(ValueError, match=r"lm_head\.weight is shared"):
        add_lora(model, 2, 1.0, targets=("lm_head",))
    x = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        before = model(x)
        add_lora(model, 2, 1.0, targets=("qkv",))  # an nn.Linear with a bias
        torch.testing.assert_close(model(x), before)


def test_a_layer_reached_under_two_names_is_refused():
    """One layer in two places would get two adapters on one weight, and merging
    would add both updates to it: refused, naming it, with the model unchanged."""
    model = _lm()
    model.layers[1].attn.q_proj = model.layers[0].attn.q_proj  # the same module twice
    with pytest.raises(ValueError, match=r"layers\.0\.attn\.q_proj\.weight is shared"):
        add_lora(model, 2, 1.0)
    assert not any(isinstance(m, LoRALinear) for m in model.modules())
    assert add_lora(model, 2, 1.0, targets=("v_proj",)) == 2 * 2 * (16 + 16)


# --------------------------------------------------------------------------------------
# supervised examples
# --------------------------------------------------------------------------------------
def test_supervised_example_masks_exactly_the_prompt():
    tok = _byte_tokenizer()
    eot = end_of_text_id(tok)
    assert eot == 256
    ids, targets = supervised_example(tok, "2+3=", "5")
    assert ids == [*b"2+3=", *b"5", eot]
    assert targets == [IGNORE_INDEX] * 3 + [ord("5"), eot, IGNORE_INDEX]
    ids2, unmasked = supervised_example(tok, "2+3=", "5", mask_prompt=False)
    assert ids2 == ids
    assert unmasked == ids[1:] + [IGNORE_INDEX]


def test_supervised_example_of_a_shipped_tokenizer():
    _, tok = pretrained.load("tang")
    prompt, response = "春眠不觉晓，", "处处闻啼鸟。"
    ids, targets = supervised_example(tok, prompt, response)
    n_prompt = len(tok.encode(prompt))
    assert len(ids) == len(targets) == n_prompt + len(tok.encode(response)) + 1
    assert ids[-1] == tok.special_ids[END_OF_TEXT]
    assert tok.decode(ids[:-1]) == prompt + response
    counted = [i for i, t in enumerate(targets) if t != IGNORE_INDEX]
    assert counted == list(range(n_prompt - 1, len(ids) - 1))
    assert [targets[i] for i in counted] == ids[n_prompt:]  # the response and <eot>


def test_supervised_data_pads_and_batches():
    tok = _byte_tokenizer()
    data = supervised_data(tok, [("a=", "1"), ("bb=", "22")])
    assert len(data) == 2 and data.context_length == 6
    assert data.inputs.tolist() == [[*b"a=1", 256, 256, 256], [*b"bb=22", 256]]
    assert data.targets.tolist() == [[-100, ord("1"), 256, -100, -100, -100],
                                     [-100, -100, ord("2"), ord("2"), 256, -100]]
    inputs, targets = data.batch(5, torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (5, 6)
    assert inputs.dtype == targets.dtype == torch.int64
    again = data.batch(5, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], inputs) and torch.equal(again[1], targets)
    rows = [data.inputs.tolist().index(row) for row in inputs.tolist()]
    assert targets.tolist() == [data.targets[r].tolist() for r in rows]
    with pytest.raises(ValueError, match=r"examples\[1\] has 6 tokens, more than "
                       r"context_length \(5\)"):
        supervised_data(tok, [("a=", "1"), ("bb=", "22")], context_length=5)


def test_supervised_data_refuses_bad_examples():
    with pytest.raises(ValueError, match=r"examples is empty"):
        SupervisedData([], pad_id=0)
    with pytest.raises(ValueError, match=r"examples\[0\] has 2 input ids but 3 targets"):
        SupervisedData([([1, 2], [2, 3, 4])], pad_id=0)
    with pytest.raises(ValueError, match=r"examples\[0\] has no target that counts"):
        SupervisedData([([1, 2], [-100, -100])], pad_id=0)


# --------------------------------------------------------------------------------------
# one training loop
# --------------------------------------------------------------------------------------
def test_train_on_supervised_data_lowers_the_masked_loss_and_moves_only_adapters():
    tok = _byte_tokenizer()
    data = supervised_data(tok, PAIRS)
    model = _lm()
    add_lora(model, rank=4, alpha=8.0, targets=("q_proj", "v_proj", "lm_head"))
    adapter = ("lora_A", "lora_B")
    frozen = {n: p.detach().clone() for n, p in model.named_parameters()
              if not n.endswith(adapter)}
    adapters = {n: p.detach().clone() for n, p in model.named_parameters()
                if n.endswith(adapter)}
    assert len(adapters) == 2 * 2 * 2 + 2  # A and B of q, v in 2 layers, and lm_head
    before = estimate_loss(model, data, 3, data.context_length, num_batches=2)
    # every parameter goes to the optimizer: freezing alone keeps the base as it was
    opt = AdamW(model.parameters(), lr=3e-2, weight_decay=0.1)
    result = train(model, opt, data, val_data=data, steps=40, batch_size=6,
                   eval_batches=2)
    assert result.context_length == data.context_length  # the data's, by default
    assert result.tokens_seen == 40 * 6 * data.context_length
    assert result.val_losses[0] == pytest.approx(before)
    assert result.val_losses[-1] < 0.7 * before
    for name, p in model.named_parameters():
        if name in frozen:
            assert torch.equal(p, frozen[name]), name  # bit for bit
        else:
            assert not torch.equal(p, adapters[name]), name


def test_train_loss_on_supervised_data_is_the_masked_loss():
    """The step's loss counts the response and end-of-text only."""
    tok = _byte_tokenizer()
    data = supervised_data(tok, PAIRS)
    model = _lm()
    losses = []
    train(model, AdamW(model.parameters(), lr=0.0), data, steps=1, batch_size=4,
          max_grad_norm=None, seed=3, callback=lambda e: losses.append(e.loss))
    inputs, targets = data.batch(4, torch.Generator().manual_seed(3))
    with torch.no_grad():
        logits = model(inputs)
    keep = targets != IGNORE_INDEX
    expected = F.cross_entropy(logits[keep], targets[keep])
    assert losses[0] == pytest.approx(float(expected), rel=1e-5)


def test_train_refuses_supervised_data_longer_than_the_model():
    tok = _byte_tokenizer()
    data = supervised_data(tok, [("a" * 20, "b")])
    model = _lm(context_length=16)
    with pytest.raises(ValueError, match=r"train_data holds an example of 22 tokens, "
                       r"more than the model's context_length \(16\)"):
        train(model, AdamW(model.parameters()), data, steps=1, batch_size=1)


def test_exact_match_is_greedy_generation_in_one_forward_pass():
    """Trained part of the way, the model writes some answers exactly and not
    others; for each, one forward pass says what greedy generation does."""
    tok = _byte_tokenizer()
    eot = end_of_text_id(tok)
    data = supervised_data(tok, PAIRS)
    model = _lm()
    agreed = set()
    for steps in (0, 10, 30, 60):
        if steps:
            train(model, AdamW(model.parameters(), lr=3e-2, weight_decay=0.0), data,
                  steps=steps, batch_size=6)
        one_pass = exact_match(model, data).tolist()
        written = [generate(model, tok.encode(p), 3, greedy=True, eos_token_id=eot)
                   for p, _ in PAIRS]
        assert one_pass == [w == tok.encode(a) + [eot] for w, (_, a) in zip(written, PAIRS)]
        agreed.update(one_pass)
        assert model.training  # put back as it was
    assert agreed == {True, False}  # both outcomes were checked
