"""python -m llmlab.build.precompute: what the pages compute, the cache it fills, the notebooks it splits."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from IPython.core.formatters import DisplayFormatter
from IPython.display import Markdown

from llmlab.build import manifest, notebooks, precompute, scheduler
from llmlab.report import LANGUAGES
from llmlab.experiments.attention import run_causal_mask
from llmlab.report import label, table
from llmlab.report.diagrams import causal_mask

ROOT = Path(__file__).resolve().parent.parent


def _page(*blocks: str) -> str:
    return "# 标题\n\n" + "".join(f'```python exec="on"\n{b}```\n\ntext\n\n' for b in blocks)


def _docs(tmp_path: Path, pages: dict[str, str]) -> Path:
    """A docs folder with each page in both languages (the same blocks, as the site's)."""
    docs = tmp_path / "docs"
    for rel, text in pages.items():
        for lang in LANGUAGES:
            (docs / lang / rel).parent.mkdir(parents=True, exist_ok=True)
            (docs / lang / rel).write_text(text, encoding="utf-8")
    return docs


def test_the_pages_blocks_say_what_they_compute(tmp_path: Path) -> None:
    """Each call of a @cached experiment in an executed block, once per page, in
    order; names bound once to a literal and loops over literals stand for their
    values; helpers, code shown but not run and other modules are not experiments."""
    docs = _docs(tmp_path, {"lectures/x.md": _page(
        "from llmlab.experiments.multihead import run_why_multihead\n"
        "from llmlab.experiments.training import poem_line_halves\n"
        "HEADS = (1, 2)\n"
        "r = run_why_multihead(heads=HEADS, steps=5)\n"
        "assert poem_line_halves('秦川雄帝宅，函谷壯皇居。') == (5, 5)\n",
        "from llmlab.experiments import attention as exp\n"
        "for p, n in ((0.25, 4), (0.5, 6)):\n"
        "    exp.run_dropout_demo(p=p, seq_len=n)\n"
        "exp.run_summary_recall()\n"
        "from llmlab.experiments.multihead import run_why_multihead\n"
        "run_why_multihead(heads=(1, 2), steps=5)  # again: one call\n")
        + '```python\nfrom llmlab.experiments.attention import run_dropout_demo\n'
          'run_dropout_demo(p=0.9)\n```\n'
        + '    ```python exec="on"\n    from llmlab.experiments.attention import '
          'run_summary_recall\n    run_summary_recall(seed=3)\n    ```\n',
        "index.md": "# 首页\n"})
    calls = manifest.find_calls(docs)
    assert [(c.page, c.text) for c in calls] == [
        ("lectures/x.md", "multihead.run_why_multihead(heads=(1, 2), steps=5)"),
        ("lectures/x.md", "attention.run_dropout_demo(p=0.25, seq_len=4)"),
        ("lectures/x.md", "attention.run_dropout_demo(p=0.5, seq_len=6)"),
        ("lectures/x.md", "attention.run_summary_recall()"),
        ("lectures/x.md", "attention.run_summary_recall(seed=3)")]  # indented: an exercise
    first = calls[0]
    assert (first.module, first.name) == ("llmlab.experiments.multihead", "run_why_multihead")
    assert first.kwargs == {"heads": (1, 2), "steps": 5}  # tuples stay tuples (cache keys)
    assert manifest.find_calls(docs, page="index.md") == []
    assert manifest.find_calls(docs, page="lectures/x.md") == calls


@pytest.mark.parametrize("call", ["run_summary_recall(lengths=LENGTHS)",
                                  "run_summary_recall(seed=int('3'))",
                                  "run_summary_recall(no_such_argument=1)",
                                  "run_summary_recall(1, 2, 3, 4, 5, 6, 7, 8, 9)"])
def test_a_call_precompute_cannot_read_is_refused_naming_it(tmp_path: Path, call: str) -> None:
    docs = _docs(tmp_path, {"lectures/x.md": _page(
        "from llmlab.experiments.attention import run_summary_recall\n"
        "LENGTHS = [4]\nLENGTHS = [8]  # bound twice: not a constant\n" + call + "\n")})
    with pytest.raises(ValueError, match=r"lectures/x\.md:7: ") as error:
        manifest.find_calls(docs)
    assert call in str(error.value) and "literal" in str(error.value)


def test_the_course_computes_what_its_pages_call() -> None:
    calls = manifest.find_calls(ROOT / "docs", ROOT / "examples")
    assert len(calls) > 40
    assert {c.page for c in calls if c.page.startswith("examples/")} == {
        "examples/copy_task_heads.py", "examples/finetune_lora.py",
        "examples/train_tiny_lm.py"}
    for call in calls:
        jobs = scheduler.plan_jobs(call)
        assert jobs[-1]["name"] == call.name
        assert all(len(j["key"]) == 64 for j in jobs)


def _table():
    return table([label("头", "head"), label("偏移量", "offset")], [(0, 1)])


def _executed_notebook() -> nbformat.NotebookNode:
    data, meta = _table()._repr_mimebundle_()
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 标题\n\n中文。", metadata={"lang": "zh"}),
        nbformat.v4.new_markdown_cell("# Title\n\nEnglish.", metadata={"lang": "en"}),
        nbformat.v4.new_code_cell("display(t)", outputs=[
            nbformat.v4.new_output("display_data", data=data, metadata=meta),
            nbformat.v4.new_output("stream", name="stdout", text="42\n")]),
    ])


