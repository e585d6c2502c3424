"""The attention lecture's exercises: at least six, each with a checked solution.

Each ``??? tip "练习 N：…"`` / ``??? tip "Exercise N: …"`` is followed directly by a
``??? success "答案"`` / ``??? success "Solution"`` admonition that explains in prose
and holds an executed Python block with an ``assert`` (the snippet test runs it; the
build runs it and shows its output). The lecture's diagrams are placed each in a block
of its own that prints only the figure.
"""

from __future__ import annotations

import re

import pytest

from pages import LANGS, fenced_blocks, read_page

PAGE = "lectures/attention-from-scratch.md"
MIN_EXERCISES = 6
TIP = {"zh": re.compile(r'^\?\?\? tip "练习 (\d+)：[^"]+"$'),
       "en": re.compile(r'^\?\?\? tip "Exercise (\d+): [^"]+"$')}
SOLUTION = {"zh": '??? success "答案"', "en": '??? success "Solution"'}
DIAGRAMS = ("attention_lookup", "qkv_projections", "causal_mask")


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
    for name in DIAGRAMS:
        found = [b for b in blocks if f"diagrams.{name}()" in b.code]
        assert len(found) == 1, f"{lang}: diagrams.{name}() in {len(found)} blocks"
        block = found[0]
        assert block.executed and block.attrs.get("html") == "on"
        assert "source" not in block.attrs, f"{lang}: {name}: the figure only, no source"
