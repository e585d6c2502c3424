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
# # 注意力逐步演示
#
# 换成你自己的句子，重走[从零实现自注意力](../lectures/attention-from-scratch.md)的路线：
# 点积分数、softmax 权重、因果掩码，最后画出多头注意力每个头的权重。
# 词向量是用固定种子随机生成的，每个不同的词一个向量，**不带任何语义**；多头注意力的权重也是
# 随机初始化、未经训练的，所以图里的模式只说明计算过程，不说明语言规律。改了参数后请从头运行。
# 也可以直接运行：`python examples/attention_walkthrough.py`。

# %% [markdown] lang="en"
# # Attention walkthrough
#
# Walk the path of [Self-attention from scratch](../lectures/attention-from-scratch.md)
# again on a sentence of your own: dot-product scores, softmax weights, the causal mask,
# and finally each head's weights in multi-head attention. The word vectors are seeded
# random numbers, one per distinct word, and **mean nothing**; the multi-head weights are
# randomly initialised and untrained, so the patterns show how the computation works, not
# anything about language. After changing a parameter, run from the top. It also runs as
# a plain script: `python examples/attention_walkthrough.py`.

# %%
SENTENCE = "the quick brown fox jumps over the lazy dog"  # change me
# words are separated by spaces (split() splits on whitespace); for Chinese words, set
# LLMLAB_LANG=zh so that the figures use a Chinese font
D_IN = 8  # embedding size
NUM_HEADS = 4
D_OUT = 8  # must be divisible by NUM_HEADS
SEED = 0

# %%
import torch
from IPython.display import display

from llmlab.attention import (
    MultiHeadAttention,
    causal_weights_masked,
    simple_self_attention,
    toy_embeddings,
)
from llmlab.report import fmt_float, fmt_shape, heatmap, label, table

torch.set_num_threads(1)
words = SENTENCE.split()
vocab = list(dict.fromkeys(words))  # each distinct word once, in order
vectors = toy_embeddings(vocab, dim=D_IN, seed=SEED)  # one made-up vector per word
inputs = vectors[[vocab.index(w) for w in words]]  # (T, d_in)
display(table([label("token 数", "tokens"), "inputs.shape"],
              [(len(words), fmt_shape(inputs.shape))]))

# %% [markdown] lang="zh"
# ## 1. 点积与 softmax
#
# 每个词依次当查询，与所有词做点积，再按行做 softmax：每行的权重加起来等于 1。
# 点积同时取决于方向和长度：较长的向量常在很多行里得分最高，哪怕查询不是它自己
# （表里第二列是每个词向量的长度）。两个 the 的向量相同，所以它们这一节的权重行也完全相同：
# 没有位置信息，注意力分不清它们。

# %% [markdown] lang="en"
# ## 1. Dot products and softmax
#
# Each word in turn is a query, dotted with every word; a softmax along each row turns
# the scores into weights that sum to 1. The dot product rewards length as well as
# direction: a long vector often wins many rows, even over the query itself (the second
# column gives each word vector's length). The two *the*s share a vector, so their
# rows in this section are identical: without position information, attention cannot tell
# them apart.

# %%
scores, weights, context = simple_self_attention(inputs)
assert torch.allclose(weights.sum(dim=-1), torch.ones(len(words)))
assert all(torch.equal(weights[i], weights[j]) for i, a in enumerate(words)
           for j, b in enumerate(words) if a == b)  # same word, same row
top = weights.argmax(dim=-1)
rows = [(w, fmt_float(inputs[i].norm()), words[j], fmt_float(weights[i, j]))
        for i, (w, j) in enumerate(zip(words, top.tolist()))]
display(table([label("查询", "query"), label("向量长度", "vector length"),
               label("最关注", "attends most to"), label("权重", "weight")], rows))
display(heatmap(weights, words, words, xlabel=label("键", "key"),
                ylabel=label("查询", "query"), title="softmax(X Xᵀ)",
                alt=label("热力图：句子里每个词作为查询时，分给每个词的 softmax 权重",
                          "Heatmap of the softmax weights each word, as the query, "
                          "gives every word of the sentence")))

