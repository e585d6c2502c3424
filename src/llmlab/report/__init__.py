"""What a reader sees: tables and figures made from results, in the reader's language.

Experiments return data (:mod:`llmlab.experiments`); this package turns data into
Markdown tables and SVG figures. One mechanism picks the language: the argument
``lang`` where a function takes one, else the environment variable
``LLMLAB_LANG`` (``zh`` or ``en``; the site's build sets it for each page), else
English. So a block copied from a Chinese page and run in a plain interpreter
prints English labels; ``LLMLAB_LANG=zh python block.py`` prints Chinese ones.

What a printed table or figure looks like is the output mode (:func:`output_mode`):
``LLMLAB_OUTPUT=markdown``, which the site's build sets for its pages, prints
Markdown and ``<img>`` tags for markdown-exec to render; the default, ``text``, is
for a terminal: tables as plain-text tables, a figure as its ``alt`` text and the
path of its SVG file (:func:`plain_text`, :meth:`Localized.plain`).

Words are given in both languages with :func:`label`; numbers, identifiers
(``q_proj``, ``RMSNorm``) and shapes are the same in both. :func:`table`,
:func:`heatmap` and :func:`line_plot` return :class:`Localized` objects: printed,
they are text (or Markdown, or an ``<img>`` tag) in the current language; displayed
in a notebook, they carry every language, so one executed notebook serves both.
Everything is deterministic: the same data gives the same bytes.

Taught on: every lecture (how the pages print their results).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import io
import json
import math
import numbers
import os
import re
import tempfile
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from llmlab.checks import (
    check_bool,
    check_callable,
    check_finite_float,
    check_int,
    check_str,
    check_type,
)

__all__ = [
    "CJK_FONTS",
    "DEFAULT_LANGUAGE",
    "DEFAULT_OUTPUT_MODE",
    "LANGUAGES",
    "OUTPUT_MODES",
    "Label",
    "Localized",
    "bar_plot",
    "bar_plot_svg",
    "cjk_font",
    "figure",
    "fmt_float",
    "fmt_int",
    "fmt_pct",
    "fmt_shape",
    "heatmap",
    "heatmap_svg",
    "img_tag",
    "label",
    "language",
    "line_plot",
    "line_plot_svg",
    "load_fonts",
    "markdown_table",
    "output_mode",
    "plain_text",
    "svg_from_figure",
    "table",
    "text",
    "yes_no",
]

LANGUAGES = ("zh", "en")
"""The course's languages, the site's first (``docs/zh`` at ``/``, ``docs/en`` at
``/en/``): the one list the build (:mod:`llmlab.build`, ``hooks/llmlab_build.py``)
reads."""
DEFAULT_LANGUAGE = "en"


def language(lang: str | None = None) -> str:
    """The language to render in: ``lang``, else ``$LLMLAB_LANG``, else English."""
    chosen = lang if lang is not None else os.environ.get("LLMLAB_LANG") or DEFAULT_LANGUAGE
    if chosen not in LANGUAGES:
        where = "lang" if lang is not None else "LLMLAB_LANG"
        raise ValueError(f"{where} must be one of {LANGUAGES}, got {chosen!r}")
    return chosen


OUTPUT_MODES = ("text", "markdown")
DEFAULT_OUTPUT_MODE = "text"


def output_mode(mode: str | None = None) -> str:
    """How report objects print: ``mode``, else ``$LLMLAB_OUTPUT``, else ``text``.

    ``text`` is for a terminal: plain-text tables, a figure's ``alt`` text and the
    path of its SVG file. ``markdown`` is what markdown-exec renders on a page
    (Markdown tables, ``<img>`` tags); the site's build sets it.
    """
    chosen = mode if mode is not None else (os.environ.get("LLMLAB_OUTPUT")
                                            or DEFAULT_OUTPUT_MODE)
    if chosen not in OUTPUT_MODES:
        where = "mode" if mode is not None else "LLMLAB_OUTPUT"
        raise ValueError(f"{where} must be one of {OUTPUT_MODES}, got {chosen!r}")
    return chosen


@dataclasses.dataclass(frozen=True)
class Label:
    """The same words in Chinese and English; ``str()`` gives the current language."""

    zh: str
    en: str

    def __post_init__(self) -> None:
        check_str("zh", self.zh)
        check_str("en", self.en)

    def text(self, lang: str | None = None) -> str:
        return getattr(self, language(lang))

    def __str__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple:
        return Localized(self.text)._repr_mimebundle_()


def label(zh: str, en: str) -> Label:
    """Words a reader sees, in both languages: ``label("最差的目标", "worst target")``."""
    return Label(zh, en)


def text(value: Any, lang: str | None = None) -> str:
    """``value`` as text in ``lang``: a :class:`Label`'s words, anything else ``str()``."""
    lang = language(lang)
    return value.text(lang) if isinstance(value, Label) else str(value)


