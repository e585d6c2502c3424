"""llmlab.distributed: real gloo process groups on this machine, started and stopped.

DDP's gradients equal one process's gradients of the whole batch, FSDP holds half of
everything per rank and computes what DDP does, a failing or hanging rank stops the
launch with a clear error and leaves no process behind, a script that launches
(guarded by ``if __name__ == "__main__":`` or not, as a reader copies a lecture's
block) runs as ``python file.py``, and ``examples/train_ddp.py`` runs under
``torchrun`` on 2 processes and as a plain script (one process). The tests that set
up a process group do it in child processes, never in pytest's own.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch
import torch.distributed as dist
from torch import nn

from llmlab.distributed import (
    AllReduceTimer,
    WorkerError,
    all_reduce_seconds,
    init_distributed,
    launch,
    parallel_train,
    resolve_backend,
    shard_fsdp,
    wrap_ddp,
)
from llmlab.models.llama import LlamaConfig, TransformerLM
from llmlab.training import AdamW, cross_entropy, get_batch, train
from pages import python_blocks, read_page

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
CONFIG = LlamaConfig(vocab_size=64, context_length=16, d_model=32, num_layers=2,
                     num_heads=2, d_ff=64)
DATA = np.random.default_rng(0).integers(0, CONFIG.vocab_size, 4096).astype(np.int64)
TOLERANCE = dict(rtol=1e-5, atol=1e-6)
LR = 1e-3  # parallel_train's default, and the single process's below
# AdamW moves each weight by about lr a step, whatever its gradient's size: where a
# gradient is near zero, a difference in its last bits (the all-reduce sums in
# another order) moves the weight by a fraction of lr. Not averaging at all moves
# most weights by ~lr (each rank would follow its own half of the batch).
AFTER_ADAMW = dict(rtol=0.0, atol=1e-2 * LR)
TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                      "MASTER_ADDR", "MASTER_PORT")  # what makes a process a torchrun rank


# --------------------------------------------------------------------------
# functions the ranks run (module level: they are sent to the processes by name)
# --------------------------------------------------------------------------
def _whoami(tag: str) -> tuple[int, int, str, str, str]:
    return (dist.get_rank(), dist.get_world_size(), dist.get_backend(), tag,
            os.environ["LOCAL_RANK"])


def _fsdp_step_warnings() -> list[str]:
    """The warnings one step of a sharded model raises."""
    import warnings

    torch.manual_seed(0)
    model = shard_fsdp(TransformerLM(64, 16, 32, 2, 4, 64))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model(torch.randint(0, 64, (2, 16))).sum().backward()
    return [str(w.message) for w in caught]


def _raise_on_rank_1() -> None:
    if dist.get_rank() == 1:
        raise ValueError("boom on rank 1")
    dist.barrier()  # rank 0 would wait for rank 1 forever


def _exit_on_rank_1() -> None:
    if dist.get_rank() == 1:
        os._exit(3)
    dist.barrier()


def _hang_on_rank_1(folder: str) -> None:
    Path(folder, f"{dist.get_rank()}.pid").write_text(str(os.getpid()))
    if dist.get_rank() == 1:
        time.sleep(3600)
    dist.barrier()


def _timed_ddp_gradients(batch_size: int) -> dict[str, object]:
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = wrap_ddp(TransformerLM.from_config(CONFIG))
    timer = AllReduceTimer()
    model.register_comm_hook(None, timer.hook)
    x, y = get_batch(DATA, batch_size, CONFIG.context_length,
                     generator=torch.Generator().manual_seed(0))
    share = batch_size // world
    rows = slice(rank * share, (rank + 1) * share)
    cross_entropy(model(x[rows]), y[rows]).backward()
    grads = {n: p.grad.clone() for n, p in model.module.named_parameters()}
    numel = sum(p.numel() for p in model.parameters())
    return {"grads": grads, "seconds": list(timer.seconds),
            "nbytes": list(timer.nbytes), "numel": numel,
            "all_reduce": all_reduce_seconds(numel, repeats=2)}


def _single_process(steps: int, batch_size: int) -> tuple[list[float], dict, dict]:
    """``train`` on one process; the first batch's gradients; the final weights."""
    torch.manual_seed(0)
    model = TransformerLM.from_config(CONFIG)
    x, y = get_batch(DATA, batch_size, CONFIG.context_length,
                     generator=torch.Generator().manual_seed(0))
    cross_entropy(model(x), y).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    record = train(model, AdamW(model.parameters(), lr=LR), DATA, steps=steps,
                   batch_size=batch_size, seed=0)
    final = {n: p.detach().clone() for n, p in model.named_parameters()}
    return record.losses, grads, final


