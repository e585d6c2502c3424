"""The "computation on this page" table: seconds per call, and a total that counts
a part shared by several calls (one launch, two checks) once. It reads the
page's blocks and each result's stored seconds, not a report of the whole run, so a
page shows it as soon as its own experiments are stored."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from llmlab.build import cache
from llmlab.experiments import attention, distributed
from llmlab.build.precompute import computation_table


def _store(folder: Path, fn, seconds: float, **kwargs) -> None:
    (folder / f"{cache.cache_key(fn, **kwargs)}.pkl").write_bytes(pickle.dumps((None, seconds)))


def _block(code: str) -> str:
    return f'```python exec="on"\n{code}```\n'


@pytest.fixture
def manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two pages (each in both languages) and an empty cache: ``manifest.parent``."""
    pages = {
        "x.md": _block("from llmlab.experiments.distributed import run_ddp_check, "
                       "run_fsdp_check\nrun_ddp_check()\nrun_fsdp_check()\n")
        + _block("from llmlab.experiments.attention import run_summary_recall\n"
                 "run_summary_recall()\n"),
        "one.md": _block("from llmlab.experiments.attention import run_summary_recall\n"
                         "run_summary_recall()\n")}
    for lang in ("zh", "en"):
        for name, text in pages.items():
            (tmp_path / "docs" / lang).mkdir(parents=True, exist_ok=True)
            (tmp_path / "docs" / lang / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("LLMLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LLMLAB_DOCS", str(tmp_path / "docs"))
    monkeypatch.delenv("LLMLAB_CACHE_MISS", raising=False)
    return tmp_path / "docs"


def test_rows_include_their_parts_and_the_total_counts_a_shared_part_once(
        manifest: Path) -> None:
    folder = manifest.parent
    (launch, launch_kwargs), _ = cache.plan(distributed.run_ddp_check)
    assert cache.plan(distributed.run_fsdp_check)[0] == (launch, launch_kwargs)  # shared
    _store(folder, launch, 4.0, **launch_kwargs)
    _store(folder, distributed.run_ddp_check, 0.5)
    _store(folder, distributed.run_fsdp_check, 0.25)
    _store(folder, attention.run_summary_recall, 1.0)
    rows = {lang: computation_table("x.md").render(lang).splitlines()[2:]
            for lang in ("zh", "en")}
    assert rows["en"] == ["| `distributed.run_ddp_check()` | 4.50 |",
                          "| `distributed.run_fsdp_check()` | 4.25 |",
                          "| `attention.run_summary_recall()` | 1.00 |",
                          "| total (a shared part counted once) | 5.75 |"]
    assert rows["zh"][-1] == "| 合计（共用的部分只算一次） | 5.75 |"
    assert computation_table("one.md").render("en").splitlines()[2:] == [
        "| `attention.run_summary_recall()` | 1.00 |"]  # one call: no total
    assert computation_table("missing.md").render("en").splitlines()[2:] == []


def test_a_result_not_stored_says_so_or_is_refused_in_a_build(
        manifest: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = computation_table("one.md").render("en").splitlines()[2:]
    assert rows == ["| `attention.run_summary_recall()` | not computed yet |"]
    monkeypatch.setenv("LLMLAB_CACHE_MISS", "error")  # what the build sets
    with pytest.raises(cache.NotPrecomputedError, match="run_summary_recall"):
        computation_table("one.md")


def test_without_a_cache_the_table_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMLAB_CACHE_DIR", raising=False)
    text = computation_table("x.md").render("en")
    assert "no result cache found" in text


def test_a_part_that_several_parts_share_counts_once_in_its_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmlab.experiments import alignment

    for lang in ("zh", "en"):
        (tmp_path / "docs" / lang).mkdir(parents=True)
        (tmp_path / "docs" / lang / "a.md").write_text(_block(
            "from llmlab.experiments.alignment import run_alignment_comparison\n"
            'run_alignment_comparison("tang")\n'), encoding="utf-8")
    monkeypatch.setenv("LLMLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LLMLAB_DOCS", str(tmp_path / "docs"))
    monkeypatch.delenv("LLMLAB_CACHE_MISS", raising=False)
    plan = cache.plan(alignment.run_alignment_comparison, "tang")
    keys = [cache.cache_key(fn, **kwargs) for fn, kwargs in plan]
    pairs = cache.cache_key(alignment.run_preference_pairs, corpus="tang")
    assert keys.count(pairs) == 5  # its own part, and a part of each of its four runs
    unique = dict(zip(keys, plan))
    for n, (fn, kwargs) in enumerate(unique.values()):
        _store(tmp_path, fn, 2.0 ** n, **kwargs)  # distinct powers of two: any double count shows
    rows = computation_table("a.md").render("en").splitlines()[2:]
    assert rows == [f'| `alignment.run_alignment_comparison("tang")` | '
                    f"{sum(2.0 ** n for n in range(len(unique))):.2f} |"]
