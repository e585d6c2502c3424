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
# # 从零训练一个小语言模型
#
# 这个笔记本在莎士比亚的剧本上训练一个很小的 Llama 式模型，再让它续写文字。
# 每一步都用 `llmlab` 里自己写的部件：BPE 分词器、交叉熵、AdamW、余弦学习率、随机取批、训练循环和采样。
# 文本先由[《分词》](../lectures/tokenization.md)一讲在莎士比亚上训练的字节级 BPE 变成 token 编号（词表 1,257）。
# 讲解见[《训练与生成文本》](../lectures/training.md)一讲，这里训练的正是那一讲里的莎士比亚模型。
# 构建网站时，训练这一步直接取用那一讲缓存好的结果；自己运行 `python examples/train_tiny_lm.py` 时没有缓存，
# 它会当场在 CPU 上训练。要花多久、时间花在哪里（训练步、验证、采样、分词），
# 那一讲最后的“本页的计算”按构建网站的机器实测列了出来。

# %% [markdown] lang="en"
# # Training a tiny language model from scratch
#
# This notebook trains a very small Llama-style model on Shakespeare's plays and then
# lets it continue a prompt. Every step uses the parts written in `llmlab`: the BPE
# tokenizer, the cross-entropy, AdamW, the cosine learning rate, random batches, the
# training loop and sampling. The text first becomes token ids with the byte-level BPE
# that the lecture ["Tokenization"](../lectures/tokenization.md) trained on Shakespeare
# (a vocabulary of 1,257). The lecture
# ["Training and generating text"](../lectures/training.md) explains each part; the
# model trained here is that lecture's Shakespeare model. When the site is built, the
# training step reuses that lecture's cached result; run
# `python examples/train_tiny_lm.py` yourself, with no cache, and it trains on the spot,
# on the CPU. How long that takes and where the time goes (training steps, validation,
# sampling, tokenizing), as measured on the machine that built the site, is in that
# lecture's closing "Computation on this page".

# %%
import math

import torch

from llmlab.experiments.training import LECTURE_VOCAB, corpus_ids, corpus_tokenizer
from llmlab.training import split_tokens

torch.set_num_threads(1)
VOCAB = 1257  # the lecture's vocabulary: 256 bytes, <|endoftext|>, 1,000 merges
assert VOCAB == LECTURE_VOCAB
tokenizer = corpus_tokenizer("shakespeare", VOCAB)
ids = corpus_ids("shakespeare", VOCAB)  # the whole text, encoded once (cached)
train_ids, val_ids = split_tokens(ids, validation_fraction=0.1)
print(f"vocabulary: {tokenizer.vocab_size:,}")
print(f"train tokens: {len(train_ids):,}  validation tokens: {len(val_ids):,}")
print(train_ids[:12].tolist())
print([tokenizer.decode([i]) for i in train_ids[:12]])

# %% [markdown] lang="zh"
# ## 未训练的模型
#
# 刚初始化的模型对每个 token 几乎一视同仁，所以它的交叉熵接近 $\ln 1257 \approx 7.14$，
# 困惑度接近 1,257：相当于在整个词表里均匀地猜，它还什么都没学到。

# %% [markdown] lang="en"
# ## The untrained model
#
# A freshly initialised model treats every token almost alike, so its cross-entropy is
# close to $\ln 1257 \approx 7.14$ and its perplexity close to 1,257, the perplexity of a
# uniform guess over the whole vocabulary: it has learned nothing yet.

# %%
from llmlab.models.llama import TransformerLM
from llmlab.training import cross_entropy, get_batch, perplexity

torch.manual_seed(0)
model = TransformerLM(vocab_size=tokenizer.vocab_size, context_length=64, d_model=64,
                      num_layers=2, num_heads=4, d_ff=176)
