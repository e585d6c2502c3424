"""Training and generation speed, side by side, in one run (one thread).

    OMP_NUM_THREADS=1 python benchmarks/training.py            # 3 repetitions each
    OMP_NUM_THREADS=1 python benchmarks/training.py --reps 5 --skip-experiments

What it measures, each over ``--reps`` repetitions (median, min, max):

* training tokens/s of our ``TransformerLM`` + ``cross_entropy`` + ``AdamW`` +
  ``gradient_clipping`` against the same model and batch built from PyTorch's own
  pieces (``nn.RMSNorm``, fused ``F.scaled_dot_product_attention``, ``nn.Linear``,
  ``F.cross_entropy``, ``torch.optim.AdamW``, ``clip_grad_norm_``: the
  :class:`TorchReferenceLM` defined here, a yardstick that no page teaches),
  interleaved, as a ratio (ours / PyTorch's; the target is at least 0.7);
* generated tokens/s with and without the KV cache, and the milliseconds of one
  step as the text grows;
* the CPU seconds of the lecture's cached experiments (its two timings included),
  computed (not looked up), one after another, with their default arguments.

These machines are shared and noisy: compare numbers taken in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))  # this checkout's llmlab, not an installed one

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import Tensor, nn  # noqa: E402

from llmlab.experiments import training as exp  # noqa: E402
from llmlab.models.llama import TransformerLM  # noqa: E402
from llmlab.training import (  # noqa: E402
    AdamW,
    cross_entropy,
    get_batch,
    gradient_clipping,
)


class TorchReferenceLM(nn.Module):
    """The Llama-style model of ``TransformerLM`` built from PyTorch's own pieces.

    ``nn.Embedding``, ``nn.RMSNorm``, ``nn.Linear``, ``F.scaled_dot_product_attention``
    (fused, causal) and ``F.silu``; the same RoPE pairing. Load a ``TransformerLM``'s
    weights with :meth:`load_from` to get the same function. A yardstick for the
    speed of our modules only: the site's numbers come from the modules it teaches.
    """

    def __init__(self, vocab_size: int, context_length: int, d_model: int,
                 num_layers: int, num_heads: int, d_ff: int,
                 rope_theta: float = 10_000.0) -> None:
        super().__init__()
        self.vocab_size, self.context_length = vocab_size, context_length
        self.num_heads = num_heads
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(
            nn.ModuleDict(dict(
                ln1=nn.RMSNorm(d_model, eps=1e-5), ln2=nn.RMSNorm(d_model, eps=1e-5),
                qkv=nn.Linear(d_model, 3 * d_model, bias=False),
                out=nn.Linear(d_model, d_model, bias=False),
                w13=nn.Linear(d_model, 2 * d_ff, bias=False),
                w2=nn.Linear(d_ff, d_model, bias=False),
            ))
            for _ in range(num_layers)
        )
        self.ln_final = nn.RMSNorm(d_model, eps=1e-5)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        d_head = d_model // num_heads
        k = torch.arange(d_head // 2, dtype=torch.float64)
        angles = torch.outer(torch.arange(context_length, dtype=torch.float64),
                             rope_theta ** (-2 * k / d_head))
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def _rope(self, x: Tensor) -> Tensor:
        t = x.shape[-2]
        cos, sin = self.cos[:t], self.sin[:t]  # (T, d_head/2)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)

    def forward(self, ids: Tensor) -> Tensor:
        """Integer ``(B, T)`` -> logits ``(B, T, vocab_size)``."""
        x = self.embed(ids)  # (B, T, D)
        b, t, d = x.shape
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["ln1"](x)).split(d, dim=-1)
            q, k, v = (y.view(b, t, self.num_heads, -1).transpose(1, 2)
                       for y in (q, k, v))  # (B, h, T, d_head)
            y = F.scaled_dot_product_attention(self._rope(q), self._rope(k), v,
                                               is_causal=True)
            x = x + blk["out"](y.transpose(1, 2).reshape(b, t, d))
            gate, up = blk["w13"](blk["ln2"](x)).chunk(2, dim=-1)
            x = x + blk["w2"](F.silu(gate) * up)
        return self.head(self.ln_final(x))

    @torch.no_grad()
    def load_from(self, model: TransformerLM) -> TorchReferenceLM:
        """Copy ``model``'s weights (CS336 names) into these pieces."""
        self.embed.weight.copy_(model.token_embeddings.weight)
        for blk, layer in zip(self.blocks, model.layers):
            attn, ffn = layer.attn, layer.ffn
            blk["ln1"].weight.copy_(layer.ln1.weight)
            blk["ln2"].weight.copy_(layer.ln2.weight)
            blk["qkv"].weight.copy_(torch.cat(
                [attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]))
            blk["out"].weight.copy_(attn.output_proj.weight)
            blk["w13"].weight.copy_(torch.cat([ffn.w1.weight, ffn.w3.weight]))
            blk["w2"].weight.copy_(ffn.w2.weight)
        self.ln_final.weight.copy_(model.ln_final.weight)
        self.head.weight.copy_(model.lm_head.weight)
        return self


