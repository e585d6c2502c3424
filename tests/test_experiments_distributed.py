"""llmlab.experiments.distributed on reduced settings: plain data, what must hold."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest
import torch

from llmlab.experiments import distributed as exp
from llmlab.flops import count_flops
from llmlab.hardware import LLAMA2_7B_RUN
from llmlab.memory import zero_bytes_per_device
from llmlab.models.llama import LLAMA2_7B, LLAMA_TOY, TransformerLM

torch.set_num_threads(1)


def _plain(value: object) -> bool:
    """Only numbers, strings, lists, tuples, dicts and dataclasses of those."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def _check_plain(result: object) -> None:
    assert _plain(result), f"{type(result).__name__} holds more than plain data"
    assert pickle.loads(pickle.dumps(result)) == result


def test_the_module_never_imports_the_report_layer():
    source = Path(exp.__file__).read_text(encoding="utf-8")
    assert "llmlab.report" not in source and "import report" not in source


def test_flop_count_matches_the_formula_and_shows_where_six_n_is_off():
    r = exp.run_flop_count(sweep_context_lengths=(512, 32768))
    _check_plain(r)
    assert r.meta_equals_cpu and r.extrapolation_exact
    for row in r.rows + r.sweep:
        assert row.per_token == row.with_attention  # exact, every configuration
        assert row.backward == 2 * row.forward
    toy, tiny, llama = r.rows
    # small models: the embedding table makes 6·(all parameters) too high
    assert toy.six_n_all > 1.05 * toy.per_token
    assert tiny.six_n_all > 1.2 * tiny.per_token
    # Llama 2 7B at 4096 tokens: attention makes 6N too low
    assert llama.six_n < 0.9 * llama.per_token and llama.layers_counted == 2
    short, long = r.sweep
    assert short.per_token < 1.03 * short.six_n < long.per_token / 1.5


def test_memory_accounting_measures_what_the_formulas_say():
    r = exp.run_memory_accounting()
    _check_plain(r)
    assert r.measured_state == r.estimated_state
    assert sum(r.measured_state.values()) == 16 * r.n_parameters
    modes = {(m.precision, m.checkpointing): m for m in r.modes}
    assert set(modes) == {("fp32", False), ("fp32", True), ("bf16", False),
                          ("bf16", True)}
    fp32 = modes["fp32", False]
    for family, elements in fp32.estimate_elements.items():
        assert fp32.measured[family] >= 4 * elements  # ours keeps at least that
    assert modes["fp32", True].measured_total < fp32.measured_total / 3
    assert modes["fp32", True].flops > fp32.flops  # recomputation
    bf16 = modes["bf16", False]
    assert bf16.measured_total < fp32.measured_total and "bfloat16" in bf16.dtypes
    assert bf16.parameter_copies > 0 and fp32.parameter_copies == 0
    llama = r.at_scale["LLAMA2_7B"]
    assert llama["n_parameters"] == LLAMA2_7B.parameter_count()
    saved, block, peak = (llama[f"activations_bf16_{k}"] for k in (
        "checkpointed", "recomputed_block", "checkpointed_peak"))
    assert saved < peak < llama["activations_bf16"] / 10  # the peak: backward
    assert peak == 2 * LLAMA2_7B.num_layers * 4096 * LLAMA2_7B.d_model + block


def test_training_cost_is_checked_against_llama_2():
    r = exp.run_training_cost(utilisation=0.4)
    _check_plain(r)
    rows = {row.model: row for row in r.rows}
    llama = rows["llama2-7b"]
    assert llama.published_gpu_hours == LLAMA2_7B_RUN.gpu_hours == 184_320
    assert 0.3 < llama.implied_utilisation < 0.6
    assert llama.hours_at_peak < llama.published_gpu_hours
    assert llama.published_gpu_hours < 2 * llama.estimated_gpu_hours
    assert llama.implied_utilisation_6n < llama.implied_utilisation
    assert rows["gpt2-small"].tokens == pytest.approx(2.95e11, rel=0.01)


def test_zero_memory_table():
    r = exp.run_zero_memory(n_devices=(8, 64))
    _check_plain(r)
    assert [x / 1e9 for x in r.paper_check] == pytest.approx([120, 31.4, 16.6, 1.9],
                                                             abs=0.05)
    llama = r.bytes_per_device[r.models.index("LLAMA2_7B")]
    assert llama[0][0] > r.gpu_memory > llama[0][3]  # DDP does not fit, ZeRO-3 does
    for per_device in llama:
        assert per_device == sorted(per_device, reverse=True)  # each stage saves more
    assert llama[1][3] == zero_bytes_per_device(LLAMA2_7B.parameter_count(), 64, 3)[
        "total"]


def test_ddp_and_fsdp_on_two_processes_equal_one_process():
    r = exp.run_parallel_training(steps=3)
    _check_plain(r)
    assert (r.world_size, r.backend) == (2, "gloo")
    assert r.ddp_gradients_equal and r.ddp_ranks_identical
    assert max(r.ddp_gradient_diff) < 1e-6 and r.ddp_loss_diff < 1e-5
    assert r.ddp_local_losses[0] != r.ddp_local_losses[1]
    assert r.fsdp_loss_diff < 1e-5 and r.fsdp_parameter_diff < 1e-5
    for ddp, fsdp in zip(r.ddp_bytes, r.fsdp_bytes):
        assert {k: fsdp[k] / ddp[k] for k in ddp} == {
            "parameters": 0.5, "gradients": 0.5, "optimizer_state": 0.5}
    ddp = exp.run_ddp_check(steps=3)  # read from the shared run
    fsdp = exp.run_fsdp_check(steps=3)
    _check_plain(ddp)
    _check_plain(fsdp)
    assert ddp.gradients_equal and ddp.ddp_losses == r.ddp_losses
    assert fsdp.parameter_type == "DTensor" and fsdp.shares[0]["parameters"] == 0.5


def test_timings_record_the_machine():
    u = exp.time_cpu_utilisation(steps=2, matmul_size=128)
    _check_plain(u)
    assert u.threads == 1 and "thread" in u.machine
    assert 0 < u.utilisation and u.peak_flops > 0
    torch.manual_seed(0)
    model = TransformerLM.from_config(LLAMA_TOY)  # the timed model, counted
    assert u.step_flops == count_flops(model, u.batch_size, 64).total
    c = exp.time_ddp_communication(steps=2)
    _check_plain(c)
    assert c.threads == 1 and c.world_size == 2 and c.buckets >= 1
    assert c.gradient_bytes == 4 * exp.MEMORY_CONFIG.parameter_count()
    for values in (c.compute_seconds, c.synced_seconds, c.hook_seconds,
                   c.all_reduce_seconds):
        assert len(values) == 2 and all(v > 0 for v in values)
    assert [len(d) for d in c.difference_seconds] == [2, 2]  # each timed step
