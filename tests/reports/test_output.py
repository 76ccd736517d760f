"""Figure files (PNG, PDF, SVG) in the screen and paper styles, log ticks, LaTeX tables."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import polars as pl
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from schedlab.reports.content import Table
from schedlab.reports.figures import plain_log_ticks, plain_number
from schedlab.reports.latex import escape, to_latex
from schedlab.reports.markup import to_html, to_markdown, write_bundle
from schedlab.reports.output import (
    PAPER,
    FigureOptions,
    figure,
    fit_text,
    panels,
    place_legend,
    render,
    save,
)
from tests.report_helpers import (
    check_files,
    check_latex_table,
    check_pdf,
    check_svg,
    png_size,
    svg_texts,
)


def draw_lines(ax: Axes) -> None:
    for k in range(3):
        ax.plot([1, 2, 3], [k, k + 1, k + 3], label=f"policy {k}")
    ax.set_title("Title ≤ 1 – χ²")
    place_legend(ax)


LINES = figure(draw_lines, (8, 4))


def test_render_writes_png_pdf_svg_from_one_drawing() -> None:
    files = render(LINES, ("png", "pdf", "svg"), dpi=150, html_dpi=75)
    assert png_size(files["png"]) == (8 * 150, 4 * 150)
    assert png_size(files["html"]) == (8 * 75, 4 * 75)
    pdf = check_pdf(files["pdf"])
    assert pdf["pages"] == 1
    assert pdf["truetype"] >= 1  # fonts embedded as TrueType (Type 42) ...
    assert pdf["type3"] == 0  # ... not as Type 3, which publishers reject
    texts = svg_texts(check_svg(files["svg"]))
    assert "Title ≤ 1 – χ²" in texts  # text stays text in SVG
    assert "policy 2" in texts
    with pytest.raises(ValueError, match="figure formats must be among"):
        render(LINES, ("eps",))


def test_paper_style_is_one_column_wide_with_the_legend_below() -> None:
    files = render(LINES, ("png",), dpi=100, style="paper")
    width, height = png_size(files["png"])
    assert width == round(PAPER.column_width * 100)
    assert height == round(PAPER.size(LINES)[1] * 100)
    fig = Figure(figsize=PAPER.size(LINES), layout="constrained")
    ax = fig.subplots()
    draw_lines(ax)
    assert ax.get_legend() is None
    (legend,) = fig.legends  # below the figure, placed by the constrained layout
    assert [t.get_text() for t in legend.get_texts()] == ["policy 0", "policy 1", "policy 2"]
    assert legend._ncols == 3
    wide = Figure(figsize=(9, 5)).subplots()
    draw_lines(wide)
    assert wide.get_legend()._loc == 2  # "upper left", beside the Axes
    assert wide.figure.legends == []
    page = panels(lambda axes: draw_lines(axes[0, 0]), (12, 5), span="page")
    assert PAPER.size(page)[0] == PAPER.page_width


def test_fit_text_shortens_labels_on_narrow_figures() -> None:
    text = {"title": "A long title", "xlabel": "Policy (ordered by rank)", "ylabel": "Slowdown"}
    short = {"xlabel": "Policy"}
    narrow = Figure(figsize=(3.3, 2.5)).subplots()
    narrow.set_xticks([0, 1], ["sjf", "tetris"])
    fit_text(narrow, **text, short=short, slant=True)
    assert narrow.get_title() == ""  # the caption carries it
    assert (narrow.get_xlabel(), narrow.get_ylabel()) == ("Policy", "Slowdown")
    assert narrow.get_xticklabels()[0].get_rotation() == 35
    wide = Figure(figsize=(9, 5)).subplots()
    fit_text(wide, **text, short=short, slant=True)
    assert wide.get_title() == "A long title"
    assert wide.get_xlabel() == "Policy (ordered by rank)"
    assert wide.get_xticklabels()[0].get_rotation() == 0


def test_save_picks_the_format_from_the_suffix(tmp_path: Path) -> None:
    for suffix in ("png", "pdf", "svg"):
        path = save(LINES, tmp_path / f"fig.{suffix}", dpi=80)
        check_files({suffix: path})
    with pytest.raises(ValueError, match=r"must end in one of \['.png', '.pdf', '.svg'\]"):
        save(LINES, tmp_path / "fig.jpg")


def test_figure_options_validate_and_default_vector_copies_by_style() -> None:
    assert FigureOptions().vector_formats == ()
    assert FigureOptions(style="paper").vector_formats == ("pdf", "svg")
    assert FigureOptions(vector=("svg", "svg")).vector_formats == ("svg",)
    with pytest.raises(ValueError, match="style must be one of"):
        FigureOptions(style="poster")
    with pytest.raises(ValueError, match="vector formats must be among"):
        FigureOptions(vector=("png",))
    with pytest.raises(ValueError, match="dpi and html_dpi must be > 0"):
        FigureOptions(dpi=0)


@pytest.mark.parametrize(
    ("limits", "labels"),
    [
        ((1, 1000), ["1", "10", "100", "1000"]),
        ((1, 20), ["1", "2", "5", "10", "20"]),
        ((0.001, 1), ["0.001", "0.01", "0.1", "1"]),
        ((1, 1e7), ["1", "10", "100", "1000", "10000", "100000", "$10^{6}$", "$10^{7}$"]),
    ],
)
def test_log_ticks_read_as_plain_numbers(limits: tuple[float, float], labels: list[str]) -> None:
    ax = Figure().subplots()
    ax.set_yscale("log")
    ax.set_ylim(*limits)
    plain_log_ticks(ax.yaxis)
    ticks = [t for t in ax.get_yticks() if limits[0] <= t <= limits[1]]
    assert [plain_number(t) for t in ticks] == labels


def test_latex_escapes_reserved_characters_and_symbols() -> None:
    assert escape("50% & a_b #1 {x} ~ ^ $") == (
        r"50\% \& a\_b \#1 \{x\} \textasciitilde{} \textasciicircum{} \$"
    )
    assert escape(r"a\b") == r"a\textbackslash{}b"
    assert escape("χ² ≤ 0.05 – α*†") == (
        r"$\chi^2$ $\le$ 0.05 -- $\alpha$\textsuperscript{*}\textsuperscript{\dag}"
    )


TABLE = Table(
    ["policy", "load", "ratio [95% CI]"],
    [["sjf", "50%", "0.83 [0.79, 0.88]*"], ["my_policy", "130%", "1.05 [1.01, 1.10]†"]],
    bold={(0, 2)},
    notes=["* significant; † CI and test disagree."],
)


def test_to_latex_is_a_balanced_booktabs_tabular() -> None:
    tex = to_latex(TABLE, comment="ratios")
    rows = check_latex_table(tex)
    assert rows[0] == ["policy", "load", r"ratio [95\% CI]"]
    assert rows[1] == ["sjf", r"50\%", r"\textbf{0.83 [0.79, 0.88]\textsuperscript{*}}"]
    assert rows[2][0] == r"my\_policy"
    assert r"\begin{tabular}{lrr}" in tex
    assert tex.startswith("% ratios\n")
    assert r"{\footnotesize \textsuperscript{*} significant;" in tex
    with pytest.raises(ValueError, match="row 0 has 2 cells, the header 3"):
        to_latex(Table(["a", "b", "c"], [["1", "2"]]))


def test_markdown_and_html_render_notes_and_escape_markers() -> None:
    md = to_markdown([("table", TABLE)])
    assert r"| **0.83 [0.79, 0.88]\*** |" in md
    assert r"\* significant; † CI and test disagree." in md
    html = to_html([("table", TABLE), ("links", [("w1", "w1/report.html")])], "t", {})
    assert "<p class='tnote'>* significant; † CI and test disagree.</p>" in html
    assert "<a href='w1/report.html'>w1</a>" in html


def test_write_bundle_writes_every_format(tmp_path: Path) -> None:
    paths = write_bundle(
        tmp_path,
        stem="report",
        title="t",
        blocks=[("figure", ("lines.png", "Three lines")), ("table", TABLE)],
        tables={"data.csv": pl.DataFrame({"a": [1]})},
        images={"lines.png": (LINES, "Three lines")},
        options=FigureOptions(dpi=120, vector=("pdf", "svg")),
        formatted={"ratio_table": (TABLE, "ratios")},
    )
    assert set(paths) == {
        "html",
        "md",
        "data",
        "lines",
        "lines.pdf",
        "lines.svg",
        "ratio_table.tex",
        "ratio_table.md",
    }
    check_files(paths)
    assert png_size(paths["lines"].read_bytes()) == (8 * 120, 4 * 120)
    html = paths["html"].read_text(encoding="utf-8")
    assert "<a href='lines.pdf'>PDF</a><a href='lines.svg'>SVG</a>" in html
    assert "[PDF](lines.pdf) [SVG](lines.svg) [PNG](lines.png)" in paths["md"].read_text()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
