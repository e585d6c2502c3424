"""The content-addressed experiment cache never serves a result for changed code."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import llmlab
from llmlab.build import cache


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("LLMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LLMLAB_CACHE", raising=False)
    cache.clear_memory()
    yield
    cache.clear_memory()


CALLS: list[int] = []


@dataclasses.dataclass
class Result:
    values: list[float]
    tensor: torch.Tensor


@cache.cached
def experiment(n: int = 3, scale: float = 1.0, seed: int = 0) -> Result:
    CALLS.append(n)
    torch.manual_seed(seed)
    t = torch.randn(n) * scale
    return Result(values=t.tolist(), tensor=t)


def test_second_call_is_served_from_memory_then_disk(tmp_path: Path) -> None:
    CALLS.clear()
    first = experiment(4)
    second = experiment(4)
    assert CALLS == [4]
    assert first.values == second.values
    assert [r.source for r in cache.RUN_LOG] == ["computed", "memory"]
    assert len(list((tmp_path / "cache").glob("*.pkl"))) == 1
    cache.clear_memory()
    third = experiment(n=4)  # keyword or positional: same bound arguments, same key
    assert CALLS == [4]
    assert cache.RUN_LOG[-1].source == "disk"
    assert torch.equal(third.tensor, first.tensor)


@pytest.mark.parametrize("damage", [b"", b"not a pickle", b"\x80\x05K\x01."])
def test_an_unreadable_stored_result_is_computed_again(tmp_path: Path, damage: bytes,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A cut-short or overwritten entry (or one holding something else) counts as
    missing: it is removed and computed again, or refused as not precomputed."""
    CALLS.clear()
    first = experiment(5)
    (path,) = (tmp_path / "cache").glob("*.pkl")
    path.write_bytes(damage)
    cache.clear_memory()
    monkeypatch.setenv("LLMLAB_CACHE_MISS", "error")  # a build: only precompute computes
    with pytest.raises(cache.NotPrecomputedError, match="python -m llmlab.build.precompute"):
        experiment(5)
    assert not path.exists()  # removed: precompute will compute it
    monkeypatch.delenv("LLMLAB_CACHE_MISS")
    path.write_bytes(damage)
    again = experiment(5)
    assert CALLS == [5, 5] and again.values == first.values
    assert cache.load_stored(path) is not None  # stored again, readable


def test_arguments_and_defaults_are_part_of_the_key() -> None:
    assert cache.cache_key(experiment, 3) == cache.cache_key(experiment, n=3, seed=0)
    assert cache.cache_key(experiment, 3) != cache.cache_key(experiment, 4)
    assert cache.cache_key(experiment, 3) != cache.cache_key(experiment, 3, seed=1)
    assert cache.cache_key(experiment, 3, 1.0) != cache.cache_key(experiment, 3, 1.0000001)


def test_torch_version_is_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    before = cache.cache_key(experiment, 3)
    monkeypatch.setattr(cache, "_torch_version", lambda: "0.0.0-other")
    assert cache.cache_key(experiment, 3) != before


@cache.cached(machine_dependent=True)
def timing(n: int = 1) -> float:
    return float(n)


def test_a_machine_dependent_key_names_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A timing measured on one machine is never shown as another machine's."""
    plain, timed = cache.cache_key(experiment, 3), cache.cache_key(timing, 1)
    monkeypatch.setattr(cache, "machine_fingerprint", lambda: ["another", "machine"])
    assert cache.cache_key(experiment, 3) == plain
    assert cache.cache_key(timing, 1) != timed


@pytest.mark.parametrize("processes", [0, -1, 1.5, True, "ranks"])
def test_processes_must_be_a_count_or_an_argument_name(processes: object) -> None:
    with pytest.raises(ValueError, match=r"processes must .*got"):
        cache.cached(processes=processes)(timing.uncached)


def test_a_job_keeps_as_many_processes_busy_as_its_argument_says() -> None:
    from llmlab.build import manifest, scheduler

    [call] = manifest.experiment_calls(
        "from llmlab.experiments.distributed import time_ddp_communication\n"
        "time_ddp_communication(world_size=3, batch_size=6)\n", "lectures/x.md")
    [job] = scheduler.plan_jobs(call)
    assert job["machine"] and job["processes"] == 3


