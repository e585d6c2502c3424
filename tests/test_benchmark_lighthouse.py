"""benchmarks/lighthouse.py: the pages it audits; several audits make one row of medians."""

from __future__ import annotations

import pytest
from conftest import load_benchmark


def _run(perf: int, tbt: int, lcp: float, failing: list[str]) -> dict:
    return {"performance": perf, "accessibility": 100, "best-practices": 100, "seo": 100,
            "kib": 390, "dom": 6757, "tbt_ms": tbt, "lcp_s": lcp, "failing": failing}


def test_median_row_of_three_audits() -> None:
    bench = load_benchmark("lighthouse")
    runs = [_run(95, 250, 1.36, ["dom-size"]), _run(72, 700, 3.7, ["lcp"]),
            _run(91, 380, 1.4, ["mainthread-work-breakdown"])]
    row = bench.median_result(runs)
    # the outlier (a simulated LCP of 3.7 s) moves none of the medians
    assert (row["performance"], row["tbt_ms"], row["lcp_s"]) == (91, 380, 1.4)
    assert row["performance_range"] == [72, 95] and row["runs"] == 3
    assert row["failing"] == ["mainthread-work-breakdown"]  # the median run's
    assert bench.median_result(runs[:1])["failing"] == ["dom-size"]


def test_median_row_needs_a_run() -> None:
    with pytest.raises(ValueError, match="at least one run"):
        load_benchmark("lighthouse").median_result([])


def test_every_page_is_audited_once_in_each_language(tmp_path) -> None:
    for rel in ("", "lectures/a", "notebooks/b", "en", "en/lectures/a", "en/notebooks/b",
                "assets/x", "search"):
        (tmp_path / rel).mkdir(parents=True, exist_ok=True)
        (tmp_path / rel / "index.html").write_text("<html></html>", encoding="utf-8")
    pages = load_benchmark("lighthouse")._pages(tmp_path)
    assert pages == ["", "lectures/a/", "notebooks/b/",
                     "en/", "en/lectures/a/", "en/notebooks/b/"]
