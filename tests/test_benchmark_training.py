"""benchmarks/training.py: its yardstick model computes our model's function."""

from __future__ import annotations

import torch
from conftest import load_benchmark

from llmlab.experiments import training as exp
from llmlab.models.llama import TransformerLM


def test_reference_model_computes_the_same_function():
    bench = load_benchmark("training")
    torch.manual_seed(0)
    ours = TransformerLM(50, 16, 32, 2, 4, 64)
    ref = bench.TorchReferenceLM(50, 16, 32, 2, 4, 64).load_from(ours)
    ids = torch.randint(0, 50, (2, 16))
    torch.testing.assert_close(ref(ids), ours(ids), atol=1e-5, rtol=1e-5)


def test_ours_vs_torch_reports_each_repetition():
    bench = load_benchmark("training")
    settings = exp.TinyLMSettings(context_length=16, d_model=16, d_ff=32, batch_size=2)
    seen = []
    ours, theirs = bench.time_ours_vs_torch(2, 2, settings,
                                            on_repeat=lambda *a: seen.append(a))
    assert len(ours) == len(theirs) == len(seen) == 2
    assert min(ours) > 0 and min(theirs) > 0
