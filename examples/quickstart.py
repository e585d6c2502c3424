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
# # 快速上手
#
# 这个笔记本调用 `llmlab`，报告运行环境，并画一张由代码算出的图。构建网站时执行它，只要它和它
# 调用的 `llmlab` 代码不变，以后的构建就沿用这次的输出；表里的 `git_commit` 是它最后一次执行时的
# 提交。也可以直接运行：`python examples/quickstart.py`（需要先按 README 安装 `llmlab`，例如在
# 仓库里运行 `pip install -e ".[plot]"`）。你自己运行时，表格和图的文字默认是英文（这个页面显示的
# 是中文版），设置环境变量 `LLMLAB_LANG=zh` 就会换成中文。

# %% [markdown] lang="en"
# # Quick start
#
# This notebook calls `llmlab`, reports the environment it ran in and draws a figure
# computed by the code. The site build executes it and reuses its outputs as long as
# neither it nor the `llmlab` code it imports changes; `git_commit` is the commit of that
# last execution. It also runs as a plain script: `python examples/quickstart.py` (with
# `llmlab` installed as the README says, e.g. `pip install -e ".[plot]"` in the
# repository). When you run it yourself, tables and figures are labelled in English unless
# the environment variable `LLMLAB_LANG` is `zh`.

# %%
import torch
from IPython.display import display

from llmlab.build.provenance import build_info
from llmlab.report import bar_plot, label, table

torch.set_num_threads(1)
display(table([label("字段", "field"), label("值", "value")], build_info().rows()))

# %% [markdown] lang="zh"
# ## softmax 与温度
#
# 生成文本时从模型给出的分布里采样，温度控制采样的随机性（见
# [训练与生成文本](../lectures/training.md)）。同一组分数除以不同的温度 $T$ 再做 softmax：
# $T$ 越小，分布越尖。

# %% [markdown] lang="en"
# ## Softmax and temperature
#
# When a model generates text, it samples from its distribution, and the temperature sets
# how random that sampling is (see [Training and generating text](../lectures/training.md)).
# The same scores divided by a temperature $T$ before the softmax: the smaller $T$,
# the more peaked the distribution.

# %%
scores = torch.tensor([2.0, 1.0, 0.5, -1.0])  # one score per token of a tiny vocabulary
groups = {}
for temperature in (0.25, 1.0, 4.0):
    probs = torch.softmax(scores / temperature, dim=-1)
    groups[f"T = {temperature}"] = probs.tolist()
    assert torch.isclose(probs.sum(), torch.tensor(1.0))
peaks = [max(p) for p in groups.values()]
assert peaks == sorted(peaks, reverse=True)  # smaller T, higher peak
tokens = [label(f"token {i}\n分数 {s:g}", f"token {i}\nscore {s:g}")
          for i, s in enumerate(scores.tolist())]
display(bar_plot(groups, tokens, ylabel=label("概率", "probability"),
                 alt=label("柱状图：四个 token 在三种温度下的 softmax 概率：温度越低，分布越尖",
                           "Bar chart: the softmax probabilities of four tokens at three "
                           "temperatures: the lower the temperature, the sharper")))
