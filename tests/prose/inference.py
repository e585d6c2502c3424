"""lectures/inference.md: its prose numbers (see tests/prose/__init__.py)."""

from __future__ import annotations

from prose import Assert, Attr, Default

INF = "llmlab.experiments.inference"

# number as written in the prose -> the guards that keep it true
GUARDS: dict[str, list[object]] = {
    # 48 tokens generated for k = 1, 2, 4, 8
    "48": [Default(f"{INF}:run_speculative", "new_tokens", 48),
           Default(f"{INF}:run_speculative", "ks", (1, 2, 4, 8))],
    # the formula predicts the measured tokens per pass within 15%
    "15%": [Assert("assert all(abs(p / e - 1) < 0.15 for p, e in zip(per_pass, predicted))")],
    # the validation losses lie within 0.05 nats of each other
    "0.05": [Assert("assert max(gqa.val_loss) - min(gqa.val_loss) < 0.05")],
    # groups of 32 columns
    "32": [Assert("assert (int4_g.bits, int4_g.group_size) == (4, 32)")],
    # Llama 2 70B: 64 query heads, 8 kv heads, 80 layers of 128-dimensional heads
    "64": [Attr("llmlab.models.llama:LLAMA2_70B", "num_heads", 64)],
    "80": [Attr("llmlab.models.llama:LLAMA2_70B", "num_layers", 80)],
}

# numbers that are not results -> why
ALLOWED: dict[str, str] = {
    "127": "the largest 8-bit code, 2^7 - 1: the definition of the codes",
    "128": "Llama 2 70B's head dimension (8192 / 64), in exercise 5; the width 128 of "
           "the base models' layers (exercise 1); the group size large models use, "
           "named as the one that does not divide 352",
    "352": "the base models' SwiGLU width (the layer of exercise 1; why groups of 128 "
           "do not divide it)",
    "11": "352 = 11 × 32: arithmetic on the base models' SwiGLU width",
    "16": "exercise 2's group size, set in its block (group_size=16)",
    "4,096": "Llama 2's context length, the setting of exercise 5",
    "4096": "Llama 2's context length, in exercise 5's arithmetic",
    "1.25": "exercise 5's answer, asserted in its block (1.25 * 2**30)",
    "10": "exercise 5's answer for 64 kv heads (8 × 1.25 GiB), asserted in its block",
    "0.8": "exercise 3's parameter, set in its block (expected_tokens_per_pass(0.8, k))",
    "80%": "exercise 3's parameter 0.8, as a share",
    "0.2": "exercise 6's distributions p and q, set in its block",
    "0.3": "exercise 6's distributions p and q, set in its block",
    "0.5": "exercise 6's distributions p and q, set in its block",
    "0.7": "exercise 6's answer, asserted in its block (kept.sum() == 0.7)",
    "2019": "year of a citation (Shazeer)",
    "2022": "year of a citation (Dettmers et al., LLM.int8())",
    "2023": "year of a citation (Leviathan et al.; Chen et al.; Ainslie et al.)",
}
