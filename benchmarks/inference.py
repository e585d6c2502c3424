"""Generation speed of the base models: plain, quantized and speculative, per device.

    OMP_NUM_THREADS=1 python benchmarks/inference.py                 # CPU, 3 repetitions
    python benchmarks/inference.py --devices cpu cuda --reps 5       # on a GPU machine

For each shipped base model (:mod:`llmlab.pretrained`) and each device, over
``--reps`` repetitions (median, min, max), greedy decoding of ``--new-tokens``
tokens from the start of a held-out line:

* plain :func:`llmlab.generation.generate`, with the KV cache and without it;
* the same after :func:`llmlab.inference.quantize_weights` at 8 and 4 bits (a
  scale per row) and at 4 bits in groups of 32 columns (the widths 128 and 352 of
  the base models' layers share no larger power of two), with the weight bytes and
  how many tokens it writes before its text first leaves the float model's;
* :func:`llmlab.inference.speculative_generate` for ``k`` = 1, 2, 4, 8, with the
  base model's shipped draft (:func:`llmlab.pretrained.load_draft`); against plain
  decoding without the KV cache too,
  since the speculative loop here recomputes the window on each pass: tokens/s,
  acceptance rate, target forward passes per generated token, and whether the text
  equals the target's own greedy text (it must, up to float rounding on a GPU).

The base models are small (about a million parameters): on a GPU each forward pass
costs little more than launching its kernels, so these figures say what the
methods cost in passes and launches, not what they save on a 7B model. Nothing
here is a page's number: the pages compute their own, on the CPU, at build time.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))  # this checkout's llmlab, not an installed one

import torch  # noqa: E402

from llmlab.experiments.inference import QUANTIZATIONS  # noqa: E402
from llmlab.generation import generate  # noqa: E402
from llmlab.inference import quantize_weights, speculative_generate  # noqa: E402
from llmlab.pretrained import NAMES, load, load_draft, training_text  # noqa: E402

KS = (1, 2, 4, 8)


def _stats(values: list[float]) -> str:
    return (f"median {statistics.median(values):10.1f}  min {min(values):10.1f}  "
            f"max {max(values):10.1f}")


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _timed(fn: Callable[[], object], reps: int, device: str) -> tuple[list[float], object]:
    """Seconds of each of ``reps`` calls of ``fn`` after one warm-up call, and the
    last call's result."""
    fn()
    _sync(device)
    seconds = []
    for _ in range(reps):
        start = time.perf_counter()
        out = fn()
        _sync(device)
        seconds.append(time.perf_counter() - start)
    return seconds, out


def bench(name: str, device: str, reps: int, new_tokens: int) -> None:
    model, tokenizer = load(name, device)
    draft = load_draft(name, device)
    text = training_text(name)
    held_out = text[len(text) * 9 // 10:]
    prompt = tokenizer.encode(held_out[held_out.index("\n") + 1:][:12])
    print(f"\n## {name} on {device} ({sum(p.numel() for p in model.parameters()):,} "
          f"parameters; {len(prompt)} prompt tokens, {new_tokens} new, greedy)")
    if device == "cpu":
        print(f"  torch threads: {torch.get_num_threads()}")
    rows = []

    def row(label: str, seconds: list[float], extra: str = "") -> None:
        rates = [new_tokens / s for s in seconds]
        rows.append((label, statistics.median(rates)))
        print(f"  {label:<22} tokens/s {_stats(rates)}  {extra}")

    for use_cache in (True, False):
        seconds, reference = _timed(
            lambda: generate(model, prompt, new_tokens, greedy=True, use_kv_cache=use_cache),
            reps, device)
        row(f"plain, KV cache {'on' if use_cache else 'off'}", seconds)
    greedy = reference  # the whole-window text: what speculative decoding reproduces
    for bits, group in QUANTIZATIONS:  # the lecture's settings
        quantized = copy.deepcopy(model)
        report = quantize_weights(quantized, bits, group)
        seconds, out = _timed(lambda: generate(quantized, prompt, new_tokens, greedy=True),
                              reps, device)
        same = next((i for i, (a, b) in enumerate(zip(out, greedy)) if a != b), new_tokens)
        row(f"int{bits}, group {group or 'row'}", seconds,
            f"{report.quantized_bytes:,} B ({report.compression:.1f}x less), "
            f"the float model's text for {same}/{new_tokens} tokens")
    for k in KS:
        seconds, (out, st) = _timed(
            lambda: speculative_generate(model, draft, prompt, new_tokens, k), reps, device)
        row(f"speculative, k = {k}", seconds,
            f"accepted {st.acceptance_rate:.2f}, target passes/token "
            f"{st.target_calls / new_tokens:.2f}, equals greedy: {out == greedy}")
    base = rows[0][1]
    print("  tokens/s relative to plain with the KV cache: "
          + ", ".join(f"{label} {rate / base:.2f}" for label, rate in rows[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", default=["cpu"])
    parser.add_argument("--models", nargs="+", default=list(NAMES), choices=NAMES)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=100)
    args = parser.parse_args()
    print(f"torch {torch.__version__}"
          + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""))
    for name in args.models:
        for device in args.devices:
            bench(name, device, args.reps, args.new_tokens)


if __name__ == "__main__":
    main()
