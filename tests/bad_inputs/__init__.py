"""Each lecture's bad inputs, registered in a file of its own.

``tests/bad_inputs/<topic>.py`` defines

* ``CASES``: the bad inputs against the public names of that topic's modules, made
  with ``case`` below (see ``tests/test_bad_inputs.py`` for what a case checks);
* ``GOOD`` (optional): controls, the same calls done right, which must go through;
* ``EXEMPT`` (optional): public names of those modules without a case -> why.

The topics follow the course's lectures, and a case goes to the file of the module
its target is defined in:

* ``attention.py``: llmlab.attention, llmlab.experiments.attention,
  llmlab.report.attention ("Self-attention from scratch");
* ``multihead.py``: llmlab.experiments.multihead, llmlab.report.multihead;
* ``building_blocks.py``: llmlab.norm, llmlab.feed_forward, llmlab.position,
  llmlab.experiments.building_blocks, llmlab.report.building_blocks;
* ``tokenization.py``: llmlab.tokenization, llmlab.experiments.tokenization,
  llmlab.report.tokenization;
* ``training.py``: llmlab.training, llmlab.generation, llmlab.kv_cache,
  llmlab.experiments.training, llmlab.report.training;
* ``finetune.py``: llmlab.finetune (LoRA, supervised examples, and
  ``SupervisedData``, which llmlab.training.data defines for the training loop)
  ("Fine-tuning");
* ``alignment.py``: llmlab.alignment (DPO: ``sequence_logprobs``, ``dpo_loss``,
  ``implicit_reward_accuracy``) ("Preference alignment");
* ``inference.py``: llmlab.inference (weight quantization, speculative decoding)
  ("Faster inference");
* ``distributed.py``: llmlab.flops, llmlab.memory, llmlab.hardware,
  llmlab.distributed, llmlab.experiments.distributed, llmlab.report.distributed;
* ``core.py``: what several lectures share: llmlab.checks, llmlab.functional,
  llmlab.layers, llmlab.params, the two model families (llmlab.models.gpt2, built
  on the multi-head lecture, and llmlab.models.llama, assembled from the building
  blocks; both are trained, sized and sharded by later lectures), llmlab.data,
  llmlab.build.provenance, llmlab.build.precompute, the report layer's shared package
  (llmlab.report) and the diagrams drawn for several lectures (llmlab.report.diagrams).

A target whose module path names a topic (``llmlab.report.training.*``,
``llmlab.tokenization.bpe.*``) must sit in that topic's file
(``test_cases_live_in_the_file_of_their_topic``). A new lecture ``x`` with modules
``llmlab.x``, ``llmlab.experiments.x``, ``llmlab.report.x`` adds
``tests/bad_inputs/x.py`` and edits nothing shared: ``tests/test_bad_inputs.py`` finds
every file here. The files' names do not start with ``test_``, so pytest does not
collect them; case ids must be unique across all files (checked when they are
collected).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

import llmlab.models.gpt2 as gpt2
import llmlab.models.llama as llama
from llmlab.attention import MultiHeadAttention
from llmlab.tokenization import vocab_from_merges
from llmlab.training import AdamW

HERE = Path(__file__).resolve().parent

V, T = ValueError, TypeError
NAN = float("nan")


@dataclass(frozen=True)
class Case:
    """One bad input: ``call()`` raises ``error``, names ``arg``, matches ``match``."""

    id: str
    target: str  # the public name the mistake is made against
    call: Callable[[], object] = field(repr=False)
    error: type[Exception]
    arg: str
    match: str


def case(id: str, target: str, call: Callable[[], object], error: type[Exception],
         arg: str, match: str) -> Case:
    return Case(id, target, call, error, arg, match)


# --- small objects the cases are made against -----------------------------------
def _x(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(*shape, dtype=dtype)


def _ids(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.long)


def _gpt2_lm() -> gpt2.TransformerLM:
    return gpt2.TransformerLM(vocab_size=10, context_length=4, d_model=8, n_layers=1,
                              n_heads=2)


def _llama_lm() -> llama.TransformerLM:
    return llama.TransformerLM(vocab_size=10, context_length=4, d_model=8,
                               num_layers=1, num_heads=2, d_ff=16)


def _mha() -> MultiHeadAttention:
    return MultiHeadAttention(d_in=4, d_out=4, context_length=6, dropout=0.0, num_heads=2)


def _bytes_vocab() -> dict[int, bytes]:
    return vocab_from_merges([])


def _opt(model: nn.Module) -> AdamW:
    return AdamW(model.parameters())


def _tokens() -> np.ndarray:
    return np.arange(64) % 10


# --- the loader --------------------------------------------------------------------
def topics() -> list[str]:
    """The files here (without ``.py``), sorted, so that every pytest-xdist worker
    collects the same cases in the same order."""
    return sorted(m.name for m in pkgutil.iter_modules([str(HERE)])
                  if not m.name.startswith("_"))


def shown(topic: str) -> str:
    """The file as a maintainer types it (``tests/bad_inputs/x.py``)."""
    return f"tests/bad_inputs/{topic}.py"


def topic_of(name: str) -> str | None:
    """The topic a public name's module path names (``llmlab.report.training.x`` ->
    ``training``), or None (a core module such as ``llmlab.checks``)."""
    names = set(topics())
    module = name.split(".")[1:-1]
    return next((part for part in module if part in names), None)


@dataclass(frozen=True)
class Collected:
    """Every file's CASES, GOOD and EXEMPT, and the file each entry comes from."""

    cases: list[Case]
    good: list[tuple[str, Callable[[], object]]]
    exempt: dict[str, str]
    where: dict[str, str]  # case id -> topic
    exempt_where: dict[str, str]  # exempt name -> topic


def collect() -> Collected:
    cases: list[Case] = []
    good: list[tuple[str, Callable[[], object]]] = []
    exempt: dict[str, str] = {}
    where: dict[str, str] = {}
    good_where: dict[str, str] = {}
    exempt_where: dict[str, str] = {}
    for topic in topics():
        module = importlib.import_module(f"{__name__}.{topic}")
        file = shown(topic)
        if not isinstance(getattr(module, "CASES", None), list):
            raise TypeError(f"{file} must define CASES, a list of case(...)")
        for c in module.CASES:
            if not isinstance(c, Case):
                raise TypeError(f"{file}: CASES must hold case(...), got {c!r}")
            if c.id in where:
                raise ValueError(f"case id {c.id!r} of {file} is already used in "
                                 f"{shown(where[c.id])}")
            where[c.id] = topic
            cases.append(c)
        for name, call in getattr(module, "GOOD", []):
            if name in good_where:
                raise ValueError(f"GOOD id {name!r} of {file} is already used in "
                                 f"{shown(good_where[name])}")
            good_where[name] = topic
            good.append((name, call))
        for name, why in getattr(module, "EXEMPT", {}).items():
            if name in exempt_where:
                raise ValueError(f"{name} is EXEMPT in {file} and in "
                                 f"{shown(exempt_where[name])}")
            exempt_where[name] = topic
            exempt[name] = why
    return Collected(cases, good, exempt, where, exempt_where)
