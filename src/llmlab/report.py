"""Formatting helpers: Markdown tables and SVG figures built from results.

Pages and examples call these to turn what ``llmlab`` returns into something a
reader sees. Everything here is deterministic: the same data gives the same
bytes, so two builds of the site can be compared byte for byte.

Figures use English or mathematical labels only, because one figure serves both
languages of a page; the caption around it is written in each language.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "fmt_float",
    "fmt_int",
    "fmt_pct",
    "fmt_shape",
    "heatmap_svg",
    "img_tag",
    "line_plot_svg",
    "markdown_table",
    "svg_from_figure",
]


def fmt_int(n: int) -> str:
    """``124439808`` -> ``"124,439,808"``."""
    return f"{int(n):,}"


def fmt_float(x: float, digits: int = 3) -> str:
    """Fixed-point with ``digits`` decimals; ``-0.000`` is shown as ``0.000``."""
    text = f"{float(x):.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def fmt_pct(x: float, digits: int = 1) -> str:
    """``0.1234`` -> ``"12.3%"``."""
    return f"{100 * float(x):.{digits}f}%"


def fmt_shape(shape: Sequence[int]) -> str:
    """``torch.Size([2, 5, 16])`` -> ``"(2, 5, 16)"``."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(
            f"shape must be a sequence of ints such as (2, 5, 16), got {shape!r}"
        )
    dims = tuple(int(d) for d in shape)
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _cell(value: Any) -> str:
    text = str(value)
    # A pipe would end the cell; a newline would end the row.
    return text.replace("|", r"\|").replace("\n", " ")


def markdown_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    align: str | None = None,
) -> str:
    """A GitHub-style Markdown table.

    Args:
        headers: Column titles.
        rows: One sequence of cells per row; cells are converted with ``str``.
        align: One character per column, ``l``, ``c`` or ``r`` (default: the
            first column left, the others right, as numbers read best).

    Returns:
        The table as Markdown, ending in a newline.

    Raises:
        ValueError: If a row or ``align`` has the wrong number of columns.
    """
    n = len(headers)
    if align is None:
        align = "l" + "r" * (n - 1)
    if len(align) != n or set(align) - set("lcr"):
        raise ValueError(
            f"align must have one of 'l', 'c', 'r' per column ({n} columns), got {align!r}"
        )
    for i, row in enumerate(rows):
        if len(row) != n:
            raise ValueError(f"row {i} has {len(row)} cells, expected {n} (one per header)")
    rule = {"l": ":--", "c": ":-:", "r": "--:"}
    lines = [
        "| " + " | ".join(_cell(h) for h in headers) + " |",
        "| " + " | ".join(rule[a] for a in align) + " |",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def svg_from_figure(fig: Any) -> str:
    """Render a Matplotlib figure to SVG text, reproducibly, and close it."""
    import matplotlib
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "llmlab", "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def img_tag(svg: str, alt: str, width: str | None = None) -> str:
    """Embed SVG text as an ``<img>`` with a data URI.

    An ``<img>`` keeps each figure's internal ids to itself (two inline SVGs on
    one page could otherwise clash) and needs no request to any host.
    """
    if not isinstance(svg, str):
        raise TypeError(f"svg must be SVG text (str), got {type(svg).__name__}")
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    style = f' style="width:{html.escape(width)}"' if width else ""
    return (
        f'<img class="llmlab-figure" alt="{html.escape(alt)}"{style} '
        f'src="data:image/svg+xml;base64,{data}">'
    )


def _new_figure(width: float, height: float) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), dpi=100)
    fig.patch.set_facecolor("white")
    return fig, ax


def heatmap_svg(
    matrix: Any,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    *,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    annotate: bool = True,
    cmap: str = "Blues",
    vmin: float | None = None,
    vmax: float | None = None,
) -> str:
    """A heatmap of a 2-D array (e.g. attention weights) as SVG text."""
    import numpy as np

    data = np.asarray(matrix.detach().cpu() if hasattr(matrix, "detach") else matrix)
    if data.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {tuple(data.shape)}")
    rows, cols = data.shape
    fig, ax = _new_figure(1.0 + 0.55 * cols, 0.8 + 0.45 * rows)
    image = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    ax.set_xticks(range(cols), labels=list(col_labels) if col_labels else range(cols))
    ax.set_yticks(range(rows), labels=list(row_labels) if row_labels else range(rows))
    if col_labels:
        ax.tick_params(axis="x", labelrotation=45)
    if annotate and rows * cols <= 144:
        top = float(np.nanmax(data)) if data.size else 0.0
        for i in range(rows):
            for j in range(cols):
                v = data[i, j]
                colour = "white" if top and v > 0.6 * top else "black"
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color=colour)
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    return svg_from_figure(fig)


def line_plot_svg(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    logy: bool = False,
    hlines: Mapping[str, float] | None = None,
    width: float = 6.0,
    height: float = 3.6,
) -> str:
    """Lines ``{label: (x, y)}`` on one axis as SVG text."""
    fig, ax = _new_figure(width, height)
    for label, (xs, ys) in series.items():
        ax.plot(list(xs), list(ys), label=label, linewidth=1.5)
    for label, y in (hlines or {}).items():
        ax.axhline(y, color="grey", linestyle="--", linewidth=1, label=label)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(frameon=False)
    return svg_from_figure(fig)
