"""The "computation on this page" table: seconds per call, and a total that counts
a part shared by several calls (one launch, two checks) once."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from llmlab.report.build import computation_table


def test_rows_include_their_parts_and_the_total_counts_a_shared_part_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seconds = {"launch": 4.0, "ddp": 0.5, "fsdp": 0.25, "other": 1.0}
    for key, s in seconds.items():
        (tmp_path / f"{key}.pkl").write_bytes(pickle.dumps((None, s)))
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"pages": {"x.md": [
        {"call": "run_ddp_check()", "keys": ["ddp", "launch"]},
        {"call": "run_fsdp_check()", "keys": ["fsdp", "launch"]},
        {"call": "other()", "keys": ["other"]},
    ]}}), encoding="utf-8")
    monkeypatch.setenv("LLMLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LLMLAB_PRECOMPUTE_REPORT", str(report))
    rows = {lang: computation_table("x.md").render(lang).splitlines()[2:]
            for lang in ("zh", "en")}
    assert rows["en"] == ["| `run_ddp_check()` | 4.50 |", "| `run_fsdp_check()` | 4.25 |",
                          "| `other()` | 1.00 |",
                          "| total (a shared part counted once) | 5.75 |"]
    assert rows["zh"][-1] == "| 合计（共用的部分只算一次） | 5.75 |"
    one = computation_table("missing.md").render("en").splitlines()[2:]
    assert one == []  # a page without experiments: no rows, no total