def test_a_wait_ends_when_precompute_has_exited(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page waiting for a result that precompute never stored fails once
    precompute has exited, though nothing has reaped it yet (it once waited
    forever), and waits while precompute runs."""
    monkeypatch.setenv("LLMLAB_CACHE_MISS", "wait")
    script = "import sys, time; time.sleep(float(sys.argv[1]))"
    for seconds in (0.0, 1.5):
        child = subprocess.Popen([sys.executable, "-c", script, str(seconds)])
        cache.wait_for(child)
        try:
            start = time.monotonic()
            with pytest.raises(cache.NotPrecomputedError, match="LLMLAB_CACHE_MISS=wait"):
                experiment(11)
            # it waited for precompute, and ended once it had exited (a hang guard)
            assert seconds <= time.monotonic() - start < seconds + 60
        finally:
            cache.wait_for(None)
            child.wait()
    start = time.monotonic()
    with pytest.raises(cache.NotPrecomputedError):  # no precompute to wait for
        experiment(11)
    assert time.monotonic() - start < 60  # it did not wait (a hang guard)


def test_a_miss_is_an_error_when_the_build_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages read what precompute stored; an unlisted call fails loudly, naming itself."""
    monkeypatch.setenv("LLMLAB_CACHE_MISS", "error")
    CALLS.clear()
    with pytest.raises(cache.NotPrecomputedError, match=r"experiment\(n=7, scale=1.0"):
        experiment(7)
    assert CALLS == []
    monkeypatch.delenv("LLMLAB_CACHE_MISS")
    experiment(7)  # computed and stored: now a hit even in the strict mode
    monkeypatch.setenv("LLMLAB_CACHE_MISS", "error")
    cache.clear_memory()
    assert experiment(7).values == experiment.uncached(7).values
    assert cache.RUN_LOG[-1].source == "disk" and CALLS == [7, 7]


def test_unhashable_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="argument 'n'"):
        cache.cache_key(experiment, object())


def test_switch_turns_the_disk_layer_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LLMLAB_CACHE", "0")
    assert not cache.disk_cache_enabled()
    experiment(5)
    assert not (tmp_path / "cache").exists()


def test_results_are_copies() -> None:
    first = experiment(3)
    first.values.append(99.0)
    assert experiment(3).values != first.values


def _fake_package(root: Path) -> Path:
    pkg = root / "llmlab"
    (pkg / "experiments").mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "experiments" / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "experiments" / "demo.py").write_text(textwrap.dedent("""
        from llmlab.blocks import block
        from ..norms import norm
        def run(): return block() + norm()
    """), encoding="utf-8")
    (pkg / "blocks.py").write_text("from llmlab import helpers\ndef block(): return 1\n",
                                   encoding="utf-8")
    (pkg / "helpers.py").write_text("X = 1\n", encoding="utf-8")
    (pkg / "norms.py").write_text("def norm(): return 2\n", encoding="utf-8")
    (pkg / "unrelated.py").write_text("Y = 1\n", encoding="utf-8")
    return pkg


def test_key_follows_the_code_the_experiment_imports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pkg = _fake_package(tmp_path)
    monkeypatch.setattr(cache, "_PACKAGE_DIR", pkg)
    deps = {p.relative_to(pkg).as_posix() for p in cache.dependency_files("llmlab.experiments.demo")}
    assert deps == {"__init__.py", "experiments/__init__.py", "experiments/demo.py",
                    "blocks.py", "helpers.py", "norms.py"}
    before = cache.code_hash("llmlab.experiments.demo")
    (pkg / "unrelated.py").write_text("Y = 2\n", encoding="utf-8")
    assert cache.code_hash("llmlab.experiments.demo") == before  # edit elsewhere: kept
    (pkg / "helpers.py").write_text("X = 2\n", encoding="utf-8")  # indirect dependency
    after_helper = cache.code_hash("llmlab.experiments.demo")
    assert after_helper != before
    (pkg / "norms.py").write_text("def norm(): return 3\n", encoding="utf-8")  # relative import
    assert cache.code_hash("llmlab.experiments.demo") != after_helper
    # the dependency list is kept between calls, until a file changes: a new import counts
    (pkg / "blocks.py").write_text("from llmlab import helpers, unrelated\n"
                                   "def block(): return 1\n", encoding="utf-8")
    deps = {p.relative_to(pkg).as_posix() for p in cache.dependency_files("llmlab.experiments.demo")}
    assert "unrelated.py" in deps
    changed = cache.code_hash("llmlab.experiments.demo")
    (pkg / "unrelated.py").write_text("Y = 3\n", encoding="utf-8")
    assert cache.code_hash("llmlab.experiments.demo") != changed