def _spy_on_train(strategy: str, batch_size: int) -> tuple[list, list[float], list]:
    """One rank of ``parallel_train`` with ``llmlab.training.train`` wrapped, in this
    rank only, to record each call's ``batch_rows`` and its result."""
    import llmlab.distributed as distributed
    import llmlab.training.loop as loop

    calls, records = [], []

    def spy(*args, **kwargs):
        calls.append(kwargs.get("batch_rows"))
        records.append(loop.train(*args, **kwargs))
        return records[-1]

    distributed.train = spy
    result = distributed._train_rank(
        CONFIG, DATA, strategy=strategy, steps=2, batch_size=batch_size,
        context_length=CONFIG.context_length, lr=LR, weight_decay=0.01,
        max_grad_norm=1.0, seed=0)
    return calls, result.local_losses, [r.losses for r in records]


def _descendants() -> list[psutil.Process]:
    """Child processes still running, but the fork servers (launch()'s, which lives as
    long as this process, and multiprocessing's) and multiprocessing's tracker: the
    ranks are the fork server's children, so they count."""
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            cmdline = " ".join(child.cmdline())
            if child.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.NoSuchProcess:
            continue
        if not any(server in cmdline for server in ("forkserver", "_serve()",
                                                    "resource_tracker")):
            alive.append(child)
    return alive


# --------------------------------------------------------------------------
# launching
# --------------------------------------------------------------------------
def test_launch_runs_every_rank_and_returns_their_results():
    results = launch(_whoami, ("hi",), world_size=2, timeout=60)
    assert results == [(0, 2, "gloo", "hi", "0"), (1, 2, "gloo", "hi", "1")]
    assert launch(_whoami, kwargs={"tag": "one"}, world_size=1) == [
        (0, 1, "gloo", "one", "0")]
    assert _descendants() == []


def test_a_sharded_model_steps_without_a_warning():
    # FSDP2 warns when the wrapped module returns a view; our lm_head's einsum did
    assert launch(_fsdp_step_warnings, world_size=1, timeout=60) == [[]]


def test_a_failing_rank_raises_its_traceback_and_stops_the_others():
    start = time.monotonic()
    with pytest.raises(WorkerError, match="rank 1 of 2 failed") as info:
        launch(_raise_on_rank_1, world_size=2, timeout=900)
    assert info.value.rank == 1 and "ValueError: boom on rank 1" in str(info.value)
    assert time.monotonic() - start < 600  # not the timeout: rank 0 was not waited for
    assert _descendants() == []


def test_a_rank_that_dies_is_reported():
    with pytest.raises(WorkerError, match="exited with code 3"):
        launch(_exit_on_rank_1, world_size=2, timeout=60)
    assert _descendants() == []


def test_a_hanging_rank_times_out_and_no_process_survives(tmp_path):
    # the timeout covers the ranks' start too: the fork server's (an interpreter
    # importing torch, slow on a busy machine) is done first, so that both ranks are
    # running fn, and have written their pids, when it ends
    assert launch(_whoami, ("warm",), world_size=2, timeout=600)
    timeout = 10.0
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"rank\(s\) \[0, 1\] of 2 did not finish"):
        launch(_hang_on_rank_1, (str(tmp_path),), world_size=2, timeout=timeout)
    elapsed = time.monotonic() - start
    assert timeout <= elapsed < timeout + 60  # the upper bound: a hang guard
    pids = [int(p.read_text()) for p in sorted(tmp_path.glob("*.pid"))]
    assert len(pids) == 2
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == \
            psutil.STATUS_ZOMBIE
    assert _descendants() == []


