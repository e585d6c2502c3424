"""The arrows between llmlab's modules go one way.

Every ``import`` in ``src/llmlab`` is read from the source, the ones inside
functions included (an import placed in a function to dodge a cycle is still an
arrow), and resolved to the llmlab module it names. Then:

* there is no cycle: no module needs, through any chain of imports, itself;
* the build's code (cache, manifest, scheduler, notebooks, HTML transforms,
  provenance) lives in one package, ``llmlab.build``, which imports the report
  layer; the report layer formats: it never imports ``llmlab.build`` or the
  command line;
* experiments return data: they never import the report layer, the command line
  or the build, except ``llmlab.build.cache``'s decorator.

The walk itself is checked on a small package with a cycle hidden in a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

from pages import ROOT

SRC = ROOT / "src"


def _modules(src: Path) -> dict[str, Path]:
    modules = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def import_graph(src: Path, package: str = "llmlab") -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at any depth of its code."""
    modules = {m: p for m, p in _modules(src).items() if m.split(".")[0] == package}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        names: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(resolve(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        here = here.rpartition(".")[0]
                    base = f"{here}.{base}" if base else here
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    names.add(full if full in modules else resolve(base))
        graph[module] = {n for n in names if n is not None and n != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other (strongly connected, > 1)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_walk_sees_an_import_hidden_in_a_function(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "report").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "report" / "__init__.py").write_text("from pkg.build import x\n")
    (pkg / "build.py").write_text("def f():\n    from .report import y\n    return y\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph == {"pkg": set(), "pkg.report": {"pkg.build"}, "pkg.build": {"pkg.report"}}
    assert cycles(graph) == [["pkg.build", "pkg.report"]]


def test_llmlab_has_no_import_cycle() -> None:
    graph = import_graph(SRC)
    assert "llmlab.build.precompute" in graph and len(graph) > 40
    assert cycles(graph) == []


def test_the_report_layer_never_imports_the_build() -> None:
    graph = import_graph(SRC)
    wrong = {m: sorted(d) for m, deps in graph.items() if m.startswith("llmlab.report")
             if (d := {x for x in deps if x.startswith("llmlab.build") or x == "llmlab.cli"})}
    assert not wrong, f"the report layer formats; the build imports it, not the reverse: {wrong}"
    assert "llmlab.report" in graph["llmlab.build.precompute"]  # the arrow goes this way


def test_experiments_never_import_the_report_layer_or_the_build_program() -> None:
    graph = import_graph(SRC)
    wrong = {m: sorted(d) for m, deps in graph.items() if m.startswith("llmlab.experiments")
             if (d := {x for x in deps if x.startswith("llmlab.report") or x == "llmlab.cli"
                       or (x.startswith("llmlab.build") and x != "llmlab.build.cache")})}
    assert not wrong, f"experiments return data, the report layer renders it: {wrong}"


def test_the_diagrams_only_draw() -> None:
    """``llmlab.report.diagrams`` draws what experiments computed: of the package it
    imports the report layer, the argument checks and experiments' result classes,
    never a model, a layer or torch (a diagram runs no forward pass)."""
    graph = import_graph(SRC)
    deps = graph["llmlab.report.diagrams"]
    wrong = sorted(d for d in deps if not (d.startswith(("llmlab.report", "llmlab.experiments."))
                                           or d == "llmlab.checks"))
    assert not wrong, f"the diagrams compute with {wrong}: move that into an experiment"
    assert any(d.startswith("llmlab.experiments.") for d in deps)  # the walk sees them
    tree = ast.parse((SRC / "llmlab" / "report" / "diagrams.py").read_text(encoding="utf-8"))
    imported: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                imported.setdefault(alias.name, [])
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.setdefault(node.module, []).extend(a.name for a in node.names)
    assert not [m for m in imported if m.split(".")[0] == "torch"], sorted(imported)
    taken = {name for m, names in imported.items() if m.startswith("llmlab.experiments.")
             for name in names}
    assert taken and all(name.endswith("Result") for name in taken), sorted(taken)
