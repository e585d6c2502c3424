"""lectures/multihead-transformer-block.md: its prose numbers (see tests/prose/__init__.py)."""

from __future__ import annotations

from prose import Assert, Attr, Default

MH = "llmlab.experiments.multihead"

# number as written in the prose -> the guards that keep it true
GUARDS: dict[str, list[object]] = {
    "16": [Assert("B, T, D, H = 2, 5, 16, 4"),
           Assert("GPT2Config(d_model=1024, n_layers=24, n_heads=16)")],
    "10": [Default(f"{MH}:run_why_multihead", "vocab_size", 10),
           Default(f"{MH}:run_residual_ablation", "vocab_size", 10)],
    "10%": [Assert("assert result.worst_target(1) < 1.5 * result.chance"),
            Assert('assert result.accuracy["no_residual"] < 0.16')],
    "24": [Default(f"{MH}:run_why_multihead", "d_model", 24),
           Assert("GPT2Config(d_model=1024, n_layers=24, n_heads=16)")],
    "12": [Default(f"{MH}:run_why_multihead", "seq_len", 12),
           Attr("llmlab.models.gpt2:GPT2_SMALL", "n_layers", 12),
           Attr("llmlab.models.gpt2:GPT2_SMALL", "n_heads", 12)],
    "600": [Default(f"{MH}:run_why_multihead", "steps", 600),
            Assert("assert settings == (24, 600, 3e-3, 64, 2000)")],
    # exercise 5 trains half as long
    "300": [Assert("assert result.steps == 300")],
    "64": [Default(f"{MH}:run_why_multihead", "batch_size", 64)],
    "32": [Default(f"{MH}:run_residual_ablation", "d_model", 32),
           Default(f"{MH}:run_residual_ablation", "batch_size", 32),
           Assert("assert model == (8, 32, 4, 3) and training == (100, 1e-3, 32, 50)")],
    "2000": [Default(f"{MH}:run_why_multihead", "n_eval", 2000)],
    "100%": [Assert("assert all(min(result.target_accuracy(h)) >= 0.99 for h in (3, 6))"),
             Assert("assert all(a >= 0.99 for accs in runs for a in accs)"),
             Assert("assert min(accs2) < 0.99"),
             Assert("assert other > 0.5 and right + other > 0.95"),
             Assert("assert right + other > 0.98"),
             Assert("assert result.collapse[kind] < 0.5 and result.accuracy[kind] > 0.99")],
    "50257": [Attr("llmlab.models.gpt2:GPT2_SMALL", "vocab_size", 50257),
              Assert("assert total == GPT2_SMALL.parameter_count() == 124_439_808")],
    "124,439,808": [Assert("assert total == GPT2_SMALL.parameter_count() == 124_439_808")],
    "1024": [Attr("llmlab.models.gpt2:GPT2_SMALL", "context_length", 1024),
             Assert("GPT2Config(d_model=1024, n_layers=24, n_heads=16)")],
    "768": [Attr("llmlab.models.gpt2:GPT2_SMALL", "d_model", 768)],
    "100": [Default(f"{MH}:run_residual_ablation", "steps", 100),
            Assert("assert model == (8, 32, 4, 3) and training == (100, 1e-3, 32, 50)")],
    "50": [Default(f"{MH}:run_residual_ablation", "window", 50),
           Assert("assert model == (8, 32, 4, 3) and training == (100, 1e-3, 32, 50)")],
    # GPT-2's initialisation, checked on a TransformerLM; the loss without residuals
    "0.02": [Assert('"blocks.0.attn.qkv.weight": 0.02'),
             Assert("assert abs(measured / std - 1) < 0.05  # GPT-2's initialisation"),
             Assert('assert abs(result.last_loss("no_residual") - math.log(10)) < 0.02')],
    # the coin toss between two tokens, 0.1 + 0.9 × ½; also the dropout of
    # exercise 4 (and GPT-2's dropout 0.1, a citation)
    "0.1": [Assert("coin_toss = result.chance + (1 - result.chance) / 2"),
            Assert("MultiHeadSelfAttention(16, 4, dropout=0.1)")],
    "0.9": [Assert("coin_toss = result.chance + (1 - result.chance) / 2")],
    "55%": [Assert("assert abs(coin_toss - 0.55) < 1e-12")],
    # exercise 1: GPT-2 medium and XL
    "1600": [Assert("GPT2Config(d_model=1600, n_layers=48, n_heads=25)")],
    "48": [Assert("GPT2Config(d_model=1600, n_layers=48, n_heads=25)")],
    "25": [Assert("GPT2Config(d_model=1600, n_layers=48, n_heads=25)")],
}