def test_key_follows_the_data_a_package_ships(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    pkg = _fake_package(tmp_path)
    (pkg / "weights").mkdir()
    (pkg / "weights" / "w.pt").write_bytes(b"v1")  # data of llmlab/__init__.py
    (pkg / "experiments" / "table.json").write_text("[]", encoding="utf-8")
    monkeypatch.setattr(cache, "_PACKAGE_DIR", pkg)
    deps = {p.relative_to(pkg).as_posix() for p in cache.dependency_files("llmlab.experiments.demo")}
    assert {"weights/w.pt", "experiments/table.json"} <= deps
    before, whole = cache.code_hash("llmlab.experiments.demo"), cache.source_hash()
    (pkg / "weights" / "w.pt").write_bytes(b"v2")  # a model retrained: same size
    os.utime(pkg / "weights" / "w.pt", ns=(1, 1))
    assert cache.code_hash("llmlab.experiments.demo") != before
    assert cache.source_hash() != whole


def test_edited_experiment_is_recomputed_not_served(tmp_path: Path, monkeypatch) -> None:
    """End to end: the same function name and arguments, new code, new result."""
    pkg = tmp_path / "pkgs" / "llmlab_edit_demo"
    pkg.mkdir(parents=True)
    module = pkg / "__init__.py"
    body = "from llmlab.build.cache import cached\n@cached\ndef run(seed: int = 0):\n    return {}\n"
    module.write_text(body.replace("{}", "1"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    import importlib

    mod = importlib.import_module("llmlab_edit_demo")
    assert mod.run() == 1
    module.write_text(body.replace("{}", "2"), encoding="utf-8")
    del sys.modules["llmlab_edit_demo"]
    cache.clear_memory()  # only the disk layer could now serve a stale result
    mod = importlib.import_module("llmlab_edit_demo")
    assert mod.run() == 2
    assert cache.RUN_LOG[-1].source == "computed"


def test_snippet_hash_covers_exactly_what_the_code_imports() -> None:
    """Page blocks are keyed by the llmlab source they can run, nothing else."""
    norm = "from llmlab.norm import RMSNorm\nprint(RMSNorm)"
    assert cache.snippet_hash(norm) == cache.snippet_hash("import llmlab.norm as n\nprint(n)")
    assert cache.snippet_hash(norm) != cache.snippet_hash("from llmlab.layers import Linear")
    assert cache.snippet_hash(norm) != cache.snippet_hash("import llmlab")
    # no llmlab import: no llmlab source in the key
    assert cache.snippet_hash("import math") == cache.snippet_hash("print(1)")
    # imports the text does not show: the whole package counts
    dynamic = "import importlib\nimportlib.import_module('llmlab.norm')"
    assert cache.snippet_hash(dynamic) == cache.source_hash()
    assert cache.snippet_hash("print(") == cache.source_hash()
    files = {p.relative_to(Path(llmlab.__file__).parent).as_posix()
             for p in cache.dependency_files("llmlab.experiments.multihead")}
    assert {"experiments/multihead.py", "models/gpt2.py"} <= files
    assert "norm.py" not in files and "position.py" not in files
    # the cache's own code and the renderers are not part of what it caches
    assert "build/cache.py" not in files and not any(f.startswith("report") for f in files)


def test_compute_skips_a_result_another_process_is_computing(tmp_path: Path) -> None:
    """A precompute worker neither waits for nor repeats what another process computes."""
    fcntl = pytest.importorskip("fcntl")  # the lock is POSIX-only (see cache._key_lock)
    key = cache.cache_key(experiment, n=5)
    lock = tmp_path / "cache" / f"{key}.lock"
    lock.parent.mkdir(parents=True)
    CALLS.clear()
    with lock.open("a+b") as held:  # what the other process holds while it computes
        fcntl.flock(held, fcntl.LOCK_EX)
        assert cache.compute(experiment, n=5) is None
    assert CALLS == []
    seconds = cache.compute(experiment, n=5)
    assert seconds is not None and seconds >= 0
    assert CALLS == [5]
    assert (tmp_path / "cache" / f"{key}.pkl").is_file()
    assert cache.compute(experiment, n=5) is None  # stored already: nothing to do
    assert CALLS == [5]
    assert experiment(n=5).values == experiment.uncached(n=5).values  # a reader gets it
    assert cache.RUN_LOG[-1].source == "disk"


def test_two_processes_compute_a_result_once(tmp_path: Path) -> None:
    """The per-key lock: a caller that arrives while another computes waits, then reads.

    The second process is started only once the first is inside the computation
    (it writes a file there and then waits), so without the lock both would
    compute: the body would run twice and the second would report "computed".
    """
    (tmp_path / "slow_demo.py").write_text(textwrap.dedent("""
        import os, time
        from pathlib import Path
        from llmlab.build.cache import cached
        HERE = Path(__file__).parent
        @cached
        def slow(n: int = 1):
            with open(HERE / "runs.txt", "a") as fh:
                fh.write(f"{os.getpid()}\\n")
            (HERE / "inside").touch()
            while not (HERE / "second-started").exists():
                time.sleep(0.05)
            time.sleep(1.0)  # the second process is now asking for the same key
            return n
    """), encoding="utf-8")
    script = ("import sys, slow_demo, llmlab.build.cache as c; slow_demo.slow(); "
              "print(c.RUN_LOG[-1].source)")
    env = {"PYTHONPATH": str(tmp_path), "LLMLAB_CACHE_DIR": str(tmp_path / "cache"),
           "PATH": "/usr/bin:/bin"}
    first = subprocess.Popen([sys.executable, "-c", script], env=env, text=True,
                             stdout=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (tmp_path / "inside").exists():
        assert time.monotonic() < deadline and first.poll() is None, "first never computed"
        time.sleep(0.05)
    second = subprocess.Popen([sys.executable, "-c", script], env=env, text=True,
                              stdout=subprocess.PIPE)
    (tmp_path / "second-started").touch()
    outputs = [p.communicate(timeout=120)[0].strip() for p in (first, second)]
    assert outputs == ["computed", "disk"]
    assert len((tmp_path / "runs.txt").read_text().split()) == 1  # the body ran once
