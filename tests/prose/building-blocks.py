"""lectures/building-blocks.md: its prose numbers (see tests/prose/__init__.py)."""

from __future__ import annotations

from prose import Assert, Attr, Default

# number as written in the prose -> the guards that keep it true
GUARDS: dict[str, list[object]] = {
    # measured std within 1% of the truncated normal's theory
    "1%": [Assert("assert abs(m / p - 1) < 0.01")],
    "300": [Assert("run_low_precision_norm(d_model=1024, scale=300.0, seed=0)")],
    # the RMSNorm argument's FLOP ratio at d = 1024: 1 / (2d)
    "0.1%": [Assert("assert 1 / (2 * 1024) < 0.1 / 100")],
    "768": [Assert("run_flops_vs_runtime(seq_len=512, d_model=768"),
            Assert("assert r.relu_params[i] == r.swiglu_params[i] == 8 * 768**2"),
            Assert("d = 768")],
    "512": [Assert("run_flops_vs_runtime(seq_len=512, d_model=768"),
            Attr("llmlab.models.llama:CS336_TINYSTORIES", "d_model", 512)],
    "64": [Default("llmlab.feed_forward:swiglu_hidden_dim", "multiple_of", 64),
           Assert("assert all(f % 64 == 0 for f in r.swiglu_d_ff)")],
    "12": [Assert("block = TransformerBlock(d, 12, swiglu_hidden_dim(d)")],
    # the two d_ff conventions at d = 512: the preset's field and the library's rule
    "1344": [Attr("llmlab.models.llama:CS336_TINYSTORIES", "d_ff", 1344),
             Assert("assert preset == down == nearest == 1344 and up == 1408")],
    "1408": [Assert("assert preset == down == nearest == 1344 and up == 1408")],
    # exercises: what the solutions assert
    "24": [Assert("assert exact == list(range(24, 4097, 24))")],
    "1000": [Assert("for _ in range(1000):")],
    "10000": [Assert("run_rope_check(d_k=64, theta=10_000.0, seq_len=16, seed=0)"),
              Assert("for theta in (10_000.0, 100.0):")],
}

# numbers that are not results: number -> why
ALLOWED: dict[str, str] = {
    "65504": "IEEE fp16 maximum (a constant)",
    "65536": "256² (arithmetic)",
    "256": "the fp16 overflow threshold √65504; also an exercise's multiple_of",
    "0.17%": "citation (Ivanov et al.)",
    "2048": "the RMSNorm argument's token count (its FLOP ratio does not depend on it)",
    "1024": "the RMSNorm argument's d_model (its 0.1% is asserted); "
            "also exercise 5's d (asserted there)",
    "25%": "citation (Ivanov et al.)",
    "4096": "exercise: Llama 2 7B's d_model",
    "100": "exercise: a scale and a theta to try",
    "2022": "year of a citation (PaLM, Chowdhery et al.)",
}
