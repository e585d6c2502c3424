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
# # 用 DPO 教唐诗模型守格律
#
# 这个笔记本从课程的唐诗基础模型采样几行诗，用格律函数 `poem_line_has_shape` 判定，
# 把同一提示下合律的一行和不合律的一行配成偏好对，再用 DPO 训练几步，
# 看隐式奖励怎样把 chosen 和 rejected 分开。讲解见[偏好对齐](../lectures/alignment.md)。
# 也可以直接运行：`python examples/dpo_poems.py`。

# %% [markdown] lang="en"
# # Teaching the Tang-poem model its form with DPO
#
# This notebook samples a few lines from the course's Tang-poem base model, judges them
# with the verse-shape function `poem_line_has_shape`, pairs a regular line with an
# irregular one written after the same prompt, and trains a few steps of DPO to watch the
# implicit reward pull chosen and rejected apart.
# [Preference alignment](../lectures/alignment.md) explains each step. It also runs as a
# plain script: `python examples/dpo_poems.py`.

# %%
import torch
from IPython.display import display

from llmlab.alignment import PreferenceData, implicit_reward_accuracy
from llmlab.experiments.alignment import line_prompts, prefers, sample_lines
from llmlab.pretrained import load
from llmlab.report import label, table
from llmlab.training import AdamW, train

torch.set_num_threads(1)
reference, tokenizer = load("tang")
prompts = line_prompts("tang", 8, seed=1)
samples = sample_lines(reference, tokenizer, prompts, 6, seed=1)  # 6 lines per prompt
pairs, shown = [], []
for prompt, lines in zip(prompts, samples):
    judged = [(ids, prefers("tang", tokenizer.decode(ids).rstrip("\n")
                             if ids[-1:] == tokenizer.encode("\n") else None))
              for ids in lines]
    chosen = [ids for ids, good in judged if good]
    rejected = [ids for ids, good in judged if not good]
    for c, r in zip(chosen, rejected):
        pairs.append((tokenizer.encode(prompt), c, r))
        shown.append([prompt.strip(), tokenizer.decode(c).strip(), tokenizer.decode(r).strip()])
display(table([label("提示", "prompt"), label("chosen（评判偏好）", "chosen (the judge prefers)"),
               label("rejected（评判不偏好）", "rejected (the judge does not)")],
              shown[:4], align="lll"))

# %% [markdown] lang="zh"
# ## DPO 训练
#
# `PreferenceData` 在构造时用参考模型算好每行的 log 概率；`train` 还是训练基础模型的那个
# 循环，只是每一步的损失换成了 DPO 的。训练前策略等于参考，每个奖励都是 0。

# %% [markdown] lang="en"
# ## DPO training
#
# `PreferenceData` computes each line's log-probability under the reference once, when it
# is built; `train` is the loop that trained the base model, with DPO's loss at each step.
# Before training the policy equals the reference and every reward is 0.

# %%
policy, _ = load("tang")
data = PreferenceData(pairs, reference, beta=0.1, pad_id=0)
before = implicit_reward_accuracy(*data.rewards(data.policy_logps(policy)))
result = train(policy, AdamW(policy.parameters(), lr=1e-4, weight_decay=0.0), data,
               steps=10, batch_size=8)
after = implicit_reward_accuracy(*data.rewards(data.policy_logps(policy)))
assert before == 0.0 and after > 0.5  # a tie counts as wrong
display(table([label("指标", "measure"), label("训练前", "before"), label("训练后", "after")],
              [[label("DPO 损失", "DPO loss"), f"{result.losses[0]:.3f}",
                f"{result.losses[-1]:.3f}"],
               [label("奖励准确率", "reward accuracy"), f"{before:.0%}", f"{after:.0%}"]]))
