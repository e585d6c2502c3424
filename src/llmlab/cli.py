"""Console commands: ``llmlab-train`` and ``llmlab-generate``.

``llmlab-train --data FILE --steps N --out DIR`` trains a Llama-style model on any
UTF-8 text file and writes ``DIR/checkpoint.pt``, ``DIR/config.json`` (model,
tokenizer and training settings), ``DIR/metrics.json`` (the loss curves) and, for a
BPE tokenizer, ``DIR/tokenizer.json``. ``llmlab-generate --checkpoint DIR --prompt
TEXT`` continues a prompt with it. Bad input gets a one-line error on stderr and
exit code 2, never a traceback. Nothing a user has is lost: a new run needs an
empty (or missing) ``--out`` unless ``--force``, and a checkpoint is replaced only
once its successor is complete.

This module is the program, so it writes to stdout and stderr (through
:func:`_out` and :func:`_err`); the library it calls never prints.

Taught on: "Training and generating text".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["CliError", "generate_main", "main", "train_main"]

CHECKPOINT, CONFIG, METRICS, TOKENIZER = (
    "checkpoint.pt", "config.json", "metrics.json", "tokenizer.json"
)
EOS = "<|endoftext|>"
"""llmlab.tokenization.END_OF_TEXT, repeated so that --help does not import torch (a
test keeps the two equal)."""
DEVICES = ("cpu", "cuda", "mps")
BASE_MODELS = ("shakespeare", "tang")
"""llmlab.pretrained.NAMES, repeated so that --help does not import torch (a test
keeps the two equal)."""

# model settings: flag -> (LlamaConfig field, default for a new run)
MODEL_FLAGS = {
    "context_length": ("context_length", 128),
    "d_model": ("d_model", 128),
    "num_layers": ("num_layers", 4),
    "num_heads": ("num_heads", 4),
    "num_kv_heads": ("num_kv_heads", None),  # None: one per query head (multi-head)
    "d_ff": ("d_ff", None),  # None: SwiGLU's 8/3 · d_model, rounded up to 16
    "vocab_size": ("vocab_size", 256),
}


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")


class CliError(Exception):
    """Bad input: reported as one line on stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage block) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise CliError(message)