def test_a_notebook_is_split_per_language_with_the_same_code_and_its_outputs() -> None:
    nb = _executed_notebook()
    zh, en = notebooks.split_notebook(nb, "zh"), notebooks.split_notebook(nb, "en")
    assert [c.source for c in zh.cells] == ["# 标题\n\n中文。", "display(t)"]
    assert [c.source for c in en.cells] == ["# Title\n\nEnglish.", "display(t)"]
    # a table is in the notebook's own language, the other language's left out
    (zh_table, zh_text), (en_table, en_text) = zh.cells[-1].outputs, en.cells[-1].outputs
    assert zh_text == en_text
    for lang, output in (("zh", zh_table), ("en", en_table)):
        shown = _table().render(lang)
        assert output.data == {"text/markdown": shown, "text/plain": shown}, lang
    assert "头" not in nbformat.writes(en) and "head" not in nbformat.writes(zh).lower()
    assert all("lang" not in c.metadata for c in zh.cells + en.cells)
    assert len(nb.cells) == 3  # the executed notebook itself is left as it was
    assert "llmlab" in nb.cells[-1].outputs[0].metadata
    # what display() records as text: the table's Markdown, not the object's address
    assert DisplayFormatter().format(_table())[0]["text/plain"] == _table().render()
    page = {lang: notebooks.notebook_markdown(nb, "demo", lang) for lang in ("zh", "en")}
    assert page["zh"].startswith("# 标题") and "English" not in page["zh"]
    assert "| 头 | 偏移量 |" in page["zh"] and "| head | offset |" in page["en"]
    assert '<a href="demo.ipynb" download>' in page["zh"] and "下载：" in page["zh"]
    assert "```text\n42\n```" in page["en"] and "```python\ndisplay(t)\n```" in page["en"]


def test_a_split_notebook_is_the_same_file_whichever_run_executed_it() -> None:
    """Cell ids are random in each executed notebook; the downloads' are not."""
    first, second = _executed_notebook(), _executed_notebook()
    assert [c.id for c in first.cells] != [c.id for c in second.cells]
    for lang in ("zh", "en"):
        own = [nbformat.writes(notebooks.split_notebook(nb, lang)) for nb in (first, second)]
        assert own[0] == own[1]
        nbformat.validate(nbformat.reads(own[0], as_version=4))


def test_a_markdown_output_is_its_own_text_not_the_objects_name() -> None:

    shown = Markdown("```python\nx = 1\n```")
    data, _ = DisplayFormatter().format(shown)  # what display() records
    assert data["text/plain"] == "<IPython.core.display.Markdown object>"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("m", outputs=[
        nbformat.v4.new_output("display_data", data=data)])])
    (output,) = notebooks.split_notebook(nb, "en").cells[0].outputs
    assert output.data == {"text/markdown": shown.data, "text/plain": shown.data}


