"""What report objects print: Markdown for the pages, readable text in a terminal.

The output mode is ``LLMLAB_OUTPUT``: ``markdown`` (the site's build sets it) prints
exactly what the pages have always printed; ``text``, the default, is what a reader
who copies a block into a file and runs it sees: plain-text tables, a figure as its
alt text and the path of its SVG file, never HTML or base64.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import llmlab
from llmlab import report
from llmlab.report import img_tag, label, line_plot, markdown_table, table
from llmlab.report import tokenization as rt
from llmlab.report import training as rtr
from pages import EXAMPLES, notebook_code_cells, python_blocks, read_page

SRC = Path(llmlab.__file__).resolve().parent.parent  # the llmlab under test


@pytest.fixture
def text_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal: no LLMLAB_OUTPUT, English."""
    monkeypatch.delenv("LLMLAB_OUTPUT", raising=False)
    monkeypatch.setenv("LLMLAB_LANG", "en")


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A temporary folder of the test's own, and a working folder that must stay empty."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "tmp" / "llmlab-figures"


def _width(line: str) -> int:
    """Terminal columns of ``line``."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def _figure() -> report.Localized:
    """A figure in each language (SVG written here: no fonts needed)."""
    return report.figure(
        lambda lang: ('<svg xmlns="http://www.w3.org/2000/svg" width="72pt" height="36pt">'
                      f"<text>{lang}</text></svg>"),
        alt=label("折线图：损失在下降", "Line chart: the loss goes down"), data=[1, 2])


# --------------------------------------------------------------------------
# the mode
# --------------------------------------------------------------------------
def test_output_mode_reads_llmlab_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMLAB_OUTPUT", raising=False)
    assert report.output_mode() == "text"
    monkeypatch.setenv("LLMLAB_OUTPUT", "markdown")
    assert report.output_mode() == "markdown" and report.output_mode("text") == "text"
    monkeypatch.setenv("LLMLAB_OUTPUT", "html")
    with pytest.raises(ValueError, match=r"LLMLAB_OUTPUT must be one of .*got 'html'"):
        report.output_mode()
    with pytest.raises(ValueError, match=r"LLMLAB_OUTPUT must be one of"):
        str(table(["a"], [[1]]))  # printing with a bad value says which variable
    with pytest.raises(ValueError, match=r"^mode must be one of .*got 'Markdown'"):
        report.output_mode("Markdown")


# --------------------------------------------------------------------------
# markdown mode: what the pages printed before the mode existed, byte for byte
# --------------------------------------------------------------------------
def test_markdown_mode_prints_what_the_pages_printed(monkeypatch, text_mode) -> None:
    t = table([label("字符", "character"), "n"], [["明", 1], ["a|b", 22]])
    md_table = "| character | n |\n| :-- | --: |\n| 明 | 1 |\n| a\\|b | 22 |\n"
    chips = ('<span class="llmlab-toks"><code class="llmlab-tok">a</code><wbr>'
             '<code class="llmlab-tok">&#124;</code></span>')
    fig = _figure()
    assert str(t) != md_table  # a terminal gets something else ...
    monkeypatch.setenv("LLMLAB_OUTPUT", "markdown")  # ... a page what it always got
    assert str(t) == t.render() == md_table
    assert markdown_table(["character", "n"], [["明", 1], ["a|b", 22]]) == md_table
    assert rt.tokens_html([b"a", b"|"]) == chips
    assert rt.verbatim_html("a b") == '<code class="llmlab-verbatim">a␣b</code>'
    assert str(fig) == img_tag(fig.make("en"), fig.alt.en, digest=fig.digest)
    assert str(fig).startswith('<p><img class="llmlab-figure" alt="Line chart')
    source = textwrap.dedent(inspect.getsource(_width)).splitlines()
    del source[1]  # its docstring
    assert str(rtr.source_block(_width)) == "```python\n" + "\n".join(source) + "\n```\n"


# --------------------------------------------------------------------------
# text mode: tables
# --------------------------------------------------------------------------
def test_a_table_prints_as_an_aligned_plain_text_table(monkeypatch, text_mode) -> None:
    monkeypatch.setenv("LLMLAB_LANG", "zh")
    t = table([label("字符", "character"), label("字节数", "bytes"), "note"],
              [["明月", 3, "a|b"], ["é", 22, "x&nbsp;y<wbr>z"], ["A", 333, "<b>bold</b>"]],
              align="lrl")
    assert str(t) == (
        "字符  字节数  note\n"
        "----  ------  ----\n"
        "明月       3  a|b\n"
        "é         22  x yz\n"
        "A        333  bold\n")
    # on screen, the right-aligned numbers end in the same column on every line
    assert len({_width(line.rsplit("  ", 1)[0]) for line in str(t).splitlines()}) == 1
    assert markdown_table(["a", "b"], [["1|2", "&amp;"]]) == "a    b\n---  -\n1|2  &\n"


def test_token_tables_print_tokens_not_html(text_mode) -> None:
    from llmlab.experiments.tokenization import run_bpe_steps

    steps = str(rt.bpe_steps_table(run_bpe_steps()))
    encoding = str(rtr.encoding_table([("shakespeare", "Hello world",
                                        [b"Hello", b" world"], [15, 995])]))
    for out in (steps, encoding):
        for html in ("<span", "<code", "<wbr", "&nbsp;", "<br", "\\|", "| :--"):
            assert html not in out, (html, out)
    assert "[s] + [t] → [st]" in steps.splitlines()[3]
    assert encoding.splitlines()[2] == ("Shakespeare  Hello␣world 11 characters → 2 tokens"
                                        "  [Hello] 15 [␣world] 995")
    assert rt.tokens_html([b"Hello", b",", b" world", b"\xe6"]) == "[Hello][,][␣world][\\xe6]"
    assert rt.verbatim_html("a b") == "a␣b"


def test_a_source_block_prints_its_code(text_mode) -> None:
    from llmlab.training import cross_entropy

    code = str(rtr.source_block(cross_entropy))
    assert code.startswith("def cross_entropy(") and "```" not in code


# --------------------------------------------------------------------------
# text mode: figures
# --------------------------------------------------------------------------
def test_a_figure_prints_its_alt_text_and_the_path_of_its_svg(text_mode, figures) -> None:
    fig = _figure()
    out = str(fig)
    assert "<img" not in out and "base64" not in out and "<svg" not in out
    alt, where = out.splitlines()
    assert alt == "Line chart: the loss goes down" and where.startswith("figure: ")
    path = Path(where.removeprefix("figure: "))
    assert path.parent == figures and path.suffix == ".svg"
    assert path.read_text(encoding="utf-8") == fig.make("en")
    assert str(fig) == out  # the same figure, the same file
    assert list(Path.cwd().iterdir()) == []  # nothing in the working folder


def test_a_figure_file_never_replaces_another_file(text_mode, figures) -> None:
    fig = _figure()
    first = Path(str(fig).splitlines()[1].removeprefix("figure: "))
    first.write_text("someone's own file", encoding="utf-8")
    again = Path(str(fig).splitlines()[1].removeprefix("figure: "))
    assert first.read_text(encoding="utf-8") == "someone's own file"
    assert again != first and again.read_text(encoding="utf-8") == fig.make("en")


def test_a_figure_prints_in_the_language_of_the_reader(monkeypatch, text_mode,
                                                       figures) -> None:
    monkeypatch.setenv("LLMLAB_LANG", "zh")
    alt, where = str(_figure()).splitlines()
    assert alt == "折线图：损失在下降" and where.startswith("图：")
    assert Path(where.removeprefix("图：")).read_text(encoding="utf-8").count("<text>zh<")


# --------------------------------------------------------------------------
# a reader's terminal: page blocks and an example, in a new process
# --------------------------------------------------------------------------
def _block(page: str, needle: str) -> str:
    found = [b.code for b in python_blocks(read_page("en", page)) if needle in b.code]
    assert len(found) == 1, (page, needle, len(found))
    return found[0]


def _run_as_a_reader(code: str, tmp_path: Path, timeout: float = 300
                     ) -> tuple[str, Path]:
    """``python -I snippet.py`` in an empty folder, with a clean environment (no
    ``LLMLAB_*``); the llmlab under test comes first on the path."""
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    (work / "snippet.py").write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "LANG", "LC_ALL", "SYSTEMROOT")}
    env.update(OMP_NUM_THREADS="1", TMPDIR=str(tmp), TEMP=str(tmp), TMP=str(tmp))
    runner = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
              "runpy.run_path(sys.argv[1], run_name='__main__')")
    proc = subprocess.run([sys.executable, "-I", "-c", runner, str(SRC), "snippet.py"],
                          cwd=work, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in work.iterdir()) == ["snippet.py"]  # wrote nothing there
    return proc.stdout, tmp


def _assert_readable(out: str) -> None:
    for html in ("<span", "<img", "base64", "<code", "<wbr", "&nbsp;", "object>"):
        assert html not in out, (html, out[:2000])


def test_a_copied_token_table_block_prints_text(tmp_path: Path) -> None:
    code = _block("lectures/tokenization.md", "r = run_bpe_steps()  # the CS336")
    out, _ = _run_as_a_reader(code, tmp_path)
    _assert_readable(out)
    assert "[s] + [t] → [st]" in out and "-----" in out


def test_a_copied_figure_block_prints_a_path(tmp_path: Path) -> None:
    code = _block("lectures/tokenization.md", "print(diagrams.bpe_merges(")
    out, tmp = _run_as_a_reader(code, tmp_path)
    _assert_readable(out)
    alt, where = out.strip().splitlines()
    assert alt.startswith("Diagram: BPE merges") and where.startswith("figure: ")
    path = Path(where.removeprefix("figure: "))
    assert path.is_file() and path.parent == tmp / "llmlab-figures"
    assert path.read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_examples_display_no_ipython_markdown_object(tmp_path: Path) -> None:
    """``python examples/train_tiny_lm.py`` prints the code it shows, not an object's
    repr (outside IPython, ``display`` prints ``str()``). Run here: the cell that
    shows the listing, without the training run it follows."""
    for path in sorted(EXAMPLES.glob("*.py")):
        assert "Markdown(" not in path.read_text(encoding="utf-8"), path.name
    cell = next(c for c in notebook_code_cells(EXAMPLES / "train_tiny_lm.py")
                if "source_block(" in c)
    code = "\n".join(line for line in cell.splitlines()
                     if not line.startswith("result = run_training_run("))
    out, _ = _run_as_a_reader(code, tmp_path)
    _assert_readable(out)
    assert out.startswith("settings = _settings(") and "```" not in out


def test_a_cjk_font_installed_after_matplotlib_listed_its_fonts_is_found(
        tmp_path: Path) -> None:
    """Matplotlib lists the system's fonts once, in a cache: a font installed later is
    missing from it. A Chinese figure still finds the font (fails before cjk_font)."""
    import subprocess
    import sys

    forget = (
        "import os, matplotlib\n"
        "from matplotlib import font_manager as fm\n"
        "from llmlab.report import CJK_FONTS\n"
        "files = {f.fname for f in fm.fontManager.ttflist if f.name in CJK_FONTS}\n"
        "assert files, 'no CJK font on this machine (make test installs one)'\n"
        "fm.fontManager.ttflist = [f for f in fm.fontManager.ttflist\n"
        "                          if f.fname not in files]  # as before the font came\n"
        "name = f'fontlist-v{fm.FontManager.__version__}.json'\n"
        "fm.json_dump(fm.fontManager, os.path.join(matplotlib.get_cachedir(), name))\n")
    draw = (
        "from matplotlib import font_manager as fm\n"
        "from llmlab.report import CJK_FONTS, line_plot_svg\n"
        "assert not {f.name for f in fm.fontManager.ttflist} & set(CJK_FONTS)\n"
        "svg = line_plot_svg({'损失': ([0, 1], [2.0, 1.0])}, title='训练', lang='zh')\n"
        "print(svg.startswith('<?xml'))\n")
    env = {**os.environ, "MPLCONFIGDIR": str(tmp_path), "MPLBACKEND": "Agg"}
    for code in (forget, draw):
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True"


def test_a_line_plot_over_whole_numbers_has_whole_number_ticks() -> None:
    """Steps 1..20 are labelled 3, 6, 9, ..., never 2.5 or 7.5 (a step has no
    halves); x values with fractions keep Matplotlib's own ticks."""
    import re

    from llmlab.report import line_plot_svg

    def x_ticks(xs: list) -> list[str]:  # the SVG keeps each text as a comment
        svg = line_plot_svg({"a": (xs, [float(x) for x in xs])}, lang="en")
        x_axis = svg[svg.index('id="matplotlib.axis_1"'):svg.index('id="matplotlib.axis_2"')]
        return re.findall(r"<!-- ([^>]*) -->", x_axis)

    steps = x_ticks(list(range(1, 21)))
    assert steps and all(t.isdigit() for t in steps), steps
    assert not all(t.isdigit() for t in x_ticks([0.0, 0.5, 1.0]))


