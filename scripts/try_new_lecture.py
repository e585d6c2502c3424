"""Add a throw-away lecture to a copy of the course and list the files it touched.

    python scripts/try_new_lecture.py            # the course's own checks on the copy
    python scripts/try_new_lecture.py --build    # and the strict build of the copy

A lecture is meant to be a unit: its two pages, its experiments module, its report
module, its tests, and a line in ``nav``; no shared registry to edit. This copies
the checkout's tracked files to a temporary folder (a git repository, so that
``git status`` lists what changed), writes the smallest complete lecture there
(an experiment, a table, both pages with their front matter, the lecture's tests,
prose guards and bad-input cases), prints the files it had to touch, then runs the
tests that read every lecture (bad inputs, prose numbers, cross-references, the
two languages' agreement, imports, the home page's list, what precompute finds)
on the copy, and with ``--build`` the strict site build. Exit code: the checks'.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = "toy-lecture"  # the page; its modules are toy_lecture

FILES = {
    "src/llmlab/experiments/toy_lecture.py": '''\
"""A throw-away lecture's experiment (scripts/try_new_lecture.py)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from llmlab.build.cache import cached
from llmlab.checks import check_int

__all__ = ["ToyResult", "run_toy"]


@dataclass
class ToyResult:
    """Squares of 0..n-1, computed by torch."""

    n: int
    squares: list[int]


@cached
def run_toy(n: int = 4) -> ToyResult:
    """The squares of 0..n-1."""
    check_int("n", n, minimum=1)
    return ToyResult(n, (torch.arange(n) ** 2).tolist())
''',
    "src/llmlab/report/toy_lecture.py": '''\
"""A throw-away lecture's table (scripts/try_new_lecture.py)."""

from __future__ import annotations

from llmlab.checks import check_type
from llmlab.experiments.toy_lecture import ToyResult
from llmlab.report import Localized, label, table

__all__ = ["toy_table"]


def toy_table(r: ToyResult) -> Localized:
    """One row per number: the number and its square."""
    check_type("r", r, ToyResult)
    return table([label("数", "number"), label("平方", "square")],
                 [(i, s) for i, s in enumerate(r.squares)])
''',
    "tests/test_toy_lecture.py": '''\
from llmlab.experiments.toy_lecture import run_toy


def test_squares():
    assert run_toy.uncached(n=3).squares == [0, 1, 4]
''',
    "tests/prose/toy-lecture.py": '''\
"""lectures/toy-lecture.md: its prose numbers (see tests/prose/__init__.py)."""

GUARDS: dict[str, list[object]] = {}
''',
    "tests/bad_inputs/toy_lecture.py": '''\
"""Bad inputs of the throw-away lecture's modules."""

from llmlab.experiments.toy_lecture import run_toy
from llmlab.report.toy_lecture import toy_table

from bad_inputs import T, V, case

CASES = [
    case("run_toy n 0", "llmlab.experiments.toy_lecture.run_toy",
         lambda: run_toy.uncached(n=0), V, "n", r"n must be an int >= 1, got 0"),
    case("toy_table of None", "llmlab.report.toy_lecture.toy_table",
         lambda: toy_table(None), T, "r", r"r must be a ToyResult"),
]
''',
}

PAGE = {
    "zh": ("一个试验用的讲义", "只为检查新增一讲要改哪些文件。", "分布式", "平方表"),
    "en": ("A throw-away lecture", "only there to check which files a new lecture touches.",
           "distributed", "The table of squares"),
}


EXERCISE = {
    "zh": ('??? tip "练习 {k}：第 {k} 个数的平方"', "    这个数的平方是多少？先算一算，再看答案。",
           '??? success "答案"', "    平方就是这个数乘以它自己，下面的代码块检查了这一点。", "练习"),
    "en": ('??? tip "Exercise {k}: the square of {k}"', "    What is the square of this number?",
           '??? success "Solution"',
           "    A square is the number times itself; the block below checks it for this one.",
           "Exercises"),
}


def _exercises(lang: str) -> tuple[str, str]:
    tip, task, solution, prose, heading = EXERCISE[lang]
    items = [f"{tip.format(k=k)}\n{task}\n\n{solution}\n{prose}\n\n"
             f'    ```python exec="on" source="block"\n'
             f'    from llmlab.experiments.toy_lecture import run_toy\n\n'
             f'    assert run_toy(n=4).squares[{k % 4}] == {(k % 4) ** 2}\n'
             f'    print("{(k % 4) ** 2}")\n    ```\n' for k in range(1, 7)]
    return heading, "\n".join(items)


def _page(lang: str) -> str:
    title, summary, link, heading = PAGE[lang]
    exercises, tasks = _exercises(lang)
    return f'''---
summary: "{summary}"
links_to:
  - distributed.md
section_links: []
---

# {title}

[{link}](distributed.md)

## {heading}

```python exec="on"
from llmlab.experiments.toy_lecture import run_toy
from llmlab.report.toy_lecture import toy_table

print(toy_table(run_toy(n=4)))
```

## {exercises}
{tasks}'''


def _copy(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "copy"]):
        subprocess.run(["git", *args], cwd=dest, check=True)


def add_lecture(dest: Path) -> list[str]:
    """Write the lecture into the copy at ``dest``; the files changed or added."""
    for name, text in FILES.items():
        (dest / name).write_text(text, encoding="utf-8")
    for lang in PAGE:
        (dest / "docs" / lang / "lectures" / f"{NAME}.md").write_text(_page(lang), "utf-8")
    config = dest / "mkdocs.yml"
    text = config.read_text(encoding="utf-8")
    last = "      - lectures/distributed.md\n"
    config.write_text(text.replace(last, last + f"      - lectures/{NAME}.md\n", 1), "utf-8")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=dest, capture_output=True, text=True, check=True).stdout
    return sorted(line[3:] for line in status.splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="also build the site, strict")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="llmlab-new-lecture-") as folder:
        dest = Path(folder)
        _copy(dest)
        touched = add_lecture(dest)
        print(f"a new lecture touched {len(touched)} files:")
        for name in touched:
            print(f"  {name}")
        env = {**os.environ, "PYTHONPATH": str(dest / "src"), "OMP_NUM_THREADS": "1",
               "LLMLAB_CACHE_DIR": str(dest / ".cache" / "llmlab")}
        tests = ["tests/test_toy_lecture.py", "tests/test_bad_inputs.py",
                 "tests/test_prose_numbers.py", "tests/test_cross_references.py",
                 "tests/test_i18n_agreement.py", "tests/test_imports.py",
                 "tests/test_course.py", "tests/test_exercises.py",
                 "tests/test_precompute.py::test_the_course_computes_what_its_pages_call"]
        code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "-m", "not site and not browser", *tests], cwd=dest, env=env)
        print(f"the course's checks on the copy: exit code {code}")
        if args.build and code == 0:
            code = subprocess.call([sys.executable, "-m", "mkdocs", "build", "--strict",
                                    "-q", "-d", str(dest / "site")], cwd=dest, env=env)
            built = dest / "site" / "en" / "lectures" / NAME / "index.html"
            print(f"strict build of the copy: exit code {code}; the lecture's page "
                  f"{'is' if built.is_file() else 'is not'} there")
        return code


if __name__ == "__main__":
    sys.exit(main())