def yes_no(flag: bool) -> Label:
    """``是`` / ``yes`` or ``否`` / ``no``."""
    check_bool("flag", flag)
    return label("是", "yes") if flag else label("否", "no")


class Localized:
    """Something shown to a reader, made on demand in the reader's language.

    Args:
        make: ``make(lang) -> str``: Markdown, or SVG text when ``alt`` is given.
        alt: For a figure, the ``alt`` text that says what it shows.
    """

    def __init__(self, make: Callable[[str], str], alt: Label | None = None,
                 digest: str | None = None) -> None:
        check_callable("make", make)
        if alt is not None:
            check_type("alt", alt, Label, expected="a Label (both languages)")
        if digest is not None:
            check_str("digest", digest)
        self.make, self.alt, self.digest = make, alt, digest

    def render(self, lang: str | None = None) -> str:
        """Markdown, or for a figure its :func:`img_tag`, in ``lang`` (for pages)."""
        lang = language(lang)
        if self.alt is None:
            return self.make(lang)
        return img_tag(self.make(lang), alt=self.alt.text(lang), digest=self.digest)

    def plain(self, lang: str | None = None) -> str:
        """What a terminal shows, in ``lang``: the Markdown as :func:`plain_text`, or
        for a figure its ``alt`` text and the path of its SVG, written to a file in
        the temporary folder (named by its content)."""
        lang = language(lang)
        if self.alt is None:
            return plain_text(self.make(lang))
        path = _figure_file(self.make(lang))
        return f"{self.alt.text(lang)}\n{label('图：', 'figure: ').text(lang)}{path}"

    def __str__(self) -> str:
        """:meth:`render` when the output mode is ``markdown``, else :meth:`plain`."""
        return self.render() if output_mode() == "markdown" else self.plain()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple:
        """For notebooks: the current language shown, every language in the metadata."""
        mime = "text/markdown" if self.alt is None else "image/svg+xml"
        every = {lang: self.make(lang) for lang in LANGUAGES}
        meta: dict[str, Any] = {"llmlab": every}
        # text/plain (a console, a viewer without Markdown): the Markdown, or the
        # figure's alt text; without it IPython would show the object's address
        plain = every[language()] if self.alt is None else self.alt.text()
        if self.alt is not None:
            meta["alt"] = {lang: self.alt.text(lang) for lang in LANGUAGES}
            meta["digest"] = self.digest
        return {mime: every[language()], "text/plain": plain}, meta


# --------------------------------------------------------------------------
# numbers and tables
# --------------------------------------------------------------------------
def _scalar(name: str, x: Any, integral: bool) -> Any:
    """``x`` as a Python number: a number, or a one-element tensor or array."""
    if hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, numbers.Number):
        size = math.prod(x.shape)
        if size != 1:
            raise ValueError(f"{name} must be one number, got an array of shape "
                             f"{tuple(x.shape)}")
        x = x.item()
    if integral:
        return check_int(name, x, minimum=None)
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    return float(x)  # NaN and inf are shown as such ("nan", "inf"), not refused


def fmt_int(n: int) -> str:
    """``124439808`` -> ``"124,439,808"`` (an int, not a float that would be cut)."""
    return f"{_scalar('n', n, integral=True):,}"


def fmt_float(x: float, digits: int = 3) -> str:
    """Fixed-point with ``digits`` decimals; ``-0.000`` is shown as ``0.000``."""
    x = _scalar("x", x, integral=False)
    out = f"{x:.{check_int('digits', digits, minimum=0)}f}"
    return out[1:] if out.startswith("-") and float(out) == 0 else out


def fmt_pct(x: float, digits: int = 1) -> str:
    """``0.1234`` -> ``"12.3%"``."""
    x = _scalar("x", x, integral=False)
    return f"{100 * x:.{check_int('digits', digits, minimum=0)}f}%"


