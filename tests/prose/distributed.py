"""lectures/distributed.md: its prose numbers (see tests/prose/__init__.py)."""

from __future__ import annotations

from prose import Assert, Attr, Default

DI = "llmlab.experiments.distributed"

# number as written in the prose -> the guards that keep it true
GUARDS: dict[str, list[object]] = {
    "1,024": [Attr("llmlab.models.gpt2:GPT2_SMALL", "context_length", 1024),
              Assert("days = h100 / 1024 / 24")],
    "10,000": [Attr("llmlab.models.llama:CS336_TINYSTORIES", "vocab_size", 10_000)],
    "12": [Assert("assert row.with_attention == 6 * row.n_matmul + 12 * L * d * T"),
           Assert("assert ADAM_STATE_BYTES == 12"),
           Attr("llmlab.models.gpt2:GPT2_SMALL", "n_layers", 12)],
    "16": [Assert("assert sum(r.measured_state.values()) == 16 * r.n_parameters"),
           Assert('assert fp32 == mixed == 16 * row["n_parameters"]')],
    # published figures, kept with their sources in llmlab.hardware (see ALLOWED)
    "184,320": [Attr("llmlab.hardware:LLAMA2_7B_RUN", "gpu_hours", 184_320),
                Assert("assert llama.published_gpu_hours == LLAMA2_7B_RUN.gpu_hours "
                       "== 184_320")],
    "312": [Attr("llmlab.hardware:A100_80GB", "bf16_flops", 312e12),
            Assert("assert A100_80GB.bf16_flops == 312e12")],
    "80": [Attr("llmlab.hardware:A100_80GB", "memory_bytes", 80 * 2**30)],  # 80 GiB
    "32": [Attr("llmlab.models.llama:LLAMA2_7B", "num_layers", 32)],
    "4096": [Attr("llmlab.models.llama:LLAMA2_7B", "context_length", 4096),
             Assert("c, t = LLAMA2_7B, 4096")],
    "512": [Default(f"{DI}:run_flop_count", "sweep_context_lengths",
                    (512, 2048, 8192, 32768))],
    "8,192": [Default(f"{DI}:run_flop_count", "sweep_context_lengths",
                      (512, 2048, 8192, 32768)),
              Assert("assert share[8192] < 0.5 < share[32768]")],
    "32,768": [Default(f"{DI}:run_flop_count", "sweep_context_lengths",
                       (512, 2048, 8192, 32768)),
               Assert("assert share[8192] < 0.5 < share[32768]")],
    "40%": [Default(f"{DI}:run_training_cost", "utilisation", 0.4),
            Assert("llama.utilisation == 0.4"),
            Assert("assert 0.4 < llama.implied_utilisation < 0.6"),
            Assert("assert llama.implied_utilisation_6n < 0.4")],
}

# numbers that are not results: number -> why
ALLOWED: dict[str, str] = {
    "184,320": "citation (Touvron et al., 2023, Llama 2, table 2: A100-80GB GPU-hours "
               "of the 7B model; llmlab.hardware.LLAMA2_7B_RUN)",
    "312": "citation (NVIDIA A100 datasheet: dense BF16 Tensor Core TFLOP/s; "
           "llmlab.hardware.A100_80GB)",
    "46.2%": "citation (Chowdhery et al., 2022, PaLM, table 3: the MFU of PaLM 540B)",
    "64": "citation (ZeRO, Rajbhandari et al., 2020, figure 1: its example's 64 GPUs)",
    "1.5": "citation (ZeRO, Rajbhandari et al., 2020, section 7: stage 3 communicates "
           "1.5x DDP)",
    "25": "PyTorch's documented default: DDP's bucket_cap_mb is 25 MiB",
    "3600": "seconds in an hour",
}
