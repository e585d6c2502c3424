"""Measure llmlab's BPE training and tokenizer against the reference libraries.

    OMP_NUM_THREADS=1 python benchmarks/tokenization.py          # 3 repetitions
    OMP_NUM_THREADS=1 python benchmarks/tokenization.py --reps 5 --stream-mb 64

Side by side, in one run (medians with min and max; ratios are ours / theirs,
so below 1 means we are faster):

* training: ``llmlab.tokenization.train_bpe`` vs Hugging Face ``tokenizers``'
  ``BpeTrainer`` (byte-level, GPT-2's regular expression) on the same file: a
  500-entry vocabulary on a 130 KB slice of tiny Shakespeare (CS336's test:
  their bar is 1.5 s, their reference 0.38 s), and 1,000 merges on the whole
  1.1 MB. ``tokenizers`` runs on one thread (``RAYON_NUM_THREADS=1``), as ours
  does below ``PARALLEL_MIN_BYTES``; ``--hf-threads`` changes that;
* encoding: ``Tokenizer.encode`` with GPT-2's files vs ``tiktoken`` built from
  the same ranks, MB/s on English (Shakespeare) and Chinese (the Tang poems);
  ours starts each repetition with an empty pre-token cache;
* streaming: ``encode_iterable`` over a generated file much larger than the
  memory it may use, in a fresh process; its peak resident memory above what it
  held after loading the tokenizer (Linux: the peak is reset through
  ``/proc/self/clear_refs`` and read from ``VmHWM``);
* pre-tokenization: one process vs one per CPU, by file size (where the
  crossover behind ``PARALLEL_MIN_BYTES`` comes from).

These machines are shared and noisy: trust ratios taken in the same run more
than absolute numbers.
"""

from __future__ import annotations

import argparse
import os
import sys

_ARGS = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_ARGS.add_argument("--reps", type=int, default=3, help="repetitions per measurement")
_ARGS.add_argument("--hf-threads", type=int, default=1, help="threads for tokenizers")
_ARGS.add_argument("--stream-mb", type=int, default=48, help="streamed file, MB")
_ARGS.add_argument("--budget-mb", type=int, default=16, help="memory budget to check")
ARGS = _ARGS.parse_args()
# before tokenizers starts its thread pool
os.environ["RAYON_NUM_THREADS"] = str(ARGS.hf_threads)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import json  # noqa: E402
import multiprocessing  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import tiktoken  # noqa: E402
import tokenizers  # noqa: E402
from tokenizers import models, pre_tokenizers, trainers  # noqa: E402

from llmlab import data  # noqa: E402
from llmlab.tokenization import (  # noqa: E402
    bytes_to_unicode,
    count_pretokens_file,
    gpt2_tokenizer,
    train_bpe,
)
from llmlab.tokenization.pretokenize import (  # noqa: E402
    PARALLEL_MIN_BYTES,
    _available_cpus,
)
from llmlab.tokenization.reference import tiktoken_encoding  # noqa: E402

EOT = "<|endoftext|>"
ROWS: list[tuple[str, str, str, str]] = []


def timed(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def spread(xs: list[float], unit: str = "s", digits: int = 3) -> str:
    return (
        f"{statistics.median(xs):.{digits}f} {unit} "
        f"[{min(xs):.{digits}f}, {max(xs):.{digits}f}]"
    )


def row(task: str, ours: str, theirs: str, ratio: str) -> None:
    ROWS.append((task, ours, theirs, ratio))
    print(f"  {task:<44} {ours:<28} {theirs:<28} {ratio}", flush=True)


# ---------------------------------------------------------------------------
def hf_train(path: Path, vocab_size: int) -> list:
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        min_frequency=0,
    )
    tok.train([str(path)], trainer)
    return json.loads(tok.to_str())["model"]["merges"]


def bench_training(folder: Path, reps: int) -> None:
    print("\n[training] ours: train_bpe; reference: tokenizers.BpeTrainer "
          f"({ARGS.hf_threads} thread)", flush=True)
    text = data.shakespeare()
    cut = text.index("\n", 130_000) + 1  # ~130 KB, ending at a line
    small = folder / "shakespeare-130k.txt"
    small.write_text(text[:cut], encoding="utf-8")
    full = data.path("shakespeare.txt")
    unicode = bytes_to_unicode()
    for label, path, vocab_size in (
        (f"train 500 vocab, {small.stat().st_size / 1e3:.0f} KB", small, 500),
        (f"train 1,000 merges, {full.stat().st_size / 1e6:.2f} MB", full, 1257),
    ):
        ours = timed(lambda: train_bpe(path, vocab_size, [EOT]), reps)
        theirs = timed(lambda: hf_train(path, vocab_size), reps)
        _, merges = train_bpe(path, vocab_size, [EOT])
        hf = hf_train(path, vocab_size)
        hf = {tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in hf}
        mine = {tuple("".join(unicode[b] for b in t) for t in m) for m in merges}
        ratio = statistics.median(ours) / statistics.median(theirs)
        row(label, spread(ours), spread(theirs), f"{ratio:.2f}x")
        print(f"    merges: ours {len(merges)}, tokenizers {len(hf)}, shared "
              f"{len(mine & hf)} (tie-breaking differs)", flush=True)