def test_a_bar_plot_draws_a_bar_per_group_and_category_at_its_height() -> None:
    """Grouped bars: per category (x tick, in order), one bar per group, left to right
    in the groups' order, in the group's own colour, as tall as its value; the legend
    names the groups."""
    import re

    from llmlab.report import bar_plot_svg

    groups = {"a": [1.0, 2.0], "b": [3.0, 0.5], "c": [2.0, 2.5]}
    svg = bar_plot_svg(groups, ["x", "y"], lang="en")
    bars = re.findall(r'<path d="M ([\d.]+) ([\d.]+) \nL ([\d.]+) [\d.]+ \nL [\d.]+ ([\d.]+) '
                      r'\nL [\d.]+ [\d.]+ \nz\n" clip-path="[^"]+" style="fill: (#[0-9a-f]+)"', svg)
    assert len(bars) == 6  # drawn group by group
    left = [float(b[0]) for b in bars]
    heights = [float(b[1]) - float(b[3]) for b in bars]
    values = [v for vs in groups.values() for v in vs]
    scale = heights[0] / values[0]
    assert all(abs(h - v * scale) < 1e-3 * scale for h, v in zip(heights, values))
    for i in range(2):  # at category i, the groups left to right, all left of category i+1
        xs = [left[j * 2 + i] for j in range(3)]
        assert xs == sorted(xs)
    assert max(left[j * 2] for j in range(3)) < min(left[j * 2 + 1] for j in range(3))
    colours = [b[4] for b in bars]
    assert colours[0::2] == colours[1::2] and len(set(colours[0::2])) == 3
    x_axis = svg[svg.index('id="matplotlib.axis_1"'):svg.index('id="matplotlib.axis_2"')]
    assert re.findall(r"<!-- ([^>]*) -->", x_axis) == ["x", "y"]
    legend = svg[svg.index('id="legend_1"'):]
    assert re.findall(r"<!-- ([^>]*) -->", legend) == ["a", "b", "c"]
