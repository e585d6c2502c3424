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
# 这个笔记本把课程的莎士比亚基座模型的权重存成 8 位和 4 位整数，看它的贪心续写变了没有；
# 再让一个小的草稿模型提议、由基座模型（也就是草稿模型为之服务的目标模型）来检验，
# 看投机解码写出的文本和贪心解码逐个 token 相同，基座模型的前向也少了几次，
# 但把草稿模型的前向算进去，读取的权重未必更少。讲解见[更快的推理](../lectures/inference.md)。
# 也可以直接运行：`python examples/faster_inference.py`。

# %% [markdown] lang="en"
# # Faster inference: quantization and speculative decoding
#
# This notebook stores the weights of the course's Shakespeare base model as 8- and
# 4-bit integers and looks at whether its greedy text changes; then it lets a small draft
# model propose and the base model (the *target* that the draft serves) check, and sees
# that speculative decoding writes the greedy text token for token in fewer passes of
# the base model, though not always with fewer weights read once the draft's passes are
# counted. [Faster inference](../lectures/inference.md) explains each step. It also runs
# as a plain script: `python examples/faster_inference.py`.

# %%
import copy

import torch
from IPython.display import display

from llmlab.generation import generate
from llmlab.inference import quantize_weights, speculative_generate
from llmlab.params import count_parameters
from llmlab.pretrained import load, load_draft
from llmlab.report import fmt_int, label, table

torch.set_num_threads(1)
model, tokenizer = load("shakespeare")
prompt = tokenizer.encode("ROMEO:\n")
# without the cache, the whole window is recomputed at each step, as speculative_generate
# (below) does; the greedy tokens are the same either way
greedy = generate(model, prompt, 24, greedy=True, use_kv_cache=False)
reports, texts = {}, {}
for bits in (8, 4):
    quantized = copy.deepcopy(model)
    reports[bits] = quantize_weights(quantized, bits)
    texts[bits] = generate(quantized, prompt, 24, greedy=True, use_kv_cache=False)
rows = [["float32", fmt_int(reports[8].float_bytes), repr(tokenizer.decode(greedy))]]
rows += [[f"int{bits}", fmt_int(reports[bits].quantized_bytes),
          repr(tokenizer.decode(texts[bits]))] for bits in (8, 4)]
display(table([label("权重", "weights"), label("线性层的字节数", "bytes of the linear layers"),
               label("贪心续写", "greedy continuation")], rows))
assert texts[8] == greedy and texts[4] != greedy
first = next(i for i, (a, b) in enumerate(zip(texts[4], greedy)) if a != b) + 1
display(label(f"从第 {first} 个 token 起，4 位的续写与 float32 的不同",
              f"from token {first} on, the 4-bit continuation differs from the float32 one"))

# %% [markdown] lang="zh"
# 字节数包含 float32 的缩放因子，4 位的编码按半个字节计（真正的内核会把两个编码打包进一个字节）。
# `quantize_weights` 只是模拟：每个编码占一个字节，每次调用都重新反量化，
# 所以这里看到的是量化对输出的影响，不是它的速度和内存。
# 8 位时贪心续写不变；4 位时从上面打印的那个 token 起就不同了，之后的每个 token 都接在不同的文字后面，
# 所以这一行说明不了 4 位模型写得好不好：讲义改用留出文本上的损失来衡量。

# %% [markdown] lang="en"
# The byte counts include the float32 scales, and count a 4-bit code as half a byte, as a
# real kernel packs two codes to a byte. `quantize_weights` only simulates this: each
# code takes a byte of its own and is dequantized anew at every call, so this shows what
# quantization does to the outputs, not its speed or its memory. Eight bits leave the
# greedy text unchanged; four bits change it from the token printed above on, and every
# later token follows a different text, so the row says little about how well the 4-bit
# model writes: the lecture measures the held-out loss instead.

# %% [markdown] lang="zh"
# ## 投机解码
#
# 草稿模型每轮提议 `k` 个 token，基座模型一次前向检验全部。温度为 0 时，写出的文本必须和
# 基座模型自己的贪心文本完全相同；`SpeculativeStats` 记下两个模型各做了几次前向。
# k 越大，基座模型的前向越少，草稿模型的前向却越多，而且并不免费：每次前向大约要把模型的权重读一遍，
# 所以最后一列按读取的权重算每个 token 的开销，以普通贪心解码为 1。
# k = 1 时读得比贪心解码少，k = 4 时反而更多。
# 被接受的比例随 k 下降，是因为一轮里的提议只有在它之前的提议全被接受时才算数。

# %% [markdown] lang="en"
# ## Speculative decoding
#
# The draft proposes `k` tokens a round, and the base model checks them all in one pass.
# At temperature 0 the text must be exactly the base model's own greedy text;
# `SpeculativeStats` counts the passes of each model. The base model runs fewer passes as
# k grows, but the draft runs more, and its passes are not free: a pass reads about its
# model's weights once, so the last column counts the weights read per token, as a
# multiple of plain greedy decoding's. k = 1 reads less than plain decoding, and k = 4
# reads more. The share accepted falls with k because a proposal counts only if all
# before it in its round were kept.

# %%
draft = load_draft("shakespeare")
n_base, n_draft = count_parameters(model), count_parameters(draft)
display(label(f"参数：基座模型 {n_base:,} 个，草稿模型 {n_draft:,} 个",
              f"parameters: base model {n_base:,}, draft {n_draft:,}"))
rows, reads = [], []
for k in (1, 2, 4):
    text, stats = speculative_generate(model, draft, prompt, 24, k)
    assert text == greedy  # the base model's greedy text, token for token
    reads.append((stats.target_calls * n_base + stats.draft_calls * n_draft)
                 / (len(greedy) * n_base))
    rows.append([k, stats.target_calls, stats.draft_calls, f"{stats.acceptance_rate:.2f}",
                 f"{reads[-1]:.2f}"])
assert reads[0] < 1 < reads[-1]  # k = 1 reads less than greedy decoding, k = 4 more
display(table(["k", label("基座模型前向", "base model passes"),
               label("草稿模型前向", "draft passes"),
               label("提议被接受的比例", "share of proposals accepted"),
               label("读的权重（贪心解码 = 1）", "weights read (greedy = 1)")], rows))
