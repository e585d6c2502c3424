"""Train a tiny Llama-style model with DDP on every process ``torchrun`` starts.

    torchrun --standalone --nproc_per_node=2 examples/train_ddp.py             # 2 CPUs (gloo)
    torchrun --standalone --nproc_per_node=8 examples/train_ddp.py --steps 50  # 8 GPUs (NCCL)
    python examples/train_ddp.py                                               # one process

(``--standalone`` lets torchrun pick a free port, so that runs on a shared machine do
not collide.)

The same script, unchanged, on CPUs and GPUs: the backend is NCCL when every
process has a GPU and gloo otherwise (``--device cpu`` forces gloo). Each rank
trains the model wrapped in ``DistributedDataParallel`` on its share of every batch
of byte-level Shakespeare with the course's training loop, ``llmlab.training.train``
(``distributed_train`` runs it on the rank's rows), and our ``AdamW``; each prints its
losses. Rank 0 then trains the same model on the whole batches alone, with ``train``
itself, and prints whether the two runs agree and whether every rank ends with the
same weights. The exit status is 1 if they do not. (``parallel_train``, in
``llmlab.distributed``, trains on local processes it starts itself, with DDP or FSDP.)

This is a program (it prints); it is not a notebook page.
"""

from __future__ import annotations

import argparse
import gc
import sys

import numpy as np
import torch
import torch.distributed as dist

from llmlab import data
from llmlab.distributed import distributed_train, init_distributed, wrap_ddp
from llmlab.models.llama import LlamaConfig, TransformerLM
from llmlab.training import AdamW, train

CONFIG = LlamaConfig(vocab_size=256, context_length=32, d_model=64, num_layers=2,
                     num_heads=4, d_ff=176)
"""A byte-level model small enough for a CPU (about 130k parameters)."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=8,
                        help="windows per step over all ranks (a multiple of them)")
    parser.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate")
    parser.add_argument("--seed", type=int, default=0, help="weights and batches")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="cpu: gloo; cuda: NCCL, one GPU per process; auto: "
                             "NCCL if every process has a GPU")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds a collective waits for the other ranks")
    parser.add_argument("--tolerance", type=float, default=1e-4,
                        help="largest loss difference to count as equal")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    backend = {"auto": "auto", "cpu": "gloo", "cuda": "nccl"}[args.device]
    info = init_distributed(backend, timeout=args.timeout)
    try:
        tokens = np.frombuffer(data.shakespeare().encode("utf-8"), dtype=np.uint8)
        # every rank builds the same model (DDP also broadcasts rank 0's weights)
        torch.manual_seed(args.seed)
        model = wrap_ddp(TransformerLM.from_config(CONFIG, device=info.device))
        optimizer = AdamW(model.parameters(), lr=args.lr)
        result = distributed_train(model, optimizer, tokens, steps=args.steps,
                                   batch_size=args.batch_size,
                                   context_length=CONFIG.context_length,
                                   seed=args.seed, strategy="ddp")
        print(f"rank {info.rank}/{info.world_size} ({info.backend}, {info.device}): "
              f"its share's loss {result.local_losses[0]:.4f} -> "
              f"{result.local_losses[-1]:.4f}, the whole batch's "
              f"{result.losses[0]:.4f} -> {result.losses[-1]:.4f}", flush=True)
        # do all ranks hold the same weights? compare each with rank 0's
        flat = torch.cat([p.detach().flatten() for p in model.parameters()])
        reference = flat.clone()
        dist.broadcast(reference, src=0)
        same = torch.tensor(float(torch.equal(flat, reference)), device=info.device)
        dist.all_reduce(same, op=dist.ReduceOp.MIN)
        ok = True
        if info.rank == 0:
            # the same training on one process, on the whole batches
            torch.manual_seed(args.seed)
            alone = TransformerLM.from_config(CONFIG, device=info.device)
            single = train(alone, AdamW(alone.parameters(), lr=args.lr), tokens,
                           steps=args.steps, batch_size=args.batch_size, seed=args.seed,
                           device=info.device)
            diff = max(abs(a - b) for a, b in zip(result.losses, single.losses))
            equal = diff <= args.tolerance
            ok = equal and bool(same.item())
            print(f"DDP on {info.world_size} process(es) == one process: {equal} "
                  f"(largest loss difference {diff:.2e}, tolerance "
                  f"{args.tolerance:g}); same weights on every rank: "
                  f"{bool(same.item())}; final loss {result.losses[-1]:.4f}",
                  flush=True)
        verdict = torch.tensor(float(ok), device=info.device)
        dist.broadcast(verdict, src=0)
        # DDP's reducer goes before the process group it uses. It sits in reference
        # cycles (through its hooks on the parameters, which the optimizer holds), so
        # collect them now: freed at interpreter exit instead, gloo's threads can abort
        # the process after its work is done
        del model, optimizer
        gc.collect()
        dist.barrier()  # every rank leaves together
        return 0 if verdict.item() == 1.0 else 1
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
