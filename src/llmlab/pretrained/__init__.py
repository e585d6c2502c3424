"""The course's base models, trained once by ``llmlab-train`` and shipped with llmlab.

Two models, :data:`NAMES`: ``"shakespeare"`` (tiny Shakespeare) and ``"tang"`` (the
Tang poems). Each is a folder as ``llmlab-train`` writes it, so ``llmlab-generate``
reads it like any run (and takes the name instead of a folder):

* ``checkpoint.pt``: the weights alone, in float16 (no optimizer state: a shipped
  model is for generating, fine-tuning and measuring, not for resuming);
* ``config.json``: the model, tokenizer and training settings ``llmlab-train``
  recorded, plus ``provenance``: the command, the corpus, the commit, the torch
  version, the device and the wall time of the training run;
* ``metrics.json``: the whole loss curve (training and validation);
* ``tokenizer.json``: the BPE tokenizer trained on the corpus.

Each base model has a **draft** beside it, ``<name>-draft``: a model half as
wide and half as deep, trained by ``llmlab-train`` on the same text with the same
tokenizer, for speculative decoding (:func:`load_draft`; "Faster inference").

``scripts/train_base_models.py`` made them and is the only way to change them: if
the code moves on and a model no longer fits (:func:`load` is strict), retrain it
with that script; never edit the files.

Taught on: "Training and generating text".
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch

from llmlab.checks import check_choice, check_path, check_type
from llmlab.data import corpus_text, tang_poems
from llmlab.models.llama import LlamaConfig, TransformerLM
from llmlab.tokenization import ByteTokenizer, Tokenizer
from llmlab.training.checkpoint import load_checkpoint
from llmlab.training.quality import poem_line_has_shape

__all__ = [
    "CHECKPOINT",
    "CONFIG",
    "DRAFT_SUFFIX",
    "METRICS",
    "NAMES",
    "TOKENIZER",
    "BaseModelCard",
    "card",
    "folder",
    "load",
    "load_draft",
    "load_run",
    "load_tokenizer",
    "read_config",
    "training_text",
]

NAMES: tuple[str, ...] = ("shakespeare", "tang")
"""The shipped base models, named after the corpus each learnt
(:data:`llmlab.data.CORPORA`)."""

CHECKPOINT, CONFIG, METRICS, TOKENIZER = (
    "checkpoint.pt", "config.json", "metrics.json", "tokenizer.json"
)
"""The files of a run folder, as ``llmlab-train`` names them."""

_DIR = Path(__file__).resolve().parent
_RETRAIN = "python scripts/train_base_models.py {name}"


DRAFT_SUFFIX = "-draft"
"""A draft's folder is its base model's name and this."""


def folder(name: str) -> Path:
    """The folder of the shipped base model ``name`` (one of :data:`NAMES`).

    Taught on: "Training and generating text".
    """
    check_choice("name", name, NAMES)
    return _DIR / name


def _run_folder(run: object) -> Path:
    path = Path(check_path("run", run))
    if not path.is_dir():
        raise ValueError(f"run ({str(run)!r}) is not a folder; expected the folder "
                         "llmlab-train wrote")
    return path


def training_text(name: str) -> str:
    """The text the base model ``name`` was trained on (its ``--data`` file).

    ``"shakespeare"``: tiny Shakespeare, whole (:func:`llmlab.data.corpus_text`).
    ``"tang"``: the 全唐诗 poems of :func:`llmlab.data.tang_poems` whose every line
    is regular five- or seven-character verse
    (:func:`llmlab.training.quality.poem_line_has_shape`), one couplet per line,
    in their order: a quality filter of the kind real pretraining data goes
    through. The others (temple hymns of four-character lines, mixed forms) are
    left out, so that the model learns the two regular forms.

    Taught on: "Training and generating text".
    """
    check_choice("name", name, NAMES)
    if name == "tang":
        return "\n".join(p for p in tang_poems()
                         if all(poem_line_has_shape(line) for line in p.split("\n")))
    return corpus_text(name)


def read_config(run: str | Path) -> dict[str, Any]:
    """The ``config.json`` of a run folder (``llmlab-train``'s, or a base model's).

    Raises:
        ValueError: The file is missing, is not JSON, or does not describe a
            model, a tokenizer and a training run.

    Taught on: "Training and generating text".
    """
    path = _run_folder(run) / CONFIG
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} is missing; expected the config.json llmlab-train "
                         "writes") from None
    except (OSError, ValueError) as err:
        raise ValueError(f"{path} cannot be read as JSON ({err})") from None
    if not (isinstance(record, dict) and all(
            isinstance(record.get(k), dict) for k in ("model", "tokenizer", "training"))):
        raise ValueError(f"{path} was not written by llmlab-train: it lacks the "
                         "model, tokenizer or training settings")
    return record


def load_tokenizer(run: str | Path, described: dict[str, Any]) -> Tokenizer | ByteTokenizer:
    """The tokenizer ``config.json`` describes: bytes, or the run's ``tokenizer.json``.

    Raises:
        ValueError: An unknown kind of tokenizer, or a ``tokenizer.json`` that
            cannot be loaded.

    Taught on: "Training and generating text".
    """
    run = _run_folder(run)
    check_type("described", described, dict, expected="the 'tokenizer' entry of config.json")
    kind = described.get("kind")
    if kind == "bytes":
        return ByteTokenizer()
    if kind != "bpe":
        raise ValueError(f"{Path(run) / CONFIG} names an unknown tokenizer "
                         f"{described!r}; expected kind 'bytes' or 'bpe'")
    try:
        return Tokenizer.load(Path(run) / TOKENIZER)
    except ValueError as err:
        raise ValueError(f"{Path(run) / TOKENIZER}: {err}") from None


def load_run(
    run: str | Path, device: str | torch.device = "cpu"
) -> tuple[TransformerLM, Tokenizer | ByteTokenizer, dict[str, Any]]:
    """``(model, tokenizer, config)`` of a run folder, the model in eval mode.

    The model is built from the recorded configuration and its weights loaded
    strictly (every name and shape must match the current code); the tokenizer
    must give ids the model has. ``llmlab-generate`` and :func:`load` read runs
    with this.

    Raises:
        ValueError: A file is missing or unreadable, the configuration is not a
            model's, or the weights or the tokenizer do not fit it.

    Taught on: "Training and generating text".
    """
    run = _run_folder(run)
    check_type("device", device, (str, torch.device), expected="a device such as 'cpu'")
    record = read_config(run)
    try:
        config = LlamaConfig(**record["model"])
    except (TypeError, ValueError) as err:
        raise ValueError(f"{run / CONFIG} does not describe a model ({err})") from None
    tokenizer = load_tokenizer(run, record["tokenizer"])
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"the tokenizer in {run} has {tokenizer.vocab_size} ids, more "
                         f"than the model's vocab_size ({config.vocab_size})")
    model = TransformerLM.from_config(config, device=device)
    load_checkpoint(run / CHECKPOINT, model, None, map_location=device)
    return model.eval(), tokenizer, record


@dataclasses.dataclass(frozen=True)
class BaseModelCard:
    """What a shipped base model is and how it was made, from its files alone.

    Attributes:
        name: One of :data:`NAMES`, also the corpus it learnt.
        config: The model's configuration.
        tokenizer: ``"bpe"`` or ``"bytes"``.
        training: ``llmlab-train``'s recorded settings (steps, batch size,
            schedule, tokens in each split, ...).
        iterations, losses: The training loss after each step.
        val_iterations, val_losses: The validation loss where it was measured.
        command: The ``llmlab-train`` command, as run.
        commit: The course's git commit it was trained at.
        torch: The torch version it was trained with.
        device: Where it trained (``"cpu"`` or ``"cuda"``) and on what.
        wall_seconds: The training command's wall time.
        checkpoint_bytes: Size of the shipped ``checkpoint.pt``.
        folder_bytes: Size of the whole folder.
    """

    name: str
    config: LlamaConfig
    tokenizer: str
    training: dict[str, Any]
    iterations: list[int]
    losses: list[float]
    val_iterations: list[int]
    val_losses: list[float]
    command: list[str]
    commit: str
    torch: str
    device: str
    wall_seconds: float
    checkpoint_bytes: int
    folder_bytes: int

    @property
    def steps(self) -> int:
        """Optimiser steps of the run."""
        return self.training["steps"]

    @property
    def tokens_seen(self) -> int:
        """Training tokens read: steps × batch size × context length."""
        return self.steps * self.training["batch_size"] * self.config.context_length

    @property
    def epochs(self) -> float:
        """How many times the run read its training split."""
        return self.tokens_seen / self.training["train_tokens"]


def card(name: str) -> BaseModelCard:
    """The :class:`BaseModelCard` of the shipped model ``name``; loads no weights.

    Taught on: "Training and generating text".
    """
    run = folder(name)
    record = read_config(run)
    provenance = record.get("provenance")
    if not isinstance(provenance, dict):
        raise ValueError(f"{run / CONFIG} lacks the provenance that "
                         f"scripts/train_base_models.py records; retrain with "
                         f"`{_RETRAIN.format(name=name)}`")
    metrics = json.loads((run / METRICS).read_text(encoding="utf-8"))
    return BaseModelCard(
        name=name, config=LlamaConfig(**record["model"]),
        tokenizer=record["tokenizer"]["kind"], training=record["training"],
        iterations=metrics["iterations"], losses=metrics["losses"],
        val_iterations=metrics["val_iterations"], val_losses=metrics["val_losses"],
        command=provenance["command"], commit=provenance["commit"],
        torch=provenance["torch"], device=provenance["device"],
        wall_seconds=provenance["wall_seconds"],
        checkpoint_bytes=(run / CHECKPOINT).stat().st_size,
        folder_bytes=sum(p.stat().st_size for p in run.iterdir() if p.is_file()),
    )


def load(name: str, device: str | torch.device = "cpu"
         ) -> tuple[TransformerLM, Tokenizer | ByteTokenizer]:
    """The shipped base model ``name`` and its tokenizer: ``(model, tokenizer)``.

    The model is a :class:`~llmlab.models.llama.TransformerLM` in eval mode, in
    float32, ready for :func:`llmlab.generation.generate`::

        model, tokenizer = llmlab.pretrained.load("tang")

    The weights load strictly into the current code. If they no longer fit (a
    renamed or reshaped parameter), this fails with a ``RuntimeError`` naming the
    command that retrains the model; the files are never to be edited by hand.

    Args:
        name: One of :data:`NAMES`.
        device: Where to put the model.

    Raises:
        TypeError: ``name`` is not a string, or ``device`` not a device.
        ValueError: ``name`` is not one of :data:`NAMES`.
        RuntimeError: The shipped files no longer fit the code.

    Taught on: "Training and generating text".
    """
    check_choice("name", name, NAMES)
    model, tokenizer, _ = _load_shipped(name, device, "base model")
    return model, tokenizer


def _load_shipped(folder_name: str, device: object, what: str
                  ) -> tuple[TransformerLM, Tokenizer | ByteTokenizer, dict[str, Any]]:
    """:func:`load_run` of a shipped folder; a folder that no longer fits the code is
    a ``RuntimeError`` that names the command retraining it."""
    check_type("device", device, (str, torch.device), expected="a device such as 'cpu'")
    try:
        return load_run(_DIR / folder_name, device)
    except ValueError as err:
        raise RuntimeError(
            f"the shipped {what} {folder_name!r} no longer fits the code ({err}); "
            f"retrain it with `{_RETRAIN.format(name=folder_name)}`"
        ) from None


def load_draft(name: str, device: str | torch.device = "cpu") -> TransformerLM:
    """The draft model of the base model ``name``, for speculative decoding.

    A :class:`~llmlab.models.llama.TransformerLM` in eval mode, trained by
    ``llmlab-train`` on the base model's text with the same tokenizer settings (so
    the same merges and ids: a test checks the files are equal), half its
    width and half its depth::

        target, tokenizer = llmlab.pretrained.load("tang")
        draft = llmlab.pretrained.load_draft("tang")

    Args:
        name: One of :data:`NAMES` (the base model's name).
        device: Where to put the model.

    Raises:
        TypeError: ``name`` is not a string, or ``device`` not a device.
        ValueError: ``name`` is not one of :data:`NAMES`.
        RuntimeError: The shipped files no longer fit the code.

    Taught on: "Faster inference".
    """
    check_choice("name", name, NAMES)
    model, _, _ = _load_shipped(name + DRAFT_SUFFIX, device, "draft model")
    return model
