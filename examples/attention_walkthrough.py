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
# 词向量是用固定种子随机生成的，**不带任何语义**；多头注意力的权重也是随机初始化、未经训练的，
# 所以图里的模式只说明计算过程，不说明语言规律。也可以直接运行：
# `python examples/attention_walkthrough.py`。

# %% [markdown] lang="en"
# # Attention walkthrough
#
# Walk the path of [Self-attention from scratch](../lectures/attention-from-scratch.md)
# again on a sentence of your own: dot-product scores, softmax weights, the causal mask,
# and finally each head's weights in multi-head attention. The word vectors are seeded
# random numbers and **mean nothing**; the multi-head weights are randomly initialised
# and untrained, so the patterns show how the computation works, not anything about
# language. It also runs as a plain script: `python examples/attention_walkthrough.py`.

# %%
SENTENCE = "the quick brown fox jumps over the lazy dog"  # change me
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
torch.manual_seed(SEED)
words = SENTENCE.split()
inputs = toy_embeddings(words, dim=D_IN, seed=SEED)  # (T, d_in), made up
display(table([label("token 数", "tokens"), "inputs.shape"],
              [(len(words), fmt_shape(inputs.shape))]))

# %% [markdown] lang="zh"
# ## 1. 点积与 softmax
#
# 每个词依次当查询，与所有词做点积，再按行做 softmax：每行的权重加起来等于 1。

# %% [markdown] lang="en"
# ## 1. Dot products and softmax
#
# Each word in turn is a query, dotted with every word; a softmax along each row turns
# the scores into weights that sum to 1.

# %%
scores, weights, context = simple_self_attention(inputs)
assert torch.allclose(weights.sum(dim=-1), torch.ones(len(words)))
top = weights.argmax(dim=-1)
rows = [(w, words[j], fmt_float(weights[i, j])) for i, (w, j) in
        enumerate(zip(words, top.tolist()))]
display(table([label("查询", "query"), label("最关注", "attends most to"),
               label("权重", "weight")], rows))
display(heatmap(weights, words, words, xlabel=label("键", "key"),
                ylabel=label("查询", "query"), title="softmax(X Xᵀ)",
                alt=label("热力图：句子里每个词作为查询时，分给每个词的 softmax 权重",
                          "Heatmap of the softmax weights each word, as the query, "
                          "gives every word of the sentence")))

# %% [markdown] lang="zh"
# ## 2. 因果掩码
#
# 对角线以上填 `-inf` 再做 softmax：每个词只能看到自己和前面的词。

# %% [markdown] lang="en"
# ## 2. The causal mask
#
# Fill the scores above the diagonal with `-inf`, then softmax: each word sees only
# itself and the words before it.

# %%
scale = D_IN**0.5
causal = causal_weights_masked(scores, scale=scale)
assert torch.all(causal.triu(diagonal=1) == 0)
display(heatmap(causal, words, words, xlabel=label("键", "key"),
                ylabel=label("查询", "query"), title="causal softmax(X Xᵀ / √d)",
                alt=label("热力图：因果掩码之后的权重，对角线以上全为 0",
                          "Heatmap of the weights after the causal mask: zero above "
                          "the diagonal")))

# %% [markdown] lang="zh"
# ## 3. 每个头的权重
#
# `MultiHeadAttention` 把 `D_OUT` 维拆成 `NUM_HEADS` 个头，每个头有自己的一组权重矩阵。
# 即使未经训练，不同的头也给出不同的权重。

# %% [markdown] lang="en"
# ## 3. Per-head weights
#
# `MultiHeadAttention` splits `D_OUT` features into `NUM_HEADS` heads, each with its own
# weights. Even untrained, different heads give different weights.

# %%
mha = MultiHeadAttention(D_IN, D_OUT, context_length=len(words), dropout=0.0,
                         num_heads=NUM_HEADS).eval()
with torch.no_grad():
    out, head_weights = mha(inputs.unsqueeze(0), return_weights=True)
head_weights = head_weights[0]  # (H, T, T)
assert out.shape == (1, len(words), D_OUT)
assert torch.all(head_weights.triu(diagonal=1) == 0)
assert not torch.allclose(head_weights[0], head_weights[1])  # heads differ
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
