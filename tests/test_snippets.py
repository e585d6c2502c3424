"""Every snippet runs on its own: each Python block a reader can copy, in a fresh interpreter.

* Pages: every ```` ```python ```` block of ``docs/zh`` and ``docs/en`` (executed or not),
  deduplicated by code (the two languages share their blocks). Each runs alone, as
  a reader who copies it would run it: a new process, a temporary working folder,
  nothing importable but the installed packages (``llmlab`` among them), no state
  left by another block. On Linux the process is forked from an isolated
  interpreter that has imported torch and numpy and nothing else (see
  ``snippet_forkserver.py``): the snippet still has to import what it uses.
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
import queue
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

    from llmlab.build.notebooks import notebooks

    return [Snippet("\n\n".join(notebook_code_cells(path)) + "\n", [f"examples/{path.name}"])
            for path in notebooks(EXAMPLES)]


def _env(cache_dir: Path) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    # LLMLAB_OUTPUT=markdown: what the page printed (in a terminal, the default is text)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg",
               LLMLAB_LANG="en", LLMLAB_OUTPUT="markdown", LLMLAB_CACHE_DIR=str(cache_dir),
               PYTHONDONTWRITEBYTECODE="1")
    return env


FORK = sys.platform.startswith("linux")  # elsewhere: a new interpreter per snippet


class ForkServer:
    """``python -I`` with torch imported, forking a child per snippet (Linux).

    See ``snippet_forkserver.py``: the child runs the snippet as ``__main__`` in a
    namespace of its own, so it must import what it uses, as in a new interpreter;
    only torch's import time (about 2 s here, per snippet) is saved.
    """

    def __init__(self, cache_dir: Path) -> None:
        source = (Path(__file__).parent / "snippet_forkserver.py").read_text(encoding="utf-8")
        self.folder = tempfile.mkdtemp(prefix="llmlab-forkserver-")
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", source], cwd=self.folder,
                                     env=_env(cache_dir), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def run(self, script: Path) -> tuple[int, float]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"script": str(script), "timeout": TIMEOUT_S}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the snippet fork server exited ({self.proc.wait()})")
        reply = json.loads(line)
        return reply["rc"], reply["seconds"]

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        os.rmdir(self.folder)


@dataclass
class Run:
    ok: bool
    seconds: float
    stdout: str
    log: str  # the end of stdout and stderr, for a failure's report


def run_snippet(code: str, cache_dir: Path, server: ForkServer | None = None) -> Run:
    """Run ``code`` in a new process in an empty folder.

    With ``server``, a child forked from it (torch already imported); without, a
    new interpreter.
    """
    with tempfile.TemporaryDirectory(prefix="llmlab-snippet-") as tmp:
        script = Path(tmp) / "snippet.py"
        script.write_text(code, encoding="utf-8")
        if server is not None:
            rc, seconds = server.run(script)
            out, err = (Path(tmp, name).read_text(encoding="utf-8", errors="replace")
                        for name in ("stdout.txt", "stderr.txt"))
            if rc == -9:
                err += f"\ntimed out after {TIMEOUT_S} s"
            return Run(rc == 0, seconds, out, (out + err)[-3000:])
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                # -I: isolated (no PYTHONPATH, no user site, not the repo's folders)
                [sys.executable, "-I", str(script)], cwd=tmp, env=_env(cache_dir),
                capture_output=True, text=True, timeout=TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return Run(False, time.perf_counter() - start, "", f"timed out after {TIMEOUT_S} s")
        seconds = time.perf_counter() - start
        return Run(proc.returncode == 0, seconds, proc.stdout,
                   (proc.stdout + proc.stderr)[-3000:])


def run_snippets(codes: list[str], cache_dir: Path) -> list[Run]:
    """:func:`run_snippet` for each of ``codes``, ``WORKERS`` at a time."""
    if not FORK:
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            return list(pool.map(lambda c: run_snippet(c, cache_dir), codes))
    servers: queue.Queue[ForkServer] = queue.Queue()
    for _ in range(WORKERS):
        servers.put(ForkServer(cache_dir))

    def one(code: str) -> Run:
        server = servers.get()
        try:
            return run_snippet(code, cache_dir, server)
        finally:
            servers.put(server)

    try:
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            return list(pool.map(one, codes))
    finally:
        while not servers.empty():
            servers.get().close()


@pytest.mark.skipif(not FORK, reason="the fork server runs on Linux")
def test_a_forked_snippet_is_as_alone_as_a_new_interpreter(tmp_path: Path) -> None:
    """Only torch's import time is shared: names, modules of llmlab, the folder, the
    exit code, a crash and a timeout are each the snippet's own."""
    codes = [
        "print(torch.ones(1))",  # not imported by the snippet: a NameError
        "import sys\nassert 'llmlab' not in sys.modules and 'torch' in sys.modules\n"
        "import os\nprint(sorted(os.listdir('.')))\nassert '' not in sys.path",
        "import sys\nsys.exit(3)",
        "import torch\ntorch.manual_seed(0)\nprint(torch.rand(1).item())",
        "import torch\nprint(torch.rand(1).item())",  # unseeded: seeded from the OS
        "import torch\nprint(torch.rand(1).item())",
        "import os\nos.kill(os.getpid(), 9)",
        # a script, as `python snippet.py` runs it: what multiprocessing and launch()
        # read to start processes (a copied distributed block once ran itself again)
        "import os, sys\nmain = sys.modules['__main__']\n"
        "assert __name__ == '__main__' and main.__file__ == sys.argv[0] == __file__\n"
        "assert os.path.basename(__file__) == 'snippet.py' and main.__spec__ is None",
    ]
    results = run_snippets(codes, tmp_path)
    assert [r.ok for r in results] == [False, True, False, True, True, True, False, True], [
        r.log for r in results]
    assert "NameError: name 'torch' is not defined" in results[0].log
    assert "['snippet.py', 'stderr.txt', 'stdout.txt']" in results[1].stdout
    fresh = run_snippet("import torch\ntorch.manual_seed(0)\nprint(torch.rand(1).item())",
                        tmp_path)
    assert results[3].stdout == fresh.stdout  # seeded: as in a new interpreter
    assert results[4].stdout != results[5].stdout  # unseeded: two new interpreters differ


