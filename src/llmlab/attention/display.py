"""Show the teaching variants' source on a page, with what changed highlighted.

Taught on: "Self-attention from scratch".
"""

from __future__ import annotations

import difflib
import inspect
import textwrap
from typing import Any

from llmlab.checks import check_str

__all__ = ["source_markdown"]


def _ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``"1-3 7"`` (the ``hl_lines`` syntax)."""
    groups: list[list[int]] = []
    for n in sorted(set(numbers)):
        if groups and groups[-1][1] == n - 1:
            groups[-1][1] = n
        else:
            groups.append([n, n])
    return " ".join(str(a) if a == b else f"{a}-{b}" for a, b in groups)


def source_markdown(
    obj: Any, previous: Any | None = None, title: str | None = None
) -> str:
    """A fenced Python block with the source of ``obj``.

    Args:
        obj: A class or function.
        previous: Another class or function; lines of ``obj`` that are new or
            changed relative to it are highlighted (``hl_lines``).
        title: Optional title shown above the block.

    Returns:
        Markdown text.

    Raises:
        TypeError: ``obj`` or ``previous`` is not a class or function, or ``title``
            not a str.
    """
    for name, value in (("obj", obj), ("previous", previous)):
        if value is not None and not (inspect.isclass(value) or inspect.isroutine(value)):
            raise TypeError(f"{name} must be a class or a function, got "
                            f"{type(value).__name__}")
    if obj is None:
        raise TypeError("obj must be a class or a function, got NoneType")
    if title is not None:
        check_str("title", title)
    lines = textwrap.dedent(inspect.getsource(obj)).rstrip("\n").splitlines()
    options = []
    if title:
        options.append(f'title="{title}"')
    if previous is not None:
        old = textwrap.dedent(inspect.getsource(previous)).rstrip("\n").splitlines()
        changed: list[int] = []
        matcher = difflib.SequenceMatcher(a=old, b=lines, autojunk=False)
        for tag, _, _, j1, j2 in matcher.get_opcodes():
            if tag in ("replace", "insert"):
                changed.extend(range(j1 + 1, j2 + 1))
        if changed:
            options.append(f'hl_lines="{_ranges(changed)}"')
    header = "```python" + ("" if not options else " " + " ".join(options))
    return "\n".join([header, *lines, "```"]) + "\n"