def fmt_shape(shape: Sequence[int]) -> str:
    """``torch.Size([2, 5, 16])`` -> ``"(2, 5, 16)"``."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"shape must be a sequence of ints such as (2, 5, 16), got {shape!r}")
    dims = tuple(check_int(f"shape[{i}]", d, minimum=0) for i, d in enumerate(shape))
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _cell(value: Any, lang: str) -> str:
    # a pipe would end the cell, a newline the row
    return text(value, lang).replace("|", r"\|").replace("\n", " ")


def markdown_table(headers: Sequence[Any], rows: Sequence[Sequence[Any]],
                   align: str | None = None, lang: str | None = None) -> str:
    """A Markdown table; :class:`Label` headers and cells in ``lang``.

    As the output mode prints it (:func:`output_mode`): the Markdown for a page,
    else the same table as :func:`plain_text` (see :func:`table` for one that
    prints either way).

    Args:
        headers: Column titles.
        rows: One sequence of cells per row.
        align: One of ``l``, ``c``, ``r`` per column (default: the first column
            left, the others right, as numbers read best).
        lang: The language (see :func:`language`).

    Raises:
        ValueError: If a row or ``align`` has the wrong number of columns.
    """
    return _as_printed(_markdown_table(headers, rows, align, lang))


# a local composite (headers, rows and align together), built from llmlab.checks
def _check_table(headers: Any, rows: Any, align: Any, lang: str | None
                 ) -> tuple[str, list, str]:
    """:func:`markdown_table`'s arguments checked: language, rows, alignment."""
    lang = language(lang)
    if isinstance(headers, (str, bytes)) or not isinstance(headers, Sequence):
        raise TypeError(f"headers must be a list of column titles, got "
                        f"{type(headers).__name__} {headers!r}")
    if not headers:
        raise ValueError("headers must name at least one column, got []")
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
        raise TypeError(f"rows must be a list of rows, got {type(rows).__name__}")
    rows = list(rows)
    n = len(headers)
    align = "l" + "r" * (n - 1) if align is None else check_str("align", align)
    if len(align) != n or set(align) - set("lcr"):
        raise ValueError(
            f"align must have one of 'l', 'c', 'r' per column ({n} columns), got {align!r}")
    for i, row in enumerate(rows):
        if isinstance(row, (str, bytes)) or not hasattr(row, "__len__"):
            raise TypeError(f"rows[{i}] must be a list of cells, got {type(row).__name__}")
        if len(row) != n:
            raise ValueError(f"row {i} has {len(row)} cells, expected {n} (one per header)")
    return lang, rows, align


