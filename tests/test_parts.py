"""An experiment's declared cache parts are the cached calls its body makes.

A build computes the parts :func:`llmlab.build.cache.plan` names side by side,
then the experiment, which finds them in the cache. A cached call the body makes
that the plan does not name would be computed late, in the parent's process; a
declared part the body does not call would be computed for nothing. So whenever
a body runs (a build's worker, a page, a test), the cached calls it made
(:attr:`RunRecord.caller`) are compared with its plan, and a mismatch is an
error: nothing lists the experiments a second time, every one the pages call is
checked when the build computes it. Here, the check itself, on toy experiments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from llmlab.build import cache


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("LLMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LLMLAB_CACHE", raising=False)
    monkeypatch.delenv("LLMLAB_CACHE_MISS", raising=False)
    cache.clear_memory()
    yield
    cache.clear_memory()


# --- toy experiments, agreeing and disagreeing with their parts -------------------
@cache.cached
def toy_part(n: int) -> int:
    return n * n


def _toy_parts(n: int) -> list:
    return [(toy_part, {"n": n})]


@cache.cached(parts=_toy_parts)
def toy_agrees(n: int = 2) -> int:
    return sum(cache.part_results(_toy_parts, n))


@cache.cached(parts=_toy_parts)
def toy_other_arguments(n: int = 2) -> int:
    return toy_part(n + 1)  # not the part it declares


@cache.cached(parts=_toy_parts)
def toy_calls_more(n: int = 2) -> int:
    return toy_part(n) + toy_part(n + 1)


@cache.cached(parts=_toy_parts)
def toy_calls_nothing(n: int = 2) -> int:
    return n


@cache.cached
def toy_undeclared(n: int = 2) -> int:
    return toy_part(n)  # a cached call, and no parts at all


@cache.cached(parts=lambda n: [(toy_agrees, {"n": n})])
def toy_reads_a_part_of_its_part(n: int = 2) -> int:
    return toy_agrees(n) + toy_part(n)  # toy_part(n) is planned inside toy_agrees


def test_a_body_that_calls_its_parts_is_computed() -> None:
    assert toy_agrees(n=3) == 9
    assert toy_reads_a_part_of_its_part(n=3) == 18
    cache.clear_memory()
    assert cache.compute(toy_agrees, n=5) is not None  # a build's worker, the same check


@pytest.mark.parametrize("fn, unplanned, uncalled", [
    (toy_other_arguments, "toy_part", "toy_part"),
    (toy_calls_more, "toy_part", "no"),
    (toy_calls_nothing, "no other", "toy_part"),
    (toy_undeclared, "toy_part", "no"),
])
def test_a_body_that_disagrees_with_its_parts_fails_and_stores_nothing(
        fn: Callable[..., Any], unplanned: str, uncalled: str, tmp_path: Path) -> None:
    for run in (lambda: fn(n=3), lambda: cache.compute(fn, n=4)):
        with pytest.raises(ValueError, match=r"parts=") as err:
            run()
        message = str(err.value)
        assert message.startswith(f"{__name__}.{fn.__name__}(n=")
        called, _, declared = message.partition("and did not call")
        assert unplanned in called.split("its body called")[1] and uncalled in declared
    stored = {p.name for p in (tmp_path / "cache").glob("*.pkl")}
    parents = {f"{cache.cache_key(fn, n=n)}.pkl" for n in (3, 4)}
    assert not stored & parents  # what the body called may be stored; the parent is not


def test_the_check_reads_the_calls_of_one_body() -> None:
    toy_agrees(n=4)
    part, parent = cache.RUN_LOG
    assert cache.parts_mismatch(toy_agrees, {"n": 4}, [part], parent.key) == ([], [])
    assert cache.parts_mismatch(toy_agrees, {"n": 5}, [part], parent.key) == (
        [f"{__name__}.toy_part"], [f"{__name__}.toy_part"])  # 4's square is not 5's part


def test_a_record_names_the_cached_call_whose_body_made_it() -> None:
    toy_agrees(n=4)
    part, parent = cache.RUN_LOG
    assert (part.name, parent.name) == (f"{__name__}.toy_part", f"{__name__}.toy_agrees")
    assert part.caller == parent.key == cache.cache_key(toy_agrees, n=4)
    assert parent.caller is None
    toy_part(n=4)  # from outside any experiment, from memory
    assert cache.RUN_LOG[-1].caller is None and cache.RUN_LOG[-1].source == "memory"
