# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 快速上手 · Quick start
#
# 这个笔记本在构建网站时运行：它调用 `llmlab`，报告运行环境，并画一张由代码算出的图。
# 也可以直接运行：`python examples/quickstart.py`。
#
# This notebook runs when the site is built: it calls `llmlab`, reports the environment it
# ran in and draws a figure computed by the code. It also runs as a plain script:
# `python examples/quickstart.py`.

# %%
import torch
from IPython.display import SVG, Markdown, display

from llmlab.provenance import build_info
from llmlab.report import line_plot_svg, markdown_table

torch.set_num_threads(1)
display(Markdown(markdown_table(["field", "value"], build_info().rows())))

# %% [markdown]
# ## softmax 与温度 · Softmax and temperature
#
# 同一组分数除以不同的温度 $T$ 再做 softmax：$T$ 越小，分布越尖。
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
display(SVG(line_plot_svg(series, xlabel="token index", ylabel="probability")))
