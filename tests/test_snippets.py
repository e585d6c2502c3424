"""Every snippet runs on its own: each Python block a reader can copy, in a fresh interpreter.

* Pages: every ```` ```python ```` block of ``docs/zh`` and ``docs/en`` (executed or not),
  deduplicated by code (the two languages share their blocks). Each runs alone, as
  a reader who copies it would run it: a new interpreter, a temporary working
  folder, nothing importable but the installed packages (``llmlab`` among them),
  no state left by another block.
* Notebooks: each ``examples/*.py`` once, all its code cells in order in a fresh
  interpreter (never after another notebook or page): what its download gives
  the reader. (The build has executed every cell in a kernel already.)
* Blocks marked ```` ```python {.partial} ```` are fragments shown for reading (a
  buggy line quoted from the notes, say). They are not run, and must stay under 5%
  of all blocks.

Experiments read the cache the site build filled (``built_site.cache_dir``), so the
heavy ones are disk hits. The counts go to ``test-artifacts/snippets.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pages import EXAMPLES, LANGS, ROOT, page_paths, python_blocks, read_page

ARTIFACTS = ROOT / "test-artifacts"
MAX_PARTIAL_SHARE = 0.05
WORKERS = 2
TIMEOUT_S = 600


@dataclass
class Snippet:
    code: str
    where: list[str] = field(default_factory=list)  # every place it appears
    partial: bool = False


def collect_page_snippets() -> tuple[list[Snippet], int]:
    """Unique page blocks (by code) and the number of blocks before dedup."""
    unique: dict[str, Snippet] = {}
    total = 0
    for lang in LANGS:
        for rel in page_paths(lang):
            for block in python_blocks(read_page(lang, rel), f"{lang}/{rel}"):
                total += 1
                snippet = unique.setdefault(block.code, Snippet(block.code))
                snippet.where.append(block.where)
                snippet.partial = snippet.partial or block.partial
    return list(unique.values()), total


def collect_notebook_snippets() -> list[Snippet]:
    from pages import notebook_code_cells

    from llmlab.precompute import notebooks

    return [Snippet("\n\n".join(notebook_code_cells(path)) + "\n", [f"examples/{path.name}"])
            for path in notebooks(EXAMPLES)]


def _env(cache_dir: Path) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg",
               LLMLAB_CACHE_DIR=str(cache_dir), PYTHONDONTWRITEBYTECODE="1")
    return env


def run_snippet(code: str, cache_dir: Path) -> tuple[bool, float, str]:
    """Run ``code`` in a new interpreter in an empty folder; (ok, seconds, log)."""
    with tempfile.TemporaryDirectory(prefix="llmlab-snippet-") as tmp:
        script = Path(tmp) / "snippet.py"
        script.write_text(code, encoding="utf-8")
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                # -I: isolated (no PYTHONPATH, no user site, not the repo's folders)
                [sys.executable, "-I", str(script)], cwd=tmp, env=_env(cache_dir),
                capture_output=True, text=True, timeout=TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return False, time.perf_counter() - start, f"timed out after {TIMEOUT_S} s"
        seconds = time.perf_counter() - start
        return proc.returncode == 0, seconds, (proc.stdout + proc.stderr)[-3000:]


def test_partial_blocks_are_marked_and_few() -> None:
    snippets, total = collect_page_snippets()
    partial = [s for s in snippets if s.partial]
    share = sum(len(s.where) for s in partial) / total
    assert share < MAX_PARTIAL_SHARE, (
        f"{share:.1%} of the {total} page blocks are partial (limit "
        f"{MAX_PARTIAL_SHARE:.0%}): {[s.where for s in partial]}"
    )


@pytest.mark.site
def test_every_snippet_runs_on_its_own(built_site, record_property) -> None:
    page_snippets, page_blocks = collect_page_snippets()
    notebook_snippets = collect_notebook_snippets()
    to_run = [s for s in page_snippets if not s.partial] + notebook_snippets
    partial = [s for s in page_snippets if s.partial]
    partial_blocks = sum(len(s.where) for s in partial)

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results = list(pool.map(lambda s: run_snippet(s.code, built_site.cache_dir),
                                to_run))

    failures = [(s, log) for s, (ok, _, log) in zip(to_run, results) if not ok]
    summary = {
        "page_blocks": page_blocks,
        "unique_page_snippets": len(page_snippets),
        "page_snippets_run": len(page_snippets) - len(partial),
        "notebooks_run": len(notebook_snippets),
        "snippets_run": len(to_run),
        "partial_blocks": partial_blocks,
        "partial_share": round(partial_blocks / page_blocks, 4),
        "failed": len(failures),
        "seconds": round(sum(sec for _, sec, _ in results), 1),
        "partial": [s.where for s in partial],
        "runs": [{"where": s.where, "ok": ok, "seconds": round(sec, 2)}
                 for s, (ok, sec, _) in zip(to_run, results)],
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "snippets.json").write_text(json.dumps(summary, indent=1) + "\n",
                                             encoding="utf-8")
    for key in ("snippets_run", "page_snippets_run", "notebooks_run",
                "partial_blocks", "partial_share", "failed"):
        record_property(key, summary[key])
    counts = (f"{summary['snippets_run']} snippets run ({summary['page_snippets_run']} "
              f"page blocks, {summary['notebooks_run']} notebooks), "
              f"{partial_blocks} of {page_blocks} page blocks partial")
    report = "\n\n".join(f"{' = '.join(s.where)}:\n{log}" for s, log in failures)
    assert not failures, f"{len(failures)} snippet(s) failed; {counts}\n\n{report}"
    assert partial_blocks / page_blocks < MAX_PARTIAL_SHARE, counts
