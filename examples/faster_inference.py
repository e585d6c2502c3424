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
# # 更快的推理：量化与投机解码
#
# 这个笔记本把课程的莎士比亚基础模型的权重存成 8 位和 4 位整数，看它写出的文本变了多少；
# 再让它的草稿模型提议、由它来检验，看投机解码写出的文本和贪心解码逐个 token 相同，
# 却少用了几次大模型的前向。讲解见[更快的推理](../lectures/inference.md)。
# 也可以直接运行：`python examples/faster_inference.py`。

# %% [markdown] lang="en"
# # Faster inference: quantization and speculative decoding
#
# This notebook stores the weights of the course's Shakespeare base model as 8- and
# 4-bit integers and looks at how much its text changes; then it lets the model's draft
# propose and the model check, and sees that speculative decoding writes the greedy text
# token for token in fewer passes of the large model.
# [Faster inference](../lectures/inference.md) explains each step. It also runs as a
# plain script: `python examples/faster_inference.py`.

# %%
import copy

import torch
from IPython.display import display

from llmlab.generation import generate
from llmlab.inference import quantize_weights, speculative_generate
from llmlab.pretrained import load, load_draft
from llmlab.report import fmt_int, label, table

torch.set_num_threads(1)
model, tokenizer = load("shakespeare")
prompt = tokenizer.encode("ROMEO:\n")
greedy = generate(model, prompt, 24, greedy=True, use_kv_cache=False)
rows = []
for bits in (8, 4):
    quantized = copy.deepcopy(model)
    report = quantize_weights(quantized, bits)
    text = generate(quantized, prompt, 24, greedy=True, use_kv_cache=False)
    rows.append([f"int{bits}", fmt_int(report.quantized_bytes), repr(tokenizer.decode(text))])
rows.insert(0, ["float32", fmt_int(report.float_bytes), repr(tokenizer.decode(greedy))])
display(table([label("权重", "weights"), label("线性层的字节数", "bytes of the linear layers"),
               label("贪心续写", "greedy continuation")], rows))

# %% [markdown] lang="zh"
# ## 投机解码
#
# 草稿模型每轮提议 `k` 个 token，基础模型一次前向检验全部。温度为 0 时，写出的文本必须和
# 基础模型自己的贪心文本完全相同；`SpeculativeStats` 记下两个模型各做了几次前向。

# %% [markdown] lang="en"
# ## Speculative decoding
#
# The draft proposes `k` tokens a round, and the base model checks them all in one pass.
# At temperature 0 the text must be exactly the base model's own greedy text;
# `SpeculativeStats` counts the passes of each model.

# %%
draft = load_draft("shakespeare")
rows = []
for k in (1, 2, 4):
    text, stats = speculative_generate(model, draft, prompt, 24, k)
    assert text == greedy  # the target's greedy text, token for token
    rows.append([k, stats.target_calls, stats.draft_calls, f"{stats.acceptance_rate:.2f}"])
display(table(["k", label("基础模型前向", "base model passes"),
               label("草稿模型前向", "draft passes"),
               label("提议被接受的比例", "share of proposals accepted")], rows))