def _timed_steps(model: nn.Module, opt: torch.optim.Optimizer, data: np.ndarray,
                 settings: exp.TinyLMSettings, steps: int, ours: bool) -> float:
    """Tokens/s of ``steps`` training steps (after two untimed ones)."""
    gen = torch.Generator().manual_seed(0)
    loss_fn = cross_entropy if ours else (
        lambda logits, y: F.cross_entropy(logits.flatten(0, 1), y.flatten()))
    clip = gradient_clipping if ours else nn.utils.clip_grad_norm_
    batches = [get_batch(data, settings.batch_size, settings.context_length,
                         generator=gen) for _ in range(steps + 2)]
    for i, (x, y) in enumerate(batches):
        if i == 2:  # two warm-up steps
            start = time.perf_counter()
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        clip(model.parameters(), settings.max_grad_norm)
        opt.step()
        loss.item()
    return steps * settings.batch_size * settings.context_length / (
        time.perf_counter() - start)


def time_ours_vs_torch(repeats: int, steps: int, settings: exp.TinyLMSettings,
                       on_repeat=None) -> tuple[list[float], list[float]]:
    """Tokens/s of ours and of :class:`TorchReferenceLM`, interleaved repetitions.

    ``on_repeat(i, ours, torch)`` is called after each repetition.
    """
    data = np.frombuffer(exp.corpus_text("shakespeare").encode("utf-8"), dtype=np.uint8)
    torch.manual_seed(0)
    ours_model = settings.model()
    ref_model = TorchReferenceLM(settings.vocab_size, settings.context_length,
                                 settings.d_model, settings.num_layers,
                                 settings.num_heads, settings.d_ff)
    ref_model.load_from(ours_model)
    ours_opt = settings.optimizer(ours_model)
    ref_opt = torch.optim.AdamW(ref_model.parameters(), lr=settings.max_lr,
                                betas=settings.betas,
                                weight_decay=settings.weight_decay)
    for model, opt, is_ours in ((ours_model, ours_opt, True),
                                (ref_model, ref_opt, False)):
        _timed_steps(model, opt, data, settings, 3, is_ours)  # warm-up, not counted
    ours, ref = [], []
    for i in range(repeats):
        ours.append(_timed_steps(ours_model, ours_opt, data, settings, steps, True))
        ref.append(_timed_steps(ref_model, ref_opt, data, settings, steps, False))
        if on_repeat is not None:
            on_repeat(i, ours[-1], ref[-1])
    return ours, ref


def _stats(values: list[float]) -> str:
    return (f"median {statistics.median(values):10,.1f}  min {min(values):10,.1f}  "
            f"max {max(values):10,.1f}")


def bench_training(reps: int, steps: int) -> None:
    settings = exp.TinyLMSettings()
    print(f"\n## training throughput (tokens/s; batch {settings.batch_size} x "
          f"{settings.context_length}, d_model {settings.d_model}, "
          f"{settings.num_layers} layers, {steps} steps a repetition)", flush=True)

    def each(i: int, ours: float, theirs: float) -> None:
        print(f"  rep {i + 1}: ours {ours:9,.0f}  pytorch {theirs:9,.0f}  "
              f"ratio {ours / theirs:.3f}", flush=True)

    ours, theirs = time_ours_vs_torch(reps, steps, settings, on_repeat=each)
    ratios = [a / b for a, b in zip(ours, theirs)]
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"  ours      {_stats(ours)}")
    print(f"  pytorch   {_stats(theirs)}")
    print(f"  ratio     median {statistics.median(ratios):.3f}  min {min(ratios):.3f}"
          f"  max {max(ratios):.3f}  (median/median {ratio:.3f}; target >= 0.7)",
          flush=True)


