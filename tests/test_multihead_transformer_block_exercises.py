"""The multi-head lecture: exercises with checked solutions, its diagrams, what it shows.

* At least six ``??? tip "练习 N：…"`` / ``??? tip "Exercise N: …"``, each followed
  directly by a ``??? success "答案"`` / ``??? success "Solution"`` admonition that
  explains in prose and holds an executed Python block with an ``assert`` (the snippet
  test runs it; the build runs it and shows its output).
* The diagrams, each in a block of its own that prints only the figure.
* The shape table prints :attr:`MultiHeadSelfAttention.STEPS`: its operations must be
  the code that runs.
* The read-out table's numbers (:meth:`WhyMultiheadResult.answered`) mean what the page
  says they mean.
"""

from __future__ import annotations

import inspect
import re

import pytest
import torch

from pages import LANGS, fenced_blocks, read_page

from llmlab.experiments.multihead import (
    _eval_batch,
    run_residual_ablation,
    run_why_multihead,
    train_copy_model,
)
from llmlab.models.gpt2 import MultiHeadSelfAttention

PAGE = "lectures/multihead-transformer-block.md"
MIN_EXERCISES = 6
TIP = {"zh": re.compile(r'^\?\?\? tip "练习 (\d+)：[^"]+"$'),
       "en": re.compile(r'^\?\?\? tip "Exercise (\d+): [^"]+"$')}
SOLUTION = {"zh": '??? success "答案"', "en": '??? success "Solution"'}
DIAGRAMS = ("head_split()", "transformer_block(pre_ln=True)",
            "transformer_block(pre_ln=False)")

torch.set_num_threads(1)


