"""What the build computed for a page: a table for the page's "Computation" note.

Taught on: every lecture ("Computation on this page").
"""

from __future__ import annotations

import json
import os
import pickle
import platform
from pathlib import Path

from llmlab.cache import cache_dir
from llmlab.checks import check_str
from llmlab.report import Localized, fmt_float, label, table

__all__ = ["computation_table"]


def computation_table(page: str) -> Localized:
    """The experiments ``docs/experiments.toml`` lists for ``page`` and what they cost.

    One row per call: the seconds computing it took (its parts included), as
    stored with the results in the cache, on the machine that computed them; then
    the total, in which a part that several calls share counts once.
    Without a filled cache (a block copied elsewhere) the table says so.
    """
    check_str("page", page, nonempty=True)
    folder = cache_dir()
    report = folder / "precompute.json" if folder else None  # the latest run's
    if folder and os.environ.get("LLMLAB_PRECOMPUTE_REPORT"):  # this build's (the hook's)
        report = Path(os.environ["LLMLAB_PRECOMPUTE_REPORT"])
    if report is None or not report.is_file():
        return table([label("实验", "experiment")],
                     [[label("没有找到结果缓存：先运行 python -m llmlab.precompute",
                             "no result cache found: run python -m llmlab.precompute")]])
    rows, every = [], {}
    entries = json.loads(report.read_text(encoding="utf-8"))["pages"].get(page, [])
    for entry in entries:
        seconds = 0.0
        for key in entry["keys"]:
            if key not in every:
                with (folder / f"{key}.pkl").open("rb") as fh:
                    every[key] = pickle.load(fh)[1]
            seconds += every[key]
        rows.append([f"`{entry['call']}`", fmt_float(seconds, 2)])
    if len(entries) > 1:  # two calls may share a part (one launch, two checks)
        rows.append([label("合计（共用的部分只算一次）", "total (a shared part counted once)"),
                     fmt_float(sum(every.values()), 2)])
    headers = [label("实验", "experiment"),
               label(f"计算用时（秒，{platform.machine()}，单线程）",
                     f"compute time (s, {platform.machine()}, one thread)")]
    return table(headers, rows)