def test_a_figure_output_is_split_with_its_own_svg_and_alt_text() -> None:
    figure = causal_mask(run_causal_mask(2))
    data, meta = figure._repr_mimebundle_()
    assert data["text/plain"] == figure.alt.text()  # not the object's address
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("f", outputs=[
        nbformat.v4.new_output("display_data", data=data, metadata=meta)])])
    for lang in ("zh", "en"):
        (output,) = notebooks.split_notebook(nb, lang).cells[0].outputs
        assert output.data == {"image/svg+xml": figure.make(lang),
                               "text/plain": figure.alt.text(lang)}
        assert output.metadata == {"alt": figure.alt.text(lang), "digest": figure.digest}
        assert f'alt="{figure.alt.text(lang)}"' in notebooks.notebook_markdown(nb, "f", lang)


def _run(tree: Path, cache: Path, docs: Path, examples: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    env.pop("LLMLAB_CACHE_MISS", None)
    return subprocess.run(
        [sys.executable, "-m", "llmlab.build.precompute", "--docs", str(docs),
         "--examples", str(examples), "--cache-dir", str(cache), "--workers", "1"],
        env=env, capture_output=True, text=True, timeout=300, cwd=tree)


def test_timings_get_cores_of_their_own_and_parents_start_as_soon_as_their_parts_are_stored(
) -> None:
    """A timing runs only where each of its processes has a core: beside it, the
    processes busy never exceed the workers; one that needs every core runs alone;
    an ordinary job uses the core a one-process timing leaves free. Timings come
    after the parts they read; jobs go page by page; a parent starts once its own
    parts are stored, without waiting for every other experiment."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    def job(name: str, page: str, machine: bool = False, parent: bool = False,
            cost: float = 0.0, processes: int = 1):
        return {"name": name, "key": name, "machine": machine, "parent": parent,
                "cost": cost, "rank": scheduler.render_rank(page), "processes": processes}

    jobs = [job("tokenizer", "b.md", cost=0.5), job("timed", "b.md", machine=True),
            job("timed_with_parts", "a.md", machine=True, parent=True),
            job("early", "a.md", cost=2.0), job("run", "c.md"),
            job("trained", "c.md", parent=True, cost=6.0), job("slow", "c.md", cost=9.0),
            job("cheap", "c.md"), job("costly_part", "c.md", cost=5.0),
            job("free_parent", "c.md", parent=True),
            job("timed_ranks", "b.md", machine=True, processes=2),
            job("launch", "a.md", cost=3.0, processes=2)]
    planned = [[jobs[0], jobs[2]], [jobs[1]], [jobs[3]], [jobs[4], jobs[5]], [jobs[6]],
               [jobs[7]], [jobs[8], jobs[9]], [jobs[10]], [jobs[11]]]
    deps = scheduler.dependencies(planned)
    assert deps["timed_with_parts"] == {"tokenizer"} and deps["trained"] == {"run"}
    by_name = {j["name"]: j for j in jobs}
    events, lock, running = [], threading.Lock(), set()
    release_slow = threading.Event()

    def compute(j: dict) -> tuple[str, float]:
        with lock:
            events.append(("start", j["name"], frozenset(running)))
            running.add(j["name"])
        if j["name"] == "slow":  # still running when "trained" may start
            release_slow.wait(5)
        if j["name"] == "trained":
            release_slow.set()
        time.sleep(0.01)  # long enough for the scheduler to start what fits beside
        with lock:
            running.discard(j["name"])
            events.append(("end", j["name"], frozenset(running)))
        return j["key"], 0.0

    done = scheduler.run_jobs(jobs, deps, 2, compute, ThreadPoolExecutor)
    assert sorted(d["name"] for d in done) == sorted(j["name"] for j in jobs)
    starts = [(name, beside) for kind, name, beside in events if kind == "start"]
    order = [name for name, _ in starts]
    for name, beside in starts:
        if by_name[name]["machine"] or any(by_name[b]["machine"] for b in beside):
            busy = by_name[name]["processes"] + sum(by_name[b]["processes"] for b in beside)
            assert busy <= 2 or not beside, (name, beside)  # a core per timing process
    assert not dict(starts)["timed_ranks"]  # it needs both cores: alone
    assert order.index("timed_with_parts") > order.index("tokenizer")
    beside_timings = {b for name, beside in starts for b in beside
                      if by_name[name]["machine"]}
    beside_timings |= {name for name, beside in starts
                       if any(by_name[b]["machine"] for b in beside)}
    assert beside_timings - {j["name"] for j in jobs if j["machine"]}  # a core not left idle
    costly = [n for n in order if by_name[n]["cost"] > 0]
    assert order.index("cheap") < order.index(costly[0])  # cost-free jobs first
    assert costly.index("early") < costly.index("slow")  # then page by page
    assert order.index("trained") > order.index("run")
    beside_trained = dict(starts)["trained"]
    assert "slow" in beside_trained  # it did not wait for the slowest experiment


def test_a_cheap_part_of_a_long_run_starts_before_other_long_jobs() -> None:
    """Among ready jobs the longest chain of estimated cost goes first: a cheap
    tokenizer that a long training run reads starts before a job of middling
    cost, so the long run does not end up running alone at the end."""
    from concurrent.futures import ThreadPoolExecutor

    def job(name: str, cost: float, parent: bool = False) -> dict:
        return {"name": name, "key": name, "machine": False, "parent": parent, "cost": cost}

    jobs = [job("middling", 3.0), job("tokenizer", 0.5), job("training", 6.0, parent=True),
            job("free", 0.0)]
    deps = scheduler.dependencies([[jobs[0]], [jobs[1], jobs[2]], [jobs[3]]])
    order: list[str] = []
    scheduler.run_jobs(jobs, deps, 1, lambda j: (order.append(j["name"]), (j["key"], 0.0))[1],
                        ThreadPoolExecutor)
    assert order == ["free", "tokenizer", "training", "middling"]


def test_a_notebook_runs_once_what_it_calls_is_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMLAB_CACHE_DIR", str(tmp_path / "cache"))
    examples = tmp_path / "examples"
    examples.mkdir()
    header = "# ---\n# jupyter:\n#   jupytext:\n#     formats: py:percent\n# ---\n"
    (examples / "uses.py").write_text(header + "# %%\nx = 1\n", encoding="utf-8")
    (examples / "alone.py").write_text(header + "# %%\ny = 2\n", encoding="utf-8")
    (examples / "script.py").write_text("print('not a notebook')\n", encoding="utf-8")
    calls = [*manifest.experiment_calls(
        "from llmlab.experiments.distributed import run_ddp_check\nrun_ddp_check()\n",
        "examples/uses.py"), *manifest.experiment_calls(
        "from llmlab.experiments.attention import run_dropout_demo\n"
        "run_dropout_demo(p=0.25)\n", "lectures/x.md")]
    planned = [scheduler.plan_jobs(call) for call in calls]
    jobs, deps = scheduler.notebook_jobs(calls, planned, examples)
    assert [j["key"] for j in jobs] == ["notebook:alone.py", "notebook:uses.py"]
    assert deps["notebook:uses.py"] == {j["key"] for j in planned[0]}  # the launch too
    assert deps["notebook:alone.py"] == set()
    out = Path(jobs[0]["out"])
    out.parent.mkdir(parents=True)
    out.write_text("{}", encoding="utf-8")  # executed already: no job
    assert [j["key"] for j in scheduler.notebook_jobs(calls, planned, examples)[0]] == [
        "notebook:uses.py"]


def test_editing_a_renderer_recomputes_nothing(tmp_path: Path) -> None:
    """Results are keyed by their computation: a renderer or table header edit
    re-renders the pages and recomputes no experiment; an experiment edit does."""
    tree = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "llmlab", tree / "llmlab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    docs = _docs(tmp_path, {"x.md": _page(
        "from llmlab.experiments.attention import run_dropout_demo\nrun_dropout_demo(p=0.25)\n")})
    examples, cache = tmp_path / "examples", tmp_path / "cache"
    examples.mkdir()

    def jobs() -> list[str]:
        proc = _run(tree, cache, docs, examples)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        report = json.loads((cache / "precompute.json").read_text(encoding="utf-8"))
        return [job["name"] for job in report["jobs"] if job["seconds"] is not None]

    assert jobs() == ["run_dropout_demo"]
    renderers = tree / "llmlab" / "report" / "__init__.py"
    edited = renderers.read_text(encoding="utf-8").replace('label("是", "yes")',
                                                           'label("对", "yes")')
    assert edited != renderers.read_text(encoding="utf-8")
    renderers.write_text(edited, encoding="utf-8")
    assert jobs() == []  # stale inputs: it ran, and found every result stored
    again = _run(tree, cache, docs, examples)
    assert "up to date" in again.stdout  # nothing changed since: it did nothing at all
    experiment = tree / "llmlab" / "experiments" / "attention.py"
    experiment.write_text(experiment.read_text(encoding="utf-8") + "\n# an edit\n",
                          encoding="utf-8")
    assert jobs() == ["run_dropout_demo"]


def test_checkouts_sharing_a_cache_keep_their_own_reports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two checkouts, one cache folder (worktrees, CI jobs): each run's report is
    kept by its inputs' stamp, so neither run's pages read the other's."""
    from llmlab.build.manifest import find_calls
    from llmlab.build.precompute import home_contents, report_path, stamp

    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as in _run: the stamp names the threads

    cache, examples = tmp_path / "cache", tmp_path / "examples"
    examples.mkdir()
    docs = {}
    for name, p in (("a", 0.25), ("b", 0.5)):
        docs[name] = _docs(tmp_path / name, {f"{name}.md": _page(
            f"from llmlab.experiments.attention import run_dropout_demo\n"
            f"run_dropout_demo(p={p})\n")})
    for name in ("a", "b", "a"):
        proc = _run(ROOT / "src", cache, docs[name], examples)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "up to date" in proc.stdout  # b's run did not replace a's report
    for name in ("a", "b"):
        current = stamp(find_calls(docs[name], examples), examples,
                        home_contents(docs[name]))
        report = json.loads(report_path(cache, current).read_text())
        assert list(report["pages"]) == [f"{name}.md"]


NOTEBOOK = ("# ---\n# jupyter:\n#   jupytext:\n#     formats: py:percent\n# ---\n\n"
            "# %%\nfrom llmlab.experiments.attention import run_dropout_demo\n\n"
            "print(run_dropout_demo(p=0.25).p)\n")


def _project(root: Path) -> Path:
    """A course checkout in miniature: a site's config, a page and a notebook."""
    (root / "docs" / "zh").mkdir(parents=True)
    (root / "examples").mkdir()
    (root / "mkdocs.yml").write_text("site_name: x\n", encoding="utf-8")
    (root / "docs" / "zh" / "index.md").write_text("# 首页\n", encoding="utf-8")
    (root / "examples" / "nb.py").write_text(NOTEBOOK, encoding="utf-8")
    return root


def _precompute(cwd: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("LLMLAB_CACHE_DIR", "LLMLAB_CACHE_MISS", "LLMLAB_CACHE")}
    return subprocess.run([sys.executable, "-m", "llmlab.build.precompute", "--workers", "1"],
                          cwd=cwd, env={**clean, "OMP_NUM_THREADS": "1", **env},
                          capture_output=True, text=True, timeout=300)


def test_a_relative_cache_from_a_subfolder_and_damaged_outputs(tmp_path: Path) -> None:
    """Run as a reader runs it (README): a plain program, from a folder inside the
    checkout. A relative cache folder once sent the notebooks' results elsewhere (they
    run in their own folder); "up to date" means every output of the last run is there
    as it left it, so a deleted result or a cut-short notebook is made again. (The
    site test runs the real course this way, with the default cache.)"""
    root = _project(tmp_path / "course")
    proc = _precompute(root / "docs", LLMLAB_CACHE_DIR="relative/cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cache = root / "docs" / "relative" / "cache"
    page = cache / "site" / "en" / "notebooks" / "nb.md"
    assert "0.25" in page.read_text(encoding="utf-8")
    for lang in ("zh", "en"):  # the home page's lists (no lectures, no notebooks in its nav)
        for name in ("contents.md", "notebooks.md"):
            assert (cache / "site" / lang / name).read_text(encoding="utf-8") == "\n"
    # progress: what was run, how far along (one line each, flushed as they finish)
    assert re.search(r"^precompute: \[1/2\] attention\.run_dropout_demo", proc.stdout, re.M)
    assert re.search(r"^precompute: \[2/2\] nb\.py", proc.stdout, re.M)
    (result,) = cache.glob("*.pkl")
    result.unlink()
    (executed,) = (cache / "notebooks").glob("*.ipynb")
    executed.write_text("{", encoding="utf-8")  # cut short
    proc = _precompute(root / "docs", LLMLAB_CACHE_DIR="relative/cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\[\d/2\] attention\.run_dropout_demo", proc.stdout), proc.stdout
    assert re.search(r"\[\d/2\] nb\.py", proc.stdout), proc.stdout
    assert result.is_file() and json.loads(executed.read_text(encoding="utf-8"))["cells"]
    again = _precompute(root, LLMLAB_CACHE_DIR=str(cache))
    assert "up to date" in again.stdout, again.stdout + again.stderr


def test_an_example_edited_while_precompute_runs_is_one_line_and_made_next_time(
        tmp_path: Path) -> None:
    """The notebook here edits its own file when it runs, as a reader saving it
    meanwhile would. What runs is the text read when its key was made; the run ends
    with one line naming the file (no traceback, no report), and the next run
    executes the new text."""
    root = _project(tmp_path / "course")
    edits = ("# ---\n# jupyter:\n#   jupytext:\n#     formats: py:percent\n# ---\n\n"
             "# %%\nfrom pathlib import Path\n\n"
             "print('first')  # the text that runs first\n"
             "_ = Path('nb.py').write_text(Path('nb.py').read_text().replace('first', 'second'))\n")
    (root / "examples" / "nb.py").write_text(edits, encoding="utf-8")
    proc = _precompute(root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "nb.py was changed or added while precompute ran" in proc.stderr, proc.stderr
    cache = root / ".cache" / "llmlab"
    (executed,) = (cache / "notebooks").glob("*.ipynb")
    (output,) = json.loads(executed.read_text(encoding="utf-8"))["cells"][0]["outputs"]
    assert "".join(output["text"]) == "first\n"  # the text read first, not the edited one
    assert not (cache / "site" / "en" / "notebooks" / "nb.md").exists()
    assert "second" in (root / "examples" / "nb.py").read_text(encoding="utf-8")
    proc = _precompute(root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (cache / "site" / "en" / "notebooks" / "nb.md").read_text(encoding="utf-8")
    assert "second" in page and "first" not in page


def test_up_to_date_checks_every_output_and_removes_a_changed_one(tmp_path: Path) -> None:
    from llmlab.build.precompute import output_digests, report_path, up_to_date

    (tmp_path / "a.pkl").write_bytes(b"a")
    (tmp_path / "b.pkl").write_bytes(b"b")
    assert not up_to_date(tmp_path, "0" * 64)  # no report
    report_path(tmp_path, "0" * 64).parent.mkdir()
    report_path(tmp_path, "0" * 64).write_text(
        json.dumps({"outputs": output_digests(tmp_path, ["a.pkl", "b.pkl"])}), "utf-8")
    assert up_to_date(tmp_path, "0" * 64)
    (tmp_path / "b.pkl").write_bytes(b"B")
    assert not up_to_date(tmp_path, "0" * 64)
    assert (tmp_path / "a.pkl").exists() and not (tmp_path / "b.pkl").exists()


def test_outside_a_checkout_it_says_what_it_needs(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture) -> None:
    root = _project(tmp_path / "course")
    assert precompute.project_root(root / "examples") == root
    # elsewhere: the checkout llmlab is installed from (this one, an editable install)
    assert precompute.project_root(tmp_path) == ROOT
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(precompute, "project_root", lambda start=None: None)
    with pytest.raises(SystemExit) as exit_:
        precompute.main([])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no mkdocs.yml and docs/" in err
