"""The building-blocks lecture: its exercises have checked solutions; the timing's rows.

Each ``??? tip "练习 N：…"`` / ``??? tip "Exercise N: …"`` at the end of the page is
followed by a ``??? success`` solution holding prose and an executed block that
asserts (``tests/test_snippets.py`` runs those blocks; the build executes them).
"""

from __future__ import annotations

import re

import pytest

from pages import LANGS, fenced_blocks, read_page

from llmlab.experiments import building_blocks as bb
from llmlab.report.building_blocks import flops_table, kernels_table, norm_share_summary

PAGE = "lectures/building-blocks.md"
TIP = {"zh": re.compile(r'^\?\?\? tip "练习 (\d+)：'),
       "en": re.compile(r'^\?\?\? tip "Exercise (\d+): ')}
SOLUTION = {"zh": '??? success "答案"', "en": '??? success "Solution"'}


def _exercises(lang: str) -> list[tuple[int, str, str]]:
    """``(number, task, solution)`` per exercise; each body is its indented lines."""
    lines = read_page(lang, PAGE).splitlines()
    found = []
    for i, line in enumerate(lines):
        m = TIP[lang].match(line)
        if not m:
            continue
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or lines[j].startswith("    ")):
            j += 1
        task = "\n".join(lines[i + 1:j])
        assert j < len(lines) and lines[j] == SOLUTION[lang], (
            f"{lang}: exercise {m.group(1)} is not followed by {SOLUTION[lang]}")
        k = j + 1
        while k < len(lines) and (not lines[k].strip() or lines[k].startswith("    ")):
            k += 1
        found.append((int(m.group(1)), task, "\n".join(lines[j + 1:k])))
    return found


@pytest.mark.parametrize("lang", LANGS)
def test_at_least_six_exercises_each_with_an_asserting_solution(lang: str) -> None:
    exercises = _exercises(lang)
    assert len(exercises) >= 6
    assert [n for n, _, _ in exercises] == list(range(1, len(exercises) + 1))
    for n, task, solution in exercises:
        assert task.strip(), f"{lang}: exercise {n} has no task"
        blocks = fenced_blocks(solution)
        executed = [b for b in blocks if b.lang == "python" and b.executed]
        assert executed, f"{lang}: exercise {n}'s solution has no executed block"
        assert all(b.attrs.get("source") == "block" for b in executed)
        assert any(re.search(r"^\s*assert ", b.code, re.M) for b in executed), (
            f"{lang}: exercise {n}'s solution asserts nothing")
        prose = re.sub(r"```.*?```", "", solution, flags=re.S)
        assert len(prose.strip()) > 40, f"{lang}: exercise {n}'s solution has no prose"
        assert "import " in executed[0].code  # self-contained


def test_both_languages_have_the_same_exercises_and_solution_code() -> None:
    zh, en = _exercises("zh"), _exercises("en")
    assert [n for n, _, _ in zh] == [n for n, _, _ in en]
    for (n, _, a), (_, _, b) in zip(zh, en):
        codes = [[c.code for c in fenced_blocks(text)] for text in (a, b)]
        assert codes[0] == codes[1], n


@pytest.fixture(scope="module")
def small_timing() -> bb.FlopsRuntimeResult:
    return bb.run_flops_vs_runtime.uncached(seq_len=16, d_model=64, d_head=16,
                                            min_run_time=0.01)


def test_kernel_counts(small_timing) -> None:
    r = small_timing
    assert len(r.kernels) == len(r.ops) and all(k >= 1 for k in r.kernels)
    assert r.kernels[r.index("matmul")] == 1
    for op in ("LayerNorm", "softmax"):  # PyTorch: one kernel; ours: a pass per step
        assert r.kernels[r.index(op, "torch")] == 1 < r.kernels[r.index(op, "llmlab")]
    assert r.kernels[r.index("softmax", "llmlab")] == 5  # amax, sub, exp, sum, div
    assert r.machine and r.threads == 1


def test_timing_tables_name_each_rows_implementation(small_timing) -> None:
    r = small_timing
    for impl, name in (("torch", "PyTorch"), ("llmlab", "llmlab (teaching code)")):
        text = flops_table(r, impl).render("en")
        rows = [line for line in text.splitlines()[2:] if line.startswith("|")]
        assert len(rows) == len(set(r.ops))  # one row per op
        softmax_row = next(row for row in rows if row.startswith("| softmax"))
        assert f"| {name} |" in softmax_row
        assert "| PyTorch |" in rows[0]  # the matmul is always PyTorch's
    kernels = kernels_table(r).render("zh").splitlines()
    assert "PyTorch 的核数" in kernels[0]
    assert [row.split(" | ")[0] for row in kernels[2:]] == ["| RMSNorm", "| LayerNorm",
                                                           "| softmax"]
    summary = norm_share_summary(r).render("en")
    assert r.machine in summary and "25%" in summary and len(summary.splitlines()) == 4
