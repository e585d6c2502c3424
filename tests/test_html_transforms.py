"""The transforms of the site's finished HTML (llmlab.build.html), on small inputs.

The build hook runs them on each page; ``transform_site`` (``python -m
llmlab.build.html``) runs them on a built site. tests/test_site.py checks what they
made of every page of the real site.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, search_sections
from llmlab.build.html import (FIGURES, code_blocks, download_links, figure_files,
                               join_cjk_lines,
                               language_links, main, mathml, name_search_dialog, root_prefix,
                               search_copy, transform_content, transform_site)

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="3"></svg>'
OTHER_SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="5" height="3"></svg>'


def _figure(svg: bytes, alt: str = "a figure") -> str:
    data = base64.b64encode(svg).decode()
    return f'<img class="llmlab-figure" alt="{alt}" width="4" src="data:image/svg+xml;base64,{data}">'


def _name(svg: bytes) -> str:
    return f"{hashlib.sha256(svg).hexdigest()[:20]}.svg"


# --- Chinese line breaks ------------------------------------------------------------
def test_chinese_line_joining_leaves_verbatim_text_alone() -> None:
    html = ("<p>集中在\n对角线。Mixed 中文\nEnglish</p>"
            "<pre><code># 注释\n# 第二行</code></pre><script>s = '中\n文'</script>")
    assert join_cjk_lines(html) == (
        "<p>集中在对角线。Mixed 中文\nEnglish</p>"
        "<pre><code># 注释\n# 第二行</code></pre><script>s = '中\n文'</script>")


def test_chinese_line_joining_takes_the_spaces_around_the_break_and_punctuation() -> None:
    assert join_cjk_lines("<p>第一行，  \n\t第二行\n（括号）</p>") == "<p>第一行，第二行（括号）</p>"
    # a break between Chinese and anything else stays, and so does a blank line
    assert join_cjk_lines("中\nA\n中") == "中\nA\n中"
    assert join_cjk_lines("中\n\n文") == "中\n\n文"


def test_chinese_line_joining_skips_every_verbatim_element_in_any_case() -> None:
    html = "<STYLE>a{content:'中\n文'}</STYLE><textarea>中\n文</textarea>中\n文<Pre>中\n文</pre>"
    assert join_cjk_lines(html) == html.replace("</textarea>中\n文", "</textarea>中文")
    assert join_cjk_lines(join_cjk_lines(html)) == join_cjk_lines(html)


# --- code blocks --------------------------------------------------------------------
def test_code_blocks_lose_name_and_space_spans_and_count_their_lines() -> None:
    code = ('<pre><span></span><code><span class="kn">import</span><span class="w"> </span>'
            '<span class="nn">torch</span>\n<span class="n">x</span><span class="o">=</span>'
            '<span class="mi">1</span>\n</code></pre>')
    html = (f'<p><span class="n">kept</span></p><div class="language-python highlight">{code}'
            '</div><pre><span class="n">not a highlighted block</span></pre>'
            '<div class="highlight"><span class="filename">f.py</span><pre><code>'
            '<span class="n">y</span>\n</code></pre></div>')
    assert code_blocks(html) == (
        '<p><span class="n">kept</span></p><div class="language-python highlight" '
        'style="--llmlab-lines: 2"><pre><span></span><code><span class="kn">import</span> '
        '<span class="nn">torch</span>\nx<span class="o">=</span><span class="mi">1</span>\n'
        '</code></pre></div><pre><span class="n">not a highlighted block</span></pre>'
        '<div class="highlight" style="--llmlab-lines: 1"><span class="filename">f.py</span>'
        '<pre><code>y\n</code></pre></div>')


def test_code_blocks_leave_a_block_already_done_alone() -> None:
    html = ('<div class="highlight"><pre><code><span class="n">a</span>\n'
            '<span class="n">b</span>\n<span class="n">c</span></code></pre></div>')
    once = code_blocks(html)
    assert 'style="--llmlab-lines: 2"' in once and '<span class="n">' not in once
    assert code_blocks(once) == once
    assert code_blocks("<p>no code</p>") == "<p>no code</p>"


# --- formulas -----------------------------------------------------------------------
def test_formulas_become_mathml_inline_or_display() -> None:
    html = ('<p>Then <span class="arithmatex">\\(x^2 &lt; y\\)</span>.</p>'
            '<div class="arithmatex">\\[\n  a_1\n\\]</div>')
    out = mathml(html)
    assert "arithmatex" not in out and "\\(" not in out and "\\[" not in out
    inline, display = out.split("<math")[1:]
    assert 'display="inline"' in inline and "<msup><mi>x</mi><mn>2</mn></msup>" in inline
    assert "&#x0003C;" in inline  # the escaped "<" of the TeX, read as "<"
    assert 'display="block"' in display and "<msub><mi>a</mi><mn>1</mn></msub>" in display
    assert out.startswith("<p>Then <math") and "</math>.</p>" in out


def test_mathml_touches_only_arithmatex_elements() -> None:
    html = '<span class="other">\\(z\\)</span><code>\\[z\\]</code>'
    assert mathml(html) == html
    assert mathml(mathml(html)) == html


# --- figures ------------------------------------------------------------------------
@pytest.mark.parametrize(("url", "up"), [("", ""), ("index.html", ""), ("404.html", ""),
                                         ("en/", "../"), ("a/b/", "../../"),
                                         ("a/b/index.html", "../../")])
def test_root_prefix_climbs_from_the_page_folder(url: str, up: str) -> None:
    assert root_prefix(url) == up


def test_figures_become_files_the_first_one_loaded_first() -> None:
    html = (f"<p>{_figure(SVG)}</p><p>{_figure(OTHER_SVG)}</p><p>{_figure(SVG, 'again')}</p>"
            '<img src="data:image/svg+xml;base64,AAAA"><img class="llmlab-figure" src="x.png">')
    out, figures = figure_files(html, "lectures/attention/")
    assert figures == {_name(SVG): SVG, _name(OTHER_SVG): OTHER_SVG}  # the same one, once
    assert "data:image/svg+xml;base64,PHN2" not in out
    first, second, third = out.split('<img class="llmlab-figure"')[1:4]
    assert f'fetchpriority="high" src="../../{FIGURES}/{_name(SVG)}"' in first
    assert f'loading="lazy" src="../../{FIGURES}/{_name(OTHER_SVG)}"' in second
    assert 'alt="again"' in third and f'loading="lazy" src="../../{FIGURES}/{_name(SVG)}"' in third
    # other images keep their src: not the report layer's figures, or not a data URI
    assert out.endswith('<img src="data:image/svg+xml;base64,AAAA">'
                        '<img class="llmlab-figure" src="x.png">')
    assert figure_files("<p>text</p>", "") == ("<p>text</p>", {})


def test_transform_content_joins_slims_typesets_then_takes_figures_out() -> None:
    html = ('<p>中\n文 <span class="arithmatex">\\(n\\)</span></p>' + _figure(SVG)
            + '<div class="highlight"><pre><code><span class="n">x</span>\n</code></pre></div>')
    out, figures = transform_content(html, "")
    expected, expected_figures = figure_files(mathml(code_blocks(join_cjk_lines(html))), "")
    assert (out, figures) == (expected, expected_figures)
    assert out.startswith("<p>中文 <math") and figures == {_name(SVG): SVG}
    with pytest.raises(TypeError, match="html must be a str"):
        transform_content(b"<p></p>", "")  # type: ignore[arg-type]


# --- search's copy ------------------------------------------------------------------
def test_search_copy_indexes_as_the_page_with_fewer_tags() -> None:
    html = ('<h2 id="a">A <code>x<span class="o">+</span>1</code></h2>'
            '<p>U(<math><mi>a</mi><mo>,</mo><mtext>&#160;</mtext><mi>b</mi></math>) and '
            '<math><mi>x</mi><mspace width="0.2em"></mspace><mtext> </mtext>'
            '<mtext> </mtext><mi>y</mi></math></p>'
            '<div class="highlight"><pre><span></span><code><span class="k">for</span> '
            '<span class="p">(</span><span class="p">)</span>\n<span class="w"> </span>'
            '<span class="c1"># c</span><span class="w">  </span>\n</code></pre></div>'
            '<pre><code><span>  </span><span> </span>x<span> </span></code></pre> tail '
            '<p>a</p> <table>\n<tr><td>x</td><td> <em>y</em>  </td></tr>\n</table> <p>z</p>')
    copy = search_copy(html)
    assert search_sections(copy) == search_sections(html)
    inside = copy.replace("<pre><span></span><code>", "<pre><code>")  # Pygments' own
    assert "<span" not in inside and "<mi>" not in inside and "<td>" not in copy, copy
    assert search_copy("<p>no code</p>") == "<p>no code</p>"


def test_search_copy_keeps_the_spaces_search_reads_at_the_edges() -> None:
    # a leading or trailing run of spaces stays a node of its own (<wbr> apart)
    html = '<p><span> </span><em>a</em><span>  </span><b>b</b><span> </span></p>'
    copy = search_copy(html)
    assert copy == "<p> <wbr>a b<wbr> </p>"
    assert search_sections(copy) == search_sections(html)
    # lists and sub/superscripts are tags search keeps: they stay
    html = "<p>x<sub>i</sub> <span>and</span> <code>a<sup>2</sup></code></p><ul><li>k</li></ul>"
    assert search_copy(html) == ("<p>x<sub>i</sub> <wbr>and<wbr> <code>a<sup>2</sup></code></p>"
                                 "<ul><li>k</li></ul>")
    assert search_sections(search_copy(html)) == search_sections(html)


# --- <head> and search dialog -------------------------------------------------------
def test_language_links_point_at_the_language_roots() -> None:
    page = ('<head><link rel="alternate" href="/lectures/x/" hreflang="zh">'
            '<link rel="alternate" href="/en/lectures/x/" hreflang="en">'
            '<link rel="alternate" href="/fr/x/" hreflang="fr"></head>'
            '<body><link rel="alternate" href="/lectures/x/" hreflang="zh"></body>')
    out = language_links(page, "https://example.org/llm-lab")
    assert out == ('<head><link rel="alternate" href="https://example.org/llm-lab/" hreflang="zh">'
                   '<link rel="alternate" href="https://example.org/llm-lab/en/" hreflang="en">'
                   '<link rel="alternate" href="/fr/x/" hreflang="fr"></head>'
                   '<body><link rel="alternate" href="/lectures/x/" hreflang="zh"></body>')
    assert language_links(out, "https://example.org/llm-lab/") == out


def test_download_links_become_the_pages_full_addresses() -> None:
    """A notebook download is read outside the site: its links to the docs' pages
    become full addresses under the language's root; other links stay."""
    text = ("[训练](../lectures/training.md) [β](../lectures/alignment.md#三个-β-下的-dpo) "
            "[home](../index.md) [glossary](../reference/index.md#a) [same](other.md) "
            "[web](https://example.org/x.md) [here](#cell) [out](../../README.md) "
            "[root](/lectures/x.md) [py](../lectures/training.py)")
    out = download_links(text, "notebooks/quickstart.md", "https://example.org/llm-lab/en")
    base = "https://example.org/llm-lab/en/"
    assert out == (f"[训练]({base}lectures/training/) "
                   f"[β]({base}lectures/alignment/#三个-β-下的-dpo) [home]({base}) "
                   f"[glossary]({base}reference/#a) [same]({base}notebooks/other/) "
                   "[web](https://example.org/x.md) [here](#cell) [out](../../README.md) "
                   "[root](/lectures/x.md) [py](../lectures/training.py)")
    assert download_links(out, "notebooks/quickstart.md", base) == out  # once is all
    # in an .ipynb, the links sit in JSON strings as they are
    assert download_links('"see [x](../lectures/a.md)\\n"', "notebooks/n.md", "/") == (
        '"see [x](/lectures/a/)\\n"')