# ---------------------------------------------------------------------------
def bench_encoding(reps: int) -> None:
    print("\n[encode] ours: Tokenizer.encode (GPT-2 files, cold cache); reference: "
          f"tiktoken {tiktoken.__version__} on the same ranks", flush=True)
    ours_tok = gpt2_tokenizer()
    ref = tiktoken_encoding(ours_tok)
    texts = {
        "English (Shakespeare)": data.shakespeare(),
        "Chinese (Tang poems)": "\n".join(data.tang_poems()),
    }
    for name, text in texts.items():
        mb = len(text.encode("utf-8")) / 1e6

        def ours() -> None:
            ours_tok.clear_cache()
            ours_tok.encode(text)

        mine = timed(ours, reps)
        theirs = timed(lambda: ref.encode_ordinary(text), reps)
        assert ours_tok.encode(text) == ref.encode_ordinary(text)
        rate = [mb / s for s in mine]
        ref_rate = [mb / s for s in theirs]
        ratio = statistics.median(ref_rate) / statistics.median(rate)
        row(f"encode {name}, {mb:.2f} MB", spread(rate, "MB/s", 2),
            spread(ref_rate, "MB/s", 2), f"{ratio:.2f}x slower")
        warm = timed(lambda: ours_tok.encode(text), reps)
        warm_rate = spread([mb / s for s in warm], "MB/s", 2)
        print(f"    ours with a warm cache: {warm_rate}", flush=True)


# ---------------------------------------------------------------------------
def _status_kib(field: str) -> int:
    """A field of /proc/self/status (Linux), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _stream_child(path: str, trace: bool, conn) -> None:
    tok = gpt2_tokenizer()
    tok.encode(data.shakespeare()[:10_000])  # the first call's allocations
    # reset the peak-RSS mark, so it measures the streaming alone (Linux)
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_kib("VmRSS")
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    count = 0
    with open(path, encoding="utf-8") as fh:
        for _ in tok.encode_iterable(fh):
            count += 1
    seconds = time.perf_counter() - start
    heap = tracemalloc.get_traced_memory()[1] if trace else 0
    conn.send((seconds, count, before, _status_kib("VmHWM"), heap))


def bench_streaming(folder: Path, reps: int) -> None:
    print(f"\n[encode_iterable] a generated {ARGS.stream_mb} MB file, "
          f"budget {ARGS.budget_mb} MiB above the loaded tokenizer", flush=True)
    path = folder / "big.txt"
    block = data.shakespeare() + EOT + "\n".join(data.tang_poems()[:300]) + "\n"
    size = ARGS.stream_mb * 10**6
    with open(path, "w", encoding="utf-8") as fh:
        written = 0
        while written < size:
            fh.write(block)
            written += len(block.encode("utf-8"))
    mb = path.stat().st_size / 1e6
    ctx = multiprocessing.get_context("spawn")
    runs = []
    for trace in [False] * reps + [True]:  # the last run traces Python's heap
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_stream_child, args=(str(path), trace, child))
        proc.start()
        runs.append(parent.recv())
        proc.join()
    heap = runs.pop()[4] / 2**20
    rates = [mb / r[0] for r in runs]
    growth = [(r[3] - r[2]) / 1024 for r in runs]  # peak RSS - RSS before, MiB
    counts = {r[1] for r in runs}
    same = "same ids" if len(counts) == 1 else "ids differ"
    row(f"encode_iterable {mb:.0f} MB file", spread(rates, "MB/s", 2),
        f"peak +{max(growth):.1f} MiB RSS, {heap:.1f} heap", same)
    print(f"    ids: {counts.pop():,}; peak RSS growth per run (MiB): "
          f"{', '.join(f'{g:.1f}' for g in growth)}; tracemalloc peak while "
          f"streaming: {heap:.2f} MiB; under the budget: "
          f"{max(growth, default=0) < ARGS.budget_mb and heap < ARGS.budget_mb}",
          flush=True)
    path.unlink()


# ---------------------------------------------------------------------------
def bench_pretokenize(folder: Path, reps: int) -> None:
    cpus = _available_cpus()
    print(f"\n[pre-tokenization] 1 process vs {cpus} (PARALLEL_MIN_BYTES = "
          f"{PARALLEL_MIN_BYTES / 2**20:.0f} MiB)", flush=True)
    text = data.shakespeare()
    for mib in (1, 2, 4, 8, 16):
        path = folder / f"pre-{mib}.txt"
        n = mib * 2**20
        path.write_text((text * (n // len(text) + 1))[:n], encoding="utf-8")
        serial = timed(lambda: count_pretokens_file(path, None, 1), reps)
        parallel = timed(lambda: count_pretokens_file(path, None, cpus), reps)
        ratio = statistics.median(parallel) / statistics.median(serial)
        row(f"pre-tokenize {mib} MiB: serial | parallel", spread(serial),
            spread(parallel), f"{ratio:.2f}x")
        path.unlink()


def main() -> None:
    threads = os.environ["OMP_NUM_THREADS"]
    print(f"machine: {platform.machine()}, {_available_cpus()} CPUs, Python "
          f"{platform.python_version()}, OMP_NUM_THREADS={threads}, "
          f"tokenizers {tokenizers.__version__}, tiktoken {tiktoken.__version__}, "
          f"{ARGS.reps} repetitions", flush=True)
    print(f"  {'task':<44} {'ours':<28} {'reference':<28} ratio", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench_training(folder, ARGS.reps)
        bench_encoding(ARGS.reps)
        bench_streaming(folder, ARGS.reps)
        bench_pretokenize(folder, ARGS.reps)
    print("\nsummary (median [min, max]):")
    for task, ours, theirs, ratio in ROWS:
        print(f"| {task} | {ours} | {theirs} | {ratio} |")
    return None


if __name__ == "__main__":
    sys.exit(main())
