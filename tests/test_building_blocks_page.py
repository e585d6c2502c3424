"""The building-blocks lecture: the timing tables' rows (its exercises: ``test_exercises.py``)."""

from __future__ import annotations

import pytest

from llmlab.experiments import building_blocks as bb
from llmlab.report.building_blocks import (
    flops_table,
    kernels_table,
    norm_share_summary,
    roofline_summary,
)


@pytest.fixture(scope="module")
def small_timing() -> bb.FlopsRuntimeResult:
    return bb.run_flops_vs_runtime.uncached(seq_len=16, d_model=64, d_head=16,
                                            min_run_time=0.01)


def test_kernel_counts(small_timing) -> None:
    r = small_timing
    assert len(r.kernels) == len(r.ops) and all(k >= 1 for k in r.kernels)
    assert r.kernels[r.index("matmul")] == 1
    for op in ("LayerNorm", "softmax"):  # PyTorch: one kernel; ours: a pass per step
        assert r.kernels[r.index(op, "torch")] == 1 < r.kernels[r.index(op, "llmlab")]
    # amax, sub, exp, sum, reciprocal, mul; the detach of the maximum is a view
    assert r.kernels[r.index("softmax", "llmlab")] == 6
    assert r.machine and r.threads == 1


def test_timing_tables_name_each_rows_implementation(small_timing) -> None:
    r = small_timing
    for impl, name in (("torch", "PyTorch"), ("llmlab", "llmlab (teaching code)")):
        text = flops_table(r, impl).render("en")
        rows = [line for line in text.splitlines()[2:] if line.startswith("|")]
        assert len(rows) == len(set(r.ops))  # one row per op
        softmax_row = next(row for row in rows if row.startswith("| softmax"))
        assert f"| {name} |" in softmax_row
        assert "| PyTorch |" in rows[0]  # the matmul is always PyTorch's
    kernels = kernels_table(r).render("zh").splitlines()
    assert "PyTorch 的 kernel 数" in kernels[0]
    assert [row.split(" | ")[0] for row in kernels[2:]] == ["| RMSNorm", "| LayerNorm",
                                                           "| softmax"]
    summary = norm_share_summary(r).render("en")
    assert r.machine in summary and "25%" in summary and len(summary.splitlines()) == 4


def test_the_measured_words_follow_the_measurement(small_timing) -> None:
    """What the page says of the timings is made from them: whichever way the
    ridge point and the shares fall, the words say so (no assert on a timing)."""
    import dataclasses

    r = small_timing
    for ridge, above in ((1e-9, "matmul, RMSNorm, LayerNorm, softmax, GELU"),
                         (1e9, "none")):
        words = roofline_summary(dataclasses.replace(r, ridge=ridge)).render("en")
        assert f"Above it (compute-bound): {above};" in words
    zh = roofline_summary(dataclasses.replace(r, ridge=1e9)).render("zh")
    assert "高于脊点（计算受限）：无；" in zh and "矩阵乘法" in zh
    # every op's time share against its FLOP share, as measured
    shares = r.shares("torch")
    dearer = [op for op, (f, t) in shares.items() if t > f]
    line = roofline_summary(r).render("en").splitlines()[-1]
    assert line.split(": ")[1].split(";")[0] == (", ".join(dearer) or "none")
