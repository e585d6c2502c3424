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
# # 用 LoRA 微调莎士比亚基座模型
#
# 这个笔记本给课程的莎士比亚基座模型加上 LoRA 适配器，看它从“只会续写剧本”变成
# “读一行台词，回答 `Ask` 或 `Tell`，然后停下”。讲解见[微调](../lectures/finetuning.md)。
# 也可以直接运行：`python examples/finetune_lora.py`。

# %% [markdown] lang="en"
# # Fine-tuning the Shakespeare base model with LoRA
#
# This notebook adds LoRA adapters to the course's Shakespeare base model and watches it
# go from continuing the play to reading a line, answering `Ask` or `Tell`, and stopping.
# [Fine-tuning](../lectures/finetuning.md) explains each step. It also runs as a plain
# script: `python examples/finetune_lora.py`.

# %%
import torch
from IPython.display import display

from llmlab.experiments.finetune import run_finetune, task_examples
from llmlab.finetune import add_lora, end_of_text_id, exact_match, supervised_data
from llmlab.generation import generate
from llmlab.params import count_parameters
from llmlab.pretrained import load
from llmlab.report import fmt_int, fmt_pct, label, table

torch.set_num_threads(1)
model, tokenizer = load("shakespeare")
task = task_examples("shakespeare")
prompt = task.held_out[0][0]
eot = end_of_text_id(tokenizer)
written = generate(model, tokenizer.encode(prompt), 8, greedy=True, eos_token_id=eot)
display(table([label("提示", "prompt"), label("基座模型写出的", "what the base model writes")],
              [[repr(prompt), repr(tokenizer.decode(written))]]))

# %% [markdown] lang="zh"
# ## 加上适配器
#
# `add_lora` 把每个注意力块的 `q_proj` 和 `v_proj` 包进 `LoRALinear`，冻结其余参数。
# B 从零开始，所以加上适配器的模型和基座模型输出完全相同。

# %% [markdown] lang="en"
# ## Add the adapters
#
# `add_lora` wraps every attention block's `q_proj` and `v_proj` in a `LoRALinear` and
# freezes everything else. B starts at zero, so the adapted model's outputs are exactly
# the base model's.

# %%
held_out = supervised_data(tokenizer, task.held_out)
with torch.no_grad():
    before = model(held_out.inputs[:4])
trainable = add_lora(model, rank=4, alpha=8.0)
with torch.no_grad():
    assert torch.equal(model(held_out.inputs[:4]), before)  # B = 0
display(table([label("参数", "parameters"), label("个数", "count")],
              [[label("全部", "all"), fmt_int(count_parameters(model))],
               [label("可训练（LoRA，r = 4）", "trainable (LoRA, r = 4)"), fmt_int(trainable)]]))

# %% [markdown] lang="zh"
# ## 训练结果
#
# 训练用的是讲义里同一次运行（`run_finetune`，结果已经缓存）：20 步，每步 16 个例子，
# 提示不计入损失。下表是留出提示上的精确匹配准确率。

# %% [markdown] lang="en"
# ## What training gives
#
# The training is the lecture's own run (`run_finetune`, its result cached): 20 steps of
# 16 examples, the prompt left out of the loss. The table gives the exact-match accuracy
# on held-out prompts.

# %%
run = run_finetune("shakespeare", method="lora", rank=4)
assert run.trainable == trainable
assert exact_match(model, held_out).float().mean().item() == run.base_accuracy[0] == 0.0
display(table([label("答案", "answer"), label("微调前", "before"), label("微调后", "after")],
              [[answer, fmt_pct(b), fmt_pct(a)]
               for answer, b, a in zip(task.answers, run.base_accuracy, run.accuracy)]))
display(table([label("提示", "prompt"), label("微调后写出的", "written after fine-tuning")],
              [[repr(p), repr(a)] for p, a in run.outputs]))
