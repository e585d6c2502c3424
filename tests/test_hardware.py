"""llmlab.hardware: GPU-hours from FLOPs and a datasheet's peak, and back."""

from __future__ import annotations

import pytest

from llmlab.hardware import (
    A100_80GB,
    LLAMA2_7B_RUN,
    gpu_hours,
    implied_utilisation,
    matmul_flops_per_second,
)


def test_gpu_hours_and_implied_utilisation_are_inverse():
    flops = 1e21
    hours = gpu_hours(flops, A100_80GB, 0.5)
    assert hours == pytest.approx(flops / (312e12 * 0.5) / 3600)
    assert implied_utilisation(flops, hours, A100_80GB) == pytest.approx(0.5)
    assert LLAMA2_7B_RUN.gpu_hours == 184_320 and LLAMA2_7B_RUN.tokens == 2e12


def test_matmul_rate_is_positive():
    assert matmul_flops_per_second(size=64, repeats=2) > 0


@pytest.mark.parametrize("call, error, name", [
    (lambda: gpu_hours(1e20, A100_80GB, 0.0), ValueError, "utilisation"),
    (lambda: gpu_hours(1e20, A100_80GB, 1.5), ValueError, "utilisation"),
    (lambda: implied_utilisation(1e20, 0.0, A100_80GB), ValueError, "hours"),
])
def test_bad_inputs_name_their_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()
