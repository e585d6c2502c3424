"""What the course's pages compute, read from the pages themselves.

Every page's executed blocks (markdown-exec's ``exec="on"`` fences) and every
notebook in ``examples/`` are read for the ``@cached`` experiments they call
(:func:`find_calls`): the pages are the manifest; nothing lists the calls a
second time.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from llmlab.build import cache
from llmlab.build.notebooks import notebooks
from llmlab.report import LANGUAGES

__all__ = ["Call", "executed_blocks", "experiment_calls", "find_calls", "import_experiment"]


@dataclass(frozen=True)
class Call:
    """One experiment a page computes: ``module.name(**kwargs)`` shown on ``page``."""

    page: str
    text: str  # as the page writes it, e.g. "multihead.run_why_multihead()"
    module: str
    name: str
    kwargs: dict[str, Any]

    def function(self) -> Any:
        """The experiment called (imports its module)."""
        return import_experiment(self.module, self.name)


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*)$")
_EXECUTED = re.compile(r"""(?:^|\s)exec=["']?(?:on|true|1)["']?(?:\s|$)""")


def executed_blocks(markdown: str) -> list[tuple[int, str]]:
    """The Python blocks of a page that markdown-exec runs (```` ```python exec="on" ````),
    as (the page's line of the block's first line, the code without the fence's indent)."""
    blocks, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info")
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        if info.split()[:1] in (["python"], ["py"]) and _EXECUTED.search(info):
            body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                    for line in lines[i + 1:j]]
            blocks.append((i + 2, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def experiment_calls(code: str, page: str, line: int = 1) -> list[Call]:
    """The calls of ``@cached`` experiments (``llmlab.experiments.*``) in ``code``.

    An experiment is called by a name imported from its module (``from
    llmlab.experiments.training import run_training_run``) or through the module
    (``from llmlab.experiments import training as exp``; ``exp.run_...``). Its
    arguments must be literals, or names the code binds once to a literal
    (``d_ks = (4, 16)``), so that this reading finds what the page will compute;
    a call whose arguments are not raises ValueError naming it.
    """
    tree = ast.parse(code)
    names: dict[str, tuple[str, str]] = {}  # local name -> (module, function)
    modules: dict[str, str] = {}  # local name -> experiments module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                local = alias.asname or alias.name
                if node.module.startswith("llmlab.experiments."):
                    names[local] = (node.module, alias.name)
                elif node.module == "llmlab.experiments":
                    modules[local] = f"llmlab.experiments.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("llmlab.experiments.") and alias.asname:
                    modules[alias.asname] = alias.name
    constants: dict[str, Any] = {}  # NAME = literal, bound once at the top of the code
    assigned: dict[str, int] = {}
    for node in ast.walk(tree):
        for target in getattr(node, "targets", []) + [getattr(node, "target", None)]:
            for name in ast.walk(target) if target is not None else ():
                if isinstance(name, ast.Name):
                    assigned[name.id] = assigned.get(name.id, 0) + 1
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and assigned[node.targets[0].id] == 1):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                pass

    def literal(value: ast.expr, env: dict[str, Any]) -> Any:
        if isinstance(value, ast.Name) and value.id in env:
            return env[value.id]
        if isinstance(value, ast.Name) and value.id in constants:
            return constants[value.id]
        return ast.literal_eval(value)

    loops: list[tuple[list[str], list[tuple]]] = []  # for A, B in <literal>: (A, B), values
    for node in ast.walk(tree):
        if not isinstance(node, (ast.For, ast.comprehension)):
            continue
        target = node.target
        names_ = [target] if isinstance(target, ast.Name) else list(getattr(target, "elts", []))
        if (not names_ or not all(isinstance(n, ast.Name) and assigned[n.id] == 1
                                  for n in names_)):
            continue
        try:
            values = [v if len(names_) > 1 else (v,) for v in literal(node.iter, {})]
        except (ValueError, TypeError, SyntaxError):
            continue
        if all(len(v) == len(names_) for v in values):
            loops.append(([n.id for n in names_], values))

    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in names:
            module, name = names[func.id]
        elif (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
              and func.value.id in modules):
            module, name = modules[func.value.id], func.attr
        else:
            continue
        fn = import_experiment(module, name)
        if not hasattr(fn, "uncached"):
            continue  # a helper the page calls as it stands, not a stored experiment
        where = f"{page}:{line + node.lineno - 1}"
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        groups = [(names_, values) for names_, values in loops if used & set(names_)]
        source = " ".join(ast.get_source_segment(code, node).split())
        named = any(isinstance(n, ast.Name) for a in [*node.args, *node.keywords]
                    for n in ast.walk(a))  # shown with the values the names stand for
        try:
            for choice in itertools.product(*(values for _, values in groups)):
                env = {n: v for (names_, _), values in zip(groups, choice)
                       for n, v in zip(names_, values)}
                args = [literal(a, env) for a in node.args]
                kwargs = {k.arg: literal(k.value, env) for k in node.keywords}
                bound = inspect.signature(fn.uncached).bind(*args, **kwargs).arguments
                text = (f"{module.removeprefix('llmlab.experiments.')}.{name}("
                        + ", ".join([repr(a) for a in args]
                                    + [f"{k}={v!r}" for k, v in kwargs.items()]) + ")"
                        if named else
                        f"{module.removeprefix('llmlab.experiments.')}.{name}"
                        + source[source.index("("):].replace("( ", "(").replace(" )", ")"))
                calls.append(((node.lineno, node.col_offset),
                              Call(page, text, module, name, dict(bound))))
        except (ValueError, TypeError, SyntaxError):
            raise ValueError(
                f"{where}: {ast.unparse(node)}: precompute reads what a page computes from "
                "its blocks, so an experiment's arguments must be literals (numbers, "
                "strings, tuples...) or names bound once to one, and match its parameters") from None
    return [call for _, call in sorted(calls, key=lambda c: c[0])]  # walk: breadth-first


def find_calls(docs: str | Path, examples: str | Path | None = None,
               page: str | None = None) -> list[Call]:
    """What the course computes: every experiment call of every page's executed
    blocks (``docs/<language>/**.md``; a page's path relative to its language
    folder, both languages read, each call once per page) and of every notebook in
    ``examples`` (its path ``examples/<name>.py``), in the order they appear;
    with ``page``, that page's alone."""
    calls: list[Call] = []
    seen: set[tuple[str, str, str]] = set()
    sources: list[tuple[str, int, str]] = []
    for lang in LANGUAGES:
        base = Path(docs) / lang
        for path in sorted(base.rglob("*.md")):
            rel = path.relative_to(base).as_posix()
            if page is None or rel == page:
                for line, code in executed_blocks(path.read_text(encoding="utf-8")):
                    sources.append((rel, line, code))
    if examples is not None:
        for path in notebooks(examples):
            rel = f"examples/{path.name}"
            if page is None or rel == page:
                sources.append((rel, 1, path.read_text(encoding="utf-8")))
    stamp = cache.package_stamp()  # what the calls are read against
    for rel, line, code in sources:
        try:
            found = _experiment_calls(code, rel, line, stamp)
        except SyntaxError:
            continue  # a block that cannot run fails the build where it runs, with its error
        for call in found:
            key = (rel, call.module + "." + call.name, repr(sorted(call.kwargs.items())))
            if key not in seen:
                seen.add(key)
                calls.append(call)
    return calls


@functools.lru_cache(maxsize=4096)
def _experiment_calls(code: str, page: str, line: int, stamp: tuple) -> list[Call]:
    """:func:`experiment_calls`, kept while the package's sources (``stamp``) hold:
    a build reads every block once for precompute's stamp, then once per page
    for its computation table."""
    return experiment_calls(code, page, line)


# --------------------------------------------------------------------------
# experiments, in worker processes
# --------------------------------------------------------------------------
def import_experiment(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)