class _HelpFormatter(argparse.HelpFormatter):
    """``--help`` shows the default of every option that takes a value."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("default" in text or action.required or action.nargs == 0
                or action.default in (None, argparse.SUPPRESS)):
            return text
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    if not 0 < value < math.inf:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _nonnegative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    if not 0 <= value < math.inf:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _fraction(text: str) -> float:
    value = _positive_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1], got {text}")
    return value


def _run(prog: str, body, argv: Sequence[str] | None) -> int:
    """Run ``body(argv)``; report bad input on one line and return its exit code."""
    try:
        return body(argv)
    except CliError as err:
        _err(f"{prog}: error: {err}")
        return 2
    except (ValueError, TypeError, OSError) as err:  # the library's, on bad input
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        _err(f"{prog}: error: {first}")
        return 2
    except KeyboardInterrupt:
        _err(f"{prog}: interrupted")
        return 130


# --- llmlab-train -------------------------------------------------------------------


def _model_default(flag: str) -> str:
    new = MODEL_FLAGS[flag][1]
    return f"default: {new} for a new run, the checkpoint's on --resume"


def _train_parser() -> _Parser:
    p = _Parser(
        prog="llmlab-train",
        description="Train a small Llama-style language model on a UTF-8 text file.",
        formatter_class=_HelpFormatter,
    )
    p.add_argument("--data", required=True, type=Path, metavar="FILE",
                   help="UTF-8 text file to train on")
    p.add_argument("--steps", required=True, type=_positive_int, metavar="N",
                   help="total optimiser steps; a resumed run continues up to it, "
                   "on the schedule of its first run (past that, at the floor rate)")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="checkpoint folder; a new run needs it missing or empty")
    p.add_argument("--stop-at", type=_positive_int, metavar="N",
                   help="stop after step N, on the schedule of --steps (a later "
                   "--resume continues it); default: --steps")
    p.add_argument("--resume", action="store_true",
                   help="continue the run that llmlab-train saved in --out")
    p.add_argument("--force", action="store_true",
                   help="start a new run in a folder that is not empty, overwriting "
                   "llmlab-train's files there")
    p.add_argument("--device", default="cpu", choices=DEVICES,
                   help="where to train")
    p.add_argument("--context-length", type=_positive_int,
                   help=f"tokens per window ({_model_default('context_length')})")
    p.add_argument("--vocab-size", type=_positive_int,
                   help="256: byte-level; more: a BPE tokenizer trained on --data "
                   f"({_model_default('vocab_size')})")
    p.add_argument("--d-model", type=_positive_int,
                   help=f"model width ({_model_default('d_model')})")
    p.add_argument("--num-layers", type=_positive_int,
                   help=f"Transformer blocks ({_model_default('num_layers')})")
    p.add_argument("--num-heads", type=_positive_int,
                   help=f"attention heads per block ({_model_default('num_heads')})")
    p.add_argument("--num-kv-heads", type=_positive_int,
                   help="key/value heads per block, a divisor of --num-heads: fewer is "
                        "grouped-query attention, 1 multi-query (default: --num-heads "
                        "for a new run, the checkpoint's on --resume)")
    p.add_argument("--d-ff", type=_positive_int,
                   help="SwiGLU hidden width (default: 8/3 of --d-model, rounded up to "
                   "a multiple of 16, for a new run, the checkpoint's on --resume)")
    p.add_argument("--batch-size", type=_positive_int, default=16,
                   help="windows per optimiser step")
    p.add_argument("--lr", type=_positive_float, default=3e-3,
                   help="peak learning rate; warm-up, then cosine to a tenth of it "
                   "at --steps; a resumed run keeps its schedule")
    p.add_argument("--weight-decay", type=_nonnegative_float, default=0.1,
                   help="AdamW's decoupled weight decay")
    p.add_argument("--max-grad-norm", type=_positive_float, default=1.0,
                   help="clip the global gradient norm to this")
    p.add_argument("--eval-every", type=_positive_int, default=100,
                   help="validate (and save a checkpoint) every this many steps")
    p.add_argument("--eval-batches", type=_positive_int, default=8,
                   help="batches per validation")
    p.add_argument("--validation-fraction", type=_fraction, default=0.1,
                   help="share of --data held out for validation, from its end")
    p.add_argument("--seed", type=int, default=0,
                   help="seeds the initial weights and the batches")
    return p


def _read_text(path: Path) -> str:
    if not path.exists():
        raise CliError(f"--data {path} does not exist")
    if not path.is_file():
        raise CliError(f"--data {path} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise CliError(f"--data {path} is not UTF-8 text ({err.reason} at byte "
                       f"{err.start})") from None
    except OSError as err:
        raise CliError(f"--data {path} cannot be read: {err.strerror}") from None
    if not text:
        raise CliError(f"--data {path} is empty")
    return text


def _available_device(name: str) -> str:
    """``name`` (argparse chose it among cpu, cuda, mps) if this machine has it."""
    import torch

    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available(),
        "mps": getattr(torch.backends, "mps", None) is not None
        and torch.backends.mps.is_available(),
    }
    if not available[name]:
        raise CliError(f"--device {name} is not available on this machine "
                       "(try --device cpu)")
    return name


def _resumed_record(args: argparse.Namespace) -> dict | None:
    """On ``--resume``, the config.json in ``--out`` (``None`` for a new run);
    an ``--out`` a run would lose files in is refused.

    A new run needs ``--out`` missing or empty (else ``--force``); ``--resume``
    needs the checkpoint and config.json that llmlab-train wrote there.
    """
    out: Path = args.out
    if args.resume and args.force:
        raise CliError("--resume and --force exclude each other")
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out} exists and is not a folder")
    if args.resume:
        if not (out / CHECKPOINT).is_file():
            raise CliError(f"--resume: there is no {CHECKPOINT} in {out}")
        record = _read_json(out / CONFIG)
        if not (isinstance(record, dict)
                and all(isinstance(record.get(k), dict)
                        for k in ("model", "tokenizer", "training"))
                and "schedule" in record["training"]):
            raise CliError(f"--resume: {out / CONFIG} was not written by llmlab-train")
        return record
    held = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if held and not args.force:
        if CHECKPOINT in held:
            raise CliError(f"{out} already holds a checkpoint; pass --resume to "
                           "continue it or --force to overwrite it")
        shown = ", ".join(held[:4]) + (f" and {len(held) - 4} more" * (len(held) > 4))
        raise CliError(f"--out {out} is not empty (it holds {shown}); a new run needs "
                       "a missing or empty folder, or --force to overwrite "
                       "llmlab-train's files there")
    return None


def _model_settings(args: argparse.Namespace, saved: dict | None) -> dict[str, int]:
    """The model's LlamaConfig fields: the saved ones on resume, else flags/defaults."""
    given = {flag: getattr(args, flag) for flag in MODEL_FLAGS}
    if saved is not None:
        for flag, value in given.items():
            field = MODEL_FLAGS[flag][0]
            had = saved[field] if field != "num_kv_heads" else (
                saved.get(field) or saved["num_heads"])  # no entry: multi-head
            if value is not None and value != had:
                option = "--" + flag.replace("_", "-")
                raise CliError(
                    f"the checkpoint in {args.out} has {option} {had}, "
                    f"not {value}: it is of another configuration"
                )
        return dict(saved)
    settings = {MODEL_FLAGS[f][0]: (v if v is not None else MODEL_FLAGS[f][1])
                for f, v in given.items()}
    if settings["d_ff"] is None:
        settings["d_ff"] = 16 * math.ceil(8 * settings["d_model"] / 3 / 16)
    if settings["vocab_size"] < 256:
        raise CliError(f"--vocab-size must be at least 256 (the bytes), got "
                       f"{settings['vocab_size']}")
    if settings["d_model"] % settings["num_heads"]:
        raise CliError(f"--d-model ({settings['d_model']}) must be divisible by "
                       f"--num-heads ({settings['num_heads']})")
    kv_heads = settings.pop("num_kv_heads")
    if kv_heads is not None and settings["num_heads"] % kv_heads:
        raise CliError(f"--num-kv-heads ({kv_heads}) must divide --num-heads "
                       f"({settings['num_heads']})")
    if kv_heads not in (None, settings["num_heads"]):  # multi-head: no entry, as before
        settings["num_kv_heads"] = kv_heads
    from llmlab.checks import check_rope_size  # here: --help does not import torch

    try:
        check_rope_size("--d-model / --num-heads", settings["d_model"] // settings["num_heads"])
    except ValueError as error:
        raise CliError(str(error)) from None
    settings["rope_theta"] = 10_000.0
    return settings


# tokenizers ------------------------------------------------------------------------


def _new_tokenizer(data: Path, vocab_size: int) -> tuple[Any, dict]:
    """A tokenizer for ``data`` and its description for config.json."""
    try:
        from llmlab.tokenization import ByteTokenizer, Tokenizer, train_bpe
    except ImportError:
        raise CliError("--vocab-size above 256 needs llmlab.tokenization (BPE), "
                       "which this installation lacks; use --vocab-size 256") from None
    if vocab_size == 256:
        return ByteTokenizer(), {"kind": "bytes", "special_tokens": []}
    try:
        vocab, merges = train_bpe(data, vocab_size, [EOS])
    except ValueError as err:
        raise CliError(f"training the BPE tokenizer failed: {err}") from None
    return Tokenizer(vocab, merges, [EOS]), {"kind": "bpe", "special_tokens": [EOS]}


def _encode(tokenizer: Any, text: str):
    import numpy as np

    ids = tokenizer.encode(text)
    dtype = np.uint16 if tokenizer.vocab_size <= 2**16 else np.int32
    return np.asarray(ids, dtype=dtype)


def _write_json(path: Path, blob: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(blob, indent=1, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CliError(f"{path} is missing") from None
    except (OSError, ValueError) as err:
        raise CliError(f"{path} cannot be read as JSON ({err})") from None


def _train(argv: Sequence[str] | None) -> int:
    args = _train_parser().parse_args(argv)
    if args.stop_at is not None and args.stop_at > args.steps:
        raise CliError(f"--stop-at ({args.stop_at}) must not exceed --steps "
                       f"({args.steps})")
    text = _read_text(args.data)
    saved = _resumed_record(args)
    device = _available_device(args.device)
    settings = _model_settings(args, saved["model"] if saved else None)

    import torch

    from llmlab.models.llama import LlamaConfig, TransformerLM
    from llmlab.training import (
        AdamW,
        TrainEvent,
        cosine_schedule,
        load_checkpoint,
        save_checkpoint,
        split_tokens,
        train,
    )

    if saved is not None:
        from llmlab.pretrained import load_tokenizer

        described = saved["tokenizer"]
        tokenizer = load_tokenizer(args.out, described)
    else:
        tokenizer, described = _new_tokenizer(args.data, settings["vocab_size"])
    ids = _encode(tokenizer, text)
    context = settings["context_length"]
    try:
        train_ids, val_ids = split_tokens(ids, args.validation_fraction)
    except ValueError:
        train_ids = val_ids = ids[:0]
    if min(len(train_ids), len(val_ids)) <= context:
        raise CliError(
            f"--data {args.data} is {len(ids)} tokens: too short for --context-length "
            f"{context} (both the training split and the held-out "
            f"{args.validation_fraction:g} need more than {context} tokens)"
        )
    config = LlamaConfig(**settings)
    torch.manual_seed(args.seed)
    model = TransformerLM.from_config(config, device=device)
    optimizer = AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95),
                      weight_decay=args.weight_decay)
    generator = torch.Generator().manual_seed(args.seed)
    done = 0
    if saved is not None:
        try:
            done = load_checkpoint(args.out / CHECKPOINT, model, optimizer,
                                   generator=generator, map_location=device)
        except (RuntimeError, ValueError) as err:
            raise CliError(_load_error(args.out / CHECKPOINT, err)) from None
        if done >= args.steps:
            raise CliError(f"the checkpoint in {args.out} has done {done} steps; "
                           f"pass --steps above {done} to continue it")
    stop = args.steps if args.stop_at is None else args.stop_at
    if not done < stop <= args.steps:
        raise CliError(f"--stop-at must lie in {done + 1}..{args.steps} (after the "
                       f"{done} steps done, up to --steps), got {stop}")
    args.out.mkdir(parents=True, exist_ok=True)
    record = {
        "llmlab_version": _version(),
        "model": settings,
        "tokenizer": described,
        "eos_token_id": tokenizer.special_ids.get(EOS) if described["kind"] == "bpe"
        else None,
        "training": {
            "data": str(args.data), "steps": args.steps, "batch_size": args.batch_size,
            "schedule": saved["training"]["schedule"] if saved is not None else {
                "max_learning_rate": args.lr, "min_learning_rate": args.lr / 10,
                "warmup_iters": min(100, args.steps // 10),
                "cosine_cycle_iters": args.steps,
            },
            "weight_decay": args.weight_decay, "max_grad_norm": args.max_grad_norm,
            "validation_fraction": args.validation_fraction, "seed": args.seed,
            "train_tokens": len(train_ids), "val_tokens": len(val_ids),
        },
    }
    schedule = cosine_schedule(**record["training"]["schedule"])
    metrics = (_read_json(args.out / METRICS) if saved is not None
               and (args.out / METRICS).exists() else
               {"iterations": [], "losses": [], "val_iterations": [], "val_losses": []})
    if described["kind"] == "bpe" and saved is None:
        # _check_out let this run write here (an empty folder, or --force)
        tokenizer.save(args.out / TOKENIZER, overwrite=True)

    def checkpoint(iteration: int) -> None:
        record["iteration"] = iteration
        # save_checkpoint replaces the file only once the new one is complete
        save_checkpoint(model, optimizer, iteration, args.out / CHECKPOINT,
                        generator=generator, extra={"config": json.dumps(record)})
        _write_json(args.out / CONFIG, record)
        _write_json(args.out / METRICS, metrics)

    # the header first: a progress bar drawn before it would run into it
    _err(f"llmlab-train: {len(train_ids):,} training and {len(val_ids):,} "
         f"validation tokens ({described['kind']}), "
         f"{sum(p.numel() for p in model.parameters()):,} parameters, "
         f"steps {done + 1}..{stop} of {args.steps} on {device}")

    from tqdm import tqdm

    bar = tqdm(total=args.steps, initial=done, unit="step", desc="llmlab-train",
               dynamic_ncols=True, disable=None)
    last_val: list[float] = []

    def progress(event: TrainEvent) -> None:
        metrics["iterations"].append(event.iteration)
        metrics["losses"].append(event.loss)
        if event.val_loss is not None:
            metrics["val_iterations"].append(event.iteration)
            metrics["val_losses"].append(event.val_loss)
            last_val[:] = [event.val_loss]
            checkpoint(event.iteration)
        bar.set_postfix(loss=f"{event.loss:.3f}",
                        val=f"{last_val[0]:.3f}" if last_val else "-", refresh=False)
        bar.update(1)

    try:
        train(model, optimizer, train_ids, steps=stop - done,
              batch_size=args.batch_size, context_length=context, val_data=val_ids,
              eval_every=args.eval_every, eval_batches=args.eval_batches,
              lr_schedule=schedule, max_grad_norm=args.max_grad_norm,
              generator=generator, start_iteration=done, device=device,
              callback=progress)
    finally:
        bar.close()
    path = args.out / CHECKPOINT
    _out(f"checkpoint: {path} (step {stop}, validation loss "
         f"{last_val[0]:.4f})")
    _out(f"try: llmlab-generate --checkpoint {args.out} --prompt "
         f"{_example_prompt(text)!r}")
    return 0


def _load_error(path: Path, err: Exception) -> str:
    """The one line for a checkpoint that ``load_checkpoint`` refused."""
    first = (str(err).strip().splitlines() or [type(err).__name__])[0]
    if first.startswith("src "):  # the file itself
        marker = " is not a checkpoint written by save_checkpoint"
        reason = "it" + first[first.index(marker):] if marker in first else first
        return f"{path} cannot be loaded: {reason}"
    if first.startswith(("model does not fit", "optimizer does not fit")):
        return f"{path} does not fit its {CONFIG} (another configuration?): {first}"
    return first  # config.json or tokenizer.json, named in the message


def _example_prompt(text: str) -> str:
    words = text.split()
    return " ".join(words[:2]) if words else "Hello"


def _version() -> str:
    from llmlab import __version__

    return __version__


# --- llmlab-generate ----------------------------------------------------------------


def _generate_parser() -> _Parser:
    p = _Parser(prog="llmlab-generate",
                description="Continue a prompt with a model trained by llmlab-train, "
                "or with one of the course's base models.",
                formatter_class=_HelpFormatter)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", type=Path, metavar="DIR",
                        help="folder written by llmlab-train (or its checkpoint.pt)")
    source.add_argument("--model", choices=BASE_MODELS,
                        help="a base model shipped with llmlab, by name")
    p.add_argument("--prompt", required=True, metavar="TEXT", help="text to continue")
    p.add_argument("--max-new-tokens", type=_positive_int, default=200,
                   help="tokens to add at most (fewer if the end-of-text token comes)")
    p.add_argument("--temperature", type=_positive_float, default=0.8,
                   help="divides the logits: below 1 sharper, above 1 flatter")
    p.add_argument("--top-k", type=_positive_int,
                   help="sample among the k most likely tokens (default: all)")
    p.add_argument("--top-p", type=_fraction,
                   help="sample among the most likely tokens whose probabilities add "
                   "up to p (default: all)")
    p.add_argument("--greedy", action="store_true",
                   help="always take the most likely token")
    p.add_argument("--seed", type=int, default=0, help="seeds the sampling")
    p.add_argument("--device", default="cpu", choices=DEVICES,
                   help="where to run the model")
    p.add_argument("--no-kv-cache", action="store_true",
                   help="recompute the whole text at every step")
    return p


def _generate(argv: Sequence[str] | None) -> int:
    args = _generate_parser().parse_args(argv)
    if not args.prompt:
        raise CliError("--prompt is empty; give some text to continue")
    if args.model is not None:
        from llmlab.pretrained import folder as base_model_folder

        folder = base_model_folder(args.model)
    else:
        folder = args.checkpoint
        if folder.is_file():
            folder = folder.parent
        if not folder.is_dir():
            raise CliError(f"--checkpoint {args.checkpoint} does not exist")
        if not (folder / CHECKPOINT).is_file():
            raise CliError(f"--checkpoint {folder} holds no {CHECKPOINT}")
    device = _available_device(args.device)

    import torch

    from llmlab.generation import generate
    from llmlab.pretrained import load_run

    try:
        model, tokenizer, record = load_run(folder, device)
    except ValueError as err:
        raise CliError(_load_error(folder / CHECKPOINT, err)) from None
    ids = tokenizer.encode(args.prompt)
    if max(ids) >= model.vocab_size:
        raise CliError(f"the tokenizer in {folder} does not fit the model's "
                       f"vocab_size ({model.vocab_size})")
    try:
        new = generate(model, ids, args.max_new_tokens, greedy=args.greedy,
                       temperature=args.temperature, top_k=args.top_k,
                       top_p=args.top_p, eos_token_id=record.get("eos_token_id"),
                       generator=torch.Generator().manual_seed(args.seed),
                       use_kv_cache=not args.no_kv_cache)
    except (TypeError, ValueError) as err:
        raise CliError(str(err)) from None
    sys.stdout.write(args.prompt + tokenizer.decode(new) + "\n")
    return 0


# --- entry points -------------------------------------------------------------------


def train_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``llmlab-train``; returns the exit code.

    Taught on: "Training and generating text".
    """
    return _run("llmlab-train", _train, argv)


def generate_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``llmlab-generate``; returns the exit code.

    Taught on: "Training and generating text".
    """
    return _run("llmlab-generate", _generate, argv)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m llmlab.cli train|generate ...``: the two commands in one.

    Taught on: "Training and generating text".
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"train": train_main, "generate": generate_main}
    if not argv or argv[0] not in commands:
        _err("usage: python -m llmlab.cli {train,generate} ...")
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
