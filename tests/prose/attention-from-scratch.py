"""lectures/attention-from-scratch.md: its prose numbers (see tests/prose/__init__.py)."""

from __future__ import annotations

from prose import Assert

# number as written in the prose -> the guards that keep it true
GUARDS: dict[str, list[object]] = {
    "16": [Assert("run_scaling_table(d_ks=(4, 16, 64, 256, 1024), num_keys=16)"),
           Assert("few = run_scaling_table(d_ks=d_ks, num_keys=16)")],
    "64": [Assert("many = run_scaling_table(d_ks=d_ks, num_keys=64)")],
    # the hand-built lookup's recall (by construction)
    "100%": [Assert("assert all(acc == 1.0 for acc in result.attention_accuracy)")],
    # exercise 3: the float16 scores, its maximum and exp's limits
    "12": [Assert("for row in ([12.0, 0.0, 0.0, 0.0], [12.0, -100.0, -100.0, -100.0]):")],
    "100": [Assert("for row in ([12.0, 0.0, 0.0, 0.0], [12.0, -100.0, -100.0, -100.0]):")],
    "65504": [Assert("assert torch.finfo(half).max == 65504")],
    "11.09": [Assert("assert round(limit, 2) == 11.09")],
    "88.7": [Assert("assert round(math.log(torch.finfo(torch.float32).max), 1) == 88.7")],
    # exercise 3: two scores of 11, whose exps fit in float16 and whose sum does not
    "11": [Assert("z = torch.tensor([11.0, 11.0], dtype=half)"),
           Assert("assert torch.isfinite(z.exp()).all() and torch.isinf(z.exp().sum())")],
}

# numbers that are not results: number -> why
ALLOWED: dict[str, str] = {
    "0.1": "citation: GPT-1's attention dropout rate (Radford et al. 2018)",
    "512": "speed note: a seq_len the reader is invited to try (a setting, no result)",
}