# %% [markdown] lang="zh"
# ## 2. 因果掩码
#
# 对角线以上填 `-inf` 再做 softmax：每个词只能看到自己和前面的词。每一行就是第 1 节那一行
# 截掉对角线右边的部分、再重新归一化到和为 1。

# %% [markdown] lang="en"
# ## 2. The causal mask
#
# Fill the scores above the diagonal with `-inf`, then softmax: each word sees only
# itself and the words before it. Each row is section 1's row cut at the diagonal and
# rescaled to sum to 1.

# %%
causal = causal_weights_masked(scores)
assert torch.all(causal.triu(diagonal=1) == 0)
cut = weights.tril()  # section 1's weights, cut at the diagonal ...
assert torch.allclose(causal, cut / cut.sum(dim=-1, keepdim=True))  # ... and rescaled
display(heatmap(causal, words, words, xlabel=label("键", "key"),
                ylabel=label("查询", "query"), title="causal softmax(X Xᵀ)",
                alt=label("热力图：因果掩码之后的权重，对角线以上全为 0",
                          "Heatmap of the weights after the causal mask: zero above "
                          "the diagonal")))

# %% [markdown] lang="zh"
# ## 3. 每个头的权重
#
# `MultiHeadAttention` 把 `D_OUT` 维拆成 `NUM_HEADS` 个头：每个头用 Q/K/V 投影矩阵里属于自己的
# 那几行，各算一套注意力权重。未经训练时，每个头的权重都接近均匀：第 $i$ 行几乎平均分给能看到的
# $i+1$ 个词，各个头之间也差得很少（差多少见下表）。让头变尖锐、各不相同的是训练，见文末的链接。

# %% [markdown] lang="en"
# ## 3. Per-head weights
#
# `MultiHeadAttention` splits `D_OUT` features into `NUM_HEADS` heads: each head uses its
# own slice of the query, key and value projections and computes its own attention
# weights. Untrained, every head is close to uniform: row $i$ spreads its weight almost
# evenly over the $i+1$ visible words, and the heads differ little (the table shows by how
# much). Training is what makes them sharp and different; see the link at the end.

# %%
torch.manual_seed(SEED)  # here, so that rerunning this cell gives the same heads
mha = MultiHeadAttention(D_IN, D_OUT, context_length=len(words), dropout=0.0,
                         num_heads=NUM_HEADS).eval()
with torch.no_grad():
    out, head_weights = mha(inputs.unsqueeze(0), return_weights=True)
head_weights = head_weights[0]  # (H, T, T)
assert out.shape == (1, len(words), D_OUT)
assert torch.all(head_weights.triu(diagonal=1) == 0)
T = len(words)
uniform = torch.tril(torch.ones(T, T))
uniform /= uniform.sum(dim=-1, keepdim=True)  # row i: 1/(i+1) on each visible word
from_uniform = (head_weights - uniform).abs().max()
between = (head_weights[:, None] - head_weights[None]).abs().max()  # any two heads
display(table([label("最大差", "largest difference"), label("值", "value")], [
    (label("与均匀权重 1/(i+1)", "from the uniform 1/(i+1)"), fmt_float(from_uniform)),
    (label("两个头之间", "between two heads"), fmt_float(between))]))
assert from_uniform < 0.2  # near-uniform: nowhere near a sharp head's 0 or 1
for h in range(NUM_HEADS):
    display(heatmap(head_weights[h], words, words, xlabel=label("键", "key"),
                    ylabel=label("查询", "query"), title=label(f"头 {h}", f"head {h}"),
                    alt=label(f"热力图：未训练的多头注意力里第 {h} 个头的因果权重",
                              f"Heatmap of head {h}'s causal weights in the untrained "
                              "multi-head attention")))

# %% [markdown] lang="zh"
# 下一步：训练之后，头会分工吗？见[多头注意力与 Transformer 块](../lectures/multihead-transformer-block.md)。

# %% [markdown] lang="en"
# Next: do heads specialise once trained? See [Multi-head attention and the
# Transformer block](../lectures/multihead-transformer-block.md).
