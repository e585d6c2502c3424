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
# 这个笔记本细看[多头注意力与 Transformer 块](../lectures/multihead-transformer-block.md)
# 第 3 个实验训练出的 3 头模型（种子 0）：一层因果多头注意力，在每个位置 $t \ge 4$
# （三个目标都存在的位置；只有这些位置参与训练和评分）同时输出 $x_{t-1}$、$x_{t-2}$ 和
# $x_{t-4}$。我们画出每个头完整的 $T \times T$ 注意力图，看每个头负责哪个位置。
# 也可以直接运行：`python examples/copy_task_heads.py`。

# %% [markdown] lang="en"
# # How heads split the work
#
# This notebook looks inside the three-head model (seed 0) of the third experiment of
# [Multi-head attention and the Transformer
# block](../lectures/multihead-transformer-block.md): one causal multi-head attention
# layer that must output $x_{t-1}$, $x_{t-2}$ and $x_{t-4}$ at every position $t \ge 4$
# (where all three exist; only these positions are trained and scored). We draw every
# head's full $T \times T$ attention map to see which position each head took. It also
# runs as a plain script: `python examples/copy_task_heads.py`.

# %%
import inspect

import torch
from IPython.display import display

from llmlab.experiments.multihead import run_copy_runs
from llmlab.report import fmt_int, fmt_pct, heatmap, label, table

torch.set_num_threads(1)
OFFSETS = (1, 2, 4)
# the lecture's settings: run_copy_runs's defaults
settings = {k: p.default for k, p in inspect.signature(run_copy_runs).parameters.items()
            if p.default is not inspect.Parameter.empty}

# %% [markdown] lang="zh"
# ## 训练
#
# 序列是随机 token（长度和词表大小见下表）。模型只有词嵌入和位置嵌入、一层带残差连接的因果
# 多头注意力和每个目标一个输出层，没有前馈网络，所以别的位置的信息只能经注意力进来。
# 3 个头，每个种子训练一次，设置和讲义完全一样：讲义里的 `run_why_multihead()` 对每个头数调用一次
# `run_copy_runs`，结果按内容缓存。构建网站时，讲义和这个笔记本共用同一次训练；
# 单独运行（没有设置 `LLMLAB_CACHE_DIR`）时就在这里训练，每个头数几秒钟
# （文末还要训练 1 个头的模型）。
# 下面看种子 0 的模型，在没见过的序列上评估；表里也列出瞎猜（均匀随机选一个 token）的准确率。

# %% [markdown] lang="en"
# ## Training
#
# The sequences are random tokens (length and vocabulary size in the table below). The
# model is token and position embeddings, one causal multi-head attention layer with a
# residual connection, and one output layer per target; there is no feed-forward network,
# so information from other positions arrives only through attention.
# Three heads, trained once per seed with exactly the lecture's settings: the lecture's
# `run_why_multihead()` calls `run_copy_runs` once per head count, and the results are
# cached by content. In the site build, the lecture and this notebook share one training
# run; run on its own (without `LLMLAB_CACHE_DIR` set), it trains here, in a few seconds
# per head count (the end of the notebook also trains the one-head model).
# Below we look at seed 0's model, evaluated on unseen sequences; the table also shows
# the accuracy of guessing (a uniformly random token).

# %%
runs = run_copy_runs(n_heads=3, offsets=OFFSETS)  # the lecture's run, every seed
accs = runs.accuracy[0]  # seed 0, one accuracy per target
d_model, seeds = settings["d_model"], settings["seeds"]
display(table([label("设置", "setting"), label("值", "value")], [
    (label("序列长度", "sequence length"), settings["seq_len"]),
    (label("词表大小", "vocabulary size"), settings["vocab_size"]),
    (label("宽度 d_model", "width d_model"), d_model),
    (label("头数 × 每头维数", "heads × dims per head"),
     f"{runs.n_heads} × {d_model // runs.n_heads}"),
    (label("种子", "seeds"), ", ".join(map(str, seeds))),
    (label("参数量", "parameters"), fmt_int(runs.n_params))]))
rows = [[f"x[t−{k}]", fmt_pct(a)] for k, a in zip(OFFSETS, accs)]
rows.append([label("瞎猜", "guessing"), fmt_pct(1 / settings["vocab_size"])])
display(table([label("目标", "target"), label("准确率", "accuracy")], rows))
assert min(accs) > 0.9, accs  # all three targets learned

# %% [markdown] lang="zh"
# ## 每个头的注意力图
#
# 第 $i$ 行、第 $j$ 列是位置 $i$ 放在位置 $j$ 上的平均权重（对全部评估序列取平均）。
# 因果掩码让对角线以上全是 0。如果一个头专门负责偏移量 $o$，它的权重就集中在
# 对角线下方第 $o$ 条斜线上。前 4 行（$t<4$）不参与训练，那里的权重没有约束，不必在斜线上。

# %% [markdown] lang="en"
# ## Each head's attention map
#
# Row $i$, column $j$ is the mean weight (over all evaluation sequences) that position $i$
# puts on position $j$. The causal mask makes everything above the diagonal 0. A head that
# specialises in offset $o$ puts its weight on the $o$-th line below the diagonal. The first
# four rows ($t < 4$) are not trained, so their weights are unconstrained and need not lie
# on the line.

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
                    alt=label(f"热力图：第 {h} 个头的平均注意力，从第 {start} 行起权重集中在 "
                              f"t−{offset} 那条斜线上",
                              f"Heatmap of head {h}'s mean attention, concentrated on "
                              f"the line t−{offset} from row {start} on")))
display(table([label("头", "head"), label("偏移量", "offset")], list(enumerate(taken))))
assert sorted(taken) == list(OFFSETS)  # one head per offset

# %% [markdown] lang="zh"
# 三个头各自认领了一个偏移量：训练自己完成了分工。
#
# 只有一个头时呢？下面是讲义里同一宽度、只有 1 个头的那次训练（构建网站时已缓存）：
# 每个种子只学会**一个**目标，另外两个远没有学会。唯一的那个头只有一个权重分布，
# 它把看到的几个位置的值向量加权平均成一个向量：里面有这几个 token，却分不清哪个来自哪个位置。

# %% [markdown] lang="en"
# Each of the three heads has claimed one offset: training divided the work by itself.
#
# And with one head? Below is the lecture's run at the same width with a single head
# (cached in the site build): each seed learns exactly **one** target, and the other two
# stay far from learned. The single head has one distribution: it averages the value
# vectors of the positions it looks at into one vector, which holds those tokens but not
# which came from where.

# %%
one = run_copy_runs(n_heads=1, offsets=OFFSETS)  # the lecture's one-head run
rows = [[seed, *map(fmt_pct, a)] for seed, a in zip(seeds, one.accuracy)]
display(table([label("种子", "seed"), *(f"x[t−{k}]" for k in OFFSETS)], rows))
for a in one.accuracy:  # each seed: exactly one target learned, two far from it
    low, mid, high = sorted(a)
    assert high > 0.9 and mid < 0.25, a
