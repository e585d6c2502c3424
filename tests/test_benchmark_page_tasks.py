"""benchmarks/page_tasks.py: several loads of a page make one row."""

from __future__ import annotations

import pytest
from conftest import load_benchmark


def test_a_row_is_the_median_and_spread_of_the_loads() -> None:
    bench = load_benchmark("page_tasks")
    row = bench.summary([120.0, 240.0, 90.0], budget_ms=200.0)
    assert row == {"median_ms": 120.0, "min_ms": 90.0, "max_ms": 240.0, "over_budget": 1,
                   "loads": 3}
    assert bench.summary([0.0])["over_budget"] == 0  # no long task at all


def test_a_row_needs_a_load() -> None:
    with pytest.raises(ValueError, match="at least one load"):
        load_benchmark("page_tasks").summary([])