def _server_and_env(name: str) -> tuple[int, str | None]:
    return os.getppid(), os.environ.get(name)


@pytest.mark.skipif(os.name != "posix", reason="the fork server is POSIX's")
def test_ranks_are_forked_by_one_server_with_the_launchs_environment(monkeypatch):
    """Every launch of a process is served by one fork server (torch imported once),
    and a rank sees the environment the launch had, not the server's."""
    import llmlab.distributed as distributed

    monkeypatch.setenv("LLMLAB_TEST_LAUNCH", "first")
    first = launch(_server_and_env, ("LLMLAB_TEST_LAUNCH",), world_size=2)
    monkeypatch.setenv("LLMLAB_TEST_LAUNCH", "second")
    second = launch(_server_and_env, ("LLMLAB_TEST_LAUNCH",), world_size=2)
    server = distributed._SERVER["process"].pid
    assert first == [(server, "first")] * 2 and second == [(server, "second")] * 2


@pytest.mark.skipif(os.name != "posix", reason="the fork server is POSIX's")
def test_processes_forked_after_start_fork_server_launch_from_it_side_by_side(tmp_path):
    """start_fork_server() before a pool forks its workers: the workers' launches,
    at the same time, are all served by that one server, each rank with its own
    launch's environment (a request is written whole, never interleaved)."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(f"""
        import multiprocessing, os, sys
        from concurrent.futures import ProcessPoolExecutor

        sys.path[:0] = [{str(ROOT / "src")!r}, {str(TESTS)!r}]
        import llmlab.distributed as distributed
        from test_distributed import _server_and_env

        def job(i):
            os.environ["LLMLAB_TEST_LAUNCH"] = f"job {{i}}"
            return distributed.launch(_server_and_env, ("LLMLAB_TEST_LAUNCH",),
                                      world_size=2)

        if __name__ == "__main__":
            distributed.start_fork_server()
            server = distributed._SERVER["process"].pid
            with ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("fork")) as pool:
                results = list(pool.map(job, range(6)))
            assert results == [[(server, f"job {{i}}")] * 2 for i in range(6)], results
            print("ok")
        """), encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


def test_ranks_end_when_the_launching_process_is_killed(tmp_path):
    """A launch killed outright (no chance to stop its ranks) leaves none behind."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(f"""
        import sys

        sys.path[:0] = [{str(ROOT / "src")!r}, {str(TESTS)!r}]
        from llmlab.distributed import launch
        from test_distributed import _hang_on_rank_1

        launch(_hang_on_rank_1, ({str(tmp_path)!r},), world_size=2, timeout=3600)
        """), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 300  # a hang guard: the ranks start, then hang
        while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        pids = [int(p.read_text()) for p in sorted(tmp_path.glob("*.pid"))]
        assert len(pids) == 2
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 60  # they notice within a second or so
    while any(psutil.pid_exists(pid) and psutil.Process(pid).status() !=
              psutil.STATUS_ZOMBIE for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() !=
                   psutil.STATUS_ZOMBIE for pid in pids)


# --------------------------------------------------------------------------
# scripts that launch, as a reader runs them
# --------------------------------------------------------------------------
def _run_script(tmp_path: Path, code: str, *flags: str,
                pythonpath: bool = False) -> subprocess.CompletedProcess[str]:
    """``python [flags] script.py`` in an empty folder, a fresh env, no cache."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
    env.update(OMP_NUM_THREADS="1", LLMLAB_LANG="en")  # no LLMLAB_CACHE_DIR
    if pythonpath:
        env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run([sys.executable, *flags, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_lecture_block_launches_as_a_script_and_is_not_run_again(tmp_path):
    """The lecture's DDP check, copied into a file and run with ``python file.py``, no
    cache: its experiment launches 2 ranks. The block has no ``if __name__ ==
    "__main__":``, so a rank that ran the script would launch again (it once did)."""
    page = read_page("en", "lectures/distributed.md")
    code = next(b.code for b in python_blocks(page) if "run_ddp_check()" in b.code)
    proc = _run_script(tmp_path, 'print("the script ran")\n' + code, pythonpath=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("the script ran") == 1
    # as a terminal shows it: a text table, no Markdown or HTML
    assert proc.stdout.count("every rank's parameters bit-identical") == 1
    assert "| step |" not in proc.stdout and "<" not in proc.stdout


def test_a_guarded_script_launches_a_function_of_its_own(tmp_path):
    # fn and an argument's class are the script's own: each rank imports the script
    # as __mp_main__ (the guarded part does not run there), as multiprocessing does
    proc = _run_script(tmp_path, """
        import dataclasses

        import torch.distributed as dist

        from llmlab.distributed import launch

        print("imported as", __name__)


        @dataclasses.dataclass
        class Tag:
            text: str


        def rank_and_module(tag: Tag) -> tuple[int, Tag, str]:
            return dist.get_rank(), tag, __name__


        if __name__ == "__main__":
            print(launch(rank_and_module, (Tag("guarded"),), world_size=2))
        """, pythonpath=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines.count("imported as __main__") == 1
    assert "imported as __mp_main__" in lines
    assert lines[-1] == ("[(0, Tag(text='guarded'), '__mp_main__'), "
                         "(1, Tag(text='guarded'), '__mp_main__')]")


# --------------------------------------------------------------------------
# DDP and FSDP against one process
# --------------------------------------------------------------------------
def test_ddp_gradients_and_losses_equal_one_process_on_the_whole_batch():
    steps, batch = 3, 8
    ranks = parallel_train(CONFIG, DATA, strategy="ddp", world_size=2, steps=steps,
                           batch_size=batch)
    losses, grads, final = _single_process(steps, batch)
    for r in ranks:
        assert (r.strategy, r.backend, r.world_size) == ("ddp", "gloo", 2)
        for name, g in grads.items():
            torch.testing.assert_close(r.first_gradients[name], g, **TOLERANCE)
        assert r.losses == pytest.approx(losses, rel=1e-6)
        assert r.local_losses != r.losses  # each rank saw half of the batch
        for name, p in final.items():
            torch.testing.assert_close(r.final_parameters[name], p, **AFTER_ADAMW)
    # every rank took the same steps: bit-identical weights, the same loss record
    for name, p in ranks[0].final_parameters.items():
        assert torch.equal(p, ranks[1].final_parameters[name])
    assert ranks[0].losses == ranks[1].losses
    n = CONFIG.parameter_count()
    assert [r.parameter_bytes for r in ranks] == [4 * n, 4 * n]
    assert [r.optimizer_state_bytes for r in ranks] == [8 * n, 8 * n]


def test_fsdp_halves_what_each_rank_holds_and_matches_ddp():
    steps, batch = 3, 8
    fsdp = parallel_train(CONFIG, DATA, strategy="fsdp", world_size=2, steps=steps,
                          batch_size=batch)
    losses, grads, final = _single_process(steps, batch)
    n = CONFIG.parameter_count()  # every dimension is even: exact halves
    for r in fsdp:
        assert (r.strategy, r.parameter_type) == ("fsdp", "DTensor")
        assert (r.parameter_bytes, r.gradient_bytes, r.optimizer_state_bytes) == (
            2 * n, 2 * n, 4 * n)
        assert r.losses == pytest.approx(losses, rel=1e-6)
        for name, g in grads.items():
            torch.testing.assert_close(r.first_gradients[name], g, **TOLERANCE)
        for name, p in final.items():
            torch.testing.assert_close(r.final_parameters[name], p, **AFTER_ADAMW)
    assert fsdp[0].grad_norms == pytest.approx(fsdp[1].grad_norms)


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_every_rank_trains_with_the_courses_train_on_its_rows(strategy):
    """One training loop: a rank of parallel_train calls llmlab.training.train once, with
    its rows of the batch, and returns what train recorded (it fails if the distributed
    path runs a loop of its own)."""
    ranks = launch(_spy_on_train, (strategy, 8), world_size=2, timeout=120)
    for rank, (calls, local_losses, recorded) in enumerate(ranks):
        assert calls == [slice(4 * rank, 4 * rank + 4)]
        assert recorded == [local_losses] and len(local_losses) == 2


def test_parallel_train_launches_those_ranks_with_its_checked_arguments(monkeypatch):
    import llmlab.distributed as distributed

    seen = {}

    def no_processes(fn, args=(), kwargs=None, **options):
        seen.update(fn=fn, kwargs=kwargs, options=options)
        return []

    monkeypatch.setattr(distributed, "launch", no_processes)
    parallel_train(CONFIG, DATA, strategy="fsdp", world_size=4, steps=2, batch_size=8)
    assert seen["fn"] is distributed._train_rank  # the function spied on above
    assert seen["kwargs"] == dict(strategy="fsdp", steps=2, batch_size=8,
                                  context_length=CONFIG.context_length, lr=LR,
                                  weight_decay=0.01, max_grad_norm=1.0, seed=0)
    assert seen["options"] == dict(world_size=4, backend="auto", timeout=120.0)


def test_the_comm_hook_averages_like_ddp_and_times_each_bucket():
    batch = 8
    ranks = launch(_timed_ddp_gradients, (batch,), world_size=2, timeout=60)
    _, grads, _ = _single_process(1, batch)
    for r in ranks:
        for name, g in grads.items():
            torch.testing.assert_close(r["grads"][name], g, **TOLERANCE)
        assert len(r["seconds"]) >= 1 and all(s > 0 for s in r["seconds"])
        assert sum(r["nbytes"]) == 4 * r["numel"]
        assert r["all_reduce"] > 0


# --------------------------------------------------------------------------
# one process, and torchrun
# --------------------------------------------------------------------------
def _group_of_one() -> None:
    """``init_distributed`` without torchrun, in the process that calls it (a child)."""
    import faulthandler

    faulthandler.dump_traceback_later(90, exit=True)  # every thread's stack, then exit
    for name in TORCHRUN_VARIABLES:
        os.environ.pop(name, None)
    with pytest.raises(RuntimeError, match="no process group"):
        wrap_ddp(nn.Linear(2, 2))
    info = init_distributed("gloo", timeout=30)
    try:
        assert (info.rank, info.world_size, info.backend, info.device.type) == (
            0, 1, "gloo", "cpu")
        with pytest.raises(ValueError, match="no parameters"):
            wrap_ddp(nn.Sequential())
        with pytest.raises(ValueError, match="no parameters"):
            shard_fsdp(nn.Sequential())
        model = wrap_ddp(nn.Linear(2, 2))
        model(torch.ones(1, 2)).sum().backward()  # one rank: nothing to average
        del model  # DDP's reducer goes before the process group it uses
    finally:
        dist.destroy_process_group()


def test_init_distributed_without_torchrun_is_a_group_of_one():
    # In a child process, not in pytest's: a process group here would outlive a
    # failed assertion, and a collective or a teardown that never returns would stop
    # the whole test run (a CI run once stopped in this test until its time ran out).
    # A fork server's child: a clean process, not a fork of pytest's threads.
    child = multiprocessing.get_context("forkserver").Process(target=_group_of_one)
    child.start()
    child.join(timeout=150)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the group of one did not finish within 150 s (its stack: stderr)")
    assert child.exitcode == 0, "the child failed: its traceback is on stderr"


def _child_env() -> dict[str, str]:
    """This environment with ``src`` importable, one thread and no torchrun variables."""
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"),
                                           os.environ.get("PYTHONPATH", "")]))
    for name in TORCHRUN_VARIABLES:
        env.pop(name, None)
    return env


def _run_example(launcher: str, nproc: int) -> subprocess.CompletedProcess[str]:
    """``examples/train_ddp.py --steps 3`` under torchrun, or as a plain script."""
    script = [str(ROOT / "examples" / "train_ddp.py"), "--steps", "3"]
    if launcher == "python":
        command = [sys.executable, *script]
    else:
        torchrun = Path(sys.executable).with_name("torchrun")
        command = [str(torchrun)] if torchrun.exists() else [
            sys.executable, "-m", "torch.distributed.run"]
        command += ["--standalone", f"--nproc_per_node={nproc}", *script]
    return subprocess.run(command, cwd=ROOT, env=_child_env(), capture_output=True,
                          text=True, timeout=180)


@pytest.mark.parametrize("launcher, nproc", [("torchrun", 2), ("python", 1)])
def test_the_example_runs_under_torchrun_and_alone(launcher, nproc):
    proc = _run_example(launcher, nproc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rank in range(nproc):
        assert f"rank {rank}/{nproc} (gloo, cpu)" in proc.stdout
    assert f"DDP on {nproc} process(es) == one process: True" in proc.stdout
    assert "same weights on every rank: True" in proc.stdout


# --------------------------------------------------------------------------
# bad inputs name their argument
# --------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, name", [
    (lambda: launch(_whoami, ("x",), world_size=0), ValueError, "world_size"),
    (lambda: launch(_whoami, ("x",), world_size=2.0), TypeError, "world_size"),
    (lambda: launch(_whoami, ("x",), timeout=0), ValueError, "timeout"),
    (lambda: launch(_whoami, ("x",), timeout=-1.0), ValueError, "timeout"),
    (lambda: launch(_whoami, ("x",), threads=0), ValueError, "threads"),
    (lambda: launch("not a function"), TypeError, "fn"),
    (lambda: launch(_whoami, ["x"]), TypeError, "args"),
    (lambda: launch(_whoami, (lambda: 0,)), TypeError, "args must be picklable"),
    (lambda: launch(_whoami, ("x",), backend="mpi"), ValueError, "backend"),
    (lambda: resolve_backend("nccl", 1) if not torch.cuda.is_available()
     else resolve_backend("nccl", 10**6), ValueError, "nccl"),
    (lambda: init_distributed(timeout=0), ValueError, "timeout"),
    (lambda: wrap_ddp("model"), TypeError, "model"),
    (lambda: parallel_train(CONFIG, DATA, world_size=2, batch_size=3), ValueError,
     "batch_size"),
    (lambda: parallel_train(CONFIG, DATA, world_size=0), ValueError, "world_size"),
    (lambda: parallel_train({"d_model": 32}, DATA), TypeError, "config"),
    (lambda: parallel_train(CONFIG, DATA[:10]), ValueError, "train_data"),
    (lambda: parallel_train(CONFIG, DATA, strategy="zero"), ValueError, "strategy"),
    (lambda: parallel_train(CONFIG, DATA, strategy=None), TypeError, "strategy"),
    (lambda: parallel_train(CONFIG, DATA, strategy="fsdp", context_length=99),
     ValueError, "context_length"),
    (lambda: parallel_train(CONFIG, DATA, strategy="fsdp", steps=0), ValueError,
     "steps"),
    (lambda: parallel_train(CONFIG, DATA, strategy="fsdp", timeout=0.0), ValueError,
     "timeout"),
    (lambda: parallel_train(CONFIG, DATA, backend="mpi"), ValueError, "backend"),
    (lambda: parallel_train(CONFIG, DATA, weight_decay=-0.1), ValueError,
     "weight_decay"),
])
def test_bad_inputs_name_their_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()
    assert _descendants() == []


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
@pytest.mark.parametrize("data, match", [
    (np.r_[DATA, CONFIG.vocab_size],
     r"train_data must lie in \[0, 64\) \(vocab_size\), got values from 0 to 64"),
    (np.r_[DATA, -1], r"train_data must lie in \[0, 64\) \(vocab_size\), got values "
     r"from -1 to 63"),
    (torch.from_numpy(DATA) + 100, r"train_data must lie in \[0, 64\)"),
    (DATA.astype(np.float32), r"train_data must hold integer token ids, got dtype "
     r"float32"),
], ids=["id vocab_size", "id -1", "a tensor", "float ids"])
def test_token_ids_are_checked_before_any_process_starts(monkeypatch, strategy, data,
                                                         match):
    import llmlab.distributed

    def no_launch(*args, **kwargs):
        raise AssertionError("launch() was called with bad train_data")

    monkeypatch.setattr(llmlab.distributed, "launch", no_launch)
    with pytest.raises(ValueError, match=match):
        parallel_train(CONFIG, data, strategy=strategy)