x, y = get_batch(train_ids, batch_size=16, context_length=64,
                 generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    loss = cross_entropy(model(x), y).item()
print(f"parameters: {sum(p.numel() for p in model.parameters()):,}")
print(f"loss: {loss:.3f}  ln(V): {math.log(tokenizer.vocab_size):.3f}  "
      f"perplexity: {perplexity(loss):.1f}")
assert abs(loss - math.log(tokenizer.vocab_size)) < 0.5

# %% [markdown] lang="zh"
# ## 训练
#
# `run_training_run` 是讲义用的那个实验函数：它建好同样大小的模型，交给 `train` 训练。
# `train` 每一步随机取 16 段、每段 64 个 token，算交叉熵，反向传播，把梯度范数裁到 1，
# 再让 AdamW 更新一次；学习率先线性预热，再按余弦降到峰值的十分之一。
# 训练过程中每隔几步在留出的最后 10% 文本上估一次验证损失：用的是其中均匀分布、每次都相同的若干段窗口，
# 而不是整段文本。它还在开始、一半和结束时各采一段样本。下面先调用它，再把它训练模型的那段代码显示出来，
# 最后打印其中 `settings` 的取值。代码中关于诗句形式的几行是给那一讲的唐诗模型用的，
# 对莎士比亚什么也不做。

# %% [markdown] lang="en"
# ## Training
#
# `run_training_run` is the lecture's experiment: it builds a model of the same size and
# hands it to `train`. At every step `train` draws 16 random windows of 64 tokens,
# computes the cross-entropy, backpropagates, clips the gradient norm to 1 and lets
# AdamW update the weights; the learning rate warms up linearly, then follows a cosine
# down to a tenth of its peak. Every few steps it estimates the validation loss on the
# held-out last 10% of the text, from evenly spaced windows of it (the same ones each
# time) rather than the whole, and it samples a text at the start, halfway and at the
# end. Below we call it, show the code with which it trained the model, then print
# the values its `settings` hold. The lines about poem shapes serve the lecture's
# Tang-poem model and do nothing for Shakespeare.

# %%
from IPython.display import display

from llmlab.experiments.training import run_training_run
from llmlab.report import label
from llmlab.report.training import loss_curves_figure, source_block

result = run_training_run(corpus="shakespeare")  # cached when the site builds
display(source_block(run_training_run.uncached, "settings = _settings(", "n_params ="))

# %%
settings = result.settings
print(settings)
for it, val in zip(result.val_iterations, result.val_losses):
    print(f"step {it:4d}  validation loss {val:.3f}")
seen, last = result.tokens_seen, result.val_losses[-1]
assert seen == settings.steps * settings.batch_size * settings.context_length
display(label(f"见过的 token：{seen:,} = {settings.steps} 步 × {settings.batch_size} 段 × "
              f"{settings.context_length} 个 token，是训练文本一遍的 {seen / len(train_ids):.0%}",
              f"tokens seen: {seen:,} = {settings.steps} steps × {settings.batch_size} windows "
              f"× {settings.context_length} tokens, {seen / len(train_ids):.0%} of one pass over "
              "the training text"))
display(label(f"每个验证点是 {result.eval_windows} 段窗口的平均；最后一个是 {last:.3f}，"
              f"相当于困惑度 {math.exp(last):.0f}，而均匀地猜是 {tokenizer.vocab_size:,}",
              f"each validation point averages {result.eval_windows} windows; the last, "
              f"{last:.3f}, is a perplexity of {math.exp(last):.0f}, against "
              f"{tokenizer.vocab_size:,} for a uniform guess"))
assert math.exp(last) < tokenizer.vocab_size / 5  # far below V
display(loss_curves_figure([result]))

# %% [markdown] lang="zh"
# ## 续写
#
# 同一个开头，用不同的温度采样。温度越低，模型越偏向它最有把握的 token，换行就是其中之一，空行随之变多；
# 温度越高，选择越随意，拼凑出的怪词也越多。这么短的训练还写不出真正的台词，
# 但已经能看出常见的词、换行和“角色名加冒号”的格式。
# 三个温度用的是同一个随机种子：在两个分布还一致的地方，同样的随机数选出同样的 token，
# 所以不同温度的文字可能开头相同。
# 显示成 `�` 的，是只含一个字符的一部分字节的 token。
# 上下文是 64 个 token：写到超出之后，模型只看得到最后 64 个。

# %% [markdown] lang="en"
# ## Continuing a prompt
#
# The same prompt, sampled at different temperatures. The lower the temperature,
# the more the model favours the tokens it is surest of, a line break among them, so
# empty lines multiply; the higher, the freer its choices and the more odd words it
# glues together. So short a run cannot write real lines yet, but common
# words, line breaks and the "NAME:" layout of the speakers already show through.
# All three use the same seed: where the sharpened and the flattened distributions still
# agree, the same random draws pick the same tokens, so texts at different temperatures
# can begin alike. A `�` is a token that holds only some of a character's bytes. The
# context is 64 tokens: past it, the model sees only the last 64.

# %%
from llmlab.generation import generate

model = result.model()  # the trained weights
prompt = "ROMEO:\n"
for temperature in (0.5, 0.8, 1.2):
    new = generate(model, tokenizer.encode(prompt), 120, temperature=temperature,
                   generator=torch.Generator().manual_seed(0))
    print(f"--- temperature={temperature}")
    print(prompt + tokenizer.decode(new))

# %% [markdown] lang="zh"
# ## KV 缓存不改变结果
#
# 生成时每一步只需要新位置的查询；只要文字还在上下文之内（这里是 64 个 token），
# 之前位置的键和值就不会变，缓存起来就不必重算。超出之后窗口滑动，每个 token 的位置都变了，`generate` 会把整个窗口重算一遍。
# 所以下面只生成到正好填满上下文：用同一个随机种子采样，有缓存和没缓存生成的 token 完全相同。
# 贪心解码时，这个模型第一个 token 就是换行，之后全是换行
# （原因见那一讲的[采样一节](../lectures/training.md#采样从分布到文字)）。

# %% [markdown] lang="en"
# ## The KV cache changes nothing
#
# Each generation step needs the query of the new position only; as long as the text
# fits in the context (64 tokens here), the keys and values of earlier positions do not
# change, so they are cached instead of recomputed. Beyond it the window slides, every
# position shifts, and `generate` recomputes the whole window. So we generate just
# enough to fill the context: sampled with the same seed, the tokens generated with and
# without the cache are identical. Under greedy decoding this model writes a line break
# at once, and then only line breaks
# ([the sampling section](../lectures/training.md#sampling-from-a-distribution-to-text)
# of the lecture says why).

# %%
prompt_ids = tokenizer.encode(prompt)
n = model.context_length - len(prompt_ids)  # the text never outgrows the context
with_cache = generate(model, prompt_ids, n, temperature=0.8,
                      generator=torch.Generator().manual_seed(0))
without = generate(model, prompt_ids, n, temperature=0.8, use_kv_cache=False,
                   generator=torch.Generator().manual_seed(0))
assert with_cache == without
display(label(f"{n} 个 token，有缓存和没缓存完全相同",
              f"{n} tokens, the same with and without the cache"))
greedy = generate(model, prompt_ids, n, greedy=True)
assert tokenizer.decode(greedy) == "\n" * n  # line breaks from the first token on
print(repr(prompt + tokenizer.decode(greedy)))
