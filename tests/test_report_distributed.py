"""Renderers of the compute-and-distributed lecture: both languages, the same numbers.

Each table is rendered in Chinese and in English from the experiments (on the
reduced settings of ``test_experiments_distributed``, so one test session computes
them once): the zh headers are Chinese (or identifiers), the en output has no
Chinese, both show the same numbers in the same order, and every row keeps its
columns. The figure of data parallelism vs sharding is valid SVG in both
languages, plots the same data, and draws its bars to the measured bytes.
"""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

import llmlab.report.diagrams as diagrams
from llmlab.experiments import distributed as exp
from llmlab.report import Localized
from llmlab.report import distributed as rd

_CJK = re.compile(r"[\u4e00-\u9fff]")
_CODE = re.compile(r"`[^`]*`|<code[^>]*>.*?</code>", re.S)
_NUMBER = re.compile(r"[-−+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?%?")
# zh headers that are names, not words: units, ranks, methods
_NAMES = {"", "ZeRO-1", "ZeRO-2", "ZeRO-3", "FSDP ÷ DDP", "6·N_mm",
          "GPT-2 small", "Llama 2 7B"}


@pytest.fixture(scope="module")
def results() -> dict[str, object]:
    return {
        "flops": exp.run_flop_count(sweep_context_lengths=(512, 32768)),
        "memory": exp.run_memory_accounting(),
        "cost": exp.run_training_cost(utilisation=0.4),
        "zero": exp.run_zero_memory(n_devices=(8, 64)),
        "ddp": exp.run_ddp_check(steps=3),
        "fsdp": exp.run_fsdp_check(steps=3),
        "utilisation": exp.time_cpu_utilisation(steps=2, matmul_size=128),
        "communication": exp.time_ddp_communication(steps=2),
    }


def _tables(r: dict[str, object]) -> dict[str, Localized]:
    return {
        "flop_table": rd.flop_table(r["flops"]),
        "flop_sweep_table": rd.flop_sweep_table(r["flops"]),
        "state_table": rd.state_table(r["memory"]),
        "activation_table": rd.activation_table(r["memory"]),
        "memory_modes_table": rd.memory_modes_table(r["memory"]),
        "at_scale_table": rd.at_scale_table(r["memory"]),
        "training_cost_table": rd.training_cost_table(r["cost"]),
        "utilisation_table": rd.utilisation_table(r["utilisation"]),
        "ddp_losses_table": rd.ddp_losses_table(r["ddp"]),
        "ddp_check_table": rd.ddp_check_table(r["ddp"]),
        "communication_table": rd.communication_table(r["communication"]),
        "fsdp_bytes_table": rd.fsdp_bytes_table(r["fsdp"]),
        "fsdp_check_table": rd.fsdp_check_table(r["fsdp"]),
        "zero_table": rd.zero_table(r["zero"]),
        "zero_paper_table": rd.zero_paper_table(r["zero"]),
    }


NAMES = [
    "flop_table", "flop_sweep_table", "state_table", "activation_table",
    "memory_modes_table", "at_scale_table", "training_cost_table", "utilisation_table",
    "ddp_losses_table", "ddp_check_table", "communication_table", "fsdp_bytes_table",
    "fsdp_check_table", "zero_table", "zero_paper_table",
]


def _headers(markdown: str) -> list[str]:
    return [h.strip() for h in re.split(r"(?<!\\)\|", markdown.splitlines()[0])[1:-1]]


def _rows(markdown: str) -> list[str]:
    return markdown.splitlines()[2:]


def test_every_table_renderer_is_checked(results) -> None:
    assert set(_tables(results)) == set(NAMES)
    exported = {n for n in rd.__all__ if n.endswith("_table")}
    assert exported == set(NAMES), exported ^ set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_tables_speak_each_language_with_the_same_numbers(results, name: str) -> None:
    rendered = _tables(results)[name]
    zh, en = rendered.render("zh"), rendered.render("en")
    for header in _headers(zh):
        words = re.sub(r"rank \d", "", _CODE.sub("", header))  # "rank 0" is a name
        assert (_CJK.search(words) or words in _NAMES
                or not re.search(r"[a-z]{3,}", words)), f"{name}: zh header {header!r}"
    assert not _CJK.search(en), f"{name}: Chinese in the English table"
    assert any(re.search(r"[a-z]{3,}", _CODE.sub("", h)) for h in _headers(en)), name
    assert _NUMBER.findall(zh) == _NUMBER.findall(en), f"{name}: numbers differ"
    width = len(_headers(en))
    for row in _rows(en) + _rows(zh):
        cells = re.split(r"(?<!\\)\|", row.strip())[1:-1]
        assert len(cells) == width, (name, row[:120])


