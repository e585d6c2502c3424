"""The fast paths of the build give the reference results (issue: build performance)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

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
