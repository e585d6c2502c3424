"""The package: it imports, exports what it says, and never prints."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import llmlab

SRC = Path(llmlab.__file__).resolve().parent
MODULES = sorted(
    m.name for m in pkgutil.walk_packages([str(SRC)], prefix="llmlab.")
)


def test_version() -> None:
    assert isinstance(llmlab.__version__, str) and llmlab.__version__.count(".") >= 2


@pytest.mark.parametrize("name", ["llmlab", *MODULES])
def test_module_imports_and_exports_its_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        # packages that only hold submodules may omit __all__; modules may not
        assert hasattr(module, "__path__"), f"{name} has no __all__"
        return
    assert len(exported) == len(set(exported)), f"{name}.__all__ has duplicates"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names {attr!r}, which is missing"


def test_core_names_are_exported() -> None:
    from llmlab.build.cache import cached  # noqa: F401
    from llmlab.functional import scaled_dot_product_attention, softmax  # noqa: F401
    from llmlab.params import count_parameters  # noqa: F401
    from llmlab.build.provenance import build_info
    from llmlab.report import markdown_table  # noqa: F401

    info = build_info()
    assert info.llmlab_version == llmlab.__version__
    assert [k for k, _ in info.rows()][:3] == ["llmlab_version", "git_commit", "torch_version"]


def _print_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"print", "breakpoint"}
    ]


# The programs (`python -m llmlab.build.precompute`, `python -m llmlab.build.html`, the
# console commands) talk to a terminal; the library itself returns data or strings, and
# pages print them.
PROGRAMS = {"build/precompute.py", "build/html.py", "cli.py"}


def test_library_code_never_prints() -> None:
    offenders = {
        str(p.relative_to(SRC)): lines
        for p in sorted(SRC.rglob("*.py"))
        if p.relative_to(SRC).as_posix() not in PROGRAMS and (lines := _print_calls(p))
    }
    assert offenders == {}, f"print() in library code: {offenders}"


def test_print_detector_detects_prints(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    print('x')\n", encoding="utf-8")
    assert _print_calls(sample) == [2]


def test_the_repository_has_no_symbolic_links() -> None:
    """A Windows clone (core.symlinks off) would get text files in their place."""
    import subprocess

    root = SRC.parent.parent
    listing = subprocess.run(["git", "ls-files", "-s"], cwd=root, capture_output=True,
                             text=True, check=True).stdout.splitlines()
    assert listing, "not a git checkout"
    links = [line.split("\t", 1)[1] for line in listing if line.startswith("120000 ")]
    assert links == [], f"symbolic links in the repository: {links}"


def _requirement_name(requirement: str) -> str:
    import re

    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_plot_extra_covers_what_the_examples_import() -> None:
    """README: ``pip install -e ".[plot]"`` is enough for the notebooks in examples/."""
    import sys
    import tomllib
    from importlib.metadata import packages_distributions

    project = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text("utf-8"))["project"]
    declared = {_requirement_name(r)
                for r in project["dependencies"] + project["optional-dependencies"]["plot"]}
    provided_by = packages_distributions()  # top-level module -> its distributions
    missing = {}
    for script in sorted((SRC.parents[1] / "examples").glob("*.py")):
        tree = ast.parse(script.read_text("utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                     and not node.level else [])
            for top in {name.split(".")[0] for name in names}:
                if top in sys.stdlib_module_names or top == "llmlab":
                    continue
                dists = {d.lower().replace("_", "-") for d in provided_by.get(top, [top])}
                if not dists & declared:
                    missing.setdefault(script.name, set()).add(top)
    assert not missing, f"imported by examples/ but in neither the dependencies nor [plot]: {missing}"
    assert {"matplotlib", "ipython"} <= declared
