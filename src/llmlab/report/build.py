"""What the build computed for a page: a table for the page's "Computation" note.

Taught on: every lecture ("Computation on this page").
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from llmlab import cache
from llmlab.checks import check_str
from llmlab.report import Localized, fmt_float, label, table

__all__ = ["computation_table"]



def computation_table(page: str) -> Localized:
    """The experiments ``page``'s blocks call and what they cost.

    One row per call: the seconds computing it took (its parts included), as
    stored with the results in the cache, on the machine that computed them; then
    the total, in which a part that several calls share counts once. The page
    is read from ``$LLMLAB_DOCS`` (the build sets it), else the checkout's
    ``docs/`` (:func:`llmlab.precompute.find_calls`). A result that is not stored yet is waited for
    as ``LLMLAB_CACHE_MISS`` says (:func:`llmlab.cache.stored_seconds`), so the
    build shows this table without waiting for every other page's experiments.
    Without a filled cache (a block copied elsewhere) the table says so.
    """
    check_str("page", page, nonempty=True)
    from llmlab.precompute import find_calls, project_root

    root = project_root()
    docs = Path(os.environ.get("LLMLAB_DOCS") or (root / "docs" if root else "docs"))
    if cache.cache_dir() is None or not docs.is_dir():
        return table([label("实验", "experiment")],
                     [[label("没有找到结果缓存：先运行 python -m llmlab.precompute",
                             "no result cache found: run python -m llmlab.precompute")]])
    rows, every = [], {}
    calls = find_calls(docs, page=page)
    for call in calls:
        seconds: float | None = 0.0
        for fn, kwargs in cache.plan(call.function(), **call.kwargs):
            key = cache.cache_key(fn, **kwargs)
            if key not in every:
                every[key] = cache.stored_seconds(fn, **kwargs)
            seconds = None if seconds is None or every[key] is None else seconds + every[key]
        rows.append([f"`{call.text}`", _seconds(seconds)])
    if len(calls) > 1:  # two calls may share a part (one launch, two checks)
        total = None if None in every.values() else sum(every.values())
        rows.append([label("合计（共用的部分只算一次）", "total (a shared part counted once)"),
                     _seconds(total)])
    headers = [label("实验", "experiment"),
               label(f"计算用时（秒，{platform.machine()}，单线程）",
                     f"compute time (s, {platform.machine()}, one thread)")]
    return table(headers, rows)


def _seconds(value: float | None) -> str | Localized:
    if value is None:
        return label("尚未计算", "not computed yet")
    return fmt_float(value, 2)