def _markdown_table(headers: Sequence[Any], rows: Sequence[Sequence[Any]],
                    align: str | None, lang: str | None) -> str:
    """:func:`markdown_table`'s Markdown, whatever the output mode."""
    lang, rows, align = _check_table(headers, rows, align, lang)
    rule = {"l": ":--", "c": ":-:", "r": "--:"}
    lines = ["| " + " | ".join(_cell(h, lang) for h in headers) + " |",
             "| " + " | ".join(rule[a] for a in align) + " |"]
    lines += ["| " + " | ".join(_cell(c, lang) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def table(headers: Sequence[Any], rows: Sequence[Sequence[Any]],
          align: str | None = None) -> Localized:
    """:func:`markdown_table`, made in the reader's language when shown."""
    if hasattr(rows, "__iter__") and not isinstance(rows, (str, bytes)):
        rows = list(rows)  # made again in each language
    _markdown_table(headers, rows, align, DEFAULT_LANGUAGE)  # bad input fails here
    return Localized(lambda lang: _markdown_table(headers, rows, align, lang))


# --------------------------------------------------------------------------
# text for a terminal
# --------------------------------------------------------------------------
_FENCE = re.compile(r"\s*(`{3,}|~{3,})")
_TABLE_RULE = re.compile(r"\|(?:\s*:?-+:?\s*\|)+\s*")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")  # a pipe that is not escaped
_BREAK = re.compile(r"<br\s*/?>", re.I)
_CHIP = re.compile(r'<code class="llmlab-tok[^"]*">(.*?)</code>', re.S)  # a token
_TAG = re.compile(r'</?[A-Za-z][A-Za-z0-9]*(?:\s+[\w:-]+="[^"]*")*\s*/?>')  # not a<b, c>d


def _display_width(s: str) -> int:
    """Terminal columns: two for a CJK character (East Asian W, F), none for a mark."""
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def _inline(s: str, newline: str = "\n") -> str:
    """Inline HTML as text: tokens in brackets, tags dropped, entities decoded."""
    s = _CHIP.sub(r"[\1]", _BREAK.sub(newline, s))
    return html.unescape(_TAG.sub("", s)).replace("\xa0", " ")


def _text_table(lines: list[str]) -> list[str]:
    """A Markdown table (:func:`markdown_table`'s) as aligned plain-text lines."""
    def cells(line: str) -> list[str]:
        parts = _CELL_SPLIT.split(line.strip().removeprefix("|").removesuffix("|"))
        return [_inline(p.strip().replace("\\|", "|"), newline=" ").strip()
                for p in parts]

    rule = [c.strip() for c in lines[1].strip().strip("|").split("|")]
    align = ["c" if r.startswith(":") and r.endswith(":") else "r" if r.endswith(":")
             else "l" for r in rule]
    rows = [cells(line) for line in lines[:1] + lines[2:]]
    n = max(len(align), *(len(r) for r in rows))
    align += ["l"] * (n - len(align))
    rows = [r + [""] * (n - len(r)) for r in rows]
    widths = [max(_display_width(r[j]) for r in rows) for j in range(n)]

    def line(row: list[str]) -> str:
        out = []
        for cell, a, w in zip(row, align, widths):
            pad = w - _display_width(cell)
            left = {"l": 0, "r": pad, "c": pad // 2}[a]
            out.append(" " * left + cell + " " * (pad - left))
        return "  ".join(out).rstrip()

    return [line(rows[0]), "  ".join("-" * w for w in widths), *map(line, rows[1:])]


def plain_text(markdown: str) -> str:
    """What a terminal shows for Markdown that this package makes.

    A Markdown table becomes a plain-text table (a header, a rule of dashes, the
    rows), its columns aligned by display width (a CJK character is two columns)
    as the table's alignment row says; a fenced block becomes its lines, fences
    left out; elsewhere, and in cells, HTML tags are dropped (a token chip is
    shown as ``[token]``), entities decoded (``&nbsp;`` is a space) and escaped
    pipes (``\\|``) undone. Other Markdown (``**``, backticks) is kept as it is.
    """
    check_str("markdown", markdown)
    lines, out, i = markdown.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        if fence := _FENCE.match(line):  # code: as it is, to the closing fence
            mark = fence.group(1)
            i += 1
            while i < len(lines) and not (lines[i].strip().startswith(mark)
                                          and not lines[i].strip().strip(mark[0])):
                out.append(lines[i])
                i += 1
            i += 1
            continue
        if line.startswith("|") and i + 1 < len(lines) and _TABLE_RULE.fullmatch(
                lines[i + 1]):
            end = i + 2
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            out += _text_table(lines[i:end])
            i = end
            continue
        out.append(_inline(line))
        i += 1
    return "\n".join(out)


def _as_printed(markdown: str) -> str:
    """``markdown`` as the output mode prints it: as it is, or :func:`plain_text`."""
    return markdown if output_mode() == "markdown" else plain_text(markdown)


def _figure_file(svg: str) -> Path:
    """``svg`` in ``<temporary folder>/llmlab-figures/<hash of svg>.svg``: written
    once, never over a file of other content; its path."""
    data = svg.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    folder = Path(tempfile.gettempdir()) / "llmlab-figures"
    folder.mkdir(parents=True, exist_ok=True)
    for name in (digest[:16], digest):  # the full hash if the short name is taken
        path = folder / f"{name}.svg"
        if path.is_symlink() or path.exists():
            if not path.is_symlink() and path.is_file() and path.read_bytes() == data:
                return path
            continue
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return path
    raise FileExistsError(f"{folder} holds other files named {digest[:16]}.svg and "
                          f"{digest}.svg: remove them")


# --------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------
# Tried in order for Chinese text (the build installs Debian's fonts-noto-cjk).
CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "PingFang SC",
             "Microsoft YaHei", "WenQuanYi Zen Hei", "SimHei")


def cjk_font() -> str | None:
    """The first of :data:`CJK_FONTS` Matplotlib can draw Chinese labels with, or None.

    Matplotlib lists the system's fonts once, in a cache, the first time it
    runs: a font installed after that is missing from the list. So when none of
    :data:`CJK_FONTS` is listed, the system's fonts the list lacks are added to
    it first (Matplotlib's ``addfont``), in this process.
    """
    from matplotlib import font_manager

    manager = font_manager.fontManager

    def listed() -> str | None:
        names = {f.name for f in manager.ttflist}
        return next((name for name in CJK_FONTS if name in names), None)

    if listed() is None:
        known = {f.fname for f in manager.ttflist}
        for path in font_manager.findSystemFonts():
            if path not in known:
                try:
                    manager.addfont(path)
                except (OSError, RuntimeError, ValueError):  # a file it cannot read
                    continue
    return listed()


def _style(lang: str) -> dict[str, Any]:
    style: dict[str, Any] = {"svg.hashsalt": "llmlab", "svg.fonttype": "path"}
    if lang == "zh":
        font = cjk_font()
        if font is None:
            raise RuntimeError(
                "no CJK font for Chinese figure labels: install one of "
                f"{', '.join(CJK_FONTS)} (Debian: apt-get install fonts-noto-cjk)")
        # a list of families: glyphs the CJK font lacks (ᵀ, √) come from DejaVu Sans
        style["font.family"] = [font, "DejaVu Sans"]
    return style


def svg_from_figure(fig: Any) -> str:
    """Render a Matplotlib figure to SVG text, reproducibly, and close it."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    if not hasattr(fig, "savefig"):
        raise TypeError(f"fig must be a Matplotlib Figure, got {type(fig).__name__}")
    fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


_SVG_SIZE = re.compile(r'<svg[^>]*?\swidth="([\d.]+)pt"\s+height="([\d.]+)pt"')


def img_tag(svg: str, alt: Any, width: str | None = None, digest: str | None = None) -> str:
    """Embed SVG text as an ``<img>`` with a data URI (ids stay private, no request),
    in a paragraph of its own: a block of HTML, which Markdown keeps as it is (an
    inline ``<img>``'s data URI would be scanned by every inline pattern, and on
    the line after a table it would become one of the table's rows).

    ``digest`` (a hash of the figure's data, the same in every language) is kept
    in ``data-digest``, so the two languages' pages can be checked to plot the
    same numbers. The SVG's own size, in points, becomes the tag's ``width`` and
    ``height`` in CSS pixels: the page reserves the figure's place before it loads.
    """
    if not isinstance(svg, str):
        raise TypeError(f"svg must be SVG text (str), got {type(svg).__name__}")
    if width is not None:
        check_str("width", width, nonempty=True)
    if digest is not None:
        check_str("digest", digest, nonempty=True)
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    style = f' style="width:{html.escape(width)}"' if width else ""
    mark = f' data-digest="{html.escape(digest)}"' if digest else ""
    if size := _SVG_SIZE.search(svg[:2000]):  # 1pt = 4/3 px
        mark += ''.join(f' {name}="{round(float(pt) * 4 / 3)}"'
                        for name, pt in zip(("width", "height"), size.groups()))
    return (f'<p><img class="llmlab-figure" alt="{html.escape(text(alt))}"{style}{mark} '
            f'src="data:image/svg+xml;base64,{data}"></p>')


def _draw(lang: str, width: float, height: float, draw: Callable[[Any, Any], None]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context(_style(lang)):
        fig, ax = plt.subplots(figsize=(width, height), dpi=100)
        fig.patch.set_facecolor("white")
        draw(fig, ax)
        return svg_from_figure(fig)


def load_fonts() -> None:
    """Draw a one-word figure in every language, so that Matplotlib has loaded the
    fonts and the renderer they need (it keeps them per process, a few tenths of a
    second to load): a process that forks figure-drawing children (the build's
    notebook runs) calls this first, and every child starts with them loaded."""
    for lang in LANGUAGES:
        _draw(lang, 1.0, 1.0, lambda fig, ax: _titles(ax, lang, label("图", "figure"),
                                                     None, None))


def _titles(ax: Any, lang: str, title: Any, xlabel: Any, ylabel: Any) -> None:
    for setter, value in ((ax.set_title, title), (ax.set_xlabel, xlabel),
                          (ax.set_ylabel, ylabel)):
        if value is not None:
            setter(text(value, lang))


def heatmap_svg(matrix: Any, row_labels: Sequence[Any] | None = None,
                col_labels: Sequence[Any] | None = None, *, title: Any = None,
                xlabel: Any = None, ylabel: Any = None, annotate: bool = True,
                cmap: str = "Blues", vmin: float | None = None, vmax: float | None = None,
                lang: str | None = None) -> str:
    """A heatmap of a 2-D array (e.g. attention weights) as SVG text, labels in ``lang``."""
    import numpy as np

    lang = language(lang)
    data = np.asarray(matrix.detach().cpu() if hasattr(matrix, "detach") else matrix)
    if data.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {tuple(data.shape)}")
    rows, cols = data.shape
    if not rows or not cols:
        raise ValueError(f"matrix must hold at least one value, got shape {data.shape}")
    if data.dtype.kind not in "biuf":
        raise ValueError(f"matrix must hold numbers, got dtype {data.dtype}")
    for name, labels, size in (("row_labels", row_labels, rows),
                               ("col_labels", col_labels, cols)):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{name} must have one label per {name[:3]} ({size}), got "
                             f"{len(labels)}")
    for name, value in (("vmin", vmin), ("vmax", vmax)):
        if value is not None:
            check_finite_float(name, value)
    if vmin is not None and vmax is not None and not vmin < vmax:
        raise ValueError(f"vmin ({vmin}) must be below vmax ({vmax})")
    check_bool("annotate", annotate)
    check_str("cmap", cmap, nonempty=True)

    def draw(fig: Any, ax: Any) -> None:
        image = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
        ax.set_xticks(range(cols), labels=[text(c, lang) for c in col_labels or range(cols)])
        ax.set_yticks(range(rows), labels=[text(r, lang) for r in row_labels or range(rows)])
        if col_labels:
            ax.tick_params(axis="x", labelrotation=45)
        if annotate and rows * cols <= 144:
            top = float(np.nanmax(data)) if data.size else 0.0
            for i in range(rows):
                for j in range(cols):
                    colour = "white" if top and data[i, j] > 0.6 * top else "black"
                    ax.text(j, i, f"{data[i, j]:.2f}", ha="center", va="center",
                            fontsize=7, color=colour)
        _titles(ax, lang, title, xlabel, ylabel)

    return _draw(lang, 1.0 + 0.55 * cols, 0.8 + 0.45 * rows, draw)


def line_plot_svg(series: Mapping[Any, tuple[Sequence[float], Sequence[float]]], *,
                  title: Any = None, xlabel: Any = None, ylabel: Any = None,
                  logy: bool = False, hlines: Mapping[Any, float] | None = None,
                  width: float = 6.0, height: float = 3.6, lang: str | None = None) -> str:
    """Lines ``{name: (x, y)}`` on one axis as SVG text, labels in ``lang``. When every
    x is a whole number (steps, counts) the x ticks are whole numbers too."""
    lang = language(lang)
    _check_series(series)
    for name, y in (hlines or {}).items():
        check_finite_float(f"hlines[{text(name)!r}]", y)
    check_bool("logy", logy)
    check_finite_float("width", width, minimum=0.0, open_min=True)
    check_finite_float("height", height, minimum=0.0, open_min=True)

    def draw(fig: Any, ax: Any) -> None:
        import numpy as np
        from matplotlib.ticker import MaxNLocator

        for name, (xs, ys) in series.items():
            ax.plot(list(xs), list(ys), label=text(name, lang), linewidth=1.5)
        if all(isinstance(x, (int, np.integer)) for xs, _ in series.values() for x in xs):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        for name, y in (hlines or {}).items():
            ax.axhline(y, color="grey", linestyle="--", linewidth=1, label=text(name, lang))
        if logy:
            ax.set_yscale("log")
        _titles(ax, lang, title, xlabel, ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(frameon=False)

    return _draw(lang, width, height, draw)


def bar_plot_svg(groups: Mapping[Any, Sequence[float]], categories: Sequence[Any], *,
                 title: Any = None, xlabel: Any = None, ylabel: Any = None,
                 width: float = 6.0, height: float = 3.6, lang: str | None = None) -> str:
    """Grouped bars as SVG text, labels in ``lang``: at each of ``categories`` (the x
    ticks), one bar per group ``{name: values}`` (the legend), a value per category."""
    lang = language(lang)
    _check_groups(groups, categories)
    check_finite_float("width", width, minimum=0.0, open_min=True)
    check_finite_float("height", height, minimum=0.0, open_min=True)
    bar = 0.8 / len(groups)  # the groups share 0.8 of each category's width

    def draw(fig: Any, ax: Any) -> None:
        for j, (name, values) in enumerate(groups.items()):
            xs = [i + (j - (len(groups) - 1) / 2) * bar for i in range(len(categories))]
            ax.bar(xs, list(values), width=bar, label=text(name, lang))
        ax.set_xticks(range(len(categories)), labels=[text(c, lang) for c in categories])
        _titles(ax, lang, title, xlabel, ylabel)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(frameon=False, fontsize=8)

    return _draw(lang, width, height, draw)


# a local composite (a dict of values per category), built from llmlab.checks
def _check_groups(groups: object, categories: object) -> None:
    check_type("categories", categories, (list, tuple), expected="a list of x labels")
    if not categories:
        raise ValueError("categories must hold at least one label, got []")
    check_type("groups", groups, Mapping, expected="a dict of name -> values")
    if not groups:
        raise ValueError("groups must hold at least one group, got {}")
    for name, values in groups.items():
        where = f"groups[{text(name)!r}]"
        check_type(where, values, (list, tuple), expected="a list of numbers")
        if len(values) != len(categories):
            raise ValueError(f"{where} must have a value per category ({len(categories)}), "
                             f"got {len(values)}")
        for i, value in enumerate(values):
            check_finite_float(f"{where}[{i}]", value)


# a local composite (a dict of (xs, ys) pairs), built from llmlab.checks
def _check_series(series: object) -> None:
    check_type("series", series, Mapping, expected="a dict of name -> (xs, ys)")
    if not series:
        raise ValueError("series must hold at least one line, got {}")
    for name, line in series.items():
        where = f"series[{text(name)!r}]"
        if not isinstance(line, (list, tuple)) or len(line) != 2:
            raise TypeError(f"{where} must be a pair (xs, ys), got {type(line).__name__}")
        xs, ys = (list(v) for v in line)
        if not xs or len(xs) != len(ys):
            raise ValueError(f"{where} must have as many ys as xs (at least one), got "
                             f"{len(xs)} xs and {len(ys)} ys")


def _digest(data: Any) -> str:
    """A hash of what a figure plots (numbers and language-neutral labels)."""
    import numpy as np

    def plain(value: Any) -> Any:
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, Mapping):
            return [[plain(k), plain(v)] for k, v in value.items()]
        if isinstance(value, (list, tuple, range)):
            return [plain(v) for v in value]
        return None if isinstance(value, Label) else value

    return hashlib.sha256(json.dumps(plain(data), default=repr).encode()).hexdigest()[:16]


def figure(make_svg: Callable[[str], str], alt: Label, data: Any = None) -> Localized:
    """A figure made in the reader's language.

    Args:
        make_svg: ``make_svg(lang) -> SVG text``.
        alt: What the figure shows, in both languages.
        data: What it plots; its digest marks the figure (see :func:`img_tag`).
    """
    check_callable("make_svg", make_svg)
    if not isinstance(alt, Label):
        raise TypeError(f"alt must be a Label (both languages), got {type(alt).__name__}")
    return Localized(make_svg, alt, _digest(data) if data is not None else None)


def heatmap(matrix: Any, *args: Any, alt: Label, **kwargs: Any) -> Localized:
    """:func:`heatmap_svg` as a :func:`figure`."""
    import numpy as np

    if np.ndim(matrix.detach().cpu() if hasattr(matrix, "detach") else matrix) != 2:
        raise ValueError(f"matrix must be 2-D, got shape {np.shape(matrix)}")
    return figure(lambda lang: heatmap_svg(matrix, *args, **kwargs, lang=lang), alt,
                  data=[matrix, args])


def bar_plot(groups: Mapping[Any, Sequence[float]], categories: Sequence[Any], *,
             alt: Label, **kwargs: Any) -> Localized:
    """:func:`bar_plot_svg` as a :func:`figure`."""
    _check_groups(groups, categories)
    return figure(lambda lang: bar_plot_svg(groups, categories, **kwargs, lang=lang), alt,
                  data=[list(groups.values()), [text(c, "en") for c in categories]])


def line_plot(series: Mapping[Any, tuple[Sequence[float], Sequence[float]]], *,
              alt: Label, **kwargs: Any) -> Localized:
    """:func:`line_plot_svg` as a :func:`figure`."""
    _check_series(series)
    return figure(lambda lang: line_plot_svg(series, **kwargs, lang=lang), alt,
                  data=[list(series.values()), list(kwargs.get("hlines", {}).values())])