def test_communication_settings_in_both_languages(results) -> None:
    line = rd.communication_settings(results["communication"])
    assert _CJK.search(line.zh) and not _CJK.search(line.en)
    assert _NUMBER.findall(line.zh) == _NUMBER.findall(line.en)
    assert results["communication"].machine in line.en


@pytest.mark.parametrize(("value", "shown"), [
    (933_888, "933.9 k"),
    (22_696_448, "22.70 M"),
    (46_084_915_200, "46.08 G"),
    (999_970, "1.000 M"),  # rounds up into the next prefix
    (0, "0"),
    (512, "512.0"),
])
def test_fmt_si(value: float, shown: str) -> None:
    assert rd.fmt_si(value) == shown


@pytest.mark.parametrize(("value", "shown"), [
    (1_991_036_928, "1.85 GiB"),  # binary: 1 GiB = 2³⁰ bytes
    (3_888_744, "3.71 MiB"),
    (80 * 2**30, "80.0 GiB"),  # an A100 80GB
    (533_000, "521 KiB"),
    (2**30 - 1, "1.00 GiB"),  # rounds up into the next unit
    (1024, "1.00 KiB"),
    (512, "512 B"),
    (0, "0 B"),
])
def test_fmt_bytes_in_binary_units(value: float, shown: str) -> None:
    assert rd.fmt_bytes(value) == shown


def test_number_formats() -> None:
    assert rd.fmt_sci(9.21698304e22) == "9.22 × 10²²"
    assert rd.fmt_sci(2.5e-3) == "2.50 × 10⁻³"
    assert rd.fmt_change(1.107, 1.0) == "+10.7%"
    assert rd.fmt_change(0.877, 1.0) == "−12.3%"
    assert rd.fmt_change(1.0, 1.0) == rd.fmt_change(1.00001, 1.0) == "0.0%"


def test_tables_show_what_the_lecture_reads_from_them(results) -> None:
    flops = rd.flop_table(results["flops"]).render("en")
    assert "(0.0%)" in flops  # 6N + 12LdT is the count, in every column
    activations = rd.activation_table(results["memory"]).render("en")
    m = next(m for m in results["memory"].modes
             if (m.precision, m.checkpointing) == ("fp32", False))
    assert f"| {m.measured_total:,} |" in activations
    paper = rd.zero_paper_table(results["zero"]).render("en")
    computed, published = _rows(paper)
    cells = [re.split(r"(?<!\\)\|", row)[2:-1] for row in (computed, published)]
    assert [c.strip() for c in cells[0]] == [
        f"{g:.1f} GB" for g in rd.ZERO_PAPER_GB]  # ZeRO's own example, to its digits
    assert [float(c.split()[0]) for c in cells[1]] == list(rd.ZERO_PAPER_GB)


def test_at_scale_table_separates_saved_from_peak(results) -> None:
    rows = _rows(rd.at_scale_table(results["memory"]).render("en"))
    cells = {re.split(r"(?<!\\)\|", row)[1].strip(): row.split("|")[-2].strip()
             for row in rows}  # first column -> Llama 2 7B's column
    saved = next(v for k, v in cells.items() if k.startswith("checkpointed: saved"))
    block = next(v for k, v in cells.items() if k.startswith("checkpointed: one block"))
    peak = next(v for k, v in cells.items() if k == "checkpointed: the peak")
    # bf16 bytes of one 4096-token sequence, by the formulas (test_compute)
    assert (saved, block, peak) == ("1.31 GiB", "1.55 GiB", "2.55 GiB")


def _timing(results, synced: list[float], all_reduce: list[float],
            steps: list[list[float]]) -> exp.CommunicationTiming:
    import dataclasses

    return dataclasses.replace(results["communication"], compute_seconds=[0.010, 0.010],
                               synced_seconds=synced, all_reduce_seconds=all_reduce,
                               difference_seconds=steps)


