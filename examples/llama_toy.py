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
config = LLAMA_TOY
display(table([label("字段", "field"), label("值", "value")],
              list(dataclasses.asdict(config).items())))

# %% [markdown] lang="zh"
# ## 建模型
#
# `num_kv_heads=None` 表示键/值头和查询头一样多（不分组），所以下面注意力的参数是 $4d^2$；
# `rope_theta` 是 RoPE 的基数。`TransformerLM.from_config` 按配置建模。状态字典的键名与斯坦福
# CS336（Language Modeling from Scratch）作业 1 一致。每层的键都一样，表里只列第 0 层。

# %% [markdown] lang="en"
# ## Build the model
#
# `num_kv_heads=None` means as many key/value heads as query heads (no grouping), which is
# why attention has $4d^2$ parameters below; `rope_theta` is RoPE's base.
# `TransformerLM.from_config` builds the model from the config. The state-dict keys are
# those of assignment 1 of Stanford's CS336 (Language Modeling from Scratch). Every layer
# has the same keys; the table lists layer 0 only.

# %%
torch.manual_seed(0)  # here, so that rerunning this cell gives the same model
model = TransformerLM.from_config(config)
keys = list(model.state_dict())
assert keys[0] == "token_embeddings.weight" and keys[-1] == "lm_head.weight"
display(table([label("状态字典的键", "state-dict key"), label("形状", "shape")],
              [(k, fmt_shape(v.shape)) for k, v in model.state_dict().items()
               if not k.startswith("layers.") or k.startswith("layers.0.")]))

# %% [markdown] lang="zh"
# ## 数参数
#
# 每一部分先按公式算，再按代码数，两者必须相等。标“每层”的三行要乘以层数 $L$：
# 合计是词嵌入、$L$ 层、`ln_final` 和 `lm_head` 之和，再与 `LlamaConfig.parameter_count` 对照。

# %% [markdown] lang="en"
# ## Count the parameters
#
# Each part is counted by formula and by code, and the two must agree. The three per-layer
# rows count $L$ times: the total is the embeddings, the $L$ layers, `ln_final` and
# `lm_head`, checked against `LlamaConfig.parameter_count`.

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
per_layer = 4 * d * d + 3 * d * d_ff + 2 * d
parts.insert(4, (label(f"{L} 层合计", f"{L} layers in all"), L * per_layer,
                 count_parameters(model.layers)))
for name, formula, code in parts:
    assert formula == code, name
total = V * d + L * per_layer + d + d * V
assert total == config.parameter_count() == count_parameters(model)
rows = [(name, fmt_int(f), fmt_int(c)) for name, f, c in parts]
rows.append((label("合计", "total"), fmt_int(total), fmt_int(count_parameters(model))))
display(table([label("部分", "part"), label("公式", "formula"), label("代码", "code")], rows))

# %% [markdown] lang="zh"
# ## 前向
#
# 随机的 token 序列进去，每个位置得到一行下一个 token 的 logits。未训练的模型几乎是均匀猜测，
# 所以交叉熵接近 $\ln V$；随机目标下交叉熵的期望是 $\ln V$ 加上均匀分布到模型分布的 KL 散度，
# 所以略高于 $\ln V$（表里也列出这个期望）。

# %% [markdown] lang="en"
# ## Forward pass
#
# Random token ids go in; each position gets a row of next-token logits. An untrained
# model guesses almost uniformly, so the cross-entropy is close to $\ln V$; with random
# targets its expectation is $\ln V$ plus the KL divergence from uniform to the model's
# distribution, so it sits slightly above $\ln V$ (the table gives this expectation too).

# %%
torch.manual_seed(0)  # here, so that rerunning this cell gives the same ids
ids = torch.randint(0, V, (2, config.context_length))
with torch.no_grad():
    logits = model(ids)
loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
# its mean over uniformly random targets: -mean log p = ln V + KL(uniform || p)
expected = -F.log_softmax(logits[:, :-1], dim=-1).mean()
assert logits.shape == (2, config.context_length, V)
assert abs(loss.item() - math.log(V)) < 0.5
assert expected.item() >= math.log(V)
display(table([label("量", "quantity"), label("值", "value")],
              [("ids.shape", fmt_shape(ids.shape)), ("logits.shape", fmt_shape(logits.shape)),
               (label("初始化时的损失", "loss at init"), f"{loss.item():.3f}"),
               (label("随机目标下的期望", "expected, random targets"), f"{expected.item():.3f}"),
               ("ln V", f"{math.log(V):.3f}")]))

# %% [markdown] lang="zh"
# ## 因果性
#
# 改动中间一个 token：它前面所有位置的 logits 都不变，它和它后面位置的 logits 都变了。

# %% [markdown] lang="en"
# ## Causality
#
# Changing a token in the middle leaves the logits at every earlier position unchanged and
# changes those at its own position and every later one.

# %%
mid = config.context_length // 2
edited = ids.clone()
edited[:, mid] = (ids[:, mid] + 1) % V
with torch.no_grad():
    new = model(edited)
same = torch.allclose(new[:, :mid], logits[:, :mid])
changed = all(not torch.allclose(new[:, t], logits[:, t])
              for t in range(mid, config.context_length))
assert same and changed
display(table([label("检查", "check"), label("结果", "result")],
              [(label("前面位置的 logits 不变", "earlier logits unchanged"), yes_no(same)),
               (label("它和后面位置的 logits 都变了", "its own and later logits all changed"),
                yes_no(changed))]))
