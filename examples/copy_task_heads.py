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
# # 多头注意力的分工
#
# 这个笔记本打开[多头注意力与 Transformer 块](../lectures/multihead-transformer-block.md)
# 第 3 个实验里的模型：一层因果多头注意力，在每个位置 $t$ 同时输出 $x_{t-1}$、$x_{t-2}$ 和
# $x_{t-4}$。我们画出每个头完整的 $T \times T$ 注意力图，看每个头负责哪个位置。
# 也可以直接运行：`python examples/copy_task_heads.py`。

# %% [markdown] lang="en"
# # How heads split the work
#
# This notebook opens up the models of the third experiment of [Multi-head attention and
# the Transformer block](../lectures/multihead-transformer-block.md): one causal
# multi-head attention layer that must output $x_{t-1}$, $x_{t-2}$ and $x_{t-4}$ at every
# position $t$. We draw every head's full $T \times T$ attention map to see which
# position each head took. It also runs as a plain script:
# `python examples/copy_task_heads.py`.

# %%
import torch
from IPython.display import display

from llmlab.experiments.multihead import run_copy_runs
from llmlab.report import fmt_int, fmt_pct, heatmap, label, table

torch.set_num_threads(1)
OFFSETS = (1, 2, 4)

# %% [markdown] lang="zh"
# ## 训练
#
# 3 个头，每个种子训练一次，设置和讲义完全一样：讲义里的 `run_why_multihead()` 对每个头数调用一次
# `run_copy_runs`，结果按内容缓存。构建网站时，讲义和这个笔记本共用同一次训练；
# 单独运行（没有设置 `LLMLAB_CACHE_DIR`）时就在这里训练，几秒钟。
# 下面看种子 0 的模型，在没见过的序列上评估；瞎猜的准确率是 10%。

# %% [markdown] lang="en"
# ## Training
#
# Three heads, trained once per seed with exactly the lecture's settings: the lecture's
# `run_why_multihead()` calls `run_copy_runs` once per head count, and the results are
# cached by content. In the site build, the lecture and this notebook share one training
# run; run on its own (without `LLMLAB_CACHE_DIR` set), it trains here in a few seconds.
# Below we look at seed 0's model, evaluated on unseen sequences; guessing is right
# 10% of the time.

# %%
runs = run_copy_runs(n_heads=3, offsets=OFFSETS)  # the lecture's run, every seed
accs = runs.accuracy[0]  # seed 0, one accuracy per target
rows = [[f"x[t−{k}]", fmt_pct(a)] for k, a in zip(OFFSETS, accs)]
rows.append([label("参数量", "parameters"), fmt_int(runs.n_params)])
display(table([label("目标", "target"), label("准确率", "accuracy")], rows))
assert min(accs) > 0.9, accs  # all three targets learned

# %% [markdown] lang="zh"
# ## 每个头的注意力图
#
# 第 $i$ 行、第 $j$ 列是位置 $i$ 放在位置 $j$ 上的平均权重（对全部评估序列取平均）。
# 因果掩码让对角线以上全是 0。如果一个头专门负责偏移量 $o$，它的权重就集中在
# 对角线下方第 $o$ 条斜线上。

# %% [markdown] lang="en"
# ## Each head's attention map
#
# Row $i$, column $j$ is the mean weight (over all evaluation sequences) that position $i$
# puts on position $j$. The causal mask makes everything above the diagonal 0. A head that
# specialises in offset $o$ puts its weight on the $o$-th line below the diagonal.

# %%
mean_attn = torch.tensor(runs.attention)  # (H, T, T): seed 0, mean over the evaluation
T = mean_attn.shape[-1]
start = max(OFFSETS)
taken = []
for h, head_map in enumerate(mean_attn):
    # the offset this head favours, over the evaluated queries t >= max(OFFSETS)
    queries = torch.arange(start, T)
    per_offset = [head_map[queries, queries - o].mean() for o in range(start + 1)]
    offset = int(torch.stack(per_offset).argmax())
    taken.append(offset)
    display(heatmap(head_map, annotate=False, vmin=0, vmax=1,
                    title=label(f"头 {h}：主要看 t−{offset}", f"head {h}: mostly t−{offset}"),
                    xlabel=label("键的位置", "key position"),
                    ylabel=label("查询的位置", "query position"),
                    alt=label(f"热力图：第 {h} 个头的平均注意力，权重集中在 t−{offset} 那条斜线上",
                              f"Heatmap of head {h}'s mean attention, concentrated on "
                              f"the line t−{offset}")))
display(table([label("头", "head"), label("偏移量", "offset")], list(enumerate(taken))))
assert sorted(taken) == list(OFFSETS)  # one head per offset

# %% [markdown] lang="zh"
# 三个头各自认领了一个偏移量：训练自己完成了分工。
# 在新的单元格里试试 `run_copy_runs(n_heads=1).accuracy[0]`：唯一的那个头只能把权重分给几个位置，
# 总有一个目标学不会（所以上面的两个 `assert` 对它不成立）。

# %% [markdown] lang="en"
# Each of the three heads has claimed one offset: training divided the work by itself.
# In a new cell, try `run_copy_runs(n_heads=1).accuracy[0]`: the single head can only
# spread its weight over several positions, and one target is never learned (so the two
# `assert`s above would fail for it).