def test_communication_summary_reads_the_difference_against_the_all_reduce(results):
    # rank 1 waited: its difference is 5.5 times one all-reduce of every gradient
    t = _timing(results, [0.0105, 0.01692], [0.00125, 0.00125],
                [[0.0003, 0.0007], [0.0061, 0.0078]])
    line = rd.communication_summary(t)
    assert "rank 1's difference (6.92 ms)" in line.en and "(1.25 ms)" in line.en
    assert "5.5 times" in line.en and "more than sending every gradient once takes" in line.en
    assert "from 6.10 to 7.80 ms" in line.en
    assert "5.5 倍" in line.zh and "比把梯度传一遍花的时间还多" in line.zh
    # no difference beyond the all-reduce: the table cannot tell them apart
    t = _timing(results, [0.0105, 0.0108], [0.00125, 0.00125],
                [[0.0003, 0.0007], [0.0006, 0.0011]])
    line = rd.communication_summary(t)
    assert "no rank's difference exceeds" in line.en and "rank 1: 0.80 ms" in line.en
    assert "cannot" not in line.en.split(":")[0] and "分不开" in line.zh
    # a negative difference is noise
    t = _timing(results, [0.0095, 0.0108], [0.00125, 0.00125],
                [[-0.0009, 0.0001], [0.0006, 0.0011]])
    line = rd.communication_summary(t)
    assert "Rank 0's difference is negative (-0.50 ms)" in line.en
    assert "rank 0 的差是负的（-0.50 毫秒）" in line.zh
    for line in (rd.communication_summary(results["communication"]), line):
        assert _CJK.search(line.zh) and not _CJK.search(line.en)
        assert _NUMBER.findall(line.zh) == _NUMBER.findall(line.en)


# --------------------------------------------------------------------------
# the figure
# --------------------------------------------------------------------------
def _layout(fig: Any) -> dict[str, Any]:
    """The smallest font, words on words, words out of their rounded boxes."""
    from matplotlib.patches import FancyBboxPatch

    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    words = [(t.get_text(), t.get_fontsize(), t.get_window_extent(renderer))
             for t in ax.texts if t.get_text().strip()]

    def overlap(a: Any, b: Any) -> bool:
        return (min(a.x1, b.x1) - max(a.x0, b.x0) > 1) and (
            min(a.y1, b.y1) - max(a.y0, b.y0) > 1)

    crowded = [(s, u) for (s, _, a), (u, _, b) in itertools.combinations(words, 2)
               if overlap(a, b)]
    spilled = []
    for patch in ax.patches:
        if isinstance(patch, FancyBboxPatch):
            box = patch.get_window_extent(renderer)
            for s, _, w in words:
                if box.contains((w.x0 + w.x1) / 2, (w.y0 + w.y1) / 2) and not (
                        box.x0 <= w.x0 and w.x1 <= box.x1):
                    spilled.append(s)
    return {"smallest": min(size for _, size, _ in words), "crowded": crowded,
            "spilled": spilled}


def test_parallelism_figure_in_both_languages(results, monkeypatch) -> None:
    r = results["fsdp"]
    seen: list[dict[str, Any]] = []
    original = diagrams.svg_from_figure
    monkeypatch.setattr(diagrams, "svg_from_figure",
                        lambda fig: (seen.append(_layout(fig)), original(fig))[1])
    fig = rd.parallelism_figure(r)
    svgs = {lang: fig.make(lang) for lang in ("zh", "en")}
    assert _CJK.search(fig.alt.zh) and not _CJK.search(fig.alt.en)
    for lang, svg in svgs.items():
        root = ET.fromstring(svg)
        width = float(root.get("width").removesuffix("pt")) / 72
        assert 1.5 <= width <= diagrams.MAX_WIDTH_IN, f"{lang}: {width:.2f} in wide"
        assert "<text" not in svg  # words are paths
    for lang, layout in zip(("zh", "en"), seen):
        assert layout["smallest"] >= diagrams.SMALL, lang
        assert not layout["crowded"], (lang, layout["crowded"])
        assert not layout["spilled"], (lang, layout["spilled"])
    digest = re.compile(r'data-digest="([0-9a-f]+)"')
    zh, en = fig.render("zh"), fig.render("en")
    assert digest.search(zh).group(1) == digest.search(en).group(1)
    assert fig.data["fsdp_bytes"] == r.fsdp_bytes  # drawn to the measured bytes
    assert rd.parallelism_figure(r).digest == fig.digest


def test_parallelism_figure_draws_two_ranks(results) -> None:
    import dataclasses

    r = dataclasses.replace(results["fsdp"], world_size=4)
    with pytest.raises(ValueError, match="two ranks"):
        rd.parallelism_figure(r)
