"""An experiment's declared cache parts are the cached calls its body makes.

A build computes the parts :func:`llmlab.build.cache.plan` names side by side,
then the experiment, which finds them in the cache. A cached call the body makes
that the plan does not name is computed late, in the parent's process (and, in
the site's build, refused as not precomputed); a declared part the body does not
call is computed for nothing. Each experiment that declares parts is run here,
with cheap arguments and an empty cache, and the cached calls its body made
(:attr:`RunRecord.caller`) are compared with its plan.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any, Callable

import pytest

import llmlab.experiments
from llmlab.build import cache


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("LLMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LLMLAB_CACHE", raising=False)
    monkeypatch.delenv("LLMLAB_CACHE_MISS", raising=False)
    cache.clear_memory()
    yield
    cache.clear_memory()


def parts_mismatch(fn: Callable[..., Any], **kwargs: Any) -> tuple[list[str], list[str]]:
    """Run ``fn(**kwargs)`` afresh; ``(called but not planned, declared but not called)``.

    The body may call a part's own parts (they are computed before it too), so a
    call counts as planned when it is anywhere in ``plan(fn, **kwargs)``; every
    part ``fn`` declares must be called by the body itself.
    """
    cache.clear_memory()  # the parts stay on disk; fn's own result must be computed
    fn(**kwargs)
    [top] = [r for r in cache.RUN_LOG if r.caller is None]
    assert top.source == "computed", "the body did not run: the cache is not empty"
    called = {r.key: r.name for r in cache.RUN_LOG if r.caller == top.key}
    planned = {cache.cache_key(f, **kw) for f, kw in cache.plan(fn, **kwargs)[:-1]}
    bound = cache._bound_arguments(fn, (), kwargs)
    declared = {cache.cache_key(f, **kw): f"{f.__module__}.{f.__qualname__}"
                for f, kw in fn.parts(**bound)}
    return (sorted(name for key, name in called.items() if key not in planned),
            sorted(name for key, name in declared.items() if key not in called))


# --- the check, on toy experiments that disagree with their parts ------------------
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


@cache.cached(parts=lambda n: [(toy_agrees, {"n": n})])
def toy_reads_a_part_of_its_part(n: int = 2) -> int:
    return toy_agrees(n) + toy_part(n)  # toy_part(n) is planned inside toy_agrees


def test_the_check_passes_when_the_body_calls_its_parts() -> None:
    assert parts_mismatch(toy_agrees, n=3) == ([], [])
    assert parts_mismatch(toy_reads_a_part_of_its_part, n=3) == ([], [])


def test_the_check_fails_when_the_body_and_its_parts_disagree() -> None:
    name = f"{__name__}.toy_part"
    assert parts_mismatch(toy_other_arguments, n=3) == ([name], [name])
    assert parts_mismatch(toy_calls_more, n=3) == ([name], [])
    assert parts_mismatch(toy_calls_nothing, n=3) == ([], [name])


def test_a_record_names_the_cached_call_whose_body_made_it() -> None:
    toy_agrees(n=4)
    part, parent = cache.RUN_LOG
    assert (part.name, parent.name) == (f"{__name__}.toy_part", f"{__name__}.toy_agrees")
    assert part.caller == parent.key == cache.cache_key(toy_agrees, n=4)
    assert parent.caller is None
    toy_part(n=4)  # from outside any experiment, from memory
    assert cache.RUN_LOG[-1].caller is None and cache.RUN_LOG[-1].source == "memory"


# --- every experiment of the course that declares parts ----------------------------
def _tiny_settings():
    from llmlab.experiments.training import TinyLMSettings

    return TinyLMSettings(vocab_size=300, context_length=8, d_model=8, num_layers=1,
                          num_heads=2, d_ff=16, batch_size=2, steps=2, warmup_iters=1)


CHEAP: dict[str, Callable[[], dict[str, Any]]] = {
    "multihead.run_why_multihead": lambda: dict(
        heads=(1, 2), seeds=(0,), offsets=(1,), seq_len=4, d_model=4, steps=1,
        batch_size=2, n_eval=4),
    "multihead.run_residual_ablation": lambda: dict(
        kinds=("pre_ln", "no_residual"), n_layers=1, d_model=4, n_heads=2, offset=1,
        seq_len=4, steps=1, batch_size=2, n_eval=4, window=1),
    "tokenization.run_corpus_training": lambda: dict(
        num_merges=4, en_chars=500, zh_chars=300, merge_steps=(0, 4), heldout_chars=200),
    "tokenization.run_chinese_tokenizers": lambda: dict(
        num_merges=4, en_chars=500, zh_chars=300, heldout_chars=200),
    "training.run_training_run": lambda: dict(
        corpus="tang", steps=2, vocab_size=260, batch_size=2, context_length=8,
        d_model=8, num_layers=1, num_heads=2, d_ff=16, eval_every=1,
        sample_rows=(1, 1, 1), sample_tokens=2),
    # its part is the lecture's Shakespeare run (about 0.65 s of BPE, a few of training)
    "training.run_sampling": lambda: dict(max_new_tokens=2, n_top=2),
    "training.time_training_throughput": lambda: dict(
        repeats=1, steps=1, settings=_tiny_settings()),
    "distributed.run_ddp_check": lambda: dict(steps=1, batch_size=2),
    "distributed.run_fsdp_check": lambda: dict(steps=1, batch_size=2),
}
"""Cheap arguments per experiment (``module.function`` under ``llmlab.experiments``)."""


def _experiments_with_parts() -> dict[str, Callable[..., Any]]:
    found = {}
    for info in pkgutil.iter_modules(llmlab.experiments.__path__):
        module = importlib.import_module(f"llmlab.experiments.{info.name}")
        for name, obj in inspect.getmembers(module, callable):
            if (getattr(obj, "parts", None) is not None and hasattr(obj, "uncached")
                    and obj.__module__ == module.__name__):
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_experiment_with_parts_has_cheap_arguments_here() -> None:
    found = _experiments_with_parts()
    assert set(found) == set(CHEAP), "add the new experiment's cheap arguments to CHEAP"


@pytest.mark.parametrize("name", sorted(CHEAP))
def test_an_experiments_body_calls_what_its_parts_declare(name: str) -> None:
    fn = _experiments_with_parts()[name]
    assert parts_mismatch(fn, **CHEAP[name]()) == ([], [])
