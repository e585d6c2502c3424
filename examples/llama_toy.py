# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown] lang="zh"
# # 玩具 Llama 模型
#
# 这个笔记本用 `llmlab.models.llama` 搭一个很小的 Llama 式语言模型（RMSNorm、SwiGLU、RoPE、
# 无偏置），用公式和代码两种方式数它的参数，再跑一次前向。讲解见
# [现代 Transformer 的积木（Llama 式）](../lectures/building-blocks.md)。
# 也可以直接运行：`python examples/llama_toy.py`。

# %% [markdown] lang="en"
# # A toy Llama-style model
#
# This notebook builds a tiny Llama-style language model with `llmlab.models.llama`
# (RMSNorm, SwiGLU, RoPE, no biases), counts its parameters by formula and by code,
# and runs a forward pass. [The building blocks of a modern Transformer (Llama
# style)](../lectures/building-blocks.md) explains each piece. It also runs as a plain
# script: `python examples/llama_toy.py`.

# %%
import dataclasses
import math

import torch
import torch.nn.functional as F
from IPython.display import display

from llmlab.models.llama import LLAMA_TOY, TransformerLM
from llmlab.params import count_parameters
from llmlab.report import fmt_int, fmt_shape, label, table, yes_no

torch.set_num_threads(1)
torch.manual_seed(0)
config = LLAMA_TOY
display(table([label("字段", "field"), label("值", "value")],
              list(dataclasses.asdict(config).items())))

# %% [markdown] lang="zh"
# ## 建模型
#
# `TransformerLM.from_config` 按配置建模。状态字典的键名与 CS336 作业 1 一致。

# %% [markdown] lang="en"
# ## Build the model
#
# `TransformerLM.from_config` builds the model from the config. The state-dict keys are
# those of CS336 assignment 1.

# %%
model = TransformerLM.from_config(config)
keys = list(model.state_dict())
assert keys[0] == "token_embeddings.weight" and keys[-1] == "lm_head.weight"
display(table([label("状态字典的键", "state-dict key"), label("形状", "shape")],
              [(k, fmt_shape(v.shape)) for k, v in model.state_dict().items()
               if ".1." not in k]))

# %% [markdown] lang="zh"
# ## 数参数
#
# 每一部分先按公式算，再按代码数，两者必须相等；最后加总，与 `LlamaConfig.parameter_count` 对照。

# %% [markdown] lang="en"
# ## Count the parameters
#
# Each part is counted by formula and by code, and the two must agree; the total is then
# checked against `LlamaConfig.parameter_count`.

# %%
d, d_ff, V, L = config.d_model, config.d_ff, config.vocab_size, config.num_layers
block = model.layers[0]
parts = [
    ("token_embeddings", V * d, count_parameters(model.token_embeddings)),
    (label("attn（每层）", "attn (per layer)"), 4 * d * d, count_parameters(block.attn)),
    (label("ffn，SwiGLU（每层）", "ffn, SwiGLU (per layer)"), 3 * d * d_ff,
     count_parameters(block.ffn)),
    (label("ln1 + ln2（每层）", "ln1 + ln2 (per layer)"), 2 * d,
     count_parameters(block.ln1) + count_parameters(block.ln2)),
    ("ln_final", d, count_parameters(model.ln_final)),
    ("lm_head", d * V, count_parameters(model.lm_head)),
]
for name, formula, code in parts:
    assert formula == code, name
total = config.parameter_count()
assert total == count_parameters(model)
rows = [(name, fmt_int(f), fmt_int(c)) for name, f, c in parts]
rows.append((label("合计", "total"), fmt_int(total), fmt_int(count_parameters(model))))
display(table([label("部分", "part"), label("公式", "formula"), label("代码", "code")], rows))

# %% [markdown] lang="zh"
# ## 前向
#
# 随机的 token 序列进去，每个位置得到一行下一个 token 的 logits。未训练的模型几乎是均匀猜测，
# 所以交叉熵接近 $\ln V$。

# %% [markdown] lang="en"
# ## Forward pass
#
# Random token ids go in; each position gets a row of next-token logits. An untrained
# model guesses almost uniformly, so the cross-entropy is close to $\ln V$.

# %%
ids = torch.randint(0, V, (2, config.context_length))
with torch.no_grad():
    logits = model(ids)
loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
assert logits.shape == (2, config.context_length, V)
assert abs(loss.item() - math.log(V)) < 0.5
display(table([label("量", "quantity"), label("值", "value")],
              [("ids.shape", fmt_shape(ids.shape)), ("logits.shape", fmt_shape(logits.shape)),
               (label("初始化时的损失", "loss at init"), f"{loss.item():.3f}"),
               ("ln V", f"{math.log(V):.3f}")]))

# %% [markdown] lang="zh"
# ## 因果性
#
# 改动最后一个 token，前面所有位置的 logits 都不变。

# %% [markdown] lang="en"
# ## Causality
#
# Changing the last token leaves the logits at every earlier position unchanged.

# %%
edited = ids.clone()
edited[:, -1] = (ids[:, -1] + 1) % V
with torch.no_grad():
    same = torch.allclose(model(edited)[:, :-1], logits[:, :-1])
assert same
display(table([label("检查", "check"), label("结果", "result")],
              [(label("前面位置的 logits 不变", "earlier logits unchanged"), yes_no(same))]))
