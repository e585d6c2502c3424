"""Every lecture's exercises: at least six, at the end, each with a checked solution.

Each ``??? tip "练习 N：…"`` / ``??? tip "Exercise N: …"`` is followed directly by a
``??? success "答案"`` / ``??? success "Solution"`` admonition that explains in prose
and holds an executed, self-contained Python block with an ``assert`` (the build runs
it and shows its output; the snippet test runs it as a reader would). The exercises
close the lecture under a ``## 练习`` / ``## Exercises`` heading, and both languages
hold the same exercises with the same solution code.
"""

from __future__ import annotations

import re

import pytest

from pages import DOCS, LANGS, fenced_blocks, read_page

LECTURES = sorted(p.name for p in (DOCS / "zh" / "lectures").glob("*.md"))
MIN_EXERCISES = 6
TIP = {"zh": re.compile(r'^\?\?\? tip "练习 (\d+)：[^"]+"$'),
       "en": re.compile(r'^\?\?\? tip "Exercise (\d+): [^"]+"$')}
SOLUTION = {"zh": '??? success "答案"', "en": '??? success "Solution"'}
PROSE = {"zh": 20, "en": 40}  # characters of explanation, at least: Chinese is denser
HEADING = {"zh": "\n## 练习\n", "en": "\n## Exercises\n"}


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


def exercises(lang: str, page: str) -> list[tuple[int, list[str], str, list[str]]]:
    """``(number, task, opening line of the next admonition, its body)`` per exercise."""
    items = _admonitions(read_page(lang, f"lectures/{page}"))
    out = []
    for k, (line, task) in enumerate(items):
        m = TIP[lang].match(line)
        if m:
            following = items[k + 1] if k + 1 < len(items) else ("", [])
            out.append((int(m.group(1)), task, following[0], following[1]))
    return out


def test_every_lecture_is_checked() -> None:
    assert len(LECTURES) >= 6 and "training.md" in LECTURES, LECTURES


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", LECTURES)
def test_at_least_six_numbered_exercises_at_the_end(lang: str, page: str) -> None:
    numbers = [n for n, *_ in exercises(lang, page)]
    assert len(numbers) >= MIN_EXERCISES, f"{lang}/{page}: only {len(numbers)} exercises"
    assert numbers == list(range(1, len(numbers) + 1)), f"{lang}/{page}: numbered {numbers}"
    text = read_page(lang, f"lectures/{page}")
    assert text.count(HEADING[lang]) == 1, f"{lang}/{page}: no single exercises heading"
    tail = text[text.index(HEADING[lang]):]
    assert len(re.findall(r'^\?\?\? tip "', text, re.M)) == len(
        re.findall(r'^\?\?\? tip "', tail, re.M)), f"{lang}/{page}: an exercise outside it"
    assert not re.search(r"^## ", tail[len(HEADING[lang]):], re.M), (
        f"{lang}/{page}: a section after the exercises")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", LECTURES)
def test_each_exercise_has_a_solution_that_runs_and_asserts(lang: str, page: str) -> None:
    for number, task, opening, body in exercises(lang, page):
        where = f"{lang}/{page}: exercise {number}"
        assert any(line.strip() for line in task), f"{where} has no task"
        assert opening == SOLUTION[lang], f"{where} is followed by {opening!r}"
        prose = re.sub(r"```.*?```", "", "\n".join(body), flags=re.S)
        assert len(prose.strip()) > PROSE[lang], f"{where}: the solution has no prose"
        blocks = [b for b in fenced_blocks("\n".join(body))
                  if b.lang == "python" and b.executed]
        assert blocks, f"{where}: the solution has no executed block"
        assert all(b.indent == "    " and b.attrs.get("source") == "block" for b in blocks)
        assert any(re.search(r"^\s*assert\b", b.code, re.M) for b in blocks), (
            f"{where}: the solution asserts nothing")
        assert re.search(r"^(from|import) ", blocks[0].code, re.M), (
            f"{where}: the solution's first block imports nothing (a reader copies it)")


@pytest.mark.parametrize("page", LECTURES)
def test_both_languages_have_the_same_exercises_and_solution_code(page: str) -> None:
    zh, en = exercises("zh", page), exercises("en", page)
    assert [n for n, *_ in zh] == [n for n, *_ in en], page
    for (n, _, _, zb), (_, _, _, eb) in zip(zh, en):
        z = [b.code for b in fenced_blocks("\n".join(zb))]
        e = [b.code for b in fenced_blocks("\n".join(eb))]
        assert z == e, f"{page}: exercise {n}: the solution code differs between zh and en"
