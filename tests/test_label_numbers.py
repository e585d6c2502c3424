"""Both halves of every printed ``label(zh, en)`` state the same numbers, in one order.

The site build checks that each block prints the same numbers in both languages, in
order (``test_i18n_agreement.py``), but only after a whole build, and it stops at the
first block that differs. This reads the code instead, in a second: in each
``label(f"…", f"…")`` of ``src/llmlab``, ``examples/`` and the pages' Python blocks, the
digits written in the text and the ``{…}`` fields both halves share must come in the
same order. (A field only one half has, such as ``{x.zh}`` against ``{x.en}`` or an
English plural ``{'s' if n > 1 else ''}``, is that language's own.) Words drawn into
a figure and alt texts are left out: the build does not compare them, and a
translation may order a description differently.
"""

from __future__ import annotations

import ast
import re

import pytest

from pages import EXAMPLES, LANGS, ROOT, page_paths, python_blocks, read_page

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
FIGURE_KEYWORDS = {"alt", "xlabel", "ylabel", "title"}
FIGURE_CALLS = {"set_xlabel", "set_ylabel", "set_title", "bar", "plot", "annotate", "legend"}


def _parts(node: ast.AST) -> list[str] | None:
    """Digits and ``{field}``s of a literal (f-)string, in order; ``None`` otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return NUMBER.findall(node.value)
    if isinstance(node, ast.JoinedStr):
        out: list[str] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                out += NUMBER.findall(value.value)
            else:
                out.append("{" + ast.unparse(value.value) + "}")
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _parts(node.left), _parts(node.right)
        return None if left is None or right is None else left + right
    return None


def _name(func: ast.AST) -> str | None:
    return getattr(func, "id", None) or getattr(func, "attr", None)


def _for_a_figure(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.keyword) and parent.arg in FIGURE_KEYWORDS:
            return True
        if isinstance(parent, ast.Call) and _name(parent.func) in FIGURE_CALLS:
            return True
        if isinstance(parent, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return any(isinstance(t, ast.Name) and t.id.startswith("alt") for t in targets)
        child, parent = parent, parents.get(parent)
    return False


def mismatches(code: str, where: str) -> list[str]:
    """Each ``label`` call of ``code`` whose halves state numbers differently."""
    tree = ast.parse(code)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _name(node.func) == "label"
                and len(node.args) == 2) or _for_a_figure(node, parents):
            continue
        zh, en = (_parts(arg) for arg in node.args)
        if zh is None or en is None:
            continue
        shared = {p for p in zh if p.startswith("{")} & {p for p in en if p.startswith("{")}
        zh, en = ([p for p in half if not p.startswith("{") or p in shared]
                  for half in (zh, en))
        if zh != en:
            found.append(f"{where}, line {node.lineno}: zh {zh} vs en {en}")
    return found


def _sources() -> list[tuple[str, str]]:
    files = sorted((ROOT / "src" / "llmlab").rglob("*.py")) + sorted(EXAMPLES.glob("*.py"))
    out = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in files]
    for lang in LANGS:
        for rel in page_paths(lang):
            for block in python_blocks(read_page(lang, rel), f"{lang}/{rel}"):
                if not block.partial:
                    out.append((block.where, block.code))
    return out


def test_printed_labels_state_the_same_numbers_in_both_languages() -> None:
    sources = _sources()
    assert len(sources) > 200
    bad = [m for where, code in sources for m in mismatches(code, where)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("code, expected", [
    ('label(f"第 {i} 步，{n} 个", f"{n} of them at step {i}")', 1),  # fields reordered
    ('label("1000 个 1", "adding 1 a thousand times")', 1),  # a number only in zh
    ('label(f"{x.zh}：{n}", f"{x.en}: {n}")', 0),  # each language's own field
    ('label(f"{n} 个头", f"{n} head{\'s\' if n > 1 else \'\'}")', 0),
    ('figure(make, alt=label(f"{a} 与 {b}", f"{b} against {a}"))', 0),  # an alt text
    ('alt = label(f"{a} 与 {b}", f"{b} against {a}")', 0),
    ('ax.set_xlabel(text(label(f"{a}，{b}", f"{b}, {a}"), lang))', 0),  # drawn in a figure
])
def test_the_check_sees_what_the_build_would_see(code: str, expected: int) -> None:
    assert len(mismatches(code, "x")) == expected