def bench_generation(reps: int, context_length: int) -> None:
    print(f"\n## generation (tokens/s, greedy, 1 sequence, text grown from 1 to "
          f"{context_length} tokens)", flush=True)
    cached, uncached, runs = [], [], []
    for i in range(reps):
        # .uncached: a fresh measurement each repetition (the cached one is kept)
        g = exp.time_generation.uncached(context_length=context_length, repeats=1)
        cached.append(g.tokens_per_s_cached)
        uncached.append(g.tokens_per_s_uncached)
        runs.append(g)
        print(f"  rep {i + 1}: with cache {g.tokens_per_s_cached:8,.0f}  without "
              f"{g.tokens_per_s_uncached:8,.0f}  speed-up "
              f"{g.tokens_per_s_cached / g.tokens_per_s_uncached:.2f}x", flush=True)
    print(f"  with cache     {_stats(cached)}")
    print(f"  without cache  {_stats(uncached)}")
    print("  ms per step at text length (median of reps): "
          + ", ".join(
              f"{n}: {statistics.median(r.ms_cached[k] for r in runs):.2f} vs "
              f"{statistics.median(r.ms_uncached[k] for r in runs):.2f}"
              for k, n in enumerate(runs[0].lengths)), flush=True)


EXPERIMENTS = [
    ("run_loss_at_init", {}),
    ("run_adamw_check", {}),
    ("run_lr_schedule", {}),
    ("run_gradient_clipping", {}),
    ("run_training_run", {"corpus": "shakespeare"}),
    ("run_training_run", {"corpus": "tang"}),
    ("run_sampling", {}),  # its training run is computed above; counted there
    ("run_kv_cache_check", {}),
    ("run_checkpoint_resume", {}),
    ("time_training_throughput", {}),  # the page's timings, cached per machine
    ("time_generation", {}),
]


def bench_experiments(reps: int) -> None:
    print("\n## the lecture's cached experiments (CPU seconds, computed, one thread)",
          flush=True)
    os.environ["LLMLAB_CACHE"] = "0"  # no disk layer: nothing stored or read
    from llmlab.build import cache

    totals = []
    per: dict[str, list[float]] = {}
    for i in range(reps):
        total = 0.0
        for name, kwargs in EXPERIMENTS:
            fn = getattr(exp, name)
            label = name + "".join(f"({v})" for v in kwargs.values())
            cache.clear_memory()
            if name == "run_sampling":  # keep the training run it reads in memory
                exp.run_training_run(corpus="shakespeare")
                start = time.process_time()
                fn(**kwargs)
            else:
                start = time.process_time()
                fn.uncached(**kwargs)
            seconds = time.process_time() - start
            per.setdefault(label, []).append(seconds)
            total += seconds
        totals.append(total)
        print(f"  rep {i + 1}: total {total:.2f} s", flush=True)
    for label, values in per.items():
        print(f"  {label:38s} median {statistics.median(values):6.2f}  "
              f"min {min(values):6.2f}  max {max(values):6.2f}")
    print(f"  {'total':38s} median {statistics.median(totals):6.2f}  "
          f"min {min(totals):6.2f}  max {max(totals):6.2f}  (budget about 12)",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20,
                        help="timed training steps per repetition")
    parser.add_argument("--context-length", type=int, default=256,
                        help="text length the generation benchmark grows to")
    parser.add_argument("--skip-experiments", action="store_true")
    args = parser.parse_args()
    if args.reps < 3:
        parser.error("--reps must be at least 3")
    torch.set_num_threads(1)
    print(f"# benchmarks/training.py on {exp.machine_description()}, torch "
          f"{torch.__version__}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    AdamW([torch.nn.Parameter(torch.ones(1))])  # torch.optim's one-off imports
    bench_training(args.reps, args.steps)
    bench_generation(args.reps, args.context_length)
    if not args.skip_experiments:
        bench_experiments(args.reps)


if __name__ == "__main__":
    main()