def _admonitions(text: str) -> list[tuple[str, list[str]]]:
    """``(opening line, body lines)`` of each top-level admonition."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if re.match(r"^(\?\?\?|!!!)", line):
            body = []
            for nxt in lines[i + 1:]:
                if nxt.strip() and not nxt.startswith("    "):
                    break
                body.append(nxt)
            found.append((line, body))
    return found


def _exercises(lang: str) -> list[tuple[int, str, list[str]]]:
    """``(number, opening line of the next admonition, its body)`` per exercise."""
    items = _admonitions(read_page(lang, PAGE))
    out = []
    for k, (line, _) in enumerate(items):
        m = TIP[lang].match(line)
        if m:
            following = items[k + 1] if k + 1 < len(items) else ("", [])
            out.append((int(m.group(1)), following[0], following[1]))
    return out


@pytest.mark.parametrize("lang", LANGS)
def test_at_least_six_numbered_exercises(lang: str) -> None:
    numbers = [n for n, _, _ in _exercises(lang)]
    assert len(numbers) >= MIN_EXERCISES, f"{lang}: only {len(numbers)} exercises"
    assert numbers == list(range(1, len(numbers) + 1)), f"{lang}: numbered {numbers}"


@pytest.mark.parametrize("lang", LANGS)
def test_exercises_are_at_the_end_under_their_own_heading(lang: str) -> None:
    text = read_page(lang, PAGE)
    heading = {"zh": "\n## 练习\n", "en": "\n## Exercises\n"}[lang]
    assert text.count(heading) == 1
    tail = text[text.index(heading):]
    assert len(re.findall(r'^\?\?\? tip "', text, re.M)) == len(
        re.findall(r'^\?\?\? tip "', tail, re.M)), f"{lang}: an exercise outside the section"
    assert not re.search(r"^## ", tail[len(heading):], re.M), f"{lang}: a section after it"


@pytest.mark.parametrize("lang", LANGS)
def test_each_exercise_has_a_solution_that_runs_and_asserts(lang: str) -> None:
    for number, opening, body in _exercises(lang):
        assert opening == SOLUTION[lang], f"{lang}: exercise {number} is followed by {opening!r}"
        text = "\n".join(body)
        prose = [line for line in body if line.strip() and "```" not in line]
        assert prose, f"{lang}: exercise {number}'s solution has no prose"
        blocks = [b for b in fenced_blocks(text) if b.lang == "python" and b.executed]
        assert blocks, f"{lang}: exercise {number}'s solution has no executed block"
        assert all(b.indent == "    " for b in blocks)
        assert any(re.search(r"^\s*assert\b", b.code, re.M) for b in blocks), (
            f"{lang}: exercise {number}'s solution asserts nothing")
        assert all(b.attrs.get("source") == "block" for b in blocks)


def test_both_languages_have_the_same_exercises() -> None:
    zh, en = _exercises("zh"), _exercises("en")
    assert [n for n, _, _ in zh] == [n for n, _, _ in en]
    for (n, _, zb), (_, _, eb) in zip(zh, en):
        z = [b.code for b in fenced_blocks("\n".join(zb))]
        e = [b.code for b in fenced_blocks("\n".join(eb))]
        assert z == e, f"exercise {n}: the solution code differs between zh and en"


@pytest.mark.parametrize("lang", LANGS)
def test_diagrams_each_in_a_figure_only_block(lang: str) -> None:
    blocks = fenced_blocks(read_page(lang, PAGE))
    for call in DIAGRAMS:
        found = [b for b in blocks if f"diagrams.{call}" in b.code]
        assert len(found) == 1, f"{lang}: diagrams.{call} in {len(found)} blocks"
        block = found[0]
        assert block.executed and block.attrs.get("html") == "on"
        assert "source" not in block.attrs, f"{lang}: {call}: the figure only, no source"


def test_the_steps_table_shows_the_code_that_runs() -> None:
    """Every operation in ``STEPS`` is in ``forward_steps`` (dropout, off by default,
    and ``self.`` left out; ``attn`` summarises the masked softmax)."""
    source = inspect.getsource(MultiHeadSelfAttention.forward_steps).replace("self.", "")
    source = source.replace("attn_dropout(attn)", "attn")
    source = source.replace("resid_dropout(proj(concat))", "proj(concat)")
    for name, (op, _) in MultiHeadSelfAttention.STEPS.items():
        if name == "attn":
            assert "softmax(" in source and "masked_fill(" in source
            continue
        assert op.replace("√Dh", "math.sqrt(Dh)") in source, (name, op)
    # the merge: a view of the transposed heads needs contiguous memory
    assert ".contiguous().view(B, T, D)" in MultiHeadSelfAttention.STEPS["concat"][0]


SMALL = dict(heads=(1, 2), seeds=(0, 1), steps=40, n_eval=64)


@pytest.fixture(scope="module")
def small_result():
    return run_why_multihead.uncached(**SMALL)


def test_answered_is_what_each_read_out_said(small_result) -> None:
    """``answered(a, a)`` is the accuracy; ``answered(a, a) + answered(a, b)`` the share
    of predictions that are the token at ``t - a`` or the one at ``t - b``."""
    r = small_result
    offsets = tuple(r.offsets)
    start = max(offsets)
    for n_heads in r.heads:
        for s, seed in enumerate(r.seeds):
            model = train_copy_model(n_heads, seed, offsets, steps=SMALL["steps"])
            x = _eval_batch(SMALL["n_eval"], 12, 10)
            with torch.no_grad():
                logits, _ = model(x)
            tokens = {k: x[:, start - k : 12 - k] for k in offsets}
            for j, a in enumerate(offsets):
                pred = logits[j][:, start:].argmax(-1)
                acc = (pred == tokens[a]).float().mean().item()
                assert r.answered(n_heads, seed, a, a) == pytest.approx(acc)
                assert r.accuracy[r.heads.index(n_heads)][s][j] == pytest.approx(acc)
                for b in offsets:
                    if b != a:
                        either = ((pred == tokens[a]) | (pred == tokens[b])).float().mean()
                        total = r.answered(n_heads, seed, a, a) + r.answered(
                            n_heads, seed, a, b)
                        assert total == pytest.approx(either.item())


def test_ranked_orders_the_targets_by_accuracy(small_result) -> None:
    r = small_result
    for n_heads in r.heads:
        for s, seed in enumerate(r.seeds):
            ranked = r.ranked(n_heads, seed)
            assert sorted(ranked) == sorted(r.offsets)
            accs = [r.accuracy[r.heads.index(n_heads)][s][r.offsets.index(k)] for k in ranked]
            assert accs == sorted(accs, reverse=True)
    with pytest.raises(ValueError, match="seed must be one of"):
        r.ranked(1, 7)
    with pytest.raises(ValueError, match="target must be one of the offsets"):
        r.answered(1, 0, 3, 1)


def test_answer_table_in_both_languages(small_result) -> None:
    from llmlab.report.multihead import why_multihead_answer_table

    table = why_multihead_answer_table(small_result, [(1, 0), (2, 1)])
    zh, en = table.render("zh"), table.render("en")
    assert "1 个头，种子 0" in zh and "1 head, seed 0" in en and "2 heads, seed 1" in en
    rows = [line for line in en.splitlines()[2:] if line.strip()]
    assert len(rows) == 2 * len(small_result.offsets)  # one row per read-out
    for row in rows:  # the read-out's own column, and only it, is bold
        cells = [c.strip() for c in row.strip("|").split("|")]
        k = int(re.search(r"t−(\d+)", cells[1]).group(1))
        bold = [i for i, c in enumerate(cells[2:]) if c.startswith("**")]
        assert bold == [small_result.offsets.index(k)]


def test_residual_result_counts_its_predictions() -> None:
    r = run_residual_ablation.uncached(kinds=("pre_ln",), n_layers=1, d_model=8, n_heads=2,
                                       steps=2, window=1, n_eval=10)
    assert (r.seq_len, r.n_eval) == (12, 10)
    assert r.n_predictions == 10 * (12 - 3) and r.chance == pytest.approx(0.1)