def test_the_search_dialog_gets_a_name_once() -> None:
    dialog = '<div class="md-search" data-md-component="search" role="dialog">'
    named = dialog.replace('role="dialog"', 'role="dialog" aria-label="搜索"')
    assert name_search_dialog(dialog + dialog, "zh") == named + dialog  # the first
    assert name_search_dialog(named, "en") == named  # a dialog with a name keeps it
    assert 'aria-label="Search"' in name_search_dialog(dialog, "en")
    assert 'aria-label="Search"' in name_search_dialog(dialog, "fr")  # no name of its own
    assert 'aria-label="搜索"' in name_search_dialog(dialog, None)  # the site's first language


# --- a built site -------------------------------------------------------------------
def _page(body: str, lang: str = "zh") -> str:
    return (f'<html lang="{lang}"><head><link rel="alternate" href="/x/" hreflang="en"></head>'
            '<body><div class="md-search" data-md-component="search" role="dialog">'
            f"</div>{body}</body></html>")


def _site(root: Path) -> Path:
    site = root / "site"
    (site / "lectures" / "a").mkdir(parents=True)
    (site / "en").mkdir()
    (site / "index.html").write_text(_page(f"<p>首\n页</p>{_figure(SVG)}"), encoding="utf-8")
    (site / "lectures" / "a" / "index.html").write_text(
        _page(f'<p><span class="arithmatex">\\(n\\)</span></p>{_figure(OTHER_SVG)}'),
        encoding="utf-8")
    (site / "en" / "index.html").write_text(_page("<p>home</p>", "en"), encoding="utf-8")
    (site / "style.css").write_text("p {}\n", encoding="utf-8")
    return site


