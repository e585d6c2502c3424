"""How good the course's base models are, against issue 37's targets, and against the
training lecture's tiny build-time runs measured the same way (one thread).

    OMP_NUM_THREADS=1 python benchmarks/base_models.py
    OMP_NUM_THREADS=1 python benchmarks/base_models.py --samples 3   # and print samples

For each corpus it prints, for the shipped base model (``llmlab.pretrained``) and
for the lecture's tiny run (``run_training_run``'s final weights):

* the held-out loss on the start of the model's validation split (20,000
  characters): nats per token with its standard error, nats per character, bits
  per byte (comparable across tokenizers);
* at temperatures 1.0 and 0.8 (``llmlab-generate``'s default), 16 samples of 120
  tokens from one seed (``run_base_model``'s, for both models): the share of words that occur in the corpus (English),
  of lines that are regular five- or seven-character verse and of characters that
  occur in the corpus (Chinese);
* the seconds each measurement took (loading and sampling: what the build pays).

Targets (issue 37): English ≤ 1.9 nats per character and ≥ 90% known words;
Chinese ≥ 50% regular lines and ≥ 99% known characters. Both models are compared
on their own held-out text (the tiny runs hold out the whole corpus's last tenth,
the base models that of their own training text), so the losses are close, not
identical, yardsticks; the sample measures are the same.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))  # this checkout's llmlab, not an installed one

import torch  # noqa: E402

from llmlab import pretrained  # noqa: E402
from llmlab.experiments import training as lecture  # noqa: E402
from llmlab.experiments.base_models import HELD_OUT_CHARS, run_base_model  # noqa: E402
from llmlab.training import split_tokens  # noqa: E402
from llmlab.training.quality import held_out_loss, sample_quality  # noqa: E402

TEMPERATURES = (1.0, 0.8)


def _tiny(corpus: str):
    """The lecture's tiny run on ``corpus``: model, tokenizer, held-out text."""
    run = lecture.run_training_run.uncached(corpus)
    tokenizer = lecture.corpus_tokenizer(corpus, run.settings.vocab_size)
    model = run.settings.model()
    model.load_state_dict(run.state_dict)
    _, val = split_tokens(lecture.corpus_ids(corpus, run.settings.vocab_size), 0.1)
    return model.eval(), tokenizer, tokenizer.decode(val)[:HELD_OUT_CHARS]


def _row(label: str, held, samples, seconds: float) -> str:
    quality = "  ".join(
        f"T={q.temperature:g}: words {q.known_word_rate:.3f} verse {q.verse_rate:.3f} "
        f"chars {q.known_character_rate:.4f}" for q in samples)
    return (f"  {label:<6} {held.nats_per_token:.3f} ± {held.standard_error:.3f} "
            f"nats/token  {held.nats_per_character:.3f} nats/char  "
            f"{held.bits_per_byte:.3f} bits/byte  {quality}  ({seconds:.1f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=0,
                        help="print this many samples of each base model (T=0.8)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    for name in pretrained.NAMES:
        card = pretrained.card(name)
        print(f"{name}: {card.config.parameter_count():,} parameters, "
              f"{card.folder_bytes / 1e6:.2f} MB shipped, {card.steps:,} steps, "
              f"{card.tokens_seen:,} tokens ({card.epochs:.1f} epochs), trained in "
              f"{card.wall_seconds / 60:.1f} min on {card.device}")
        print(f"  command: {' '.join(card.command)}")
        start = time.perf_counter()
        base = run_base_model.uncached(name, temperatures=TEMPERATURES)
        print(_row("base", base.held_out, base.samples, time.perf_counter() - start))
        start = time.perf_counter()
        model, tokenizer, text = _tiny(name)
        held = held_out_loss(model, tokenizer, text)
        first = base.samples[0]  # the tiny run is sampled as the base model is
        samples = [sample_quality(model, tokenizer, name, num_samples=len(first.texts),
                                  max_new_tokens=first.max_new_tokens, temperature=t, seed=0)
                   for t in TEMPERATURES]
        print(_row("tiny", held, samples, time.perf_counter() - start)
              + "  (includes training it)")
        for text in base.samples[-1].texts[: args.samples]:
            print("  sample: " + text[:240].replace("\n", " / "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
