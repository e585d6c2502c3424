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
# 这个笔记本在构建网站时运行：它调用 `llmlab`，报告运行环境，并画一张由代码算出的图。
# 也可以直接运行：`python examples/quickstart.py`。表格和图的文字默认是英文，
# 设置环境变量 `LLMLAB_LANG=zh` 就会换成中文。

# %% [markdown] lang="en"
# # Quick start
#
# This notebook runs when the site is built: it calls `llmlab`, reports the environment it
# ran in and draws a figure computed by the code. It also runs as a plain script:
# `python examples/quickstart.py`. Tables and figures are labelled in English unless the
# environment variable `LLMLAB_LANG` is `zh`.

# %%
import torch
from IPython.display import display

from llmlab.build.provenance import build_info
from llmlab.report import label, line_plot, table

torch.set_num_threads(1)
display(table([label("字段", "field"), label("值", "value")], build_info().rows()))

# %% [markdown] lang="zh"
# ## softmax 与温度
#
# 同一组分数除以不同的温度 $T$ 再做 softmax：$T$ 越小，分布越尖。

# %% [markdown] lang="en"
# ## Softmax and temperature
#
# The same scores divided by a temperature $T$ before the softmax: the smaller $T$,
# the more peaked the distribution.

# %%
scores = torch.tensor([2.0, 1.0, 0.5, -1.0])
series = {}
for temperature in (0.25, 1.0, 4.0):
    probs = torch.softmax(scores / temperature, dim=-1)
    series[f"T = {temperature}"] = (list(range(len(scores))), probs.tolist())
    assert torch.isclose(probs.sum(), torch.tensor(1.0))
peaks = [max(ys) for _, ys in series.values()]
assert peaks == sorted(peaks, reverse=True)  # smaller T, higher peak
display(line_plot(series, xlabel=label("token 序号", "token index"),
                  ylabel=label("概率", "probability"),
                  alt=label("三种温度下同一组分数的 softmax 概率：温度越低，分布越尖",
                            "Softmax probabilities of the same scores at three "
                            "temperatures: the lower the temperature, the sharper")))
