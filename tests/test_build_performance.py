"""The fast paths of the build give the reference results (issue: build performance)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from llmlab import cache
from llmlab.experiments import multihead as mh


def test_seeds_trained_side_by_side_match_one_at_a_time() -> None:
    """train_copy_models (stacked) == train_copy_model per seed, up to rounding."""
    torch.set_num_threads(1)
    kwargs = dict(offsets=(1, 2, 4), steps=30)
    fast = mh.train_copy_models(3, (0, 1), **kwargs)
    for seed, model in zip((0, 1), fast):
        ref = mh.train_copy_model(3, seed, **kwargs)
        D = ref.attn.d_model
        for (name, a), (_, b) in zip(model.named_parameters(), ref.named_parameters()):
            if name == "attn.qkv.bias":
                # The key bias has a zero true gradient (softmax ignores a shift);
                # Adam turns its rounding noise into steps, so compare Q and V only.
                a, b = torch.cat([a[:D], a[2 * D:]]), torch.cat([b[:D], b[2 * D:]])
            assert torch.allclose(a, b, atol=1e-4), name
        x = mh._eval_batch(200, 12, 10)
        with torch.no_grad():
            for la, lb in zip(model(x)[0], ref(x)[0]):
                assert torch.allclose(la, lb, atol=1e-3)


def test_fast_path_gives_the_reference_accuracies() -> None:
    fast = mh.run_copy_runs.uncached(2, seeds=(0, 1), steps=40, n_eval=300, fast=True)
    ref = mh.run_copy_runs.uncached(2, seeds=(0, 1), steps=40, n_eval=300, fast=False)
    assert fast.n_params == ref.n_params
    for accs_fast, accs_ref in zip(fast.accuracy, ref.accuracy):
        for a, b in zip(accs_fast, accs_ref):
            assert abs(a - b) <= 2 / 300  # at most a couple of the 300×T predictions
    # what the heads look at (the notebook's maps, the lecture's profile)
    assert torch.allclose(torch.tensor(fast.attention), torch.tensor(ref.attention), atol=1e-3)
    assert torch.allclose(torch.tensor(fast.profile), torch.tensor(ref.profile), atol=1e-3)


# run_residual_ablation's defaults (the page's model), trained for 25 steps
DEEP = {"n_layers": 8, "d_model": 64, "n_heads": 4, "offset": 3, "vocab_size": 10,
        "seq_len": 12, "steps": 25, "lr": 1e-3, "batch_size": 64, "seed": 0}


@pytest.mark.parametrize("kind", mh.KINDS)
def test_residual_fast_path_follows_the_reference(kind: str) -> None:
    """Training in run_residual_variant: fast=True == fast=False (modules), to rounding."""
    torch.set_num_threads(1)
    fast, fast_collapse, fast_curve = mh._train_deep_model(kind, **DEEP, fast=True)
    ref, ref_collapse, ref_curve = mh._train_deep_model(kind, **DEEP, fast=False)
    assert fast_collapse == ref_collapse  # the same module, the same initial weights
    # Without residuals the representations have collapsed: the gradients are tiny
    # and largely rounding noise, which Adam scales up to full-size steps, so the
    # two paths drift apart faster (losses 1e-5 apart after 25 steps here, weights
    # 5e-5; with residuals 5e-7 and 2e-5), and from about step 50 on they are
    # different runs on the same plateau near ln 10: hence only 25 steps.
    atol = 1e-3 if kind == "no_residual" else 1e-4
    assert torch.allclose(torch.tensor(fast_curve), torch.tensor(ref_curve), atol=atol)
    D = DEEP["d_model"]
    for (name, a), (_, b) in zip(fast.named_parameters(), ref.named_parameters()):
        if name.endswith("attn.qkv.bias"):
            # the key bias has a zero true gradient (softmax ignores a shift), so
            # its Adam steps follow rounding noise: compare Q and V only
            a, b = torch.cat([a[:D], a[2 * D:]]), torch.cat([b[:D], b[2 * D:]])
        assert torch.allclose(a, b, atol=atol), name
    n_eval = 300
    n_predictions = n_eval * (DEEP["seq_len"] - DEEP["offset"])  # 2700
    hits = [round(mh._deep_accuracy(m, DEEP["offset"], n_eval) * n_predictions)
            for m in (fast, ref)]
    assert abs(hits[0] - hits[1]) <= 3  # at most a few predictions flip


def test_residual_ablation_passes_fast_to_every_part() -> None:
    for fast in (True, False):
        calls = cache.plan(mh.run_residual_ablation, steps=2, window=1, fast=fast)
        assert [kw["fast"] for _, kw in calls[:-1]] == [fast] * len(mh.KINDS)
    calls = cache.plan(mh.run_residual_ablation, steps=2, window=1)
    assert all(kw["fast"] is True for _, kw in calls[:-1])  # the default


def test_experiment_parts_compose_to_the_whole() -> None:
    calls = cache.plan(mh.run_why_multihead, heads=(1, 2), seeds=(0,), steps=5, n_eval=50)
    assert [fn.__name__ for fn, _ in calls] == ["run_copy_runs", "run_copy_runs",
                                                "run_why_multihead"]
    assert [kw["n_heads"] for _, kw in calls[:2]] == [1, 2]
    whole = mh.run_why_multihead.uncached(heads=(1, 2), seeds=(0,), steps=5, n_eval=50)
    parts = [mh.run_copy_runs.uncached(**kw) for _, kw in calls[:2]]
    assert whole.accuracy == [p.accuracy for p in parts]
    residual = cache.plan(mh.run_residual_ablation, steps=2, window=1)
    assert [kw.get("kind") for _, kw in residual[:-1]] == list(mh.KINDS)


def test_two_processes_compute_a_result_once(tmp_path: Path) -> None:
    """The per-key lock: concurrent callers wait for the one computing."""
    (tmp_path / "slow_demo.py").write_text(textwrap.dedent("""
        import time
        from llmlab.cache import cached
        @cached
        def slow(n: int = 1):
            time.sleep(2)
            return n
    """), encoding="utf-8")
    script = ("import slow_demo, llmlab.cache as c; slow_demo.slow(); "
              "print(c.RUN_LOG[-1].source)")
    env = {"PYTHONPATH": str(tmp_path), "LLMLAB_CACHE_DIR": str(tmp_path / "cache"),
           "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    sources = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert sources == ["computed", "disk"]


def test_no_residual_claims_hold_on_both_paths() -> None:
    """The full no-residual run, where the two paths become different runs.

    Its loss sits on a plateau at ln 10 where rounding differences grow, so after
    ~50 steps fast and reference are two samples of the same run (measured: last
    loss 2.259 vs 2.289, accuracy 14.3 % vs 11.2 %). The tolerance that matters
    is the page's: both must show the claims the lecture asserts.
    """
    torch.set_num_threads(1)
    for fast in (True, False):
        run = mh.run_residual_variant.uncached("no_residual", fast=fast)
        assert run.collapse > 0.99
        for window in (run.losses[:50], run.losses[-50:]):
            assert abs(sum(window) / 50 - math.log(10)) < 0.1, fast
        assert run.accuracy < 0.2, fast


def test_workers_start_with_the_costliest_parts_the_page_needs_last(build_hook) -> None:
    """Longest first (no long job left to run alone); each experiment's parts from its end."""
    hook = build_hook

    copies = [(7.0, "m", "copy", {"n_heads": h}) for h in (1, 2, 3, 6)]
    kinds = [(16.0, "m", "residual", {"kind": k}) for k in ("pre", "post", "none")]
    cheap = [[(0.0, "m", f"cheap{i}", {})] for i in range(2)]
    order = hook._schedule([cheap[0], copies, kinds, cheap[1]])
    assert [job[2] for job in order] == ["residual"] * 3 + ["copy"] * 4 + ["cheap0", "cheap1"]
    assert [job[3]["kind"] for job in order[:3]] == ["none", "post", "pre"]
    assert [job[3]["n_heads"] for job in order[3:7]] == [6, 3, 2, 1]
    # the experiments really declare these costs
    assert mh.run_residual_variant.cost > mh.run_copy_runs.cost > 0


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="the forkserver is used on Linux only (spawn elsewhere)")
def test_build_workers_start_with_torch_but_without_llmlab(build_hook) -> None:
    """The server the workers fork from outlives a `mkdocs serve` rebuild, so it may hold
    torch (imported once) but no llmlab module: a worker must import today's source."""
    import concurrent.futures as cf

    hook = build_hook
    query = "sorted(m for m in __import__('sys').modules if m.split('.')[0] in {names})"
    with cf.ProcessPoolExecutor(1, mp_context=hook._worker_context()) as pool:
        # eval travels by reference, so running it imports nothing of ours in the worker
        loaded = pool.submit(eval, query.format(names={"llmlab", "torch"})).result()
    assert "torch" in loaded
    assert [m for m in loaded if m.split(".")[0] == "llmlab"] == []


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="kernels are forked on Linux only (started afresh elsewhere)")
def test_notebook_kernels_fork_from_the_torch_server(build_hook, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A notebook's kernel is a forkserver child with torch loaded, yet runs where and
    with what jupyter_client asked for, reports errors, and is gone after shutdown."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    manager = build_hook._forked_kernel_manager()
    assert manager is not None
    monkeypatch.setenv("LLMLAB_KERNEL_PROBE", "set at launch")
    probe = ("import os, sys\n"
             "print('torch' in sys.modules, 'llmlab' in sys.modules, os.getcwd(), "
             "os.environ.get('LLMLAB_KERNEL_PROBE'), os.getpid(), sep='|')")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(probe),
        nbformat.v4.new_code_cell("import torch\nprint(int(torch.arange(4).sum()))"),
    ])
    client = NotebookClient(nb, kernel_name="python3", kernel_manager_class=manager,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    torch_loaded, llmlab_loaded, cwd, probe_value, pid = \
        nb.cells[0].outputs[0]["text"].strip().split("|")
    # torch before any cell imported it: forked from the server, not a fresh python
    assert (torch_loaded, llmlab_loaded) == ("True", "False")
    assert (cwd, probe_value) == (str(tmp_path), "set at launch")
    assert nb.cells[1].outputs[0]["text"] == "6\n"
    with pytest.raises(ProcessLookupError):  # shut down with the notebook
        os.kill(int(pid), 0)

    failing = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    with pytest.raises(CellExecutionError, match="ZeroDivisionError"):
        NotebookClient(failing, kernel_name="python3", kernel_manager_class=manager).execute()


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="the page's runner is a forkserver child, on Linux only")
def test_the_page_trains_in_a_child_of_the_worker_server(build_hook, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What the page computes itself (a costly part no worker started) runs in a forked
    child with the same result, and this process keeps the result."""
    torch.set_num_threads(1)  # as the child: the same kernels, the same numbers
    monkeypatch.setenv("LLMLAB_CACHE_DIR", str(tmp_path / "cache"))
    kwargs = {"n_heads": 2, "seeds": (0,), "steps": 5, "n_eval": 40}
    cache.set_runner(build_hook._run_in_child)
    try:
        got = mh.run_copy_runs(**kwargs)
        child_started = build_hook.STATE.runner is not None
    finally:
        build_hook._finish_prefetch()  # drops the runner, shuts its child down
    assert child_started and build_hook.STATE.runner is None
    assert cache.RUN_LOG[-1].source == "computed"
    assert got == mh.run_copy_runs.uncached(**kwargs)
    assert len(list((tmp_path / "cache").glob("*.pkl"))) == 1


def test_markdown_exec_conversions_are_kept_and_give_the_same_html(
        build_hook, monkeypatch: pytest.MonkeyPatch) -> None:
    """A serve rebuild (and the second language) reuses the HTML of unchanged outputs."""
    import markdown
    from markdown_exec._internal.rendering import MarkdownConverter
    from markupsafe import Markup

    monkeypatch.setattr(MarkdownConverter, "convert", MarkdownConverter.convert)  # undo after
    build_hook._install_conversion_memo()
    memo = build_hook._CONVERT_MEMO
    md = markdown.Markdown(extensions=["tables", "toc"])
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    first = MarkdownConverter(md).convert(table)
    assert "<table>" in first and len(memo) == 1
    again = MarkdownConverter(md).convert(table)
    assert again == first and isinstance(again, Markup) and len(memo) == 1
    # markdown-exec's stash placeholders are random: their contents decide
    one = MarkdownConverter(md).convert('x\n\n<div class="p1"></div>\n',
                                        stash={'<div class="p1"></div>': "<b>1</b>"})
    same = MarkdownConverter(md).convert('x\n\n<div class="p2"></div>\n',
                                         stash={'<div class="p2"></div>': "<b>1</b>"})
    other = MarkdownConverter(md).convert('x\n\n<div class="p3"></div>\n',
                                          stash={'<div class="p3"></div>': "<b>2</b>"})
    assert same == one and "<b>1</b>" in one and "<b>2</b>" in other and len(memo) == 3
    # a heading also goes to the page's table of contents: converted every time
    MarkdownConverter(md).convert("## Heading\n")
    assert len(memo) == 3


def test_search_entries_are_kept_per_page_and_follow_its_html(
        build_hook, monkeypatch: pytest.MonkeyPatch) -> None:
    """A serve rebuild reuses the search entries of a page whose HTML did not change."""
    from types import SimpleNamespace

    from material.plugins.search.plugin import SearchIndex

    parsed = []
    original = SearchIndex.add_entry_from_context
    monkeypatch.setattr(SearchIndex, "add_entry_from_context",  # undone after the test
                        lambda self, page: (parsed.append(page.url), original(self, page))[1])
    build_hook._install_search_memo()

    def page(text: str) -> SimpleNamespace:
        return SimpleNamespace(content=f"<h1 id='t'>Title</h1><p>{text}</p>", url="a/",
                               title="Title", meta={}, toc=[])

    first, again, edited = (SearchIndex(lang=["en"], separator=" ") for _ in range(3))
    first.add_entry_from_context(page("注意力 attention"))
    again.add_entry_from_context(page("注意力 attention"))
    edited.add_entry_from_context(page("残差 residual"))
    assert parsed == ["a/", "a/"]  # the unchanged page was not parsed again
    assert again.entries == first.entries and "attention" in first.entries[0]["text"]
    assert "residual" in edited.entries[0]["text"]
    again.entries[0]["text"] = "changed by a caller"  # the kept entries are copies
    assert first.entries != again.entries
    assert build_hook._SEARCH_MEMO and all(
        "changed" not in e["text"] for kept in build_hook._SEARCH_MEMO.values() for e in kept)
