"""Each validation rule lives once, in ``llmlab.checks``, with one argument order.

* Every public check of ``llmlab.checks`` takes ``(name, value, ...)``: the name of
  the argument first, what was given second (``check_tensors``, which checks
  several tensors at once, takes them as keywords: their names are the keywords).
* A ``_check_*`` helper elsewhere in ``llmlab`` is a local composite (several
  arguments of one function checked together): it applies the rules of
  ``llmlab.checks``, so it calls at least one of its functions. A helper that calls
  none re-implements a rule by hand; that rule belongs in ``llmlab.checks``.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from llmlab import checks

SRC = Path(checks.__file__).parent
POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _public_functions() -> dict[str, object]:
    return {name: f for name, f in vars(checks).items()
            if inspect.isfunction(f) and f.__module__ == checks.__name__
            and not name.startswith("_")}


def test_all_lists_every_public_check():
    assert set(checks.__all__) == set(_public_functions())


def test_every_public_check_takes_name_then_value():
    wrong = {}
    for name, function in _public_functions().items():
        params = inspect.signature(function).parameters.values()
        positional = [p.name for p in params if p.kind in POSITIONAL]
        if not positional:  # check_tensors: the tensors' names are its keywords
            assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params), name
            continue
        if positional[:2] != ["name", "value"]:
            wrong[name] = positional
    assert not wrong, f"checks that do not take (name, value, ...): {wrong}"


def _checks_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a module binds to functions of llmlab.checks, and to the module."""
    functions: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module == "llmlab.checks" or (node.level and module == "checks"):
                functions |= {a.asname or a.name for a in node.names}
            elif module == "llmlab" or (node.level and not module):
                modules |= {a.asname or a.name for a in node.names if a.name == "checks"}
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names
                        if a.name == "llmlab.checks" and a.asname}
    return functions, modules


def _calls_checks(function: ast.AST, functions: set[str], modules: set[str]) -> bool:
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if isinstance(called, ast.Name) and called.id in functions:
            return True
        if isinstance(called, ast.Attribute):
            owner = called.value
            if isinstance(owner, ast.Name) and owner.id in modules:
                return True
            if (isinstance(owner, ast.Attribute) and owner.attr == "checks"
                    and isinstance(owner.value, ast.Name) and owner.value.id == "llmlab"):
                return True
    return False


def _local_check_helpers():
    for path in sorted(SRC.rglob("*.py")):
        if path == Path(checks.__file__):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        functions, modules = _checks_names(tree)
        for node in ast.walk(tree):
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and node.name.startswith("_check_")):
                yield path, node, functions, modules


def test_local_check_helpers_exist():
    """The rule below looks at something: llmlab has local composite checks."""
    assert any(True for _ in _local_check_helpers())


def test_local_check_helpers_call_llmlab_checks():
    hand_written = [
        f"{path.relative_to(SRC.parent)}:{node.lineno} {node.name}"
        for path, node, functions, modules in _local_check_helpers()
        if not _calls_checks(node, functions, modules)
    ]
    assert not hand_written, (
        "these _check_ helpers call no function of llmlab.checks; express their rule "
        "there (or, for a composite of several arguments, build it from its "
        f"functions): {hand_written}"
    )


def test_the_helper_rule_can_fail():
    """A helper written by hand is caught; one that calls llmlab.checks is not."""
    tree = ast.parse(
        "from llmlab.checks import check_int\n"
        "from llmlab import checks as c\n"
        "def _check_a(x):\n"
        "    if x < 0:\n"
        "        raise ValueError('x')\n"
        "def _check_b(x):\n"
        "    check_int('x', x)\n"
        "def _check_c(x):\n"
        "    c.check_int('x', x)\n"
    )
    functions, modules = _checks_names(tree)
    called = {node.name: _calls_checks(node, functions, modules)
              for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert called == {"_check_a": False, "_check_b": True, "_check_c": True}
