"""Train the course's base models with ``llmlab-train`` and ship them in the package.

    python scripts/train_base_models.py                  # both, on the CPU
    python scripts/train_base_models.py tang             # one of them
    python scripts/train_base_models.py --device cuda    # on a GPU

Each base model is one ``llmlab-train`` command, :data:`ARGUMENTS` below, on the
text it learns (``llmlab.pretrained.training_text``, written to a UTF-8 file first).
The run's folder is then exported to ``src/llmlab/pretrained/<name>/``: the
weights alone in float16 (``checkpoint.pt``, loadable by ``llmlab-generate``),
``llmlab-train``'s ``config.json`` with a ``provenance`` entry added (the command as
run, the corpus and its hash, the git commit, the torch and Python versions, the
device, the threads and the wall time), its ``metrics.json`` (the whole loss curve)
and ``tokenizer.json``. The new folder replaces the old one only once it is
complete, so a run that fails or is interrupted leaves the shipped model as it was.

``tests/test_pretrained.py`` reruns each recorded command for its first steps and
matches the recorded losses; if the code changes so that a model no longer loads,
retrain it here: never edit the shipped files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ARGUMENTS: dict[str, list[str]] = {
    "shakespeare": [
        "--vocab-size", "1024", "--context-length", "128", "--d-model", "128",
        "--num-layers", "4", "--num-heads", "4", "--batch-size", "16",
        "--steps", "1500", "--lr", "3e-3", "--weight-decay", "0.1",
        "--eval-every", "100", "--eval-batches", "8", "--seed", "0",
    ],
    "tang": [
        "--vocab-size", "2048", "--context-length", "128", "--d-model", "128",
        "--num-layers", "4", "--num-heads", "4", "--batch-size", "16",
        "--steps", "800", "--lr", "3e-3", "--weight-decay", "0.1",
        "--eval-every", "100", "--eval-batches", "8", "--seed", "0",
    ],
}
"""Each shipped model's ``llmlab-train`` settings (besides ``--data``, ``--out``,
``--device``): the base models, then their drafts (``<base>-draft``)."""


def _draft(base: list[str]) -> list[str]:
    """A draft model's settings ("Faster inference", speculative decoding): its base
    model's, on the same text with the same tokenizer (BPE trained on it with the same
    vocabulary size: the same merges), at half the width and half the depth."""
    halved = {"--d-model", "--num-layers", "--num-heads"}
    pairs = zip(base[::2], base[1::2])  # (flag, value)
    return [item for flag, value in pairs
            for item in (flag, str(int(value) // 2) if flag in halved else value)]


ARGUMENTS.update({name + "-draft": _draft(args) for name, args in list(ARGUMENTS.items())})


def _commit() -> str:
    """The checkout's commit, ``+changes`` if tracked files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def _device_name(device: str) -> str:
    """The device, and the processor as the training lecture's timings name it."""
    import torch

    from llmlab.experiments.training import machine_description

    if device == "cuda":
        return f"cuda ({torch.cuda.get_device_name()})"
    return f"cpu ({machine_description()}, {os.cpu_count()} cores)"


def train_base_model(name: str, device: str, work: Path) -> Path:
    """Train ``name`` in ``work`` and export it there; returns the exported folder."""
    import torch

    from llmlab.pretrained import (
        CHECKPOINT,
        CONFIG,
        METRICS,
        TOKENIZER,
        load_run,
        training_text,
    )
    from llmlab.training import save_checkpoint

    corpus = name.removesuffix("-draft")  # a draft learns its base model's text
    text = training_text(corpus)
    data = work / f"{corpus}.txt"
    data.write_text(text, encoding="utf-8")
    run = work / "run"
    command = ["llmlab-train", "--data", data.name, *ARGUMENTS[name],
               "--device", device, "--out", run.name]
    print(f"{name}: {' '.join(command)}", flush=True)
    commit = _commit()  # the code that trains, before anyone edits it
    start = time.perf_counter()
    # the installed command, as a reader would run it, in the folder it names
    subprocess.run([sys.executable, "-m", "llmlab.cli", "train", *command[1:]],
                   cwd=work, check=True)
    wall = time.perf_counter() - start

    model, _, record = load_run(run)
    record["provenance"] = {
        "command": command,
        "corpus": corpus,
        "data": f"llmlab.pretrained.training_text({corpus!r}) as UTF-8",
        "data_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "commit": commit,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": _device_name(device),
        "threads": torch.get_num_threads(),
        "wall_seconds": round(wall, 1),
    }
    record["training"]["data"] = data.name
    out = work / name
    out.mkdir()
    save_checkpoint(model.half(), None, record["training"]["steps"], out / CHECKPOINT,
                    extra={"config": json.dumps(record, ensure_ascii=False)})
    (out / CONFIG).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n",
                              encoding="utf-8")
    for file in (METRICS, TOKENIZER):
        if (run / file).exists():
            shutil.copy2(run / file, out / file)
    load_run(out)  # what is shipped loads
    return out


def ship(exported: Path, name: str) -> Path:
    """Replace ``src/llmlab/pretrained/<name>`` with ``exported`` (old kept on failure)."""
    target = ROOT / "src" / "llmlab" / "pretrained" / name
    staged = target.with_name(f".{name}.new")
    shutil.rmtree(staged, ignore_errors=True)
    shutil.copytree(exported, staged)
    old = target.with_name(f".{name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    staged.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", choices=[[], *ARGUMENTS],
                        help="which models (default: all)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args(argv)
    for name in args.names or list(ARGUMENTS):
        with tempfile.TemporaryDirectory(prefix=f"llmlab-{name}-") as tmp:
            target = ship(train_base_model(name, args.device, Path(tmp)), name)
        size = sum(p.stat().st_size for p in target.iterdir())
        print(f"{name}: shipped {target.relative_to(ROOT)} ({size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