def test_partial_blocks_are_marked_and_few() -> None:
    snippets, total = collect_page_snippets()
    partial = [s for s in snippets if s.partial]
    share = sum(len(s.where) for s in partial) / total
    assert share < MAX_PARTIAL_SHARE, (
        f"{share:.1%} of the {total} page blocks are partial (limit "
        f"{MAX_PARTIAL_SHARE:.0%}): {[s.where for s in partial]}"
    )


@dataclass
class SnippetRuns:
    page_snippets: list[Snippet]
    page_blocks: int
    notebook_snippets: list[Snippet]
    to_run: list[Snippet]
    results: list[Run]


@pytest.fixture(scope="module")
def snippet_runs(built_site) -> SnippetRuns:
    """Every snippet run once (experiments read the cache the build filled)."""
    page_snippets, page_blocks = collect_page_snippets()
    notebook_snippets = collect_notebook_snippets()
    to_run = [s for s in page_snippets if not s.partial] + notebook_snippets
    results = run_snippets([s.code for s in to_run], built_site.cache_dir)
    return SnippetRuns(page_snippets, page_blocks, notebook_snippets, to_run, results)


@pytest.mark.site
def test_every_snippet_runs_on_its_own(snippet_runs, record_property) -> None:
    runs = snippet_runs
    page_snippets, page_blocks = runs.page_snippets, runs.page_blocks
    notebook_snippets, to_run, results = runs.notebook_snippets, runs.to_run, runs.results
    partial = [s for s in page_snippets if s.partial]
    partial_blocks = sum(len(s.where) for s in partial)

    failures = [(s, r.log) for s, r in zip(to_run, results) if not r.ok]
    summary = {
        "page_blocks": page_blocks,
        "unique_page_snippets": len(page_snippets),
        "page_snippets_run": len(page_snippets) - len(partial),
        "notebooks_run": len(notebook_snippets),
        "snippets_run": len(to_run),
        "partial_blocks": partial_blocks,
        "partial_share": round(partial_blocks / page_blocks, 4),
        "failed": len(failures),
        "seconds": round(sum(r.seconds for r in results), 1),
        "partial": [s.where for s in partial],
        "runs": [{"where": s.where, "ok": r.ok, "seconds": round(r.seconds, 2)}
                 for s, r in zip(to_run, results)],
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


def _built_outputs(built_site) -> dict[str, tuple[str, str]]:
    """Code of each executed English block -> (its id, a hash of what the build printed)."""
    from pages import fenced_blocks

    report = json.loads(built_site.html("build-report.json"))
    per_page: dict[str, list[dict]] = {}
    for entry in report["blocks"]:
        per_page.setdefault(entry["page"], []).append(entry)
    out = {}
    for rel in page_paths("en"):
        executed = [b for b in fenced_blocks(read_page("en", rel)) if b.executed]
        entries = per_page.get(f"en/{rel}", [])
        assert len(entries) == len(executed), rel
        for block, entry in zip(executed, entries):
            out[block.code] = (entry["id"] or "", entry["output"])
    return out


@pytest.mark.site
def test_each_block_prints_in_a_new_process_what_the_build_printed(
        built_site, snippet_runs) -> None:
    """A block run again, in a process of its own (English, as the build's English
    page ran it), prints exactly what the build printed: its output depends on
    nothing but its code and the cached results, not on the build's process, the
    blocks before it or the global random state. Timings and provenance
    (``machine-dependent`` ids) are left out."""
    import hashlib

    built = _built_outputs(built_site)
    compared, differ = 0, []
    for snippet, run in zip(snippet_runs.to_run, snippet_runs.results):
        block_id, output = built.get(snippet.code, ("", None))
        if output is None or block_id.startswith("machine-dependent") or not run.ok:
            continue  # not executed at build time, a timing, or failed (reported above)
        compared += 1
        again = hashlib.sha256(json.dumps([run.stdout]).encode()).hexdigest()[:16]
        if again != output:
            differ.append(" = ".join(snippet.where))
    assert compared >= 150, compared
    assert not differ, f"blocks that print something else when run again: {differ}"