def test_transform_site_transforms_every_page_and_writes_its_figures(tmp_path: Path) -> None:
    site = _site(tmp_path)
    counts = transform_site(site)
    assert counts == {"pages": 3, "changed": 3, "figures": 2}
    home = (site / "index.html").read_text("utf-8")
    assert "<p>首页</p>" in home and 'aria-label="搜索"' in home
    assert f'src="{FIGURES}/{_name(SVG)}"' in home
    lecture = (site / "lectures" / "a" / "index.html").read_text("utf-8")
    assert "<math" in lecture and "arithmatex" not in lecture
    src = lecture.split('src="')[1].split('"')[0]
    assert (site / "lectures" / "a" / src).resolve().read_bytes() == OTHER_SVG  # it loads
    assert 'aria-label="Search"' in (site / "en" / "index.html").read_text("utf-8")
    assert 'href="/x/"' in home  # the language links: only with a site_url
    assert (site / "style.css").read_text("utf-8") == "p {}\n"
    # a second pass, like one over the hook's site, finds nothing to do
    assert transform_site(site) == {"pages": 3, "changed": 0, "figures": 0}
    transform_site(site, site_url="https://example.org/")
    assert 'href="https://example.org/en/" hreflang="en"' in (site / "index.html").read_text("utf-8")


def test_transform_site_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="site_dir must be a built site's folder, got .*nowhere"):
        transform_site(tmp_path / "nowhere")


def test_the_command_transforms_a_site_and_refuses_a_missing_one(tmp_path: Path, capsys) -> None:
    site = _site(tmp_path)
    assert main([str(site)]) == 0
    assert "3 pages, 3 rewritten, 2 figures" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "nowhere")])
    assert exit_info.value.code == 2 and "site_dir must be" in capsys.readouterr().err
    # and as `python -m llmlab.build.html`
    done = subprocess.run([sys.executable, "-m", "llmlab.build.html", str(site)], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    assert "3 pages, 0 rewritten" in done.stdout
