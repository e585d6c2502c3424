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
# # 用 LoRA 微调莎士比亚基座模型
#
# 这个笔记本给课程的莎士比亚[基座模型](../lectures/training.md#基座模型同一套代码训练得更久)
# 加上 LoRA 适配器并训练它，看它从“只会续写剧本”变成“读一行台词，回答 `Ask` 或 `Tell`，然后停下”：
# 这一行是问句就答 `Ask`，以句号结尾就答 `Tell`。讲解见[微调](../lectures/finetuning.md)。
# 也可以直接运行：`python examples/finetune_lora.py`。

# %% [markdown] lang="en"
# # Fine-tuning the Shakespeare base model with LoRA
#
# This notebook adds LoRA adapters to the course's Shakespeare
# [base model](../lectures/training.md#the-base-models-the-same-code-trained-for-longer),
# trains them, and watches the model go from continuing the play to reading a line,
# answering `Ask` or `Tell`, and stopping: `Ask` when the line is a question, `Tell` when
# it ends with a full stop. [Fine-tuning](../lectures/finetuning.md) explains each step.
# It also runs as a plain script: `python examples/finetune_lora.py`.

# %%
import torch
from IPython.display import display

from llmlab.experiments.finetune import run_finetune, task_examples
from llmlab.finetune import add_lora, end_of_text_id, exact_match, supervised_data
from llmlab.generation import generate
from llmlab.params import count_parameters
from llmlab.pretrained import load
from llmlab.report import fmt_int, fmt_pct, label, table
from llmlab.training import AdamW, train

torch.set_num_threads(1)
model, tokenizer = load("shakespeare")
task = task_examples("shakespeare")
prompt = task.held_out[0][0]
eot = end_of_text_id(tokenizer)
written = generate(model, tokenizer.encode(prompt), 8, greedy=True, eos_token_id=eot)
display(table([label("提示", "prompt"), label("基座模型写出的", "what the base model writes")],
              [[repr(prompt), repr(tokenizer.decode(written))]]))

# %% [markdown] lang="zh"
# ## 加上适配器
#
# LoRA 把一个线性层的 $W x$ 换成 $W x + \frac{\alpha}{r} B A x$：$W$ 冻住不动，
# 只训练 $A$（$r \times d_\text{in}$，随机初始化）和 $B$（$d_\text{out} \times r$，从零开始）。
# `add_lora` 把每个注意力块的 `q_proj` 和 `v_proj` 包进 `LoRALinear`，冻结其余参数。
# $B$ 为零，所以刚加上适配器的模型和基座模型输出完全相同。
# 表中的“全部”也算上了适配器。

# %% [markdown] lang="en"
# ## Add the adapters
#
# LoRA replaces a linear layer's $W x$ by $W x + \frac{\alpha}{r} B A x$: $W$ stays frozen,
# and only $A$ ($r \times d_\text{in}$, random at the start) and $B$
# ($d_\text{out} \times r$, zero at the start) are trained. `add_lora` wraps every
# attention block's `q_proj` and `v_proj` in a `LoRALinear` and freezes everything else.
# With $B$ at zero, the freshly adapted model's outputs are exactly the base model's.
# "All" in the table counts the adapters too.

# %%
held_out = supervised_data(tokenizer, task.held_out)
base_parameters = count_parameters(model)
with torch.no_grad():
    before = model(held_out.inputs[:4])
torch.manual_seed(0)  # A's random start: the lecture's run draws it with seed 0 too
trainable = add_lora(model, rank=4, alpha=8.0)
with torch.no_grad():
    assert torch.equal(model(held_out.inputs[:4]), before)  # B = 0
display(table([label("参数", "parameters"), label("个数", "count")],
              [[label("基座模型", "base model"), fmt_int(base_parameters)],
               [label("全部", "all"), fmt_int(count_parameters(model))],
               [label("可训练（LoRA，r = 4）", "trainable (LoRA, r = 4)"), fmt_int(trainable)]]))

# %% [markdown] lang="zh"
# ## 训练
#
# 20 步，每步 16 个例子，提示不计入损失，只训练适配器：和讲义里的那次运行
# （`run_finetune`，结果已经缓存）设置相同、随机种子相同，得到的准确率也相同（下面的代码核对了这一点）。
# 准确率指留出提示上的精确匹配：贪心解码写出正确答案，接着写出 `<|endoftext|>`。
# 基座模型从没见过一行台词之后跟着问题、答案或这个 token，所以微调前是 0%。
# 每一行是该答案的那些留出提示上的结果。

# %% [markdown] lang="en"
# ## Training
#
# 20 steps of 16 examples, the prompt left out of the loss, the adapters alone trained:
# the settings and the seed of the lecture's own run (`run_finetune`, its result
# cached), and so its accuracies (the code checks it). The accuracy is exact match on
# held-out prompts: greedy decoding writes the right answer, then `<|endoftext|>`. The
# base model never saw a question, an answer or that token after a line, so it starts
# at 0%. Each row is over the held-out prompts with that answer.

# %%
def accuracy(m):  # per answer: the share of its held-out prompts answered exactly
    right = exact_match(m, held_out).float()
    return [float(right[torch.tensor([a == answer for _, a in task.held_out])].mean())
            for answer in task.answers]


base_accuracy = accuracy(model)  # B = 0: the base model's
optimizer = AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2,
                  weight_decay=0.0)
train(model, optimizer, supervised_data(tokenizer, task.train), steps=20, batch_size=16,
      max_grad_norm=1.0, seed=0)
run = run_finetune("shakespeare", method="lora", rank=4)
assert (run.steps, run.batch_size, run.lr, run.seed) == (20, 16, 1e-2, 0)
assert base_accuracy == run.base_accuracy == [0.0, 0.0]
after = accuracy(model)
assert after == run.accuracy  # the same run as the lecture's
counts = [sum(a == answer for _, a in task.held_out) for answer in task.answers]
display(table([label("答案", "answer"), label("留出提示", "held-out prompts"),
               label("微调前", "before"), label("微调后", "after")],
              [[answer, n, fmt_pct(b), fmt_pct(a)] for answer, n, b, a
               in zip(task.answers, counts, base_accuracy, after)]))

# %%
outputs = []
for p, _ in task.held_out[:2]:  # one of each answer
    new = generate(model, tokenizer.encode(p), 4, greedy=True, eos_token_id=eot)
    outputs.append([repr(p), repr(tokenizer.decode([t for t in new if t != eot]))])
display(table([label("提示", "prompt"), label("微调后写出的", "written after fine-tuning")],
              outputs))
